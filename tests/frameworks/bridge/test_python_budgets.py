"""The Python reader evaluates within a budget (python_expressions.MAX_ITEMS / MAX_BITS): a value past it is
unknown with the reason — the key not lost, the file still checked — never computed (a list of 3e8 items took
16 s and 4.7 GB; a power tower minutes). Through the CLI, in a fresh interpreter with a hang guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

HANG_GUARD = 60  # seconds: a hang, not a measurement

HEAD = "from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\ncfg = llama32_1b_pretrain_config()\n"


def check(path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", str(path), "--format", "json", "--show-info",
                           "--world-size", "8"], capture_output=True, text=True, timeout=HANG_GUARD, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)["results"][0]


@pytest.mark.parametrize("expression, why", [
    ("len([0] * (3 * 10**8))", "a value of more than 1,048,576 items"),
    ("len('x' * 10**9)", "a value of more than 1,048,576 items"),
    ("len(('ab' * 1000) + ('c' * 2**20))", "a value of more than 1,048,576 items"),
    ("(10**63) ** 63 % 7 + 1", "an integer of more than 8,192 bits"),
    ("(1 << 60) * (1 << 9000) % 5 + 1", "an integer of more than 8,192 bits"),
    ("len(f'{1:>2000000000}')", "a field wider than 1,048,576 characters"),
])
def test_a_value_past_the_budget_is_unknown_with_the_reason(tmp_path, expression, why):
    path = tmp_path / "train.py"
    path.write_text(HEAD + f"cfg.model.tensor_model_parallel_size = {expression}\ncfg.model.pipeline_model_parallel_size = 2\n")
    r = check(path)
    assert r["error"] is None, r["error"]
    tp = r["effective"]["model.tensor_model_parallel_size"]
    assert tp["source"] == "unknown" and why in tp["reason"], tp
    assert r["effective"]["model.pipeline_model_parallel_size"]["value"] == 2  # the rest is read


def test_a_value_within_the_budget_is_computed(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(HEAD + "cfg.model.tensor_model_parallel_size = len([0] * 4) // 2 + (2**63) % 3\n")
    r = check(path)
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 2 + (2**63) % 3


def test_a_call_that_fails_midway_leaves_the_config_it_was_handed_unknown(tmp_path, run_cli, monkeypatch):
    """Fault injection: the dotlist step of process_config_with_overrides fails after the YAML was merged. The
    interpreter's containment (python_expressions.eval) must not leave the half-changed config as if known."""
    from overlap_cli.frameworks.bridge import python_overrides

    def broken(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(python_overrides, "_apply_dotlists", broken)
    (tmp_path / "over.yaml").write_text("model:\n  tensor_model_parallel_size: 2\n")
    path = tmp_path / "train.py"
    path.write_text("from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\n"
                    "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n"
                    "cfg = llama32_1b_pretrain_config()\n"
                    f"process_config_with_overrides(cfg, config_filepath={str(tmp_path / 'over.yaml')!r}, "
                    "cli_overrides=['model.sequence_parallel=true'])\n")
    code, out, err = run_cli("check", str(path), "--format", "json", "--world-size", "8")
    eff = json.loads(out)["results"][0]["effective"]
    for key in ("model.tensor_model_parallel_size", "model.sequence_parallel"):
        assert eff[key]["source"] == "unknown" and "could not evaluate (RuntimeError)" in eff[key]["reason"], eff[key]


@pytest.mark.parametrize("name, text, args", [
    ("over.yaml", "model:\n  tensor_model_parallel_size: 3000000000\n", ["--recipe", "llama3_8b_pretrain_config"]),
    ("run.py", HEAD + "cfg.model.tensor_model_parallel_size = 3000000000\n", []),
])
def test_an_absurd_parallel_size_is_one_line_in_every_bridge_form(run_cli, tmp_path, name, text, args):
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run_cli("check", str(path), *args)
    assert code == 2
    line = next(ln for ln in (out + err).splitlines() if ln.startswith(str(path)))
    assert line.endswith("model.tensor_model_parallel_size: parallel size too large: expected at most 2**31, got int 3000000000")
