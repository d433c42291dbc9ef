"""The flags of a launch script whose paths differ (``config.shell``: conditions not known statically).

argparse reads each path's words (``args.parse_tokens``); a flag every path gives with the same value is
known; one some paths give and others do not, or give differently, is UNKNOWN, its reason naming the
decision that makes the difference (``config.argv.deciding_forks``). A path on which argparse exits
(an unknown flag, a bad value) never trains: it drops out, with a sentence, unless every path fails.
"""

from __future__ import annotations

from overlap_cli.problems import InputError
from overlap_cli.config.argv import UNKNOWN, deciding_forks


def merge_paths(found, strict_for, parse_tokens) -> tuple:
    """(dest -> Arg, the sentences for ``unknowns``, [(path choices, its dest -> Arg) of each path argparse
    reads]) of a LaunchText with more than one path."""
    parsed: list = []
    failed: list = []
    notes: list = []
    for path in found.paths:
        path_notes: list = []
        try:
            args = parse_tokens(found.file, path.tokens, path_notes, script=path.script,
                                strict=strict_for(path.script, found.kind))
        except InputError as exc:
            failed.append((path, exc))
            continue
        parsed.append((path, args))
        notes.extend(n for n in path_notes if n not in notes)
    if not parsed:
        raise failed[0][1]
    if failed:
        choices = [p.choices for p, _ in parsed] + [p.choices for p, _ in failed]
        values = [True] * len(parsed) + [False] * len(failed)
        problem = failed[0][1].problem
        notes.append(f"line {problem.line}: depending on {deciding_forks(choices, values, found.forks)}, the launch "
                     f"exits at start-up ({problem.describe()}); the other paths are checked")
    choices = [p.choices for p, _ in parsed]
    dests: list = []
    for _, args in parsed:
        dests.extend(d for d in args if d not in dests)
    out: dict = {}
    by_decision: dict = {}
    for dest in dests:
        given = [args.get(dest) for _, args in parsed]
        keys = [None if a is None else ("unknown" if a.value is UNKNOWN else repr(a.value)) for a in given]
        present = [a for a in given if a is not None]
        if len(set(keys)) == 1:
            out[dest] = present[0]
            continue
        arg = present[0]
        decided = deciding_forks(choices, keys, found.forks)
        shown = []
        for a in given:
            text = "not given" if a is None else _shown(a)
            if text not in shown:
                shown.append(text)
        reason = f"{arg.flag} (line {arg.line}) is {' or '.join(shown)} depending on {decided}"
        out[dest] = type(arg)(
            dest=dest, value=UNKNOWN, flag=arg.flag, line=arg.line, column=arg.column, origin=arg.origin,
            placeable=False, literal=False, occurrences=arg.occurrences, reason=reason)
        by_decision.setdefault(decided, []).append(arg.flag)
    for decided, flags in by_decision.items():
        notes.append(f"{decided} is not decided statically: {', '.join(flags)} "
                     f"{'is' if len(flags) == 1 else 'are'} unknown")
    return out, notes, [(path.choices, args) for path, args in parsed]


def over_defaults_taken(error: InputError, read_without_defaults):
    """The launch when the reading that takes the defaults of what the caller gives (``${2:-""}``,
    ``${VAR:-x}`` of a variable the script never sets) ends in ``error`` (argparse's exit, say): that is one
    caller -- the one who gives none of them --, so the launch is read again with those values unknown
    (``read_without_defaults``), as the callers who give them run it, and the exit is a note. When that reading
    fails too, every caller's launch exits: ``error`` is raised."""
    try:
        launch = read_without_defaults()
    except InputError:
        raise error from None
    problem = error.problem
    where = f"line {problem.line}: " if problem.line else ""
    launch.unknowns.insert(0, f"{where}with the defaults taken for what its caller gives (its arguments, its "
                              f"environment), the launch exits at start-up ({problem.describe()}); read with those "
                              "values unknown, as a caller who gives them runs it")
    return launch


def _shown(arg) -> str:
    if arg.value is UNKNOWN:
        return "unknown"
    if arg.value is True and not arg.flag.startswith("--no-"):
        return "given"
    return repr(arg.value) if isinstance(arg.value, str) else str(arg.value)
