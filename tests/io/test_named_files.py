"""A file named on the command line is never skipped silently when it looks like what the check reads: each
of these passed with exit 0 (skipped, or read as another form) before."""

from __future__ import annotations

import pytest

from iolib import EXAMPLE_LAUNCH, EXAMPLE_YAML, assert_one_error_line, overlap
from overlap_cli.frameworks.detect import split_spec
from overlap_cli.forms import file_of, form_of


def test_named_yaml_with_extra_top_level_keys_and_a_bridge_section_is_checked(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("title: my run\nowner: me\nmodel:\n  tensor_model_parallel_size: 0\n")
    code, out, err = overlap("check", path)
    line = assert_one_error_line(code, out, err, "tensor_model_parallel_size")
    assert line.startswith(f"{path}:4:")
    code, out, err = overlap("check", tmp_path)  # in a walk it stays a model card beside the configs
    assert code == 0 and "skipped: not a training config" in err, (out, err)


def test_named_yaml_that_is_plainly_something_else_is_still_skipped_with_the_reason(tmp_path):
    path = tmp_path / "card.yaml"
    path.write_text("title: my model\nsummary: a card\nitems: 3\nmodel:\n  name: llama\n")
    code, out, err = overlap("check", path)
    assert code == 0 and f"{path}: skipped: not a training config" in err, (out, err)


@pytest.mark.parametrize("where", ["first byte", "last line"])
def test_named_launch_script_with_a_nul_byte_is_an_input_error(tmp_path, where):
    path = tmp_path / "launch.sh"
    text = EXAMPLE_LAUNCH.read_bytes()
    path.write_bytes(b"\x00" + text if where == "first byte" else text + b"# \x00\n")
    code, out, err = overlap("check", path)
    line = assert_one_error_line(code, out, err, "NUL byte")
    nul_line = 1 if where == "first byte" else text.count(b"\n") + 1
    assert line.startswith(f"{path}:{nul_line}:")
    code, out, err = overlap("check", tmp_path)  # in a walk: passed over with the reason
    assert code == 0 and "skipped: not a launch (a binary file)" in err, (out, err)


@pytest.mark.parametrize("spec,expected", [
    ("a::b.py", ("a::b.py", None)),
    ("run.py::main", ("run.py", "main")),
    ("x::y.py::run", ("x::y.py", "run")),
    ("run.py::Recipes.llama", ("run.py", "Recipes.llama")),
    ("run.py::", ("run.py", None)),
    ("conf::x.yaml", ("conf::x.yaml", None)),
])
def test_a_run_spec_names_a_function_only_after_a_py_file(spec, expected):
    assert split_spec(spec) == expected
    assert file_of(spec) == expected[0]


def test_python_file_with_colons_in_its_name_is_read_as_python(tmp_path):
    path = tmp_path / "a::b.py"
    path.write_text(EXAMPLE_YAML.read_text())  # YAML text: read as Python it is not a run, never read as YAML
    assert form_of(str(path)).NAME == "bridge-python"
    code, out, err = overlap("check", path)
    assert "TP102" not in out, out
    assert code in (0, 2) and "Traceback" not in err
