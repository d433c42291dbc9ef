"""Scalar edits made straight on the text: most fixes need no ruamel.yaml round trip.

A ruamel load and dump of a 28 KB Bridge dump takes ~0.4 s; nearly every fix sets one scalar, adds one
key to a mapping that exists, or removes a key. Those are done here on the text, at the positions
PyYAML's composer (libyaml) gives, and only when the place is plain block style: a scalar value on one
line, a key at the start of its line, a non-empty block mapping to add to. Anything else (a mapping or
list value, a section to create, a flow collection, a mapping left empty) returns None and the caller
uses the round-trip tree instead. The caller proves the result either way (same data as the edits
describe, no comment lost), so a wrong guess here can only cost the fallback, never a wrong file.

A file with anchors, aliases or merge keys never comes here (``possible``): whether an edit would
change a shared node is the round-trip tree's question.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from overlap_cli.fix.text import compose, last_line, same

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLAIN_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")


def possible(text: str) -> bool:
    """No anchor, alias or merge key anywhere (libyaml's event stream: ~1 ms for a 28 KB dump)."""
    import yaml

    if "&" not in text and "*" not in text and "<<" not in text:
        return True
    if "<<" in text:
        return False
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return not any(
            isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None) for ev in yaml.parse(text, Loader=loader)
        )
    except yaml.YAMLError:
        return False


def apply_plain_edit(data: dict, e) -> bool:
    """``fixtree.apply_edit`` on plain data (dicts from the loader): False when the data already says so."""
    path = tuple(e.key.split("."))
    node = data
    if e.op == "remove":
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or path[-1] not in node:
            return False
        del node[path[-1]]
        return True
    for part in path[:-1]:
        if not isinstance(node, dict):
            return False
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    if not isinstance(node, dict):
        return False
    leaf = path[-1]
    if leaf in node and (e.op == "add" or same(node[leaf], e.value)):
        return False
    node[leaf] = e.value
    return True


def render(value: Any) -> Optional[str]:
    """A scalar as YAML text that reads back as the same value (the loader's YAML 1.1 meaning), or None."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if _PLAIN_STRING.match(value) and value.lower() not in _YAML11_WORDS:
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if value.isprintable() else None
    return None  # floats, dates, collections: the round-trip tree writes them


_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}


def apply(text: str, edits: list) -> Optional[str]:
    """``text`` with ``edits`` made in order, or None when one of them is not a plain-text edit."""
    for e in edits:
        text = _one(text, e)
        if text is None:
            return None
    return text


def _one(text: str, e) -> Optional[str]:
    import yaml

    if e.op != "remove" and (isinstance(e.value, (dict, list)) or render(e.value) is None):
        return None
    try:
        root = compose(text)
    except Exception:
        return None
    path = e.key.split(".")
    node, holder = root, None
    for part in path[:-1]:
        holder, node = _entry_of(node, part)
        if node is None:
            return None  # a section to create or a null to turn into one: the round-trip tree does it
    if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
        return None
    lines = text.splitlines(True)
    leaf = path[-1]
    found = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == leaf), None)
    if e.op == "remove":
        if found is None:
            return None
        key, value = found
        first, last = key.start_mark.line, last_line(value)
        if lines[first][: key.start_mark.column].strip() or _rest_of(lines[last], value) is None:
            return None
        if len(node.value) < 2:  # the mapping's last key: the section stays, an empty mapping (`{}`)
            head = _emptied(lines, holder, node)
            if head is None:
                return None
            lines[holder.start_mark.line] = head
        return "".join(lines[:first] + lines[last + 1 :])
    new = render(e.value)
    if found is not None:
        key, value = found
        if not isinstance(value, yaml.ScalarNode) or value.style in ("|", ">"):
            return None
        s, t = value.start_mark, value.end_mark
        if s.line != t.line or s.index >= t.index or s.line != key.start_mark.line:
            return None
        after = text[t.index :]
        gap = len(after) - len(after.lstrip(" "))
        if after[gap : gap + 1] == "#":  # an end-of-line comment keeps its column, as ruamel keeps it
            after = " " * max(1, gap + (t.index - s.index) - len(new)) + after[gap:]
        return text[: s.index] + new + after
    if not _PLAIN_KEY.match(leaf):
        return None
    first_key = node.value[0][0]
    column = first_key.start_mark.column
    if lines[first_key.start_mark.line][:column].strip():
        return None  # a mapping inside a sequence item (`- key: ...`)
    last = last_line(node.value[-1][1])
    if last >= len(lines) or not lines[last].endswith("\n"):
        return None
    # As the round-trip tree does: comment lines indented into the last entry stay with it; the new key
    # goes before the first line that is not (blank lines right before that go after the new key).
    at = last + 1
    j = at
    while j < len(lines):
        ln = lines[j]
        if not ln.strip():
            j += 1
            continue
        if ln.lstrip().startswith("#") and len(ln) - len(ln.lstrip(" ")) > column:
            j += 1
            at = j
            continue
        break
    return "".join(lines[:at] + [" " * column + f"{leaf}: {new}\n"] + lines[at:])


def _emptied(lines: list, holder, node) -> Optional[str]:
    """The line of ``holder`` (the key of block mapping ``node``) with ``{}`` as its value, when the key
    stands alone on its line (``ddp:`` or ``ddp:  # comment``) and the mapping starts on a later line."""
    if holder is None or node.start_mark.line <= holder.start_mark.line:
        return None
    row = lines[holder.start_mark.line]
    end = holder.end_mark.column
    rest = row[end:]
    if not rest.startswith(":"):
        return None
    after = rest[1:]
    body = after.rstrip("\r\n")
    if body.strip() and not body.strip().startswith("#"):
        return None
    return row[:end] + ": {}" + (body if body.strip() else "") + after[len(body):]


def _entry_of(node, part: str) -> tuple:
    """(key node, mapping value) of ``part`` in the mapping ``node``; (key, None) when its value is no
    mapping, (None, None) when there is no such key."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None, None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == part:
            return k, (v if isinstance(v, yaml.MappingNode) else None)
    return None, None


def _rest_of(line: str, value) -> Optional[str]:
    """What follows ``value`` on its last line, when that is only white space (else None)."""
    import yaml

    if isinstance(value, yaml.ScalarNode) and value.end_mark.line == value.start_mark.line:
        rest = line[value.end_mark.column :]
        return rest if not rest.strip() else None
    return ""  # a block collection: its last line ends with its last scalar, checked by the proof
