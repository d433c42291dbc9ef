"""``overlap fix`` on a Megatron-LM launch: a shell script or a functional-test YAML, edited as text.

An edit changes one flag (or one variable) on its own line and nothing else: a flag is added on a new line
beside a related flag (``--overlap-grad-reduce`` beside ``--use-distributed-optimizer``, with the
indentation and ``\\`` continuation of that line), removed with its line when it stands alone there (or
as its words when it shares the line), and ``CUDA_DEVICE_MAX_CONNECTIONS`` is exported just before the
launch line (or its literal ``NAME=value`` rewritten). Every candidate text is proven by reading it again
with the launch reader: exactly the intended flags and variables differ, everything else the launch
gives is unchanged (script_place.py makes the candidates). A flag that arrives through a variable whose words cannot be edited exactly, or an
edit no candidate proves, is skipped with the reason, and the file is not written. fix.loop drives the
rounds. Scripts get no ``# overlap:``
comments: a comment after a ``\\`` continuation would end the command.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.fix.common import Unplaceable
from overlap_cli.fix.script_place import candidates, flag_row


# ----------------------------------------------------------------------------------------------
# One round
# ----------------------------------------------------------------------------------------------


def apply_round(current: str, findings: list, view) -> tuple:
    """(new text, [Applied], [Skipped]): each finding's fix made on the launch in turn, each proven."""
    from overlap_cli.fix.common import Applied, Skipped

    new, applied, skipped = current, [], []
    for f in findings:
        try:
            candidate = apply_fix(new, view, f)
        except Unplaceable as exc:
            skipped.append(Skipped(f, str(exc)))
            continue
        if candidate != new:
            new = candidate
            applied.append(Applied(f, list(f.fix.edits), 0))
            view = _reload_view(view, new)  # later edits of this round place against the edited text
    return new, applied, skipped


def _reload_view(view, text: str):
    """The view's launch read again from ``text`` (only the launch matters for placing edits)."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    class _Placed:
        pass

    placed = _Placed()
    placed.launch = load_launch(view.launch.file, text, core=view.launch.core_version)
    return placed


# ----------------------------------------------------------------------------------------------
# One fix
# ----------------------------------------------------------------------------------------------


def apply_fix(text: str, view, finding) -> str:
    """``text`` with every edit of ``finding``'s fix made and proven, or Unplaceable."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    launch = view.launch
    for edit in finding.fix.edits:
        goal = _goal(launch, edit)
        if goal is None:
            continue  # already so
        last = "no place for it on this launch"
        for candidate in candidates(text, launch, goal, finding):
            problem = _prove(launch, candidate, goal)
            if problem is None:
                text = candidate
                launch = load_launch(launch.file, text, core=launch.core_version)
                break
            last = problem
        else:
            raise Unplaceable(f"{_describe(goal)} cannot be placed exactly ({last}); the file is left as it is")
    return text


def _describe(goal: tuple) -> str:
    kind, name, value = goal
    if kind == "env":
        return f"{name}={value}"
    return f"{'adding' if value is not None else 'removing'} {name}"


def _goal(launch, edit) -> Optional[tuple]:
    """("flag", dest, True | None) to give / drop a store_true-like flag, ("env", NAME, value); None when
    the launch already is so. Unplaceable for an edit with no flag behind it."""
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN

    key = edit.key
    if key.startswith("env."):
        name = key[4:]
        var = launch.env.get(name)
        if var is not None and var.how != "assignment" and var.value is not UNKNOWN and var.value == str(edit.value):
            return None
        return ("env", name, str(edit.value))
    row = flag_row(key, launch.core_version) if key.startswith("-") else None  # forms.megatron_lm turned shared rules' model.* edits into flags
    if row is None:
        raise Unplaceable(f"{key} is not a Megatron-LM flag")
    dest, give = row["dest"], edit.op != "remove"
    if row["action"] not in ("store_true", "store_false"):
        raise Unplaceable(f"{key} takes a value; edit it by hand")
    given = launch.args.get(dest)
    if give:
        if given is not None and given.value is not UNKNOWN and given.flag in row["flags"] and given.value == row.get("const", row["action"] == "store_true"):
            return None
        if given is not None:
            raise Unplaceable(f"{given.flag} is already given ({given.origin})")
        return ("flag", key, True)
    if given is None:
        return None
    if not given.placeable:
        raise Unplaceable(f"{given.flag} comes through {given.origin}, whose words cannot be edited exactly")
    if given.occurrences > 1:
        raise Unplaceable(f"{given.flag} is given {given.occurrences} times")
    return ("flag", given.flag, None)


# ----------------------------------------------------------------------------------------------
# The proof
# ----------------------------------------------------------------------------------------------


def _meaning(launch) -> tuple:
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN

    def v(x):
        return "<unknown>" if x is UNKNOWN else repr(x)

    args = {d: (a.flag, v(a.value)) for d, a in launch.args.items()}
    env = {n: v(e.value) for n, e in launch.env.items()}
    return args, env, v(launch.world_size), launch.script, len(launch.unknowns)


def _prove(launch, candidate: str, goal: tuple) -> Optional[str]:
    """None when ``candidate`` reads as ``launch`` with exactly ``goal`` made; else why not."""
    from overlap_cli.problems import InputError
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    try:
        new = load_launch(launch.file, candidate, core=launch.core_version)
    except InputError as exc:
        return f"the edited text does not read: {exc.problem.message}"
    args, env, ws, script, unknowns = _meaning(launch)
    kind, name, value = goal
    if kind == "env":
        env = {**env, name: repr(value)}
    else:
        dest = flag_row(name, launch.core_version)["dest"]
        if value is None:
            args.pop(dest, None)
        else:
            new_arg = new.args.get(dest)
            if new_arg is None or new_arg.flag != name:
                return "the new flag does not read as given"
            args[dest] = (name, _meaning(new)[0][dest][1])
    got = _meaning(new)
    if got[0] != args:
        changed = sorted(set(got[0].items()) ^ set(args.items()))
        return f"other flags would change ({', '.join(str(c[0]) for c in changed[:3])})"
    if got[1] != env:
        return "the launch environment would change"
    if (got[2], got[3], got[4]) != (ws, script, unknowns):
        return "the launch would read differently"
    return None
