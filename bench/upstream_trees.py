"""Folder runs over the real ``examples/`` trees of Megatron-LM and Megatron-Bridge: is every file accounted for?

    python bench/upstream_trees.py [--tool-root DIR] [--mirrors DIR] [--ref REF] [-v]

Exports ``examples/`` (and Bridge's ``scripts/``) of each mirror at REF (default HEAD) into a temporary
folder, runs ``overlap check FOLDER --format json --exit-zero`` once per tree with the overlap-cli found at
``--tool-root`` (default: this checkout; give an exported older commit to measure "before"), and sorts every
file the walk could read (launch scripts and YAML) into: checked (a report), an input error (one line),
skipped with a reason, or silently dropped (in neither list: the count to keep at 0). Files of other kinds
(``.py``, ``.md``, images) are counted apart: the folder walk does not read them.

Mirrors default to ``../.mirror`` next to this repository (``fetch github:NVIDIA/Megatron-LM``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIRRORS = ROOT.parent / ".mirror"
TREES = (("NVIDIA+Megatron-LM", ("examples",)), ("NVIDIA-NeMo+Megatron-Bridge", ("examples",)))
READ_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".yaml", ".yml")


def export(gitdir: Path, ref: str, paths, dest: Path) -> str:
    commit = subprocess.run(["git", "-C", str(gitdir), "rev-parse", ref], capture_output=True, text=True,
                            check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(gitdir), "archive", commit, *paths], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return commit


def skip_kind(reason: str) -> str:
    """The reason without the file's own details (numbers, names), to group skips."""
    for start in ("not a training config", "an override file", "not a launch", "a fragment sourced by", "a template",
                  "not a training run", "the same file as", "a Megatron-Bridge training script in Python"):
        if reason.startswith(start):
            return start
    kind = re.sub(r"\(.*", "", reason).strip()
    kind = re.sub(r"`[^`]*`|'[^']*'|\d+", "…", kind)
    return kind[:90]


def run_tree(tool_root: Path, folder: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tool_root))
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", str(folder), "--format", "json",
                           "--exit-zero"], capture_output=True, text=True, env=env, cwd=str(folder))
    if "Traceback" in proc.stderr:
        raise SystemExit(f"traceback on {folder}:\n{proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)
    return doc


def account(folder: Path, doc: dict) -> dict:
    results = {os.path.normpath(r["file"]): r for r in doc.get("results", [])}
    skipped = {os.path.normpath(s["file"]): s["reason"] for s in doc.get("skipped", [])}
    for entry in doc.get("skipped_groups", []):  # a grouped skip line: every file it stands for
        for f in entry["files"]:
            skipped[os.path.normpath(f)] = entry["reason"]
    out = {"checked": 0, "error": 0, "skipped": collections.Counter(), "dropped": [], "other": collections.Counter(),
           "errors": collections.Counter(), "bridge_runs": 0, "bridge_not_in_catalog": 0, "lm_launches": 0, "files": {}}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        path = os.path.normpath(str(p))
        rel = os.path.relpath(path, folder)
        if not path.lower().endswith(READ_SUFFIXES):
            out["other"][p.suffix or p.name] += 1
            continue
        if path in results:
            r = results[path]
            if r.get("error"):
                out["error"] += 1
                out["bridge_runs"] += r["error"]["message"].startswith("scripts/training/run_recipe.py")
                out["bridge_not_in_catalog"] += "not in overlap-cli's catalog" in r["error"]["message"]
                msg = r["error"]["message"]
                out["errors"]["run_recipe.py: the recipe is not in the catalog" if "not in overlap-cli's catalog" in msg
                              else skip_kind(msg)] += 1
                out["files"][rel] = "error: " + r["error"]["message"]
            else:
                out["checked"] += 1
                bridge = any(n.startswith("read as a Megatron-Bridge run") for n in r.get("notes", ()))
                out["bridge_runs"] += bridge
                out["files"][rel] = "checked" + (" (a Bridge run)" if bridge else "")
        elif path in skipped:
            out["skipped"][skip_kind(skipped[path])] += 1
            out["files"][rel] = "skipped: " + skipped[path]
        else:
            out["dropped"].append(rel)
            out["files"][rel] = "dropped"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool-root", type=Path, default=ROOT)
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each file's outcome")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name, paths in TREES:
            dest = Path(tmp) / name
            dest.mkdir()
            commit = export(args.mirrors / name / "repo", args.ref, paths, dest)
            folder = dest / "examples"
            got = account(folder, run_tree(args.tool_root, folder))
            total = got["checked"] + got["error"] + sum(got["skipped"].values()) + len(got["dropped"])
            print(f"## {name.replace('+', '/')} examples/ @ {commit[:12]}: {total} launch/YAML files")
            print(f"- checked: {got['checked']}")
            print(f"- launch scripts read as Megatron-Bridge runs (run_recipe.py): {got['bridge_runs']} "
                  f"({got['bridge_runs'] - got['bridge_not_in_catalog']} checked, {got['bridge_not_in_catalog']} one line: "
                  "the recipe is not in the catalog)")
            print(f"- input error (one line): {got['error']}")
            for kind, n in got["errors"].most_common():
                print(f"    {n:4d}  {kind}")
            print(f"- skipped with a reason: {sum(got['skipped'].values())}")
            for kind, n in got["skipped"].most_common():
                print(f"    {n:4d}  {kind}")
            print(f"- silently dropped: {len(got['dropped'])}")
            for rel in got["dropped"][:15]:
                print(f"    {rel}")
            print(f"- other files, not read by a folder walk: {sum(got['other'].values())} "
                  f"({', '.join(f'{k} {v}' for k, v in got['other'].most_common(6))})")
            if args.verbose:
                for rel, what in got["files"].items():
                    print(f"    {rel}: {what}")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
