"""``overlap fix --write`` keeps a file's byte-order mark and line ends, whatever the form: one fix loop
works on ``\\n`` text and puts the file's own style (CRLF, CR alone, a BOM) back when it writes."""

from __future__ import annotations

import json

import pytest

PYTHON_RUN = (
    "from megatron.bridge.recipes.llama import llama3_70b_pretrain_config\n"
    "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n\n"
    "cfg = llama3_70b_pretrain_config()\n"
    "cfg.model.sequence_parallel = False\n"
    "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n"
)
YAML_OVERRIDE = (
    "# overlap: recipe=llama3_70b_pretrain_64gpu_h100_bf16_config\n"
    "model:\n"
    "  sequence_parallel: false\n"
)


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["crlf", "cr"])
@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
@pytest.mark.parametrize("name,text", [("run.py", PYTHON_RUN), ("over.yaml", YAML_OVERRIDE)], ids=["python", "yaml"])
def test_fix_write_keeps_bom_and_line_ends(tmp_path, run_cli, name, text, ending, bom):
    path = tmp_path / name
    raw = ("\ufeff" if bom else "") + text.replace("\n", ending)
    path.write_bytes(raw.encode("utf-8"))
    code, out, err = run_cli("fix", str(path), "--write", "--unsafe-fixes")
    data = path.read_bytes().decode("utf-8")
    assert data != raw, (out, err)  # a fix was written (sequence_parallel, at least)
    assert data.startswith("\ufeff") == bom
    body = data.lstrip("\ufeff")
    other = {"\r\n": "\n", "\r": "\n"}[ending]
    if ending == "\r\n":
        assert body.count("\r\n") == body.count("\n") > text.count("\n") - 1, repr(body)
    else:
        assert other not in body and body.count("\r") >= text.count("\n"), repr(body)
    normal = body.replace(ending, "\n")
    # TP102: the Python run writes the TP overlap request itself, so (with --unsafe-fixes) sequence parallelism
    # is turned on; the override file's request is the recipe's, so the request is turned off instead.
    assert "sequence_parallel = True" in normal if name == "run.py" else "tp_comm_overlap: false" in normal, normal


def test_fix_writes_into_an_override_file_of_comments_only(tmp_path, run_cli):
    """An override file that holds only comments (a directive naming its recipe) is a document without a
    value; a fix starts its keys after those lines instead of refusing the file."""
    path = tmp_path / "over.yaml"
    original = "# overlap: recipe=llama3_70b_pretrain_config\n# nothing changed yet\n"
    path.write_text(original)
    code, out, err = run_cli("fix", str(path), "--world-size", "64", "--write")
    text = path.read_text()
    assert text.startswith(original), text
    assert "env_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1" in text, (text, out, err)
    code, out, err = run_cli("check", str(path), "--world-size", "64", "--format", "json")
    assert "ENV501" not in {f["code"] for f in json.loads(out)["results"][0]["findings"]}
