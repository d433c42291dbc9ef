"""What a launch reader hands on: the words after the training script, the launch environment, the world size.

Two readers produce it: ``config.shell`` (a launch script, parsed, never run) and ``config.mlm_yaml``
(Megatron-LM's functional-test YAML). Neither knows argparse; ``frameworks.megatron_lm.args`` gives the
words Megatron-LM's meaning. Every word keeps where it was written and whether that text can be edited
in place, so a fix can tell "this flag is literally here" from "this flag comes through a variable".
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


class _Unknown:
    """A value that cannot be known statically (``$(...)``, a variable from outside the script, ``${DATA_PATH}``)."""

    __slots__ = ()
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        # Neither true nor false: a rule that forgets to test ``is UNKNOWN`` first fails loudly in tests.
        raise TypeError("UNKNOWN has no truth value; test `value is UNKNOWN` first")

    def __reduce__(self):  # one instance across pickling (the --jobs workers)
        return (_Unknown, ())


UNKNOWN = _Unknown()

# Where a word came from, as Token.origin / Arg.origin spell it.
LAUNCH_LINE = "launch line"
MODEL_ARGS = "MODEL_ARGS"


def variable_origin(name: str, line: int) -> str:
    return f"variable {name} (line {line})"


@dataclass
class Token:
    """One word of the launch's argument list (after the training script)."""

    text: Optional[str]  # None: not known statically (``what`` says why)
    line: Optional[int]  # 1-based line and column of the word's first character in the file
    column: Optional[int]
    origin: str  # LAUNCH_LINE | "variable NAME (line N)" | MODEL_ARGS
    # The word is exactly this text, written once in the file at ``span`` (quotes included): editing that
    # span edits this word and nothing else. False for a word built by expansion or joined from parts.
    literal: bool = False
    span: Optional[tuple] = None  # (line, col_start, col_end), 1-based, end exclusive, when literal
    multi: bool = False  # an unknown unquoted expansion: it may be any number of words, none included
    what: str = ""  # for an unknown word: the expression (``$NUM_NODES``, ``$(nproc)``)
    prefix: str = ""  # for an unknown word: its known text before the first unknown stretch (``model.x=``)


@dataclass
class EnvVar:
    """A variable of the launch environment."""

    name: str
    value: object  # str, or UNKNOWN
    line: Optional[int]
    column: Optional[int]
    # "export" (export NAME=... before the launch), "prefix" (NAME=... torchrun ...), "ENV_VARS" (the
    # functional-test YAML), "assignment" (NAME=... without export: the launched process sees it only if
    # the caller's environment already exports NAME).
    how: str
    # The assignment text NAME=value is written literally at (line, col_start, col_end) (end exclusive).
    span: Optional[tuple] = None


@dataclass
class LaunchPath:
    """One way through a launch script to its launch line (``config.shell``), when conditions on values not
    known statically give more than one: the words that way passes, and the decisions that lead to it."""

    tokens: list  # Token, in order
    script: Optional[str]
    choices: tuple  # ((fork id, branch label), ...) in the order bash meets them (LaunchText.forks names them)


@dataclass
class LaunchText:
    """A reader's result, before argparse semantics."""

    file: str
    text: str
    kind: str  # "shell" | "yaml"
    script: Optional[str]  # basename of the training script, e.g. "pretrain_gpt.py"
    launch_line: Optional[int]
    tokens: list = field(default_factory=list)  # Token, in order
    env: dict = field(default_factory=dict)  # NAME -> EnvVar
    world_size: Optional[int] = None
    world_size_line: Optional[int] = None
    unknowns: list = field(default_factory=list)  # sentences, each naming its line
    # Where a new flag can be inserted on the launch: (line, column) just after the training script word
    # (shell), or the line after the last MODEL_ARGS key (yaml); None when there is no such place.
    insert_at: Optional[tuple] = None
    # More than one LaunchPath: the launch's words differ by conditions not known statically (``tokens`` are
    # then the first path's, and the flags that differ between paths are unknown). ``forks``: fork id ->
    # what decides it, e.g. 'the if on line 30 ([ "$NSYS" = 1 ])'.
    paths: list = field(default_factory=list)
    forks: dict = field(default_factory=dict)
    # A ``${VAR:-default}`` of a variable the script never sets was read as its default: the caller's
    # environment can change what is printed (forms.megatron_lm finds which values by reading it without them).
    defaults_taken: bool = False
    sourced: list = field(default_factory=list)  # sentences: the files read where the script sources them


def deciding_forks(choices: list, values: list, forks: dict) -> str:
    """What decides a value that differs between the paths of a launch: the decisions (``forks``: id ->
    description) whose two sides give different values. ``choices``: each path's decisions; ``values``:
    each path's value (comparable). Prefers the decisions that alone change the value between two paths."""
    taken = [dict() for _ in choices]
    order: dict = {}  # fork ids in the order first met
    for k, path in enumerate(choices):
        for fork_id, branch in path:
            taken[k][fork_id] = taken[k].get(fork_id, ()) + (branch,)
            order.setdefault(fork_id, None)
    # Two paths with different values differ in the forks of the symmetric difference of their (fork,
    # branches) items: each such fork is among the deciding ones, and alone when it is the only one. Sets,
    # not a comparison per fork: a 5,000-pattern case gives 5,000 forks on each path.
    items = [frozenset(t.items()) for t in taken]
    alone_set: set = set()
    among_set: set = set()
    n = len(choices)
    for p in range(n):
        for q in range(p + 1, n):
            if values[p] == values[q]:
                continue
            differ = {fork_id for fork_id, _ in items[p] ^ items[q]}
            among_set |= differ
            if len(differ) == 1:
                alone_set |= differ
    alone = [f for f in order if f in alone_set]
    among = [f for f in order if f in among_set]
    chosen = alone or among
    if not chosen:
        return "conditions not known statically"
    names = list(dict.fromkeys(forks.get(f, "a condition") for f in chosen))  # a case's patterns share one name
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
