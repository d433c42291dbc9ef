"""A launch script that runs Megatron-Bridge's recipe runner (``scripts/training/run_recipe.py``): the run
is the recipe it names, merged with the launch's overrides in the runner's order
(frameworks/bridge/run_recipe.py), on the world size the launch starts (torchrun's or srun's sizes; a
``--world-size`` / ``--nodes`` flag or directive wins) — checked by the Bridge resolver and rules like any
merged run (forms.bridge_run). No file is recognised as this form: forms.launch_script hands a launch
over once it has read what the launch starts.

A finding is placed at the launch's word that set its key, else in the layer that did (the recipe); a fix is
an override word of the launch line (fix/recipe_launch.py).
"""

from __future__ import annotations

from overlap_cli.forms import bridge_run
from overlap_cli.forms.base import Launch, Run
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass
from overlap_cli.results import UNKNOWN, Note, Value

NAME = "bridge-recipe-launch"
FORM = __name__.rpartition(".")[2]
FRAMEWORK = bridge_run.FRAMEWORK
launch_env = bridge_run.launch_env


@dataclass
class Detail:
    """What placing findings and fixes needs beyond the Config: the runner's reading of the launch
    (``read``), the recipe's catalog name, and the line of each override word."""

    read: object
    found: object  # the launch as config/shell.py read it (its exported environment)
    recipe: str
    lines: dict  # override path tuple -> line of its word in the launch
    unknown_keys: list  # (key, why) of override words whose value is not known statically


def recognise(path, head) -> bool:
    return False  # handed over by forms.launch_script


def lookup_recipe(release: str, name: str):
    """The catalog's name of the recipe a launch names (None: not in the catalog of ``release``)."""
    from overlap_cli.frameworks.bridge import recipes

    return recipes.canonical(release, name)


def load(path: str, text, target, overrides, lower) -> Run:
    """A file read as this form: its launch line must start Bridge's recipe runner (forms.launch_script
    hands such a launch here through load_found when it meets one)."""
    from overlap_cli.config.entry_points import BRIDGE_RECIPE, classify
    from overlap_cli.forms.megatron_lm import read_script

    text, target, found = read_script(path, text, target)
    if classify(found.script)[0] != BRIDGE_RECIPE:
        raise InputError(InputProblem(path, f"not a launch of {RUNNER_NAME}"))
    return load_found(path, text, found, target, overrides)


RUNNER_NAME = "scripts/training/run_recipe.py"


def load_found(path: str, text: str, found, target, overrides) -> Run:
    """The Bridge run of a launch already read by config/shell.py (``found``)."""
    from overlap_cli.config.layers import COMMAND_LINE
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.frameworks.bridge import recipes, run_recipe
    from overlap_cli.frameworks.bridge.runs import recipe_run
    from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
    from overlap_cli.launch_profile.profile import RecipeLaunch, for_run

    read = run_recipe.read(found)
    if read.recipe is None:
        raise InputError(InputProblem(path, f"{run_recipe.RUNNER}: the recipe it runs is not known statically",
                                      line=read.recipe_line))
    release = recipes.release_of(target)
    name = lookup_recipe(release, read.recipe)
    if name is None:
        raise InputError(InputProblem(path, _not_in_catalog(release, read.recipe), line=read.recipe_line))
    dotlist = []
    for raw, line in read.overrides:
        try:
            dotlist.append((parse_override(raw), line))
        except InputError as exc:
            raise InputError(InputProblem(path, exc.problem.message, line=line)) from None
    exported = {n: e.value for n, e in found.env.items() if e.how in ("export", "prefix") and isinstance(e.value, str)}
    # what the launch exports is the process's environment: it wins over env_vars (setdefault)
    target = for_run(target, recipe=recipe_launch(name, target) or RecipeLaunch(name), launch_world_size=found.world_size,
                     launch_env=exported)
    cfg = recipe_run(name, None, [o for o, _ in dotlist] + list(overrides or ()), target=target).load()
    for layer in cfg.layer_list:  # the launch's words are the command line: name the script's lines
        if layer.kind == COMMAND_LINE:
            layer.file, layer.label = path, path
            layer.positions = {o.path: (line, 1) for o, line in dotlist}
    _unknown_overrides(cfg, read.unknown_keys)
    run_recipe.sync_sequence_length(cfg)  # before validate, as the runner does
    notes = [Note(f"read as a Megatron-Bridge run: {run_recipe.RUNNER} --recipe {name} (line {read.recipe_line}),"
                  f" {len(read.overrides)} override(s) from the launch", "read-as")]
    notes.extend(Note(n, "general") for n in read.notes)
    from overlap_cli.frameworks.bridge import releases

    has_peft = isinstance(cfg.get(("peft",)), dict)
    scheme = run_recipe.mode_note(read.mode, releases.of(target).RECIPE_PEFT_SCHEME if has_peft else None)
    if scheme is not None:
        notes.append(Note(scheme, "general"))
    notes.extend(Note(s, "general") for s in found.unknowns if "is not known statically" in s or "placeholder" in s)
    notes.extend(bridge_run.config_notes(cfg))
    return Run(form=FORM, file=path, text=text, target=target, config=cfg, notes=notes,
               launch=Launch(found.world_size, found.world_size_line),
               detail=Detail(read, found, name, {o.path: line for o, line in dotlist}, list(read.unknown_keys)))


def resolve(run: Run, findings_for):
    answer = bridge_run.resolve(run, findings_for)
    detail, cfg = run.detail, run.config
    for key, v in answer.effective.items():
        env = _launch_env(run, key)
        if env is not None and v.source == "shell" and env.how in ("export", "prefix"):
            v.reason = v.reason.replace("exported in the shell", f"exported by the launch (line {env.line})", 1)
            v.layer = f"{run.file}:{env.line}"
    _mark_unknown(answer.effective, detail.unknown_keys)
    unknown = {k for k, v in answer.effective.items() if v.source == UNKNOWN}
    for f in answer.findings:  # a finding is at the launch's word that set its key, else in the layer that did
        path_ = tuple(f.key.split(".")) if f.key else None
        if path_ is not None and path_ in detail.lines:
            f.line, f.column, f.origin = detail.lines[path_], None, None
        else:
            f.line = f.column = None
            f.origin = cfg.label(path_) if path_ is not None else f"recipe {detail.recipe}"
    answer.findings = [f for f in answer.findings if f.key not in unknown]
    return answer


def _launch_env(run: Run, key: str):
    if not key.startswith("env."):
        return None
    return run.detail.found.env.get(key[len("env."):])


def _not_in_catalog(release: str, name: str) -> str:
    """A launch names a recipe the catalog of ``release`` does not hold. The catalog holds that release's recipe
    functions and public aliases (built, or read from its source); a name it lacks is no recipe of that
    release, or one its source reader could not read, so the line says what is known — it is not in the catalog."""
    from overlap_cli.frameworks.bridge.recipes import closest

    near = closest(release, name)
    hint = f"; closest: {', '.join(near)}" if near else " (overlap recipes list shows them all)"
    return (f"scripts/training/run_recipe.py --recipe {name}: not in overlap-cli's catalog of Megatron-Bridge "
            f"{release} recipes{hint}")


def _unknown_overrides(cfg, unknown_keys: list) -> None:
    """An override whose value is not known statically (``model.tensor_model_parallel_size=$TP`` in a loop) is
    a key the run leaves unknown: its value leaves the config and what Bridge derives from it is found by
    resolving with it varied (frameworks/bridge/unknowns.py), never from the recipe's value it replaces."""
    for key, why in unknown_keys:
        if not key:
            continue  # a word that may be any override: every value it could set is marked below
        path = tuple(key.split("."))
        node = cfg.data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
        cfg.unknown = {**cfg.unknown, path: why}


def _mark_unknown(effective: dict, unknown_keys: list) -> None:
    """A word of the launch that may be any override (``$EXTRA_ARGS``) makes every value it could set unknown
    (all of them); an override of a known key with an unknown value is unknown through ``cfg.unknown``
    (_unknown_overrides)."""
    for key, why in unknown_keys:
        if key == "":
            for k, v in list(effective.items()):
                effective[k] = Value(UNKNOWN, UNKNOWN, why, layer=v.layer)


def edit_round(current: str, findings: list, checked, comments: bool):
    """One round of ``overlap fix``: each edit an override word of the launch line (fix.recipe_launch)."""
    from overlap_cli.fix.recipe_launch import apply_round

    return apply_round(current, findings, checked)


def fix_session(text: str):
    from overlap_cli.fix.common import Session

    return Session(text)


def annotate(checked) -> str:
    from overlap_cli.report.annotate import annotate_after

    return annotate_after(checked, comment="#", spell="launch")
