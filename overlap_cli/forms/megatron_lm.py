"""What both Megatron-LM forms (a launch script, a functional-test YAML) share: the launch read into argparse's
meaning of its words (frameworks/megatron_lm/args.py), resolved in ``validate_args``' order
(frameworks/megatron_lm/resolver.py), the shared rules' fixes turned into flag edits, and the values the
caller's environment can change found by reading the launch again without ``${VAR:-default}`` taken.
"""

from __future__ import annotations

from overlap_cli.forms.base import Answer, Launch, Run
from overlap_cli.problems import InputError
from overlap_cli.results import Note

FRAMEWORK = "megatron-lm"


def launch_env_of(target) -> dict:
    """The environment a launch script is read with: --env-from-shell's exported variables, then --set's."""
    if target is not None and target.get("env_from_shell"):
        from overlap_cli.config.shell import CallerEnv

        env: dict = CallerEnv(target.shell_env or {})  # the launch's environment, known whole
    else:
        env = {}
    env.update(getattr(target, "launch_vars", None) or {})
    return env


def read_script(path: str, text, target) -> tuple:
    """(text, the file's own target, the launch as config/shell.py reads it) of a launch script."""
    from overlap_cli.config.shell import read_launch_script

    if text is None:
        from overlap_cli.config.safe_read import read_text

        text = read_text(path)
    target = target.for_file(path, text)
    return text, target, read_launch_script(path, text, env=launch_env_of(target))


def load_lm(form: str, path: str, text: str, target, overrides) -> Run:
    """The Megatron-LM launch of ``path`` (its text read, its own target applied)."""
    from overlap_cli.frameworks.megatron_lm import releases
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    # the megatron-core release decides the parser that reads the words (and every check after it)
    env, core = launch_env_of(target), releases.of(target).CORE_VERSION
    try:
        launch = load_launch(path, text, env=env, core=core)
    except InputError as exc:  # on the reading that takes the caller's defaults: read as the other callers run it
        from overlap_cli.frameworks.megatron_lm.paths import over_defaults_taken

        launch = over_defaults_taken(exc, lambda: load_launch(path, text, take_defaults=False, env=env, core=core))
    given = _apply_overrides(launch, overrides)
    run = Run(form=form, file=path, text=text, target=target, config=launch,
              notes=[Note(s, "sourced") for s in launch.sourced],
              launch=Launch(launch.world_size if isinstance(launch.world_size, int) else None, launch.world_size_line))
    run.detail = (given, tuple(overrides or ()))  # (flags the command line gave, its words)
    return run


def resolve(run: Run, findings_for) -> Answer:
    from overlap_cli.frameworks.megatron_lm.edits import launch_fix
    from overlap_cli.frameworks.megatron_lm.resolver import resolve as resolve_launch

    launch, target = run.config, run.target
    view = resolve_launch(launch, target)
    if launch.defaults_taken:
        launch.changeable = _changeable(view, run)
    effective = dict(view.effective)
    _name_decisions(effective, launch)
    if run.detail[0]:
        _label_command_line(effective, run.detail[0])

    findings = findings_for(view)
    for f in findings:  # the fixes of rules shared with Bridge, as flag edits
        f.fix = launch_fix(f.fix, launch)
    notes = []
    if view.target.gpu_generation is None and view.max_conn_needs_one is None and view.tp and view.cp \
            and (view.tp > 1 or view.cp > 1):
        notes.append(Note("GPU not given: whether CUDA_DEVICE_MAX_CONNECTIONS must be 1 depends on it (--gpu)", "gpu"))
    return Answer(view, effective, findings, view.target, view.dp, notes=notes)


def _apply_overrides(launch, overrides) -> dict:
    if not overrides:
        return {}
    from overlap_cli.frameworks.megatron_lm.dotlist import apply_overrides

    return apply_overrides(launch, overrides)


def _changeable(view, run: Run) -> list:
    """The effective keys (and ``target.world_size`` / ``target.data_parallel_size``) whose printed value the
    caller's environment (or the script's arguments) can change: read the launch again with no
    ``${VAR:-default}`` taken, and compare."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.frameworks.megatron_lm.resolver import resolve

    sizes = ("target.world_size", "target.data_parallel_size")
    try:
        other = load_launch(run.file, run.text, take_defaults=False, env=launch_env_of(run.target),
                            core=run.config.core_version)
        _apply_overrides(other, run.detail[1])
        resolved = resolve(other, run.target)
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


def launch_env(view) -> list:
    """``overlap env``: what validate_args checks of the launch environment (frameworks/megatron_lm/launch_env.py)."""
    from overlap_cli.frameworks.megatron_lm.launch_env import wanted

    return wanted(view)


def edit_round(current: str, findings: list, checked, comments: bool):
    """One round of ``overlap fix`` on a launch (fix.script: one flag or variable per line, proven)."""
    from overlap_cli.fix.script import apply_round

    return apply_round(current, findings, checked.view)


def fix_session(text: str):
    from overlap_cli.fix.common import Session

    return Session(text)


def annotate(checked) -> str:
    from overlap_cli.report.annotate import annotate_after

    return annotate_after(checked, comment="#", spell="launch")
