"""The pipeline for one Megatron-LM launch (a shell script or a functional-test YAML): load -> resolve ->
the Megatron-LM rules, filling the same FileResult as a Bridge config (engine.check dispatches here)."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.results import FileResult, finding_order
from overlap_cli.problems import InputError


def framework_of(path: Optional[str], text: Optional[str], target) -> str:
    """"bridge" or "megatron-lm" for this input (frameworks.detect); a framework forced on the target
    (``--framework``, ``target.get("framework")``) wins."""
    from overlap_cli.frameworks.detect import framework_of as detect

    return detect(path, text, target.get("framework") if target is not None else None)


def launch_env_of(target) -> dict:
    """The environment a launch script is read with: --env-from-shell's exported variables, then --set's."""
    env = dict(target.shell_env or {}) if target is not None and target.get("env_from_shell") else {}
    env.update(getattr(target, "launch_vars", None) or {})
    return env


def check_launch(result: FileResult, path: str, target, text, selection, overrides=None):
    """Fill ``result`` for a launch; return the resolved view, or None on an input error. ``overrides``: the
    command line's dotlist words, given as the flags they stand for (frameworks.megatron_lm.dotlist)."""
    from overlap_cli.check.selection import filter_findings
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.frameworks.megatron_lm.resolver import resolve
    from overlap_cli.rules import run_rules

    try:
        if text is None:
            from overlap_cli.config.safe_read import read_text

            text = read_text(path)
        target = target.for_file(path, text)
        result.target = target.to_json(None)
        if not path.lower().endswith((".yaml", ".yml")):
            from overlap_cli.config.shell import read_launch_script
            from overlap_cli.config.entry_points import BRIDGE_RECIPE, classify

            found = read_launch_script(path, text, env=launch_env_of(target))
            if classify(found.script)[0] == BRIDGE_RECIPE:
                from overlap_cli.check.engine_recipe_launch import check_recipe_launch

                return check_recipe_launch(result, path, text, found, target, selection, overrides)
        launch = load_launch(path, text, env=launch_env_of(target))
        given = _apply_overrides(launch, overrides)
        view = resolve(launch, target)
        if launch.defaults_taken:
            launch.changeable = _changeable(view, path, text, target, overrides)
    except InputError as exc:
        result.error = exc.problem
        return None
    result.target = view.target.to_json(view.dp)
    result.effective = dict(view.effective)
    _name_decisions(result.effective, launch)
    if given:
        _label_command_line(result.effective, given)
    from overlap_cli.frameworks.megatron_lm.edits import launch_fix

    try:
        findings = run_rules(view)
        for f in findings:  # the fixes of rules shared with Bridge, as flag edits
            f.fix = launch_fix(f.fix, launch)
        findings = filter_findings(findings, path, text, selection)
    except InputError as exc:
        result.error = exc.problem
        return None
    result.findings = sorted(findings, key=finding_order)
    if view.world_source == "launch":
        where = f" (line {launch.world_size_line})" if launch.world_size_line else ""
        other = target.world_size
        also = f"; the target's {other} ({target.source_label('world_size')}) is not used" if other not in (None, view.world_size) else ""
        result.notes.append(f"world size {view.world_size} from the launch's torchrun sizes{where}{also}")
    elif launch.world_size is not None and view.world_size is not None and launch.world_size != view.world_size:
        where = f" (line {launch.world_size_line})" if launch.world_size_line else ""
        result.notes.append(f"world size {view.world_size} from {target.source_label('world_size')} (flag > file): "
                            f"the launch's own sizes{where} give {launch.world_size}")
    elif view.world_size is None:
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    if view.target.gpu_generation is None and view.max_conn_needs_one is None and view.tp and view.cp \
            and (view.tp > 1 or view.cp > 1):
        result.notes.append("GPU not given: whether CUDA_DEVICE_MAX_CONNECTIONS must be 1 depends on it (--gpu)")
    note = view.target.provenance_note()
    if note:
        result.notes.append(note)
    result.notes.extend(launch.sourced)
    return view


def _apply_overrides(launch, overrides) -> dict:
    if not overrides:
        return {}
    from overlap_cli.frameworks.megatron_lm.dotlist import apply_overrides

    return apply_overrides(launch, overrides)


def _changeable(view, path: str, text: str, target, overrides) -> list:
    """The effective keys (and ``target.world_size`` / ``target.data_parallel_size``) whose printed value the
    caller's environment (or the script's arguments) can change: read the launch again with no
    ``${VAR:-default}`` taken, and compare."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.frameworks.megatron_lm.resolver import resolve

    sizes = ("target.world_size", "target.data_parallel_size")
    try:
        other = load_launch(path, text, take_defaults=False, env=launch_env_of(target))
        _apply_overrides(other, overrides)
        resolved = resolve(other, target)
    except InputError:
        return list(view.effective) + list(sizes)
    again = resolved.effective
    out = []
    for key, v in view.effective.items():
        w = again.get(key)
        if w is None or (w.value, w.source) != (v.value, v.source):
            out.append(key)
    # the sizes printed with the target (the world from torchrun's / srun's words, DP from it)
    for key, mine, theirs in zip(sizes, (view.launch.world_size, view.dp), (other.world_size, resolved.dp)):
        if mine != theirs:
            out.append(key)
    return out


def _name_decisions(effective: dict, launch) -> None:
    """A value unknown because its flag is given on some paths only names the decision (Arg.reason), whichever
    stage wrote its reason."""
    from overlap_cli.config.argv import UNKNOWN
    from overlap_cli.frameworks.megatron_lm import facts as lm

    for key, v in effective.items():
        section, _, name = key.partition(".")
        arg = launch.args.get(lm.DEST_OF.get(key, name)) if section != "env" else None
        if arg is not None and arg.reason and arg.value is UNKNOWN and v.source == "unknown" and arg.reason not in v.reason:
            v.reason = f"{arg.reason}: its value is not known statically"


def _label_command_line(effective: dict, given: dict) -> None:
    """The values the command line's dotlist words set name it as their layer (as a merged Bridge run's do)."""
    from overlap_cli.frameworks.megatron_lm import facts as lm

    for key, v in effective.items():
        section, _, name = key.partition(".")
        dest = key if section == "env" else lm.DEST_OF.get(key, name)
        if dest in given and v.source in ("user", "shell"):
            v.layer = "command line"
            if "on the command line" not in v.reason:  # a reason written for a flag on a line of the file
                v.reason = f"{given[dest]} on the command line"
