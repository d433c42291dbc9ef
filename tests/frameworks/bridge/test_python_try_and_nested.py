"""``try`` read as Python runs it, and what a nested function is, through the CLI.

Bridge's examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py (vendored, tests/data/python/SOURCES.json) builds
its run in ``main()`` inside ``try: ... finally:`` (line 1276), and a nested function of a helper,
``_register_converted_checkpoint_pre_wrap_hook._load_converted_checkpoint`` (line 969), builds a
``ConfigContainer(...)`` to load a checkpoint: it is handed to the model provider as a hook, never called by the
script. A nested function is part of the function that defines it: it runs where it is called and is never a
run of its own -- as a module-level function the script calls is read inside the script's run, not listed."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

QWEN35_VL = ROOT / "tests/data/python/NVIDIA-NeMo+Megatron-Bridge/examples/megatron_mimo/qwen35_vl/finetune_qwen35_vl.py"

HEAD = '''\
from megatron.bridge.recipes.llama import llama3_8b_pretrain_config
from megatron.bridge.training.pretrain import pretrain

'''


def _check(run_cli, tmp_path, body: str, *extra) -> dict:
    f = tmp_path / "train.py"
    f.write_text(HEAD + body)
    code, out, err = run_cli("check", str(f), "--world-size", "16", "--format", "json", "--exit-zero", *extra)
    (r,) = json.loads(out)["results"]
    return r


def test_bridge_s_qwen35_vl_script_is_its_main_run(run_cli):
    from overlap_cli.frameworks.bridge.python_load import list_runs

    assert "    def _load_converted_checkpoint(model_list):" in QWEN35_VL.read_text()
    assert list_runs(str(QWEN35_VL), QWEN35_VL.read_text()) == [str(QWEN35_VL)]
    code, out, err = run_cli("check", str(QWEN35_VL), "--format", "json", "--exit-zero")
    (r,) = json.loads(out)["results"]
    assert r["error"] is None, r["error"]  # was: "no config is built here" (the try statement was not followed)
    # pretrain_megatron_mimo(cfg=...) is not a run overlap-cli resolves: what it receives is unknown, not a default
    assert {v["source"] for v in r["effective"].values()} == {"unknown"}


def test_a_try_body_runs_and_finally_after_it(run_cli, tmp_path):
    r = _check(run_cli, tmp_path, '''\
def main():
    ok = False
    try:
        cfg = llama3_8b_pretrain_config()
        cfg.model.tensor_model_parallel_size = 4
        cfg.model.context_parallel_size = 1
        ok = True
    finally:
        if ok:
            cfg.model.pipeline_model_parallel_size = 2
    pretrain(cfg, None)


if __name__ == "__main__":
    main()
''')
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    assert eff["model.tensor_model_parallel_size"]["value"] == 4
    assert eff["model.pipeline_model_parallel_size"]["value"] == 2


@pytest.mark.parametrize("handler, source", [
    ("except ImportError:\n    cfg.model.tensor_model_parallel_size = 2", "unknown"),  # the clause may run
    ("except ImportError:\n    pass", "user"),
])
def test_what_an_except_clause_may_write_is_unknown(run_cli, tmp_path, handler, source):
    r = _check(run_cli, tmp_path, f'''\
cfg = llama3_8b_pretrain_config()
cfg.model.context_parallel_size = 1
try:
    import transformer_engine
    cfg.model.tensor_model_parallel_size = 4
{handler}
pretrain(cfg, None)
''')
    assert r["error"] is None, r["error"]
    tp = r["effective"]["model.tensor_model_parallel_size"]
    assert tp["source"] == source and (source == "unknown" or tp["value"] == 4)


def test_a_raise_a_clause_may_catch_is_not_the_run_s_end(run_cli, tmp_path):
    r = _check(run_cli, tmp_path, '''\
cfg = llama3_8b_pretrain_config()
cfg.model.context_parallel_size = 1
try:
    cfg.model.tensor_model_parallel_size = 4
    raise RuntimeError("no")
except RuntimeError:
    cfg.model.tensor_model_parallel_size = 8
pretrain(cfg, None)
''')
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["source"] == "unknown"
    assert r["effective"]["model.context_parallel_size"]["value"] == 1


def test_a_nested_function_runs_only_where_it_is_called(run_cli, tmp_path):
    from overlap_cli.frameworks.bridge.python_load import list_runs

    body = '''\
def outer(call):
    def build():
        cfg = llama3_8b_pretrain_config()
        cfg.model.tensor_model_parallel_size = 4
        cfg.model.context_parallel_size = 1
        return cfg
    if call:
        pretrain(build(), None)
    return build


if __name__ == "__main__":
    outer(True)
'''
    r = _check(run_cli, tmp_path, body)
    assert r["error"] is None and r["effective"]["model.tensor_model_parallel_size"]["value"] == 4
    f = tmp_path / "train.py"
    assert list_runs(str(f), f.read_text()) == [str(f)]  # build() is no run of its own
    f.write_text(HEAD + body.replace("outer(True)", "outer(False)"))
    code, out, err = run_cli("check", str(f))
    assert code == 2 and "no config is built here" in err
