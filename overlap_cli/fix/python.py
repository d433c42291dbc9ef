"""``overlap fix`` on a Bridge run written in Python: an edit sets one key, on the text, keeping every other
character of the file (its formatting and comments).

- a key the run assigns a literal (``cfg.model.sequence_parallel = False``) gets the new literal in place of
  the old one, on that line;
- a key the run does not assign gets a new line ``cfg.<key> = <value>`` right after the statement that
  builds the config (the recipe call), with its indentation;
- a removal takes the run's own assignment of the key away: its line becomes a comment saying what went and
  why (the user's own comment of that line kept after it), as a removed YAML key's line does; refused when
  the recipe the run starts from holds another value than the class default (taking the line away would
  leave the recipe's value, not the default) or the assignment does not stand alone on its line;
- anything else is refused with the reason: a key assigned a non-literal expression, a key written only
  inside a Bridge helper or an ``if``, a value that is no Python literal.

Every candidate text is proven by reading it again: the key has the new value and nothing else the run
gives changed. fix.loop drives the rounds.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.fix.common import Unplaceable


def _literal(value) -> str:
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise Unplaceable(f"the value {value!r} is not a Python literal this fix writes")


def apply_edit(text: str, run, edit, note: str = "", release=None) -> str:
    """``text`` with ``edit`` (a results.Edit) made; Unplaceable when it cannot be placed exactly. ``note``:
    what a removed line's comment says (``CODE: why``)."""
    path = tuple(edit.key.split("."))
    if edit.op == "remove":
        return _remove(text, run, edit.key, path, note, release)
    new = _literal(edit.value)
    site = run.written.get(path)
    _refuse_elsewhere(run, edit.key, site)
    lines = text.splitlines(True)
    if site is not None:
        if site.value_span is None:
            raise Unplaceable(f"{edit.key} is assigned an expression at line {site.line}, not a literal this fix can replace")
        line, col, end_line, end_col = site.value_span
        if line != end_line:
            raise Unplaceable(f"the value of {edit.key} at line {line} spans lines")
        row = lines[line - 1]
        prefix, suffix = _bytes_to_chars(row, col), _bytes_to_chars(row, end_col)
        lines[line - 1] = row[:prefix] + new + row[suffix:]
        return "".join(lines)
    # What the start (the recipe) leaves unknown is decided before the new line runs; only what the run's
    # own later statements leave unknown could overwrite it.
    later = [p for p, why in (run.unknown or {}).items() if (run.base_unknown or {}).get(p) != why]
    if any(path[: len(p)] == p for p in later):
        raise Unplaceable(f"{edit.key} is set where the reader cannot follow; a new assignment could be overwritten")
    start = run.start
    if start.end_line is None or start.var is None:
        raise Unplaceable("no statement that builds the config to add the assignment after")
    attr = ".".join(path)
    if not all(part.isidentifier() for part in path):
        raise Unplaceable(f"{edit.key} is no attribute path")
    if path[0] == "env_vars" and len(path) == 2:
        stmt = f"{start.indent}{start.var}.env_vars[{path[1]!r}] = {new}\n"
    else:
        stmt = f"{start.indent}{start.var}.{attr} = {new}\n"
    at = start.end_line
    if at > len(lines):
        raise Unplaceable("the config is built on the last line")
    if not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    lines.insert(at, stmt)
    return "".join(lines)


def _remove(text: str, run, key: str, path: tuple, note: str, release) -> str:
    from overlap_cli.fix.common import removal_refused

    start = run.start
    why = removal_refused(run.base_data, path, key, f"recipe {start.name}" if start.kind == "recipe" and start.name
                          else "the config the run starts from", release)
    if why is not None:
        raise Unplaceable(why)
    site = run.written.get(path)
    if site is None:
        return text  # the run does not write it: nothing of the user's to take away
    _refuse_elsewhere(run, key, site)
    stmt = _statement_at(text, site)
    if stmt is None or stmt.lineno != stmt.end_lineno:
        raise Unplaceable(f"the assignment of {key} at line {site.line} does not stand alone on one line")
    lines = text.splitlines(True)
    row = lines[stmt.lineno - 1]
    head, tail = _bytes_to_chars(row, stmt.col_offset), _bytes_to_chars(row, stmt.end_col_offset)
    rest = row[tail:].rstrip("\r\n")
    if row[:head].strip() or (rest.strip() and not rest.strip().startswith("#")):
        raise Unplaceable(f"the assignment of {key} at line {site.line} shares its line with other code")
    from overlap_cli.fix.text import NOTE_PREFIX

    said = " ".join(row[head:tail].split())
    comment = f"{NOTE_PREFIX}{note.split(':', 1)[0]} removed {said} ({note.split(':', 1)[-1].strip()})" if note else \
        f"{NOTE_PREFIX}removed {said}"
    user = rest.strip()
    ending = row[len(row.rstrip("\r\n")):]
    lines[stmt.lineno - 1] = row[:head] + " ".join(comment.split()) + (f"  {user}" if user else "") + ending
    return "".join(lines)


def _refuse_elsewhere(run, key: str, site) -> None:
    """Unplaceable when the edit belongs in another module of the user's (the run calls into it): the text
    edited is the run's own file."""
    if site is not None and site.file and site.file != run.file:
        raise Unplaceable(f"{key} is set in {site.file}:{site.line}, a module the run imports: fix it there")
    start = run.start
    if site is None and start.file and start.file != run.file:
        raise Unplaceable(f"the config is built in {start.file}:{start.line}, a module the run imports: set {key} there")


def _statement_at(text: str, site):
    """The simple statement of the module that starts at ``site`` (line, 1-based column), or None."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.lineno == site.line \
                and node.col_offset + 1 == site.column:
            return node
    return None


def _bytes_to_chars(row: str, offset: int) -> int:
    """``ast`` gives UTF-8 byte columns; the index into the str."""
    return len(row.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


def _prove(before, after, edit, release) -> Optional[str]:
    """None when ``after`` (the new run) gives the edit's value and every other key as ``before``."""
    path = tuple(edit.key.split("."))
    got = _get(after.data, path)
    if edit.op == "remove":
        from overlap_cli.fix.common import is_class_default

        if got is not None and not is_class_default(path, got, release):
            return f"read again, {edit.key} is {got!r}"
    elif got != edit.value:
        return f"read again, {edit.key} is {got!r}"
    a, b = _flat(before.data), _flat(after.data)
    other = {k for k in set(a) | set(b) if k[: len(path)] != path and a.get(k) != b.get(k)}
    if other:
        return "the edit changes other keys too: " + ", ".join(".".join(map(str, k)) for k in sorted(other)[:3])
    return None


def _get(data, path):
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _flat(data, path=()):
    out = {}
    if isinstance(data, dict) and data:
        for k, v in data.items():
            out.update(_flat(v, path + (k,)))
    else:
        out[path] = data
    return out


def apply_round(spec: str, current: str, findings: list, run, target=None, invocation=None) -> tuple:
    """(new text, [Applied], [Skipped]): each finding's edits made in turn, each proven by reading the
    file again (``run``: the PythonRun of ``current``)."""
    from overlap_cli.fix.common import each_fix, own_words, reason
    from overlap_cli.frameworks.bridge import releases
    from overlap_cli.frameworks.bridge.python_load import read_run

    release = releases.of(target)
    state = {"run": run}  # the run of the text so far: a placed fix's edits are proven against it

    def place_fix(text: str, f) -> str:
        now = state["run"]
        for e in f.fix.edits:
            if _get(now.data, tuple(e.key.split("."))) == e.value and e.op != "remove":
                continue
            step = apply_edit(text, now, e, f"{f.code}: {own_words(e.comment) or reason(f.fix.message)}", release)
            after, _ = read_run(spec, step, invocation, target)
            why = _prove(now, after, e, release)
            if why is not None:
                raise Unplaceable(f"not proven: {why}")
            text, now = step, after
        state["run"] = now
        return text

    return each_fix(current, findings, place_fix)
