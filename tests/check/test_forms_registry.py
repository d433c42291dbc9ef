"""The registry of input forms (overlap_cli/forms): every form has the same surface, and a file reaches the
form that reads it whatever its name says, each through the registry only."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_cli import forms

ROOT = Path(__file__).resolve().parents[2]
SURFACE = ("NAME", "FRAMEWORK", "recognise", "load", "resolve", "edit_round", "fix_session", "annotate",
           "launch_env")
ALL = [name for name, _ in forms.FORMS] + list(forms.HANDED_OVER)


@pytest.mark.parametrize("name", ALL)
def test_every_form_has_the_surface(name):
    form = forms.module(name)
    missing = [attr for attr in SURFACE if not hasattr(form, attr)]
    assert not missing, (name, missing)
    if name not in forms.HANDED_OVER:  # a form a file can be recognised as says what discovery does with it
        assert callable(getattr(form, "discover", None)), name


def test_form_names_are_unique_and_found_by_name():
    names = [forms.module(n).NAME for n in ALL]
    assert len(set(names)) == len(names), names
    assert all(forms.by_name(forms.module(n).NAME) is forms.module(n) for n in ALL)


@pytest.mark.parametrize("path,form", [
    ("examples/recipes/llama3_70b_debug_run.yaml", "bridge-yaml"),
    ("examples/megatron-lm/gpt_pretrain_tp_overlap.sh", "megatron-lm-launch"),
    ("examples/megatron-lm/model_config.yaml", "megatron-lm-test-yaml"),
    ("tests/data/python/llama3_70b_train.py", "bridge-python"),
    ("tests/data/python/llama3_70b_train.py::anything", "bridge-python"),
    ("tests/data/upstream/NVIDIA-NeMo+RL/examples/configs/grpo_math_1B_megatron.yaml", "nemo-rl"),
])
def test_a_file_reaches_its_form(path, form):
    assert forms.form_of(str(ROOT / path)).NAME == form


def test_a_framework_named_on_the_command_line_narrows_the_forms():
    yaml = str(ROOT / "examples/megatron-lm/model_config.yaml")
    assert forms.form_of(yaml, forced="bridge").NAME == "bridge-yaml"
    assert forms.form_of(str(ROOT / "examples/recipes/llama3_70b_debug_run.yaml"), forced="megatron-lm").NAME == \
        "megatron-lm-test-yaml"


def test_file_of_names_the_file_a_run_spec_edits():
    assert forms.file_of("a/train.py::debug_run") == "a/train.py"
    assert forms.file_of("a/launch.sh") == "a/launch.sh"
