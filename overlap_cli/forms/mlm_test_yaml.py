"""Megatron-LM's functional-test YAML: a top-level ``MODEL_ARGS:`` mapping of ``--flag: value`` pairs (and
``ENV_VARS``), read as its test harness builds the command line (config/mlm_yaml.py), then checked as a
Megatron-LM launch (forms.megatron_lm). NeMo's files of the same name with ``trainer.num_nodes``-style keys
are not this form (frameworks/detect.py).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.forms import megatron_lm
from overlap_cli.forms.base import Run
from overlap_cli.forms.megatron_lm import FRAMEWORK, annotate, edit_round, fix_session, launch_env, resolve  # noqa: F401

NAME = "megatron-lm-test-yaml"
FORM = __name__.rpartition(".")[2]


def recognise(path: Optional[str], head: Optional[str]) -> bool:
    from overlap_cli.frameworks.detect import MEGATRON_LM, YAML_SUFFIXES, framework_of

    if path is None or not path.lower().endswith(YAML_SUFFIXES) or head is None:
        return False
    return framework_of(path, head) == MEGATRON_LM


def load(path: str, text: Optional[str], target, overrides, lower) -> Run:
    if text is None:
        from overlap_cli.config.safe_read import read_text

        text = read_text(path)
    target = target.for_file(path, text)
    return megatron_lm.load_lm(FORM, path, text, target, overrides)


def discover(path: str, explicit: bool, context) -> tuple:
    """Named, it is checked (the check says what is wrong); in a folder only when ``MODEL_ARGS`` holds
    ``--flag`` keys (NeMo's files of the same name use ``trainer.num_nodes``-style keys: read as YAML
    configs, the Bridge form's sniff notes them)."""
    if explicit:
        return "check", [path]
    from overlap_cli.frameworks.detect import discoverable

    verdict = discoverable(path)
    if verdict is None:
        from overlap_cli.forms import bridge_yaml

        return bridge_yaml.discover(path, explicit, context)
    return ("check", [path]) if verdict else ("quiet", None)
