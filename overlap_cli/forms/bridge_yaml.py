"""A Megatron-Bridge config written as YAML: a full dump (``run_config.yaml``, ``ConfigContainer.to_yaml``),
a hand-written override file merged onto a catalog recipe or a dump (``--recipe`` / ``--base`` /
``# overlap: recipe=NAME`` / ``[tool.overlap]``), or Bridge's GPTModelConfig form (``model.transformer``'s
keys, read as ``model.X`` by config/model_form.py, a transform of this form's loader).

Loading: config.loader (one file) or config.layers (a run merged as Bridge's
``process_config_with_overrides`` builds it); resolving: forms.bridge_run; fixing: fix.yaml_edit on the
round-trip tree; annotating: report.annotate writes the effective values into a copy of the YAML.
This is the form a file no other form claims is read in.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.launch_profile.profile import Target

from overlap_cli.forms import bridge_run
from overlap_cli.forms.base import Run
from overlap_cli.problems import InputError, InputProblem

NAME = "bridge-yaml"
FORM = __name__.rpartition(".")[2]  # the registry's name of this module (forms.module)
FRAMEWORK = bridge_run.FRAMEWORK
resolve = bridge_run.resolve
launch_env = bridge_run.launch_env


def recognise(path: Optional[str], head: Optional[str]) -> bool:
    """The last form asked: any file the others leave (the loader says what is wrong with one that is not
    a config)."""
    return True


def layered(target: Target) -> bool:
    """Whether the run starts from a catalog recipe or a full dump (the file is an override on top)."""
    return bool(target.get("recipe") or target.get("base"))


def label(target: Target) -> str:
    """The result's file name when no file is given: the base the run starts from."""
    recipe, base = target.get("recipe"), target.get("base")
    if base:
        return base
    from overlap_cli.frameworks.bridge.recipes import release_of
    from overlap_cli.frameworks.bridge.runs import recipe_name

    try:
        return f"recipe {recipe_name(release_of(target), recipe)}"
    except InputError:
        return f"recipe {recipe}"


def load(path: Optional[str], text: Optional[str], target: Target, overrides, lower) -> Run:
    """The BridgeRun (frameworks.bridge.runs) this file and its target describe: the file alone, or the
    merged run its target's recipe / base starts, ``lower`` override files between."""
    from overlap_cli.config.loader import load_config
    from overlap_cli.forms import nemo_rl
    from overlap_cli.frameworks.bridge.dotlist_shape import bridge_config
    from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
    from overlap_cli.frameworks.bridge.runs import BridgeRun
    from overlap_cli.launch_profile.profile import for_run

    problem = nemo_rl.base_problem(target) or base_problem(target)
    if problem is not None:
        raise InputError(problem)

    def run(cfg, t) -> Run:
        return Run(form=FORM, file=path, text=cfg.text, target=t, config=cfg, notes=bridge_run.config_notes(cfg),
                   comments_file=cfg.file)

    if path is not None:
        if text is None and not lower and target.built_from is None and not layered(target):
            # a fixed target: nothing in the file can change it
            return run(load_config(path, overrides, shape=bridge_config(target)), target)
        if text is None:
            from overlap_cli.config.safe_read import read_text

            text = read_text(path)
        # The file's own target: its directive, its per-file-target entry, its pyproject's [tool.overlap].
        target = target.for_file(path, text)
    if target.get("recipe") and not target.get("base"):  # the recipe's own launch, ranked (launch_profile)
        launch = recipe_launch(target.get("recipe"), target)
        target = for_run(target, recipe=launch) if launch is not None else target
    if not layered(target):
        if path is None:
            raise InputError(InputProblem("<command line>", "no config file given"))
        return run(load_config(path, overrides, text=text, shape=bridge_config(target)), target)
    merged = BridgeRun(recipe=None if target.get("base") else target.get("recipe"), base=target.get("base"),
                       files=tuple(lower) + ((path,) if path is not None else ()), dotlist=tuple(overrides or ()), target=target)
    try:
        cfg = merged.load(text if path is not None else None)
        problem = base_without_model(cfg, target)
        if problem is not None:
            raise InputError(problem)
        return run(cfg, target)
    except InputError as exc:
        if exc.problem.file == "--recipe":  # an unknown recipe: say where its name was written
            raise InputError(recipe_problem(exc.problem, target, path, text)) from None
        raise


def base_problem(target: Target):
    """The problem of ``--base FILE`` naming a file of another framework or form (a Megatron-LM launch script
    or functional-test YAML, a Python run), or None: read as a Bridge dump, its keys would be taken for
    Bridge's and class defaults printed as that file's settings."""
    base = target.get("base") if target is not None else None
    if not base:
        return None
    from overlap_cli.frameworks.detect import MEGATRON_LM, framework_of

    if framework_of(base) == MEGATRON_LM:
        what = "a Megatron-LM launch" if not base.lower().endswith((".yaml", ".yml")) else "a Megatron-LM functional-test YAML (MODEL_ARGS)"
    elif base.lower().endswith(".py"):
        what = "a Python file"
    else:
        return None
    return InputProblem(base, f"is {what}, not a Megatron-Bridge config: --base takes a Bridge dump (e.g. a "
                              f"checkpoint's run_config.yaml); check it as a file: overlap check {base}", key="--base")


def base_without_model(cfg, target: Target):
    """The problem of a ``--base`` YAML without a ``model`` section, or None. ``ConfigContainer.model`` has no
    default (megatron/bridge/training/config.py:975 in 0.6.2): a file without it is no Bridge config, and its
    model settings would be class defaults standing in for a file that says nothing about a model."""
    base = target.get("base")
    layers = getattr(cfg, "layer_list", None) or ()
    if not base or not layers or layers[0].kind != "base" or isinstance((layers[0].data or {}).get("model"), dict):
        return None
    keys = ", ".join(sorted(str(k) for k in (layers[0].data or {}))[:5]) or "none"
    return InputProblem(base, f"is not a Megatron-Bridge config: no model section (top-level keys: {keys}); "
                              "--base takes a full Bridge dump such as a checkpoint's run_config.yaml", key="--base")


def recipe_problem(problem: InputProblem, target: Target, path, text=None) -> InputProblem:
    """An unknown recipe name, placed where it was written: the directive's line, the settings table."""
    source = target.source("recipe")
    if source == "directive" and path is not None:
        line, column = _directive_place(text or "", target.layers.get("directive"))
        return InputProblem(path, "# overlap: " + problem.message, key="recipe", line=line, column=column)
    if source in ("per-file-target", "pyproject"):
        where = target.settings_path or "pyproject.toml"
        key = "tool.overlap.recipe" if source == "pyproject" else "tool.overlap.per-file-target.recipe"
        return InputProblem(where, problem.message, key=key)
    return problem


def _directive_place(text: str, fallback) -> tuple:
    """(line, column) of ``recipe`` in the last ``# overlap: recipe=NAME`` comment line (the one that counts)."""
    import re

    place = (fallback, None)
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"[ \t]*#[ \t]*overlap[ \t]*:.*?\b(recipe)[ \t]*=", line, re.IGNORECASE)
        if m:
            place = (n, m.start(1) + 1)
    return place


def edit_round(current: str, findings: list, checked, comments: bool):
    """One round of ``overlap fix`` on the YAML text (fix.yaml_edit)."""
    from overlap_cli.fix import yaml_edit

    return yaml_edit.edit_round(current, findings, checked.view.cfg, comments, checked.view.release)


def fix_session(text: str):
    """How fix.loop works on this form's text (line ends, the final newline, notes as comments)."""
    from overlap_cli.fix import yaml_edit

    return yaml_edit.Session(text)


def annotate(checked) -> str:
    from overlap_cli.report.annotate import annotate_yaml

    return annotate_yaml(checked)


def discover(path: str, explicit: bool, context) -> tuple:
    """A YAML file is checked when it looks like a training config (a top-level ``model`` / ``ddp`` /
    ``comm_overlap`` / ``mixed_precision`` / ``optimizer`` section, or a recipe directive); a model card or an
    override file whose recipe nothing names is skipped with the reason, anything else as not a training
    config. Named explicitly (pre-commit names every changed file), an override file without a recipe is skipped
    as in a folder; any other file only when it is plainly another YAML mapping (forms.sniff)."""
    from overlap_cli.forms import sniff

    if path.lower().endswith(sniff.YAML_SUFFIXES):
        reason = sniff.yaml_skip(path, context.target, explicit)
        if reason is not None:
            return "skip", reason
    if not sniff.looks_like_config(path):
        # Named explicitly, a file with any ConfigContainer section (an env_vars-only override file) or in
        # flow style (`{model: ...}`, which the sniff cannot read) is still checked.
        if not explicit or context.configs_only or sniff.looks_like_other_yaml(path):
            return "skip", sniff.NOT_A_CONFIG
    return "check", [path]
