"""A Megatron-LM launch is checked against the megatron-core release of its target (0.17.1, 0.18.2, 0.19.2): that
release's parser, its launch checks, their messages and its lines. The release modules hold what differs as
data (frameworks/megatron_lm/releases/, read by cites.py); these tests hold the data to the releases' sources
(the unpacked wheels under /tmp/src, skipped where absent) and run real launch scripts through the CLI."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from overlap_cli.frameworks.megatron_lm.releases import CORE

UPSTREAM = ROOT / "tests" / "data" / "upstream" / "NVIDIA+Megatron-LM" / "examples"
LLAMA = UPSTREAM / "llama" / "train_llama3_8b_h100_fp8.sh"
PACKAGE = ROOT / "overlap_cli" / "frameworks" / "megatron_lm"
PUBLIC = {"CORE_VERSION", "ARGUMENTS", "EFFECTIVE_KEYS", "DDP_DEFAULTS", "LINES", "CITES", "CHECKS_ABSENT",
          "CHECKS_CHANGED"}


def wheel_source(core: str) -> Path:
    """The unpacked megatron-core wheel of ``core`` (read-only), or a skip."""
    tree = Path(f"/tmp/src/megatron_core-{core}")
    if not tree.is_dir():
        pytest.skip(f"no unpacked megatron-core {core} wheel at {tree}")
    return tree


def checked(run_cli, tmp_path: Path, script: Path, core: str, *words: str) -> dict:
    """`overlap check --format json --show-effective` on a copy of ``script`` whose folder's pyproject.toml names
    megatron-core ``core``."""
    folder = tmp_path / core
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f'[tool.overlap]\ncore_version = "{core}"\n', encoding="utf-8")
    shutil.copy(script, folder / script.name)
    code, out, err = run_cli("check", str(folder / script.name), *words, "--format", "json", "--show-effective")
    assert "Traceback" not in err
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return result


def errors(result: dict) -> list:
    return sorted(f["message"] for f in result["findings"] if f["severity"] == "error")


def test_every_release_module_has_the_same_public_names():
    for version in CORE.versions():
        module = CORE.get(version)
        names = {n for n in vars(module) if n.isupper()}
        assert names == PUBLIC, (version, names ^ PUBLIC)
        assert (module.LINES is None) == (version == CORE.newest())


def _recorded_ids() -> set:
    """The ids the resolver's steps record an assert or a forcing under (``s.fail("id", ...)``, ``fail("id", ...)``,
    ``s.force("id", ...)``)."""
    out = set()
    for name in ("resolver.py", "configs.py"):
        for node in ast.walk(ast.parse((PACKAGE / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if func in ("fail", "force") and isinstance(node.args[0].value, str):
                    out.add(node.args[0].value)
    return out


def test_the_release_data_names_only_checks_that_exist():
    """A misspelt id in a release's data would change nothing, silently: the newest release's checks would stand
    for the older one's. Every id names a check of assertions.TABLE or a step's record."""
    from overlap_cli.frameworks.megatron_lm.assertions import TABLE

    known = {c.id for c in TABLE} | _recorded_ids()
    assert {"determinism", "mfsdp-distopt", "layer-wise", "num-buckets", "fsdp-max-conn"} <= known
    for version in CORE.versions():
        module = CORE.get(version)
        assert set(module.CHECKS_ABSENT) <= known, (version, set(module.CHECKS_ABSENT) - known)
        assert set(module.CHECKS_CHANGED) <= known, (version, set(module.CHECKS_CHANGED) - known)
        assert not set(module.CHECKS_ABSENT) & set(module.CHECKS_CHANGED), version
        for change in module.CHECKS_CHANGED.values():
            assert set(change) <= {"message", "at"} and change, change
    # each older-only check is absent from the newest release, and each release has the checks its data keeps
    newest = CORE.get(CORE.newest())
    older_only = {c.id for c in TABLE} & set(newest.CHECKS_ABSENT)
    assert older_only and all(any(i not in CORE.get(v).CHECKS_ABSENT for v in CORE.versions()) for i in older_only)


@pytest.mark.parametrize("core", [v for v in CORE.versions() if v != CORE.newest()])
def test_each_changed_check_is_where_its_release_says(core):
    """The ``at`` of every CHECKS_CHANGED entry is an assert / raise of that release's source whose message is the
    one the entry (or the check) prints."""
    from overlap_cli.frameworks.megatron_lm.assertions import TABLE

    tree = wheel_source(core)
    by_id = {c.id: c for c in TABLE}
    for check_id, change in CORE.get(core).CHECKS_CHANGED.items():
        if "at" not in change:
            continue
        path, line = change["at"].rsplit(":", 1)
        lines = (tree / path).read_text().splitlines()
        near = "\n".join(lines[int(line) - 1:int(line) + 2])
        assert "assert" in lines[int(line) - 1] or "raise" in lines[int(line) - 1], (check_id, lines[int(line) - 1])
        message = change.get("message") or by_id[check_id].message
        assert message.split("{")[0].split("[")[0][:40] in near, (check_id, near)


@pytest.mark.parametrize("core", [v for v in CORE.versions() if v != CORE.newest()])
def test_each_placed_cite_is_the_same_step(core):
    """CITES: the line a release does a newer release's step at holds that step's code."""
    tree = wheel_source(core)
    for _newest, own in CORE.get(core).CITES.items():
        path, line = own.rsplit(":", 1)
        text = (tree / path).read_text().splitlines()[int(line) - 1]
        assert "bucket_size is None" in text or "batch_p2p_comm" in text, (own, text)


@pytest.mark.parametrize("core", [v for v in CORE.versions() if v != CORE.newest()])
def test_the_line_map_holds_the_same_source_line(core):
    """tools/build_mlm_release_lines.py's map: each cited line of the newest release and the line it maps to in
    the older one are the same text."""
    tree, newest = wheel_source(core), wheel_source(CORE.newest())
    doc = json.loads((PACKAGE / "releases" / CORE.get(core).LINES).read_text())
    assert doc["release"] == core and doc["cites"] == f"megatron-core {CORE.newest()}"
    mapped = 0
    for path, lines in doc["files"].items():
        old, new = (tree / path).read_text().splitlines(), (newest / path).read_text().splitlines()
        for n, o in lines.items():
            assert new[int(n) - 1].strip() == old[o - 1].strip(), (path, n, o)
            mapped += 1
    assert mapped >= 150


def test_an_upstream_launch_meets_each_release_s_own_checks(run_cli, tmp_path):
    """Megatron-LM's own llama3 example with --deterministic-mode and the Muon optimizer (command-line words):
    0.17.1 asserts its Muon checks (arguments.py:1487, 1490) and validate_args' own determinism asserts
    (arguments.py:1363-1369); 0.18.2 only the latter, at its lines (1536-1542: its Muon runs the layer-wise
    distributed optimizer); 0.19.2 neither (determinism.py sets what it needs; Muon as in 0.18)."""
    words = ("model.deterministic_mode=true", "optimizer.optimizer=muon")
    found = {core: errors(checked(run_cli, tmp_path, LLAMA, core, *words)) for core in CORE.versions()}
    nccl = "validate_args asserts \"NCCL_ALGO must be one of ['Tree', 'Ring', 'CollnetDirect', 'CollnetChain', '^NVLS'].\""
    fusion = 'validate_args asserts "Cross Entropy Fusion is currently not deterministic."'
    assert found["0.17.1"] == sorted([
        f"{fusion} (megatron/training/arguments.py:1365)", f"{nccl} (megatron/training/arguments.py:1368)",
        'validate_args asserts "Muon optimizer does not support distributed optimizer for now." '
        "(megatron/training/arguments.py:1490)",
        'validate_args asserts "Muon optimizer does not support overlap grad reduce. Use dist_muon instead." '
        "(megatron/training/arguments.py:1487)"])
    assert found["0.18.2"] == sorted([f"{fusion} (megatron/training/arguments.py:1538)",
                                      f"{nccl} (megatron/training/arguments.py:1541)"])
    assert found["0.19.2"] == []


def test_a_cited_line_is_the_release_s_own(run_cli, tmp_path):
    """The same forcing (TP = 1 turns sequence parallelism off) cites each release's line of it."""
    for core, line in (("0.17.1", 1198), ("0.18.2", 1378), ("0.19.2", 1393)):
        source = wheel_source(core) / "megatron/training/arguments.py"
        assert source.read_text().splitlines()[line - 1].strip() == "if args.tensor_model_parallel_size == 1:"
        result = checked(run_cli, tmp_path, LLAMA, core)
        reason = result["effective"]["model.sequence_parallel"]["reason"]
        assert f"arguments.py:{line})" in reason, (core, reason)


def test_megatron_fsdp_forces_the_distributed_optimizer_from_0_18(run_cli, tmp_path):
    """0.17.1's validate_args leaves --use-distributed-optimizer as given under Megatron-FSDP; 0.18 and later turn
    it on (arguments.py:1107 in 0.19.2)."""
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=8\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
                      "--num-layers 8 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
                      "--max-position-embeddings 128 --micro-batch-size 1 --use-megatron-fsdp --ckpt-format fsdp_dtensor\n")
    value = {core: checked(run_cli, tmp_path, script, core)["effective"]["ddp.use_distributed_optimizer"]
             for core in CORE.versions()}
    assert value["0.17.1"]["value"] is False and value["0.17.1"]["source"] == "default"
    assert value["0.18.2"]["value"] is True and value["0.19.2"]["value"] is True
    assert "arguments.py:1107" in value["0.19.2"]["reason"]
