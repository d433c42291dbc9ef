"""A launch script (``*.sh``, ``*.bash``, ``*.slurm``, ``*.sbatch``, or a file whose first line is a shell
``#!``), read the way bash would run it up to its launch line, never run (config/shell.py).

What the launch starts decides the run (frameworks/entry_points.py): Megatron-Bridge's recipe runner
(``run_recipe.py``) is a Bridge run, handed to forms.recipe_launch; a Bridge training script of its own is read
as that script run with the launch's words (forms.python_run.load_from_launch); anything else is read as a
Megatron-LM training launch (forms.megatron_lm: argparse's meaning of its words, ``validate_args``' order).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.forms import megatron_lm
from overlap_cli.forms.base import Run
from overlap_cli.forms.megatron_lm import FRAMEWORK, annotate, edit_round, fix_session, launch_env, resolve  # noqa: F401

NAME = "megatron-lm-launch"
FORM = __name__.rpartition(".")[2]


def recognise(path: Optional[str], head: Optional[str]) -> bool:
    from overlap_cli.frameworks.detect import MEGATRON_LM, YAML_SUFFIXES, framework_of

    if path is None or path.lower().endswith(YAML_SUFFIXES):
        return False
    return framework_of(path, head) == MEGATRON_LM


def load(path: str, text: Optional[str], target, overrides, lower) -> Run:
    from overlap_cli.config.entry_points import BRIDGE_RECIPE, BRIDGE_SCRIPT, classify

    text, target, found = megatron_lm.read_script(path, text, target)
    kind = classify(found.script)[0]
    if kind == BRIDGE_RECIPE:
        from overlap_cli.forms import recipe_launch

        return recipe_launch.load_found(path, text, found, target, overrides)
    if classify(found.script, beside=path)[0] == BRIDGE_SCRIPT:
        from overlap_cli.forms import python_run

        return python_run.load_from_launch(path, found, target, overrides)
    return megatron_lm.load_lm(FORM, path, text, target, overrides)


def discover(path: str, explicit: bool, context) -> tuple:
    """Checked when it has a Megatron training launch line (a Bridge training script of its own included);
    skipped with the reason when it launches no training (a conversion, inference, ...), no Megatron training (a
    test run, another framework's trainer, an unknown script), or is a template to fill in; a script without a launch
    line is skipped as not a launch when named (pre-commit names every changed file), else left to the walk (a
    fragment another script sources, or not a launch)."""
    from overlap_cli.forms.sniff import NOT_A_LAUNCH, script_verdict

    verdict, reason = script_verdict(path, explicit)
    if verdict == "bridge-script":
        from overlap_cli.forms.python_run import launched_verdict

        return launched_verdict(path, reason)
    if verdict == "skip":
        return "skip", reason
    if verdict == "none":
        return ("skip", NOT_A_LAUNCH) if explicit else ("no-launch", None)
    return "check", [path]
