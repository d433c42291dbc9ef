"""The text side of ``overlap fix``: keep every byte the fix does not mean to change.

ruamel.yaml edits the tree well, but its dump of an *unedited* tree is not always the input byte for
byte (``key:`` becomes ``key: null``, a multi-line flow mapping is joined, some indents are normalised).
So the fixer never writes ruamel's text as is. With A the original, B ruamel's dump of A unedited and C
its dump after the edits, only the B->C line hunks are carried over onto A, at the A lines that
``difflib`` matched to B. A hunk whose lines cannot be matched is refused, never guessed.

Comments are found from PyYAML's scanner tokens (a ``#`` after the last token of a line), which keeps
``#`` inside quoted strings and block scalars out of it. The same scan places our
``# overlap: CODE reason`` notes after the edited values, and moves the user's comments off the lines
of a removed key (``keep_comments``) so that no comment goes with it.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

# Our own end-of-line note. The user's `# overlap: ignore[...]` suppressions do not match it.
NOTE_PREFIX = "# overlap: "
_OUR_NOTE = re.compile(r"\s*#\s*overlap:\s*[A-Z]{2,4}\d{3}\b.*$")
_NOTE_START = re.compile(r"#\s*overlap:\s*[A-Z]{2,4}\d{3}\b")


class Unmappable(Exception):
    """The edit cannot be carried onto the original text without changing other bytes."""


# ----------------------------------------------------------------------------------------------
# Transplanting ruamel's hunks onto the original text
# ----------------------------------------------------------------------------------------------


def transplant(a: str, b: str, c: str) -> str:
    """A with the B->C change applied at the matching places."""
    if a == b:
        return c
    a_lines, b_lines, c_lines = a.splitlines(True), b.splitlines(True), c.splitlines(True)
    b_to_a: dict = {}
    for tag, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                b_to_a[j1 + k] = i1 + k
    hunks = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, b_lines, c_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 < i2:
            if any(k not in b_to_a for k in range(i1, i2)):
                raise Unmappable(f"the edited lines near line {_line_hint(b_to_a, i1)} are not in the file's own layout")
            start, end = b_to_a[i1], b_to_a[i2 - 1] + 1
            if end - start != i2 - i1:
                raise Unmappable(f"the edited lines near line {start + 1} are interleaved with text the parser drops")
        else:
            before = b_to_a.get(i1 - 1) if i1 > 0 else -1
            after = b_to_a.get(i1) if i1 < len(b_lines) else len(a_lines)
            if before is not None and after is not None and after != before + 1:
                raise Unmappable(f"cannot tell where to insert near line {before + 2}")
            if before is None and after is None:
                raise Unmappable("cannot tell where to insert the new lines")
            start = end = after if after is not None else before + 1
        hunks.append((start, end, c_lines[j1:j2]))
    out, pos = [], 0
    for start, end, new in sorted(hunks, key=lambda h: (h[0], h[1])):
        if start < pos:
            raise Unmappable(f"overlapping edits near line {start + 1}")
        out.extend(a_lines[pos:start])
        out.extend(new)
        pos = end
    out.extend(a_lines[pos:])
    return "".join(out)


def _line_hint(b_to_a: dict, b_index: int) -> int:
    for k in range(b_index, -1, -1):
        if k in b_to_a:
            return b_to_a[k] + 1
    return 1


# ----------------------------------------------------------------------------------------------
# Comments: where code ends on each line, and which comments a text holds
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)  # a round scans its text and the edited one; the next round and the notes again
def _scan(text: str) -> tuple[dict, set]:
    """(line -> column where the last token on it ends, lines that lie inside a multi-line token).
    Callers only read the result (it is shared between them)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    code_end: dict = {}
    covered: set = set()
    for tok in yaml.scan(text, Loader=loader):
        s, e = tok.start_mark, tok.end_mark
        if (s.line, s.column) == (e.line, e.column):
            continue  # zero-width (block end, stream end, implicit key): no text of its own
        code_end[e.line] = max(code_end.get(e.line, 0), e.column)
        covered.update(range(s.line + 1, e.line))
    return code_end, covered


def comments(text: str) -> list:
    """[(0-based line, comment text)] for every comment in ``text``."""
    code_end, covered = _scan(text)
    out = []
    for i, line in enumerate(text.splitlines()):
        if i in covered:
            continue
        rest = line[code_end.get(i, 0):].strip()
        if rest.startswith("#"):
            out.append((i, rest))
    return out


def user_part(comment: str) -> str:
    """A comment without our own ``# overlap: CODE ...`` note.

    Our note ends an edited line's comment; on the comment line left by a removed key it comes first,
    and the user's comment of that line follows it after two spaces (``keep_comments``).
    """
    c = comment.strip()
    if _NOTE_START.match(c):
        cut = c.find("  #")
        c = c[cut:] if cut >= 0 else ""
    return _OUR_NOTE.sub("", c).strip()


def lost_comments(before: str, after: str) -> list:
    """User comments of ``before`` that ``after`` no longer holds (each as often as it was written)."""
    want = Counter(user_part(c) for _i, c in comments(before) if user_part(c))
    have = Counter(user_part(c) for _i, c in comments(after) if user_part(c))
    return sorted((want - have).elements())


# ----------------------------------------------------------------------------------------------
# Locating keys in a text (PyYAML node marks)
# ----------------------------------------------------------------------------------------------


def compose(text: str):
    import yaml

    return yaml.compose(text, Loader=_compose_loader())


@functools.lru_cache(maxsize=None)
def _compose_loader():
    """PyYAML's safe loader, remembering the tag of each short plain scalar: the tag depends only on the
    scalar's text and whether it was quoted (no path resolvers are registered), and a fix composes its
    text a few times per round, each time resolving the same ``true``, ``null`` and numbers again."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalar_node = yaml.ScalarNode
    tags: dict = {}

    class Loader(base):  # type: ignore[misc, valid-type]
        def resolve(self, kind, value, implicit):
            if kind is not scalar_node or len(value) > 32 or self.yaml_path_resolvers:
                return base.resolve(self, kind, value, implicit)
            key = (value, implicit)
            tag = tags.get(key)
            if tag is None:
                if len(tags) >= 4096:
                    tags.clear()
                tag = tags[key] = base.resolve(self, kind, value, implicit)
            return tag

    return Loader


def _find(root, path: tuple):
    """(key node, value node, outermost flow collection on the way or None) for ``path``."""
    import yaml

    node, flow = root, None
    key_node = None
    for part in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        if node.flow_style and flow is None:
            flow = node
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                key_node, node = k, v
                break
        else:
            return None
    return key_node, node, flow


def last_line(node) -> int:
    """Last line holding text of ``node`` (a block collection's end mark lies past trailing comments)."""
    import yaml

    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        end = node.end_mark
        return end.line if end.column > 0 else max(end.line - 1, node.start_mark.line)
    children = []
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            children += [k, v]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    return max([node.start_mark.line] + [last_line(c) for c in children])


def key_span(text: str, path: tuple) -> Optional[range]:
    """0-based lines from ``path``'s key to the end of its value (block style), or None."""
    place = key_place(text, path)
    return place[0] if place else None


def key_place(text: str, path: tuple) -> Optional[tuple]:
    """(``key_span``, the key's 0-based column), or None when the key is not in block style."""
    try:
        found = _find(compose(text), path)
    except Exception:
        return None
    if found is None or found[2] is not None:
        return None
    key_node, value, _flow = found
    return range(key_node.start_mark.line, last_line(value) + 1), key_node.start_mark.column


def note_line(root, path: tuple) -> Optional[int]:
    """The line on which an end-of-line note about ``path`` belongs."""
    import yaml

    found = _find(root, path)
    if found is None:
        return None
    key_node, value, flow = found
    if flow is not None:
        return flow.end_mark.line  # inside a flow collection: after it closes
    if isinstance(value, (yaml.MappingNode, yaml.SequenceNode)) and not value.flow_style:
        return key_node.start_mark.line
    if isinstance(value, yaml.ScalarNode) and value.style in ("|", ">"):
        return key_node.start_mark.line
    return value.end_mark.line


def add_notes(text: str, notes: list) -> str:
    """Put ``# overlap: CODE reason`` at the end of the line of each (path, note); the user's comment stays.

    Notes landing on one line (keys of one flow mapping) are joined with "; ". A note we wrote before on
    that line is replaced; a user's comment is kept in front of ours.
    """
    if not notes:
        return text
    root = compose(text)
    per_line: dict = {}
    for path, note in notes:
        line = note_line(root, path)
        if line is not None and note not in per_line.setdefault(line, []):
            per_line[line].append(note)
    code_end, covered = _scan(text)
    lines = text.splitlines(True)
    for i, parts in per_line.items():
        if i >= len(lines) or i in covered or i not in code_end:
            continue
        raw = lines[i]
        body = raw.rstrip("\r\n")
        eol = raw[len(body):]
        cut = code_end[i]
        code, rest = body[:cut], body[cut:]
        user = _OUR_NOTE.sub("", rest).rstrip()
        lines[i] = code + user + "  " + NOTE_PREFIX + "; ".join(parts) + eol
    return "".join(lines)


# ----------------------------------------------------------------------------------------------
# The user's comments on lines an edit takes away
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Removal:
    """Lines an edit takes out of the text: a removed key with its value (``key_too``), or only the old
    block value of a key that is set to something else."""

    span: range  # the key's line to the last line of its value
    column: int  # where the key starts on its line
    key_too: bool
    key: str  # the key as the edit names it (last part of the path)
    code: str  # the rule whose fix this is
    why: str  # the fix's reason in a few words
    moved_to: str = ""  # the section the same fix writes the same key and value into, if any


def keep_comments(text: str, removals: list, notes: bool = True) -> str:
    """``text`` with the user's comments moved off the lines the removals take away, to comment lines
    just after them, where the key stays readable once it is gone (same meaning: only comments move).

    - A removed key's line becomes one comment line at the key's indentation: our note
      ``# overlap: CODE removed KEY: VALUE (why)`` (``moved ... to SECTION`` when the fix writes it
      there), then, two spaces on, the user's comment of that line as written. ``notes=False`` leaves
      the note out (the user's comment stays).
    - Comment lines inside a removed value stay as written; end-of-line comments of its lines become
      comment lines at their line's indentation.
    - Comment lines directly above a removed key survive without help; with notes on, the note line
      follows them so that they do not seem to describe the next key.
    - A suppression (``# overlap: ignore[...]``) is never left alone at the start of a line, where it
      would cover the next key: the note goes in front of it, ``notes=False`` or not.
    - With notes on, every removed key leaves its note line, comment or not: the file says what went and
      why. A replaced block value without user comments is left to the tree edit (its lines just go).
    """
    if not removals:
        return text
    code_end, _ = _scan(text)
    found = dict(comments(text))
    lines = text.splitlines(True)
    replace: dict = {}  # line -> new text ("" drops the line)
    insert: dict = {}  # line -> comment lines to put after it
    taken: set = set()
    for r in removals:
        if taken & set(r.span):
            continue  # an edit of the same round already moved these lines' comments
        first = r.span.start
        own = [i for i in r.span if i in found and (r.key_too or i != first) and user_part(found[i])]
        above = r.key_too and notes and _user_comment_above(first, found, code_end)
        if not own and not above and not (notes and r.key_too):
            continue
        taken.update(r.span)
        note = _note(r, lines[first], code_end.get(first, 0))
        out = []
        head = user_part(found[first]) if r.key_too and first in own else ""
        if r.key_too and (notes or head):
            mine = NOTE_PREFIX + note if notes or _directive(head) else ""
            out.append(" " * r.column + "  ".join(x for x in (mine, head) if x))
        for i in own:
            raw = lines[i]
            body = raw.rstrip("\r\n")
            if i in code_end:
                replace[i] = body[: code_end[i]].rstrip() + raw[len(body):]
            else:
                replace[i] = ""
            if i == first and r.key_too:
                continue
            user = user_part(found[i])
            indent = body[: len(body) - len(body.lstrip(" \t"))]
            if i in code_end:  # an end-of-line comment: now a line of its own at its line's indentation
                mine = NOTE_PREFIX + note + "  " if _directive(user) else ""
                out.append(indent + mine + user)
            elif _directive(user) == "ignore":  # it covered a line of the removed value
                out.append(indent + NOTE_PREFIX + note + "  " + user)
            else:
                out.append(body)
        insert[r.span.stop - 1] = out
    if not insert:
        return text
    result = []
    for i, raw in enumerate(lines):
        raw = replace.get(i, raw)
        if raw:
            result.append(raw)
        if i in insert:
            if result and not result[-1].endswith("\n"):
                result[-1] += "\n"
            result.extend(c + "\n" for c in insert[i])
    return "".join(result)


def _note(r: Removal, key_line: str, code_end: int) -> str:
    what = r.key
    if r.key_too and len(r.span) == 1:
        written = " ".join(key_line[r.column : code_end].split())
        what = written if 0 < len(written) <= 80 else what
    if not r.key_too:
        done = f"replaced the value of {what}"
    else:
        done = f"moved {what} to {r.moved_to}" if r.moved_to else f"removed {what}"
    return " ".join(f"{r.code} {done} ({r.why})".split())  # single spaces: "  #" starts the user's part


def _user_comment_above(line: int, found: dict, code_end: dict) -> bool:
    j = line - 1
    while j >= 0 and j in found and j not in code_end:
        if user_part(found[j]):
            return True
        j -= 1
    return False


def _directive(comment: str) -> Optional[str]:
    """"ignore" or "ignore-file" when ``comment`` starts with a suppression, else None."""
    from overlap_cli.check.suppression import DIRECTIVE

    m = DIRECTIVE.match(comment)
    return m.group(1).lower() if m else None


# ----------------------------------------------------------------------------------------------
# The plain-data meaning of an edit, to check the text against
# ----------------------------------------------------------------------------------------------


def apply_plain(data: dict, op: str, path: tuple, value: Any = None) -> None:
    node = data
    for part in path[:-1]:
        if op == "remove" and not isinstance(node.get(part), dict):
            return  # nothing there to remove: the text gains no section either
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    leaf = path[-1]
    if op == "remove":
        node.pop(leaf, None)
    elif op == "add":
        node.setdefault(leaf, value)
    else:
        node[leaf] = value


def same(a: Any, b: Any) -> bool:
    """Equality that tells ``true`` from ``1`` and ``1`` from ``1.0`` (YAML values, not Python's)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))
