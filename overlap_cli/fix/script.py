"""``overlap fix`` on a Megatron-LM launch: a shell script or a functional-test YAML, edited as text.

An edit changes one flag (or one variable) on its own line and nothing else: a flag is added on a new line
beside a related flag (``--overlap-grad-reduce`` beside ``--use-distributed-optimizer``, with the
indentation and ``\\`` continuation of that line), removed with its line when it stands alone there (or
as its words when it shares the line), and ``CUDA_DEVICE_MAX_CONNECTIONS`` is exported just before the
launch line (or its literal ``NAME=value`` rewritten). Every candidate text is proven by reading it again
with the launch reader: exactly the intended flags and variables differ, everything else the launch
gives is unchanged. A flag that arrives through a variable whose words cannot be edited exactly, or an
edit no candidate proves, is skipped with the reason, and the file is not written. Rounds repeat as in
``fix.loop`` (a fix can make another rule fire) until nothing changes. Scripts get no ``# overlap:``
comments: a comment after a ``\\`` continuation would end the command.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

MAX_ROUNDS = 5
_MAX_CONN = "CUDA_DEVICE_MAX_CONNECTIONS"

# Where a new flag goes: beside the first of these dests the launch gives (then beside the finding's flag).
ANCHORS = {
    "sequence_parallel": ("tp_comm_overlap", "tensor_model_parallel_size"),
    "overlap_grad_reduce": ("use_distributed_optimizer", "overlap_param_gather"),
    "overlap_param_gather": ("overlap_grad_reduce", "use_distributed_optimizer"),
    "use_distributed_optimizer": ("overlap_grad_reduce", "overlap_param_gather"),
}


def flag_row(flag: str) -> Optional[dict]:
    """The table row of a flag spelling (the first, where scripts define it differently: same dest)."""
    from overlap_cli.frameworks.megatron_lm.args import table

    rows = table()["by_flag"].get(flag)
    return rows[0] if rows else None


class Unplaceable(Exception):
    """The edit cannot be made exactly on this text; the message says why."""


# ----------------------------------------------------------------------------------------------
# The rounds
# ----------------------------------------------------------------------------------------------


@dataclass
class LaunchFix:
    """What fix_launch_text did; fix.loop turns it into its Outcome."""

    fixed: str
    applied: list = field(default_factory=list)  # (finding, edits, round)
    skipped: list = field(default_factory=list)  # (finding, why)
    problem: Optional[str] = None  # the file was refused as a whole (and left untouched)
    result: Any = None  # the check of the fixed text (or of the original on a problem)
    error: Any = None  # the launch could not be read


def fix_launch_text(path: str, text: str, target, unsafe: bool = False, comments: bool = True, selection=None,
                    threshold: str = "warning") -> LaunchFix:
    """fix.loop.fix_text for a launch."""
    from overlap_cli.check.engine import check as check_text
    from overlap_cli.fix import fixable

    out = LaunchFix(text)

    def check(t: str):
        return check_text(path, target, None, text=t, selection=selection)

    checked = check(text)
    if checked.result.error is not None:
        out.error, out.result = checked.result.error, checked.result
        return out
    current, view, result = text, checked.view, checked.result
    seen = {text}
    skipped_keys: set = set()
    for rnd in range(1, MAX_ROUNDS + 2):
        wanted = fixable(result.findings, unsafe, threshold)
        if not wanted:
            break
        new, applied = current, []
        for f in wanted:
            try:
                candidate = apply_fix(new, view, f)
            except Unplaceable as exc:
                k = (f.code, f.key, str(exc))
                if k not in skipped_keys:
                    skipped_keys.add(k)
                    out.skipped.append((f, str(exc)))
                continue
            if candidate != new:
                new = candidate
                applied.append((f, list(f.fix.edits), rnd))
                view = _reload_view(view, new)  # later edits of this round place against the edited text
        if new == current:
            break
        if rnd > MAX_ROUNDS:
            out.problem = f"fixes did not settle after {MAX_ROUNDS} rounds; the file is left untouched"
            break
        if new in seen:
            out.problem = "fixes undo each other; the file is left untouched"
            break
        after = check(new)
        if after.result.error is not None:
            out.problem = f"a fix produced a launch that does not check ({after.result.error.message}); the file is left untouched"
            break
        out.applied.extend(applied)
        seen.add(new)
        current, view, result = new, after.view, after.result
    if out.problem is not None:
        out.applied = []
        out.result = check(text).result
        return out
    out.fixed, out.result = current, result
    return out


def _reload_view(view, text: str):
    """The view's launch read again from ``text`` (only the launch matters for placing edits)."""
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    class _Placed:
        pass

    placed = _Placed()
    placed.launch = load_launch(view.launch.file, text)
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
        for candidate in _candidates(text, launch, goal, finding):
            problem = _prove(launch, candidate, goal)
            if problem is None:
                text = candidate
                launch = load_launch(launch.file, text)
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
        if var is not None and var.value is not UNKNOWN and var.value == str(edit.value):
            return None
        return ("env", name, str(edit.value))
    row = flag_row(key) if key.startswith("-") else None  # engine_lm turned shared rules' model.* edits into flags
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
# Candidate texts
# ----------------------------------------------------------------------------------------------


def _lines(text: str) -> list:
    return text.splitlines(True)


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or "\n"


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _candidates(text: str, launch, goal: tuple, finding):
    kind, name, value = goal
    if kind == "env":
        yield from (_env_yaml if launch.kind == "yaml" else _env_shell)(text, launch, name, value)
    elif value is None:
        yield from _remove_flag(text, launch, name)
    else:
        yield from _add_flag(text, launch, name, finding)


def _anchors(launch, flag: str, finding) -> list:
    """Args beside which a new flag may go, best first."""
    dest = flag_row(flag)["dest"]
    out = [launch.args[d] for d in ANCHORS.get(dest, ()) if d in launch.args]
    near = [a for a in launch.args.values() if a.flag == finding.key]
    out += near
    literal = [a for a in launch.args.values() if a.placeable and a.flag_span]
    out += sorted(literal, key=lambda a: (a.line or 0, a.column or 0))[-1:]
    seen, unique = set(), []
    for a in out:
        if id(a) not in seen and a.placeable and a.flag_span:
            seen.add(id(a))
            unique.append(a)
    return unique


def _add_flag(text: str, launch, flag: str, finding):
    lines = _lines(text)
    for anchor in _anchors(launch, flag, finding):
        i = anchor.flag_span[0] - 1
        end_line = anchor.value_span[0] - 1 if anchor.value_span else i
        if end_line != i or i >= len(lines):
            continue
        line = lines[i]
        body, eol = _body(line), _eol(line)
        indent = _indent(line)
        if launch.kind == "yaml":
            yield "".join(lines[: i + 1] + [f"{indent}{flag}: true{eol}"] + lines[i + 1:])
            continue
        if body.rstrip().endswith("\\"):
            yield "".join(lines[: i + 1] + [f"{indent}{flag} \\{eol}"] + lines[i + 1:])
        else:
            yield "".join(lines[: i + 1] + [f"{indent}{flag}{eol}"] + lines[i + 1:])  # an array or a string's lines
            yield "".join(lines[:i] + [body.rstrip() + f" \\{eol}", f"{indent}{flag}{eol}"] + lines[i + 1:])
        # Same line, right after the anchor's words.
        stop = (anchor.value_span or anchor.flag_span)[2] - 1
        yield "".join(lines[:i] + [body[:stop] + f" {flag}" + body[stop:] + eol] + lines[i + 1:])
    if launch.insert_at and launch.kind != "yaml":
        ln, col = launch.insert_at
        i = ln - 1
        if i < len(lines):
            body, eol = _body(lines[i]), _eol(lines[i])
            yield "".join(lines[:i] + [body[: col - 1] + f" {flag}" + body[col - 1:] + eol] + lines[i + 1:])
    elif launch.insert_at:
        ln, _col = launch.insert_at
        i = ln - 1
        indent = "  "
        for a in launch.args.values():
            if a.flag_span:
                indent = _indent(lines[a.flag_span[0] - 1])
                break
        eol = _eol(lines[i - 1]) if 0 < i <= len(lines) else "\n"
        yield "".join(lines[:i] + [f"{indent}{flag}: true{eol}"] + lines[i:])


def _remove_flag(text: str, launch, flag: str):
    lines = _lines(text)
    arg = next(a for a in launch.args.values() if a.flag == flag)
    if not arg.flag_span:
        return
    i = arg.flag_span[0] - 1
    last = (arg.value_span or arg.flag_span)
    if last[0] - 1 != i:
        return
    line = lines[i]
    body, eol = _body(line), _eol(line)
    start, stop = arg.flag_span[1] - 1, last[2] - 1
    before, after = body[:start], body[stop:]
    if launch.kind == "yaml":
        comment = after.split("#", 1)[1] if "#" in after else None
        if not before.strip() and comment is None:
            yield "".join(lines[:i] + lines[i + 1:])
        elif not before.strip():
            yield "".join(lines[:i] + [f"{before}#{comment}{eol}"] + lines[i + 1:])
        return
    rest = after.strip()
    if not before.strip() and rest in ("", "\\"):
        if rest == "" and i > 0 and _body(lines[i - 1]).rstrip().endswith("\\"):
            # The command's last word: the line before loses its continuation.
            prev = _body(lines[i - 1]).rstrip()
            prev = prev[:-1].rstrip()
            yield "".join(lines[: i - 1] + [prev + _eol(lines[i - 1])] + lines[i + 1:])
        yield "".join(lines[:i] + lines[i + 1:])
    # The words only, with the blanks after them.
    m = re.match(r"[ \t]*", after)
    tail = after[m.end():] if m else after
    yield "".join(lines[:i] + [before + tail + eol if tail or before.strip() else eol] + lines[i + 1:])


def _env_shell(text: str, launch, name: str, value: str):
    lines = _lines(text)
    var = launch.env.get(name)
    if var is not None:
        if var.span is None:
            return
        ln, c0, c1 = var.span
        body, eol = _body(lines[ln - 1]), _eol(lines[ln - 1])
        # NAME=... without export reaches torchrun only if the caller exports NAME: export it here.
        word = f"export {name}={value}" if var.how == "assignment" and not body[: c0 - 1].strip() else f"{name}={value}"
        yield "".join(lines[: ln - 1] + [body[: c0 - 1] + word + body[c1 - 1:] + eol] + lines[ln:])
        return
    i = (launch.launch_line or 1) - 1
    # The first line of the launch command: walk back over continuation lines ending in a backslash.
    while i > 0 and _body(lines[i - 1]).rstrip().endswith("\\"):
        i -= 1
    eol = _eol(lines[i]) if i < len(lines) else "\n"
    indent = _indent(lines[i]) if i < len(lines) else ""
    yield "".join(lines[:i] + [f"{indent}export {name}={value}{eol}"] + lines[i:])


def _env_yaml(text: str, launch, name: str, value: str):
    lines = _lines(text)
    var = launch.env.get(name)
    if var is not None:
        if var.span is None or not var.line:
            return
        ln = var.line
        body, eol = _body(lines[ln - 1]), _eol(lines[ln - 1])
        m = re.match(rf"^(\s*{re.escape(name)}\s*:\s*)([^#]*?)(\s*(#.*)?)$", body)
        if m:
            yield "".join(lines[: ln - 1] + [m.group(1) + value + m.group(3) + eol] + lines[ln:])
        return
    head = next((k for k, ln in enumerate(lines) if re.match(r"^ENV_VARS\s*:\s*(#.*)?$", _body(ln))), None)
    if head is not None:
        k = head + 1
        indent = "  "
        while k < len(lines) and (lines[k].startswith((" ", "\t")) or not lines[k].strip()):
            if lines[k].strip() and not lines[k].lstrip().startswith("#"):
                indent = _indent(lines[k])
            k += 1
        while k > head + 1 and not lines[k - 1].strip():
            k -= 1
        eol = _eol(lines[head])
        yield "".join(lines[:k] + [f"{indent}{name}: {value}{eol}"] + lines[k:])
        return
    top = next((k for k, ln in enumerate(lines) if re.match(r"^MODEL_ARGS\s*:", ln)), 0)
    eol = _eol(lines[top]) if lines else "\n"
    yield "".join(lines[:top] + [f"ENV_VARS:{eol}", f"  {name}: {value}{eol}"] + lines[top:])


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
    from overlap_cli.check.results import InputError
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    try:
        new = load_launch(launch.file, candidate)
    except InputError as exc:
        return f"the edited text does not read: {exc.problem.message}"
    args, env, ws, script, unknowns = _meaning(launch)
    kind, name, value = goal
    if kind == "env":
        env = {**env, name: repr(value)}
    else:
        dest = flag_row(name)["dest"]
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
