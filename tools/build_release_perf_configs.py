"""Regenerate bench/data/release_perf_configs.json: the performance settings each NeMo container release's
Megatron-Bridge ran its published benchmark rows with.

    python tools/build_release_perf_configs.py --mirror DIR   # a git clone of NVIDIA-NeMo/Megatron-Bridge with its tags

Bridge's throughput tables (bench/data/bridge_throughput.jsonl) were measured with the performance scripts of
that release (``scripts/performance/configs/<family>/*workload_base_configs.py``: one ``WorkloadBaseConfig``
per model x task x GPU x precision x variant, applied over the model's recipe by
``scripts/performance/utils/overrides.py:set_workload_base_configs``). Those settings moved between releases
(CUDA graphs of the whole iteration, EP overlap, the fused grouped MLP of Transformer Engine, recomputation,
micro-batch size), so the calibration joins each row to its own release's settings instead of assuming the
0.6.2 recipe's. This reads the files of each release tag of a Megatron-Bridge git mirror as text (``ast``, the
module-level ``X = WorkloadBaseConfig(...)`` / ``replace(BASE, ...)`` / ``X = Y`` assignments with literal
values; nothing is imported or run) and writes every config's fields with the WorkloadBaseConfig defaults of
that tag beside them (a field a config does not set has that default).

Release -> tag: the container's Megatron-Bridge version (docs/releases/software-versions.md: 25.11 = 0.2.0,
26.02 = 0.3.0, 26.04 = 0.4.0, 26.06 = 0.5.0). The ``.01`` containers are not listed there; each is taken to be
the patch release whose configs hold its rows' parallel layouts: 26.02.01 = 0.3.1 (15 of its 20 rows; 0.3.0: 12),
26.04.01 = 0.4.2 (21 of 21; 0.4.1: 19 -- the DeepSeek-V3 B200/B300 layouts arrive in 0.4.2), 26.06.01 = 0.5.1.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE_TAG = {"25.11": "v0.2.0", "26.02": "v0.3.0", "26.02.01": "v0.3.1", "26.04": "v0.4.0",
               "26.04.01": "v0.4.2", "26.06": "v0.5.0", "26.06.01": "v0.5.1"}
# The families of the models the calibration joins (bench/estimate_data.py MODEL_PREFIX).
FAMILIES = ("deepseek", "gpt_oss", "llama", "llama3", "nemotronh", "qwen", "qwen3")
# Config-name prefixes of those models (the table's model -> bench/estimate_data.py RELEASE_MODEL_TOKEN).
MODELS = ("DEEPSEEK_V3_", "GPT_OSS_120B_", "LLAMA3_70B_", "LLAMA3_8B_", "NEMOTRON_3_NANO_", "QWEN3_30B_A3B_")


def _git(mirror: str, *args) -> str:
    return subprocess.run(["git", "-C", mirror, *args], check=True, capture_output=True, text=True).stdout


def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return {"unparsed": ast.unparse(node)}


def class_defaults(source: str) -> dict:
    """The annotated fields of ``class WorkloadBaseConfig`` with their literal defaults."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            return {st.target.id: _literal(st.value) for st in node.body
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None}
    raise ValueError("no WorkloadBaseConfig class")


def configs(source: str) -> dict:
    """name -> the fields it sets (its bases' included), from the module-level assignments."""
    out: dict = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if isinstance(value, ast.Name) and value.id in out:
            out[name] = dict(out[value.id])
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            fn = value.func.id
            if fn == "WorkloadBaseConfig":
                out[name] = {k.arg: _literal(k.value) for k in value.keywords if k.arg}
            elif fn == "replace" and value.args and isinstance(value.args[0], ast.Name) and value.args[0].id in out:
                fields = dict(out[value.args[0].id])
                fields.update({k.arg: _literal(k.value) for k in value.keywords if k.arg})
                out[name] = fields
    return out


def build(mirror: str) -> dict:
    out = {}
    for release, tag in RELEASE_TAG.items():
        commit = _git(mirror, "rev-list", "-n", "1", tag).strip()
        files = [p for p in _git(mirror, "ls-tree", "-r", "--name-only", tag, "--", "scripts/performance/configs").split()
                 if p.endswith("workload_base_configs.py") and p.split("/")[-2] in FAMILIES]
        defaults = class_defaults(_git(mirror, "show", f"{tag}:scripts/performance/utils/utils.py"))
        table = {}
        for path in files:
            for name, fields in configs(_git(mirror, "show", f"{tag}:{path}")).items():
                if not name.startswith(MODELS):
                    continue
                table[name] = {"file": path, **fields}
        out[release] = {"tag": tag, "commit": commit, "defaults": defaults, "configs": table}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", required=True, help="a Megatron-Bridge git directory with the release tags")
    args = ap.parse_args()
    data = build(args.mirror)
    path = os.path.join(ROOT, "bench", "data", "release_perf_configs.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"source": "NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/*/*workload_base_configs.py "
                                       "at each release tag (tools/build_release_perf_configs.py)", "releases": data},
                            indent=0, sort_keys=True, separators=(",", ":")) + "\n")
    n = sum(len(r["configs"]) for r in data.values())
    print(f"wrote {path}: {n} configs over {len(data)} releases")


if __name__ == "__main__":
    sys.exit(main())
