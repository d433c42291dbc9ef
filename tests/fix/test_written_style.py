"""What the tool writes back keeps the file's own style: nulls keep their spelling in ``--annotate``, and a
mapping a fix adds is block style, indented like the file, even when the file ends in a comment."""

from __future__ import annotations

import re

import yaml

from conftest import CORPUS

STYLES = """\
# a hand-written config
model:
    tensor_model_parallel_size: 2
    sequence_parallel: true
    virtual_pipeline_model_parallel_size: null
    num_moe_experts: ~
    recompute_method:
    mtp_num_layers: NULL  # kept
    cuda_graph_modules: [null, ~]
comm_overlap:
    tp_comm_overlap: true
    overlap_grad_reduce: null
# the end
"""


def _code(line: str) -> str:
    return line.split("#", 1)[0].rstrip()


def test_annotate_keeps_each_null_spelling(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(STYLES)
    code, out, err = run_cli("check", path, "--world-size", "8", "--annotate")
    assert code in (0, 1), err
    lines = [_code(ln) for ln in out.splitlines()]
    for expected in (
        "    virtual_pipeline_model_parallel_size: null",
        "    num_moe_experts: ~",
        "    recompute_method:",
        "    mtp_num_layers: NULL",
        "    overlap_grad_reduce: null",
    ):
        assert expected in lines, (expected, out)
    assert "    cuda_graph_modules: [null, ~]" in lines
    # the values are unchanged: the annotated copy loads to the same data where the file had a null
    src, back = yaml.safe_load(STYLES), yaml.safe_load(out)
    for section, values in src.items():
        for key, value in values.items():
            if value is None:
                assert key in back[section] and back[section][key] is None, (section, key)


def test_annotate_new_nulls_use_the_files_spelling(run_cli, tmp_path):
    """A key annotate writes in (not in the file) with a null effective value is spelled like the file's nulls."""
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  tensor_model_parallel_size: 2\n  a: ~\n  b: ~\ncomm_overlap:\n  tp_comm_overlap: false\n")
    code, out, err = run_cli("check", path, "--world-size", "8", "--annotate")
    assert code in (0, 1), err
    assert "  tp_comm_overlap_cfg: ~" in [_code(ln) for ln in out.splitlines()]


def test_annotate_keeps_every_null_of_a_bridge_dump(run_cli, corpus):
    """Every `key: null` line of a real dump is still `key: null` (or carries the effective value annotate
    writes in for an overlap key); none becomes `key:`."""
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    EFFECTIVE_KEYS = BRIDGE.get().EFFECTIVE_KEYS

    path = CORPUS / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"
    text = path.read_text()
    code, out, err = run_cli("check", path, "--world-size", "32", "--gpu", "h100", "--annotate")
    assert code in (0, 1), err
    overlap_leaves = {k.split(".", 1)[1] for k in EFFECTIVE_KEYS}
    nulls_in = [ln for ln in text.splitlines() if re.fullmatch(r"\s*\w+: null", ln)]
    kept = [ln for ln in nulls_in if ln.split(":")[0].strip() not in overlap_leaves]
    assert len(kept) > 100
    written = [_code(ln) for ln in out.splitlines()]
    assert sum(written.count(ln) for ln in set(kept)) >= len(kept)
    assert not [ln for ln in written if ln.strip().endswith(":") and ln + " null" in kept]


def test_fix_adds_a_block_mapping_before_a_closing_comment(run_cli, tmp_path):
    """The file ends in a comment: the env_vars a fix adds is block style at the file's indent, one entry
    per line, and the comment stays last."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n    tensor_model_parallel_size: 2\n    sequence_parallel: true\n"
        "comm_overlap:\n    tp_comm_overlap: true\n# end of the file\n"
    )
    code, out, err = run_cli("fix", path, "--gpu", "h100", "--world-size", "8", "--write")
    assert code in (0, 1), err
    text = path.read_text()
    assert "env_vars:\n    CUDA_DEVICE_MAX_CONNECTIONS: 1" in text, text
    assert "{" not in text and max(len(ln) for ln in text.splitlines()) < 120
    assert text.rstrip().splitlines()[-1] == "# end of the file"
    assert yaml.safe_load(text)["env_vars"]["CUDA_DEVICE_MAX_CONNECTIONS"] == 1
