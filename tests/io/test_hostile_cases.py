"""The cases of "unbreakable on hostile input" that no other test held as written: each was an internal error,
a refusal of valid input, a hang or a silently dropped file before. Through the real CLI (a fresh interpreter
with a hang guard) unless the case is about how often something is done."""

from __future__ import annotations

import json

import pytest

from bench.hostile_python import PYTHON_HOSTILE
from iolib import EXAMPLE_YAML, assert_one_error_line, overlap

HEAD = "from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\ncfg = llama32_1b_pretrain_config()\n"


def _effective(path, *args) -> dict:
    code, out, err = overlap("check", path, "--format", "json", "--show-info", *args)
    assert "Traceback" not in err and "internal error" not in err, err
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return result["effective"]


def test_a_power_tower_of_assignments_is_unknown_with_the_budget_and_the_rest_is_read(tmp_path):
    """``A = 10**63; B = A**63; C = B**63; D = C**63`` took 66 s, one more line past 90 s."""
    path = tmp_path / "train.py"
    path.write_text(HEAD + "A = 10**63\nB = A**63\nC = B**63\nD = C**63\nE = D**63\n"
                    "cfg.model.tensor_model_parallel_size = E % 7 + 1\ncfg.model.pipeline_model_parallel_size = 2\n")
    effective = _effective(path)
    tp = effective["model.tensor_model_parallel_size"]
    assert tp["source"] == "unknown" and "an integer of more than 8,192 bits" in tp["reason"]
    assert effective["model.pipeline_model_parallel_size"]["value"] == 2


def test_an_integer_of_more_than_4300_digits_is_no_internal_error(tmp_path):
    """CPython refuses to convert an integer string of more than 4,300 digits (ValueError): in a Python run the
    value is unknown; in YAML it is the one-line error of a value Bridge could not read either."""
    digits = "9" * 5_000
    py = tmp_path / "train.py"
    py.write_text(HEAD + f"cfg.model.tensor_model_parallel_size = int('{digits}') % 3 + 1\n"
                  "cfg.model.pipeline_model_parallel_size = 2\n")
    effective = _effective(py)
    assert effective["model.tensor_model_parallel_size"]["source"] == "unknown"
    assert effective["model.pipeline_model_parallel_size"]["value"] == 2
    yml = tmp_path / "big.yaml"
    yml.write_text(f"model:\n  tensor_model_parallel_size: {digits}\n")
    code, out, err = overlap("check", yml)
    line = assert_one_error_line(code, out, err, "model.tensor_model_parallel_size", "4300 digits")
    assert line.startswith(f"{yml}:2:")


@pytest.mark.parametrize("value, kind", [("[a, b]", "list"), ("{a: 1}", "dict"), ("3", "int")])
def test_a_target_that_is_not_a_class_path_is_one_line_naming_the_key(tmp_path, value, kind):
    """A ``_target_`` that is a list was an internal TypeError (unhashable type: 'list')."""
    path = tmp_path / "run.yaml"
    path.write_text(f"model:\n  _target_: {value}\n  tensor_model_parallel_size: 2\n")
    code, out, err = overlap("check", path)
    line = assert_one_error_line(code, out, err, f"model._target_: _target_ is a {kind}")
    assert line.startswith(f"{path}:2:3:")


def test_a_walrus_and_a_500_branch_elif_are_valid_python_that_is_read(tmp_path):
    """Both were refused with exit 2."""
    walrus = tmp_path / "walrus.py"
    walrus.write_text(HEAD + "if (tp := 4) > 2:\n    cfg.model.tensor_model_parallel_size = tp\n"
                      "cfg.model.pipeline_model_parallel_size = 2\n")
    assert _effective(walrus)["model.pipeline_model_parallel_size"]["value"] == 2
    chain = tmp_path / "elif.py"
    branches = "".join(f"elif x == {i}:\n    cfg.model.tensor_model_parallel_size = {i % 8 + 1}\n" for i in range(1, 500))
    chain.write_text(HEAD + "x = 3\nif x == 0:\n    cfg.model.tensor_model_parallel_size = 1\n" + branches)
    assert _effective(chain)["model.tensor_model_parallel_size"]["value"] == 4


def test_a_deep_python_expression_is_its_file_s_error_and_the_folder_run_goes_on(tmp_path):
    """``ast.parse``'s RecursionError aborted a folder run with "internal error" and no file named."""
    deep = tmp_path / "deep.py"
    deep.write_text(HEAD + "cfg.model.tensor_model_parallel_size = " + "(" * 5_000 + "1" + ")" * 5_000 + "\n")
    (tmp_path / "ok.yaml").write_bytes(EXAMPLE_YAML.read_bytes())
    code, out, err = overlap("check", tmp_path)
    assert code == 2 and "internal error" not in out + err and "Traceback" not in err, (out, err)
    assert [ln for ln in err.splitlines() if ln.startswith(f"{deep}:")], err
    assert f"{tmp_path / 'ok.yaml'}:8:3: TP102" in out  # the other file is reported


def test_a_module_of_many_run_functions_is_parsed_once(run_cli, tmp_path, monkeypatch):
    """A file of 1,000 run functions took 70 s: the module was parsed again for each run it holds."""
    from overlap_cli.frameworks.bridge import python_interp

    calls: list = []
    real = python_interp._parse

    def counted(text, file):
        calls.append(file)
        return real(text, file)

    monkeypatch.setattr(python_interp, "_parse", counted)
    python_interp._TREES.clear()
    funcs = "".join(f"def run_{i}():\n    c = llama32_1b_pretrain_config()\n    c.model.tensor_model_parallel_size = "
                    f"{i % 8 + 1}\n    return c\n\n" for i in range(60))
    path = tmp_path / "runs.py"
    path.write_text(HEAD.splitlines()[0] + "\n" + funcs)
    code, out, err = run_cli("check", str(path))
    assert code in (0, 1), out + err
    assert "60 file(s)" in out, out
    assert calls == [str(path)]


@pytest.mark.parametrize("name, make, expected", [c for c in PYTHON_HOSTILE if c[0] != "thousand_run_functions"],
                         ids=[c[0] for c in PYTHON_HOSTILE if c[0] != "thousand_run_functions"])
def test_each_hostile_python_run_of_the_bench_is_checked_within_budgets(tmp_path, name, make, expected):
    """bench/hostile_python.py's inputs (it times them): the exit code and what the output must say."""
    path = make(tmp_path)
    code, out, err = overlap("check", path, "--show-effective", "--show-info")
    assert "Traceback" not in out + err and "internal error" not in out + err, err
    want_code, want_text = expected
    assert code == want_code and want_text in out + err, (code, out, err)
    if code == 2:
        assert_one_error_line(code, out, err, want_text)
