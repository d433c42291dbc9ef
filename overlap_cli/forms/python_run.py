"""A Megatron-Bridge run written in Python: a script (``FILE.py``) or a function returning a
ConfigContainer (``FILE.py::FUNCTION``), read with ``ast`` and never imported
(frameworks/bridge/python_reader.py), loaded as a two-layer Config (frameworks/bridge/python_load.py).

Its own recipe call is where it starts, and the recipe's launch (world size, GPU) is its target below every
statement about the file, as for ``--recipe``. Resolving: forms.bridge_run; fixing: fix.python (a literal
replaced in place, or an assignment added after the recipe call, proven by reading the file again);
annotating: one comment line per effective value after the code.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.launch_profile.profile import Target

from overlap_cli.forms import bridge_run
from overlap_cli.forms.base import Run
from overlap_cli.problems import InputError, InputProblem

NAME = "bridge-python"
FORM = __name__.rpartition(".")[2]
FRAMEWORK = bridge_run.FRAMEWORK
resolve = bridge_run.resolve
launch_env = bridge_run.launch_env


def recognise(path: Optional[str], head: Optional[str]) -> bool:
    """``FILE.py`` or ``FILE.py::FUNCTION`` (frameworks.detect.is_python)."""
    from overlap_cli.frameworks.detect import is_python

    return is_python(path)


def file_of(spec: str) -> str:
    """The file a run spec names (``FILE.py::FUNCTION`` -> ``FILE.py``; frameworks.detect.split_spec)."""
    from overlap_cli.frameworks.detect import split_spec

    return split_spec(spec)[0]


def load(spec: str, text: Optional[str], target: Target, overrides, lower) -> Run:
    """The run of ``spec`` checked by itself: run without words (argparse's defaults), in the environment
    --set / --env-from-shell give."""
    return _load(spec, text, target, overrides, None)


def _load(spec: str, text: Optional[str], target: Target, overrides, invocation, launched=None) -> Run:
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.frameworks.bridge import recipes
    from overlap_cli.frameworks.bridge.python_load import load_python
    from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
    from overlap_cli.launch_profile.profile import for_run

    path = file_of(spec)
    if text is None:
        text = read_text(path)
    target = target.for_file(path, text)
    if launched is not None:  # (world size, exported environment) of the launch that runs the script
        target = for_run(target, launch_world_size=launched[0], launch_env=launched[1])
    if (target.get("recipe") or target.get("base")) and target.source("recipe") == "flag" or target.get("base"):
        raise InputError(InputProblem(spec, "a Python run starts where its own code says (its recipe call or "
                                            "ConfigContainer.from_yaml): --recipe / --base apply to YAML override files"))
    cfg = load_python(spec, text, list(overrides or ()) or None, invocation or invocation_of(target), target)[0]
    start = cfg.python_run.start
    release = recipes.release_of(target)
    own = recipes.canonical(release, cfg.python_run.function) if cfg.python_run.function else None
    if own is not None and recipes.how(release, own) != "helper":  # Bridge's own recipe function: its name is its launch
        start = type(start)("recipe", own)
    if start.kind == "recipe":
        launch = recipe_launch(target.get("recipe") or start.name, target)
        if launch is not None:
            target = for_run(target, recipe=launch)
    return Run(form=FORM, file=spec, text=cfg.text, target=target, config=cfg, notes=bridge_run.config_notes(cfg),
               comments_file=cfg.file)


def load_from_launch(path: str, found, target: Target, overrides=()) -> Run:
    """The run of the Bridge training script a launch script starts (``found``: the launch as config/shell.py
    reads it; config.entry_points classed what it starts as a Bridge training script): the script found beside
    the launch (entry_points.launched_source), read with the launch's words as its ``sys.argv[1:]``, what the
    launch exports as its environment and the launch's world size. Its findings are placed in the script,
    which ``overlap fix`` edits; the launch script is not edited."""
    from overlap_cli.config.entry_points import launched_source
    from overlap_cli.forms.base import Launch
    from overlap_cli.results import Note

    import os

    from overlap_cli.config.document import Layer

    hit = launched_source(path, found.script)
    if hit is None:
        raise InputError(InputProblem(path, f"the Bridge training script it launches ({found.script}) is not found"))
    script = hit[0] if os.path.isabs(path) else os.path.relpath(hit[0])
    run = load_launched(script, found, target, overrides)
    # The checked file is the launch: the script's lines are another layer's, named as FILE:LINE (origin).
    cfg = run.config
    cfg.layer_list.append(Layer("file", path, path, {}))
    cfg.top = len(cfg.layer_list) - 1
    run.file, run.text, run.comments_file, run.detail = path, found_text(path), path, (LAUNCHED, launch_words(found))
    where = f" (line {found.launch_line})" if found.launch_line else ""
    shown = " ".join("…" if w is None else w for w in launch_words(found))
    run.notes.insert(0, Note(f"read as launched by {path}{where}: {script} with the launch's words "
                             f"({shown or 'none'}) and its exported environment", "read-as"))
    world = found.world_size if isinstance(found.world_size, int) else None
    run.launch = Launch(world, found.world_size_line)
    return run


def launched_verdict(path: str, script: str) -> tuple:
    """A launch of a Bridge training script, for discovery: checked when the script, found beside the launch,
    builds its run as a script (``__main__``) the way this form reads one; else skipped with the script's own
    folder verdict (a script that builds no ConfigContainer, one whose runs are functions it never calls)."""
    from overlap_cli.config.entry_points import launched_source

    hit = launched_source(path, script)
    if hit is None:
        return "check", [path]  # load says the script is not found
    source = hit[0]
    verdict, found = discover(source, True, None)
    name = script.rsplit("/", 1)[-1]
    if verdict == "skip":
        return "skip", f"not a training run: it launches the Megatron-Bridge script {name}, which is skipped ({found})"
    if source not in found:
        return "skip", (f"not a training run: it launches the Megatron-Bridge script {name}, which builds no run as a "
                        f"script (its runs are functions it does not call: {', '.join(found)})")
    return "check", [path]


def load_launched(script: str, found, target: Target, overrides=()) -> Run:
    """The run of a Python training script as a launch starts it (``found``: the launch as config/shell.py
    reads it, argv.LaunchText): its words after the script are the script's ``sys.argv[1:]`` (a word not
    known statically is None: argparse then leaves what it may set unknown), what the launch exports is its
    environment, over --env-from-shell's and --set's, and its world size the launch's."""
    from overlap_cli.config.argv import UNKNOWN as LAUNCH_UNKNOWN

    inv = invocation_of(target, launch_words(found))
    exported = {}
    for name, var in (found.env or {}).items():
        if var.how == "assignment":
            continue  # without export the script sees it only where the caller already exports it
        if var.value is LAUNCH_UNKNOWN or not isinstance(var.value, str):
            inv.environ.pop(name, None)
            inv.complete = False
        else:
            inv.environ[name] = exported[name] = var.value
    world = found.world_size if isinstance(found.world_size, int) else None
    return _load(script, None, target, overrides, inv, (world, exported))


def invocation_of(target, argv=None):
    """How the script runs: its words (``argv``, as a launch passes them: each a string, or None for a word
    not known statically; None: the words after ``--`` on overlap's command line, ``Target.script_argv``,
    or without them run by itself, argparse's defaults), and the environment a launch script is read with
    (forms.megatron_lm.launch_env_of: --env-from-shell's exported variables, then --set's)."""
    from overlap_cli.forms.megatron_lm import launch_env_of
    from overlap_cli.frameworks.bridge.python_abstract import Invocation

    if argv is None and target is not None:
        argv = target.script_argv
    return Invocation(argv=None if argv is None else list(argv), environ=launch_env_of(target),
                      complete=bool(target is not None and target.get("env_from_shell")))


def launch_words(found) -> list:
    """The launch's words after the script, as the script's ``sys.argv[1:]``: a word not known statically None."""
    return [None if t.text is None or t.multi else t.text for t in found.tokens]


LAUNCHED = "launched"  # Run.detail of a script read as a launch starts it (load_from_launch)


def found_text(path: str) -> str:
    from overlap_cli.config.safe_read import read_text

    return read_text(path)


def edit_round(current: str, findings: list, checked, comments: bool):
    """One round of ``overlap fix`` on the Python text (fix.python). A script read as a launch starts it is
    fixed in the script, never in the launch: fix declines the launch and names the command that fixes it."""
    from overlap_cli.fix.python import apply_round

    detail = checked.run.detail
    if isinstance(detail, tuple) and detail[0] == LAUNCHED:
        from overlap_cli.fix.common import Refused

        words = detail[1]
        shown = " ".join(w if w is not None else "…" for w in words)
        raise Refused(f"the launch is not edited; its findings are in {checked.view.cfg.file}, "
                      f"the script it runs: fix it there (overlap fix {checked.view.cfg.file}"
                      f"{' -- ' + shown if words else ''}){'' if all(w is not None for w in words) else ', giving the words … stands for'}")

    target = checked.run.target
    return apply_round(checked.result.file, current, findings, checked.view.cfg.python_run, target,
                       invocation_of(target))


def fix_session(text: str):
    from overlap_cli.fix.common import Session

    return Session(text)


def annotate(checked) -> str:
    from overlap_cli.report.annotate import annotate_after

    return annotate_after(checked, comment="#", spell="python")


def discover(spec: str, explicit: bool, context) -> tuple:
    """Each run the file holds (``FILE::FUNCTION``, or ``FILE`` for a script); a file that holds none (a test
    module, library code of the megatron package, a Megatron-LM entry point, a conversion script, a file that
    builds no ConfigContainer) is skipped with the reason, in a folder and named explicitly alike."""
    from overlap_cli.forms.sniff import python_skip, python_text_skip, read_head

    why = python_skip(spec)
    if why is not None:
        return "skip", why
    head = read_head(spec)  # the first MiB: a Python run is far smaller
    if head is None:
        return "check", [spec]
    why = python_text_skip(spec, head)
    if why is not None:
        return "skip", why
    from overlap_cli.frameworks.bridge.python_load import list_runs, not_a_run_problem

    text = head.decode("utf-8", errors="replace")
    runs = list_runs(spec, text)
    if runs:
        return "check", runs
    problem = not_a_run_problem(spec, text)
    return "skip", "not a training run: " + (problem.message if problem else "builds no ConfigContainer")
