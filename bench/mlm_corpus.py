"""Megatron-LM's functional-test configs through overlap-cli's reader: how many parse, and what does not.

    python bench/mlm_corpus.py [--source GITDIR@REF | DIR] [--all] [-v]

The configs are read from a Megatron-LM tree: a checkout (DIR holding tests/functional_tests/test_cases)
or a git directory and a ref (default: the ``core_r0.19.0`` branch of a mirror fetched next to this repository, ``../.mirror``; the
``OVERLAP_MLM_TESTS`` environment variable overrides it). Nothing is copied into this repository.

Counts: every ``model_config.yaml`` and each of its ``MODEL_ARGS`` / ``MODEL_ARGS_N`` launches; the
ones the CI recipes schedule (tests/test_utils/recipes: ``test_case:`` entries) are counted apart, since
those are the configs NVIDIA's CI runs. A launch whose MODEL_ARGS holds no ``--flag`` keys is a NeMo
test (``gpt-nemo``), not a Megatron-LM command line, and is counted as such.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

# A mirror fetched next to the repository (``fetch github:NVIDIA/Megatron-LM``), at the branch of 0.19.x.
DEFAULT_SOURCE = f"{Path(__file__).resolve().parent.parent.parent / '.mirror' / 'NVIDIA+Megatron-LM' / 'repo'}@core_r0.19.0"
CASES = "tests/functional_tests/test_cases"
RECIPES = "tests/test_utils/recipes"


def source() -> str:
    return os.environ.get("OVERLAP_MLM_TESTS", DEFAULT_SOURCE)


def available(src: str | None = None) -> bool:
    src = src or source()
    if "@" in src:
        gitdir, ref = src.rsplit("@", 1)
        if not os.path.isdir(gitdir):
            return False
        return subprocess.run(["git", "-C", gitdir, "rev-parse", "--verify", "-q", ref + "^{commit}"],
                              capture_output=True).returncode == 0
    return os.path.isdir(os.path.join(src, CASES))


def read_tree(src: str, prefix: str, suffix: str) -> dict:
    """{path: text} of the files under prefix ending with suffix."""
    if "@" not in src:
        root = Path(src)
        return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted((root / prefix).rglob("*" + suffix))}
    gitdir, ref = src.rsplit("@", 1)
    names = subprocess.run(["git", "-C", gitdir, "ls-tree", "-r", "--name-only", ref, prefix],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    names = [n for n in names if n.endswith(suffix)]
    batch = subprocess.run(["git", "-C", gitdir, "cat-file", "--batch"], input="".join(f"{ref}:{n}\n" for n in names).encode(),
                           capture_output=True, check=True).stdout
    out, pos = {}, 0
    for name in names:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        out[name] = batch[header_end + 1:header_end + 1 + size].decode("utf-8")
        pos = header_end + 1 + size + 1
    return out


def scheduled_cases(src: str) -> set:
    """Test-case names the CI recipes list."""
    names: set = set()
    for text in read_tree(src, RECIPES, ".yaml").values():
        for m in re.finditer(r"test_case:\s*\[([^\]]*)\]", text):
            names.update(x.strip().strip("'\"") for x in m.group(1).split(",") if x.strip())
        for m in re.finditer(r"^\s*-\s*test_case:\s*([^\s\[#]+)", text, re.M):
            names.add(m.group(1).strip("'\""))
    return names


def run(src: str | None = None) -> dict:
    """Parse every launch; {"configs", "launches", "ok", "nemo", "problems": [(path, key, line)], ...}."""
    from overlap_cli.problems import InputError
    from overlap_cli.config.mlm_yaml import read_mlm_yaml
    from overlap_cli.frameworks.megatron_lm.args import launch_from_text

    src = src or source()
    configs = {p: t for p, t in read_tree(src, CASES, ".yaml").items() if p.endswith("model_config.yaml")}
    scheduled = scheduled_cases(src)
    stats = {"source": src, "configs": len(configs), "launches": 0, "ok": 0, "nemo": 0, "problems": [],
             "scheduled_configs": 0, "scheduled_ok": 0, "scheduled_problems": [], "flags": 0, "unknown_values": 0}
    for path, text in sorted(configs.items()):
        case = path.split("/")[-2]
        is_scheduled = case in scheduled
        stats["scheduled_configs"] += is_scheduled
        for key in re.findall(r"^(MODEL_ARGS(?:_\d+)?)[ \t]*:", text, re.M):
            stats["launches"] += 1
            try:
                launch = launch_from_text(read_mlm_yaml(path, text, key=key))
            except InputError as exc:
                line = exc.problem.one_line()
                if "holds no --flag keys" in line:
                    stats["nemo"] += 1
                    continue
                stats["problems"].append(line)
                if is_scheduled:
                    stats["scheduled_problems"].append(line)
                continue
            stats["ok"] += 1
            stats["scheduled_ok"] += is_scheduled
            stats["flags"] += len(launch.args)
            stats["unknown_values"] += sum(1 for t in launch.tokens if t.text is None)
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=source())
    ap.add_argument("-v", "--verbose", action="store_true", help="print each problem")
    opts = ap.parse_args()
    if not available(opts.source):
        print(f"Megatron-LM tree not found: {opts.source} (set OVERLAP_MLM_TESTS)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    s = run(opts.source)
    took = time.perf_counter() - start
    print(f"source: {s['source']}")
    print(f"model_config.yaml files: {s['configs']} ({s['scheduled_configs']} scheduled by the CI recipes)")
    print(f"launches (MODEL_ARGS and MODEL_ARGS_N): {s['launches']}: {s['ok']} parsed, {s['nemo']} NeMo (no --flag keys), "
          f"{len(s['problems'])} input problems ({len(s['scheduled_problems'])} in scheduled configs)")
    print(f"flags recognised: {s['flags']}; values only the harness knows (${{...}}): {s['unknown_values']}")
    print(f"time: {took * 1000:.0f} ms")
    for line in s["problems"] if opts.verbose else s["scheduled_problems"]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
