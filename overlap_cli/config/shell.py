"""A Megatron-LM launch script, read as bash would run it up to its launch line — parsed, never run.

The entry points: ``read_launch_script`` (the launch, as ``argv.LaunchText``), ``has_launch_line`` and
``launch_summary`` (folder discovery). Where each part of bash is handled:

    shell_lex, shell_parse     words and quotes; the command tree (its nodes: shell_tree)
    shell_eval                 the evaluator: one function per kind of node, control flow (if, case, &&)
    shell_values               Field / Hole / Var, and State: one path's variables, functions, decisions
    shell_expand               $VAR, ${ARR[@]}, ${VAR:-x}, $1, word splitting, case patterns
    shell_commands             a simple command: builtins, function calls, test / [ ] / [[ ]], (( ))
    shell_assign               NAME=value, arrays, export / declare / local / unset, read <<EOF
    shell_source               source FILE
    shell_inner                bash -c STRING, sbatch <<EOF
    shell_loops                for, for (( )), while, until
    shell_paths                forks, and paths merged again
    shell_cond, shell_arith    the conditions and the arithmetic, as pure functions
    shell_launch               the launch line of each path, merged into one LaunchText

``shell_eval`` walks the command tree the way bash would, over *paths*: a path
is one way through the script with its own variables. What is known statically is evaluated exactly: the
assignments and ``export`` / ``declare -x`` / ``unset`` / ``local``, ``if`` / ``elif`` / ``case`` /
``&&`` / ``||`` over ``[ ]``, ``test``, ``[[ ]]``, ``(( ))`` and ``let`` on known values, ``for`` over
known words, ``for (( ))`` / ``while`` / ``until`` with known conditions, ``break`` / ``continue``, functions
(called with their arguments), ``exit``, subshells and pipelines (whose assignments vanish). A condition
that depends on what the script does not say — a variable from the caller's environment, a file on the
launch machine, ``$(...)``, a command's exit status — is followed both ways: the path forks, and each fork
records the decision. Paths that end the same are one path again; more than ``MAX_PATHS`` are merged, the
values that differ between them unknown. A loop whose condition is not known runs its body until nothing
new changes, and what the body changes is unknown after it.

Expansion is ``shell_expand``'s (``$VAR``, ``${ARR[@]}``, ``${VAR:-default}``, ``$((...))``, word splitting):
what is not known is a hole in the word, never a guess. A ``${VAR:-default}`` of a variable the script never
sets takes the default, with a sentence saying the environment may set it.

The launch line is the first command that runs ``torchrun``, ``python -m torch.distributed.run`` (or
``.launch``), or ``python[3] ... pretrain_*.py`` (``launchers.find_program``, on the command's expanded
words); ``shell_launch`` turns each path that reaches it into its words, environment and world size, and
merges them: a value every path agrees on is known, one that differs is unknown with the decision named.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.argv import LaunchText
from overlap_cli.config.shell_budget import given_up_note
from overlap_cli.config.shell_eval import Reader
from overlap_cli.config.shell_inner import LAUNCH_WORDS
from overlap_cli.config.shell_paths import MAX_PATHS
from overlap_cli.config.shell_source import CWD_WORDS, DIR_OF, sourced_path
from overlap_cli.config.shell_values import State, Var, text_field

SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
__all__ = ("CallerEnv", "CWD_WORDS", "DIR_OF", "MAX_PATHS", "SHELL_SUFFIXES", "has_launch_line", "launch_summary",
           "read_launch_script", "sourced_path")


def read_launch_script(path: str, text: str, take_defaults: bool = True, env: Optional[dict] = None) -> LaunchText:
    """The launch of a script. ``take_defaults`` False: a ``${VAR:-default}`` of a variable the script
    never sets is not known (instead of its default). ``env``: the caller's exported variables (--set,
    --env-from-shell), which the script starts with."""
    with _NoCyclicGC():
        return _launch_of(path, text, take_defaults, env)


def _launch_of(path: str, text: str, take_defaults: bool, env: Optional[dict]) -> LaunchText:
    from overlap_cli.config.shell_launch import launch_text

    reader = _read(path, text, take_defaults, env)
    if not reader.records and not reader.inner:
        given_up = f" ({given_up_note(reader.given_up)})" if reader.given_up else ""
        raise InputError(InputProblem(
            path, "no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"
            + given_up))
    found = _inner_launch(reader) if not reader.records else launch_text(reader)
    notes = reader.placeholders + ([given_up_note(reader.given_up)] if reader.given_up else [])
    found.unknowns[:0] = [p for p in notes if p not in found.unknowns]
    found.sourced = list(reader.sourced_files) + [s for r in reader.inner[:1] for s in r[4].sourced_files]
    return found


class CallerEnv(dict):
    """The caller's exported variables known whole (``--env-from-shell``): a variable it lacks and the script
    does not set is unset at the launch (``shell_expand.lookup``), so ``--flag $UNSET`` hands argparse no
    value. A plain dict is some variables only (``--set``): the others stay unknown."""

    complete = True


def _start(env: Optional[dict]) -> State:
    """The state a script starts in: the caller's environment, each variable exported and known."""
    st = State()
    st.env_complete = getattr(env, "complete", False)
    for name, value in (env or {}).items():
        var = Var(name, [text_field(f"the caller's environment (${name})", value)], False, 0)
        var.exported = True
        st.vars[name] = var
    return st


_READINGS: dict = {}  # (text, take_defaults, env) -> Reader: the last readings, newest last
_KEEP = 8  # readings that found no launch: nothing reads them again but the fix of the file just read
# readings that found a launch: a folder's discovery reads every script before the check of each launch
# asks for the same reading again, so these are kept for the whole run (a repository has a few hundred)
_KEEP_LAUNCHES = 512


def _read(path: str, text: str, take_defaults: bool = True, env: Optional[dict] = None) -> Reader:
    """The script run as bash would, once per text and options: discovery, the check and the fix each ask for
    the same reading (a reading that looked for a sourced file by the script's path is kept for that path
    only). A reading is not changed by what is made of it (``shell_launch`` works on copies of its paths).
    Discovery reads the whole script too: the check that follows reads it whole anyway, and a reading that
    stopped at the first launch was read again (a launch reached on two paths, after an ``if``)."""
    key = (text, take_defaults, tuple(sorted((env or {}).items())), getattr(env, "complete", False))
    reader = _READINGS.pop(key, None)
    if reader is None or (reader.path != path and reader.path_read[0]):
        reader = _run(path, text, take_defaults, env)
    _rebase(reader, path)
    _READINGS[key] = reader
    _evict()
    return reader


def _evict() -> None:
    """The newest ``_KEEP`` readings without a launch and the newest ``_KEEP_LAUNCHES`` with one stay."""
    without, with_launch = [], []
    for k, r in _READINGS.items():
        (with_launch if r.records or r.inner else without).append(k)
    for key in without[:-_KEEP] + with_launch[:-_KEEP_LAUNCHES]:
        del _READINGS[key]


def _rebase(reader: Reader, path: str) -> None:
    """A reading of the same text made for another path names this one (its messages, its launch's file)."""
    if reader.path == path:
        return
    if reader.file == reader.path:
        reader.file = path
    reader.path = path
    for record in reader.inner:
        _rebase(record[4], path)


def _run(path: str, text: str, take_defaults: bool = True, env: Optional[dict] = None) -> Reader:
    """The script run as bash would; a template whose every path stops before its launch (``[ -z
    "$CONTAINER_IMAGE" ] && exit 1`` after ``CONTAINER_IMAGE=""``) is read again with its empty values as
    placeholders, so the launch it is written for is read, the values that use them unknown."""
    with _NoCyclicGC():
        reader = Reader(path, text)
        reader.take_defaults = take_defaults
        reader.run_script(_start(env))
        if reader.records or reader.inner or reader.given_up or not LAUNCH_WORDS.search(text):
            return reader
        again = Reader(path, text)
        again.take_defaults, again.empty_placeholders = take_defaults, True
        try:
            again.run_script(_start(env))
        except InputError:
            return reader
        return again if (again.records or again.inner) else reader


class _NoCyclicGC:
    """A reading and what is made of it create many small objects that live until it ends and hold no
    reference cycles it depends on freeing: the cyclic collector walking them all again and again was most
    of the time of a long script (40,000 lines: 1.2 s of 1.9 s). Reference counting still frees what dies."""

    def __enter__(self):
        import gc

        self.collecting = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        import gc

        if self.collecting:
            # what the reading made moves to the oldest generation untraversed (freeze then unfreeze): else
            # the first collections after it walk it all, once per younger generation it passes through
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _inner_launch(reader: Reader) -> LaunchText:
    """The launch of the first ``bash -c`` string that runs one, placed in the file: srun's task count (its
    words before the shell, and the script's ``#SBATCH``) is the world size of a launch without torchrun."""
    from overlap_cli.config.launchers import srun_world_size
    from overlap_cli.config.shell_containers import bcprun_sizes
    from overlap_cli.config.shell_launch import launch_text

    node, st, fields, at, inner = reader.inner[0]
    found = launch_text(inner) if inner.records else _inner_launch(inner)
    found.text = reader.text
    found.insert_at = None
    for t in found.tokens:
        t.literal, t.span = False, None
    for p in found.paths:
        for t in p.tokens:
            t.literal, t.span = False, None
    if found.world_size is None and inner.records and not any(
            "torchrun" in (fld.text or "") or "torch.distributed" in (fld.text or "") for fld in inner.records[0][2]):
        found.unknowns[:] = [u for u in found.unknowns if "srun starts the training script" not in u]
        srun_world_size(reader, found, fields, at)
        bcprun = bcprun_sizes(reader, fields, at)
        if bcprun is not None:
            k, nodes, per_node = bcprun
            count = f" as {nodes * per_node} processes ({nodes} x {per_node})" if nodes and per_node else ""
            found.unknowns.append(
                f"line {node.line}: bcprun starts the command{count}; the world size parse_args reads is WORLD_SIZE "
                "(megatron/training/arguments.py:144), which bcprun's launcher sets, not the script: unknown")
    what = ("the here-document it is given" if at >= len(fields) else "the string eval runs"
            if fields[0].text == "eval" else "the string bcprun --cmd runs" if bcprun_sizes(reader, fields, at)
            else "the string bash -c runs")
    found.unknowns.insert(0, f"line {node.line}: the launch is {what}; read as the script built it")
    before = next((f for f in fields[:at] if f.unknown and f.multi), None)
    if before is not None:
        found.unknowns.insert(1, f"line {node.line}: {before.what} before the shell is not known statically; read as "
                                 "a command that runs it")
    if len(reader.inner) > 1:
        found.unknowns.append("line(s) " + ", ".join(str(r[0].line) for r in reader.inner[1:])
                              + f": more launches; only the first (line {node.line}) is checked")
    return found


def has_launch_line(text: str) -> bool:
    """Whether a script has a launch line (folder discovery: other shell scripts are skipped quietly)."""
    if not LAUNCH_WORDS.search(text):
        return False
    try:
        reader = _read("<sniff>", text)
    except InputError:
        return True  # the check reports what is wrong with it
    return bool(reader.records or reader.inner)


def launch_summary(text: str) -> tuple:
    """For folder discovery: ("launch", the training script's path as far as it is known, or None), ("none", None) when no
    path reaches a launch line, or ("error", message) when bash could not read the script or torchrun would refuse
    its options."""
    if not LAUNCH_WORDS.search(text):
        return "none", None
    try:
        reader = _read("<sniff>", text)
    except InputError as exc:
        return "error", exc.problem.message
    while not reader.records and reader.inner:  # a bash -c string or here-document, within one perhaps
        reader = reader.inner[0][4]
    recs = reader.records
    if not recs:
        return "none", None
    node, st, fields, word_of, (kind, index), _added = recs[0]
    if kind in ("python", "script"):
        return "launch", _known_tail(fields[index]) if reader.script_name(fields[index], True) else None
    from overlap_cli.config.argv import LaunchText
    from overlap_cli.config.launchers import torchrun_options

    scratch = LaunchText(file="<sniff>", text=text, kind="shell", script=None, launch_line=None)
    try:
        at = torchrun_options(reader, scratch, fields, index + 1)
    except InputError as exc:  # torchrun itself refuses its options (--nnodes two): the check reports it
        return "error", exc.problem.message
    if at is None:
        return "launch", None
    # the training script's path as far as it is known, or the module ``torchrun -m`` runs (examples.inference.offline_inference)
    return "launch", _known_tail(fields[at]) if reader.script_name(fields[at], False) else fields[at].text


def _known_tail(field) -> str:
    """A launched file's path after its last unknown stretch (``/pretrain_gpt.py`` of ``${MEGATRON}/pretrain_gpt.py``,
    all of ``examples/multimodal/train.py``): config.entry_points looks its source up from it."""
    chars = field.chars
    k = len(chars)
    while k > 0 and chars[k - 1].__class__ is str:
        k -= 1
    return "".join(chars[k:])
