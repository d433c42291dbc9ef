"""Build the table of Megatron-LM flags newer than the supported megatron-core: the options a newer
Megatron-LM's ``parse_args`` accepts that the newest shipped table (``releases/arguments-X.Y.Z.json``, the
newest megatron-core the tool mirrors) lacks, with the release they appear in. (A flag an older mirrored
release lacks and a newer mirrored one has is named from the tables themselves, args.other_release.) A launch that gives one fails in 0.19.2 (argparse exits 2), and the
message names where the flag comes from instead of only "no such flag".

    BRIDGE_ENV/bin/python tools/build_mlm_newer_flags.py [--mlm-git GITDIR] [--ref REF]

REF (default ``main``) of the Megatron-LM git directory (default: the mirror fetched next to this
repository, ``../.mirror/NVIDIA+Megatron-LM/repo``) is exported to a temporary folder, and its core parser
is built as ``parse_args`` builds it (``argparse.ArgumentParser(allow_abbrev=False)`` filled by
``megatron.training.arguments.add_megatron_arguments``) with that folder first on ``sys.path``, in an
environment where megatron-core's dependencies import (the Bridge environment). The release is the
version ``megatron/core/package_info.py`` states at REF. Only the core parser: the argument groups a
training script adds (``extra_args_provider``) are not compared.

Output: ``overlap_cli/frameworks/megatron_lm/newer_flags.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "overlap_cli" / "frameworks" / "megatron_lm" / "newer_flags.json"
SHIPPED = max((ROOT / "overlap_cli" / "frameworks" / "megatron_lm" / "releases").glob("arguments-*.json"),
              key=lambda p: tuple(int(n) for n in p.stem.split("-", 1)[1].split(".")))
DEFAULT_GIT = ROOT.parent / ".mirror" / "NVIDIA+Megatron-LM" / "repo"

_PARSER = """
import argparse, json, sys, warnings
warnings.simplefilter("ignore")
from megatron.training.arguments import add_megatron_arguments
p = argparse.ArgumentParser(allow_abbrev=False)
add_megatron_arguments(p)
json.dump(sorted({s for a in p._actions for s in a.option_strings}), sys.stdout)
"""


def release_of(gitdir: Path, commit: str) -> str:
    text = subprocess.run(["git", "-C", str(gitdir), "show", f"{commit}:megatron/core/package_info.py"],
                          capture_output=True, text=True, check=True).stdout
    parts = [re.search(rf"^{k}\s*=\s*(\S+)", text, re.MULTILINE).group(1).strip("'\"") for k in ("MAJOR", "MINOR", "PATCH")]
    pre = re.search(r"^PRE_RELEASE\s*=\s*'([^']*)'", text, re.MULTILINE)
    return ".".join(parts) + (pre.group(1) if pre else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mlm-git", type=Path, default=DEFAULT_GIT)
    ap.add_argument("--ref", default="main")
    args = ap.parse_args()
    commit = subprocess.run(["git", "-C", str(args.mlm_git), "rev-parse", args.ref + "^{commit}"], capture_output=True,
                            text=True, check=True).stdout.strip()
    # a release branch (core_r0.20.0) names its release; on main the version is the one in development
    tags = subprocess.run(["git", "-C", str(args.mlm_git), "tag", "--points-at", commit], capture_output=True,
                          text=True).stdout.split()
    version = release_of(args.mlm_git, commit)
    released = any(t.startswith("core_v") for t in tags)
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(args.mlm_git), "archive", commit, "megatron"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        proc = subprocess.run([sys.executable, "-c", _PARSER], capture_output=True, text=True, env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"})
        if proc.returncode:
            raise SystemExit(f"could not build the parser of {args.ref}:\n{proc.stderr[-3000:]}")
        newer_parser = set(json.loads(proc.stdout))
    shipped = json.loads(SHIPPED.read_text())
    known = {s for o in shipped["options"] for s in o["flags"]}
    flags = sorted(newer_parser - known)
    doc = {
        "supported": f"megatron-core {shipped['megatron_core']}",
        "releases": [{
            "release": f"megatron-core {version}" + ("" if released else " (in development)"),
            "source": f"NVIDIA/Megatron-LM {args.ref} {commit}",
            "flags": flags,
        }],
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(flags)} flags of {args.ref} ({version}) not in megatron-core {shipped['megatron_core']} -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
