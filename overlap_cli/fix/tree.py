"""Edits on ruamel's round-trip tree that keep the comments ruamel stores on neighbouring entries.

ruamel keeps the comment lines that follow an entry in that entry's end-of-line comment token. Deleting
the entry would delete them; appending after it would put the new entry below them. The helpers here
move that "rest" to whichever entry now ends right before those lines. Nulls keep their spelling
(``null``, ``~`` or nothing), so that an unedited line dumps exactly as it was written.
"""

from __future__ import annotations

import re
from typing import Any

from overlap_cli.fix import text as fixtext
from overlap_cli.config import yamlrt
from overlap_cli.results import Edit


def split_key(key: str) -> tuple:
    return tuple(key.split("."))


class _Null:
    """A null as the file spells it (``null``, ``~``, nothing): ruamel keeps no spelling for None, and a
    dump that rewrote ``key:`` as ``key: null`` would turn untouched lines into changed ones."""

    __slots__ = ("spelling",)

    def __init__(self, spelling: str):
        self.spelling = spelling


_NULL_WORD = re.compile(r"(null|Null|NULL|~)(?![^\s,\]}#])")


def load(text: str):
    """Round-trip tree of ``text`` whose dump writes nulls as the file does (new nulls as ``null``)."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class _Representer(RoundTripRepresenter):
        pass

    def null(r, value):
        return r.represent_scalar("tag:yaml.org,2002:null", "null" if value is None else value.spelling)

    _Representer.add_representer(type(None), null)
    _Representer.add_representer(_Null, null)
    y, data = yamlrt.load(text)
    y.Representer = _Representer
    lines = text.splitlines()

    def mark(node) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if v is None and hasattr(node, "lc") and not merged(node, k):
                    try:
                        (kl, _kc), (vl, vc) = node.lc.key(k), node.lc.value(k)
                    except (KeyError, TypeError):
                        continue
                    m = _NULL_WORD.match(lines[vl], vc) if vl == kl and vl < len(lines) else None
                    node[k] = _Null(m.group(1) if m else "")
                else:
                    mark(v)
        elif isinstance(node, list):
            for v in node:
                mark(v)

    mark(data)
    return y, data


def plain(value):
    if isinstance(value, _Null):
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def is_null(value) -> bool:
    return value is None or isinstance(value, _Null)


def anchored(node: Any) -> bool:
    anchor = getattr(node, "anchor", None)
    return getattr(anchor, "value", None) is not None


def merged(mapping, key) -> bool:
    own = getattr(mapping, "_ok", None)
    return bool(getattr(mapping, "merge", None)) and own is not None and key not in own


def apply_edit(data, e: Edit) -> bool:
    """Apply one edit to the round-trip tree; False when the tree already says so."""
    path = split_key(e.key)
    parent = _ensure_mapping(data, path[:-1]) if e.op != "remove" else yamlrt.get_node(data, path[:-1])
    leaf = path[-1]
    if not isinstance(parent, dict):
        return False
    if e.op == "remove":
        if leaf not in parent:
            return False
        rest = _remove(parent, leaf)
        if not len(parent) and len(path) > 1:  # the mapping is now empty (`{}`): the lines follow its key
            _empty(yamlrt.get_node(data, path[:-2]), path[-2], rest)
        return True
    if leaf in parent:
        if e.op == "add" or fixtext.same(plain(parent[leaf]), e.value):
            return False
        _replace(parent, leaf, yamlrt.to_rt(e.value))
        return True
    _append(parent, leaf, yamlrt.to_rt(e.value))
    return True


def _ensure_mapping(data, path: tuple):
    from ruamel.yaml.comments import CommentedMap

    node = data
    for part in path:
        if not isinstance(node, dict):
            return None
        if part not in node:
            _append(node, part, CommentedMap())
        elif is_null(node[part]):
            _replace(node, part, CommentedMap())
        node = node[part]
    return node if isinstance(node, dict) else None


def _is_block(value) -> bool:
    if not isinstance(value, (dict, list)) or len(value) == 0:
        return False
    fa = getattr(value, "fa", None)
    return not (fa is not None and fa.flow_style())


def _holder(container, key):
    """(container, key) whose comment token follows the last line of ``container[key]``."""
    value = container[key]
    while _is_block(value):
        container, key = value, (list(value.keys())[-1] if isinstance(value, dict) else len(value) - 1)
        value = container[key]
    return container, key


def _slot(container) -> int:
    return 2 if isinstance(container, dict) else 0


def _take_rest(container, key) -> str:
    """Remove and return the comment lines after the end-of-line comment of ``container[key]``."""
    items = getattr(container, "ca", None)
    entry = items.items.get(key) if items is not None else None
    tok = entry[_slot(container)] if entry else None
    if tok is None or "\n" not in tok.value:
        return ""
    cut = tok.value.index("\n") + 1
    rest = tok.value[cut:]
    tok.value = tok.value[:cut]
    if tok.value == "\n":
        entry[_slot(container)] = None
    return rest


def _give_rest(container, key, rest: str) -> None:
    if not rest:
        return
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    entry = container.ca.items.setdefault(key, [None, None, None, None])
    tok = entry[_slot(container)]
    if tok is None:
        tok = entry[_slot(container)] = CommentToken("\n" + rest, CommentMark(0), None)
    else:
        tok.value = (tok.value if tok.value.endswith("\n") else tok.value + "\n") + rest
    value = container[key]
    if isinstance(value, (dict, list)) and not _is_block(value):
        # ruamel writes the comment after a flow collection from the collection's own slot
        value.fa.set_flow_style()
        value.ca.comment = [tok, None]


def _empty(container, key, rest: str) -> None:
    """Write the now empty ``container[key]`` as ``key: {}`` followed by its comments.

    ruamel keeps the comment after ``key:`` and those before the first entry on the mapping itself, and
    would write them between ``key:`` and ``{}`` (which then no longer parses); they go after ``{}``.
    """
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    mapping = container[key]
    eol, before = (list(mapping.ca.comment) + [None, None])[:2] if mapping.ca.comment else (None, None)
    own = "".join(" " * tok.column + tok.value for tok in before or ())
    if eol is None and not own:
        _give_rest(*_holder(container, key), rest)
        return
    entry = container.ca.items.setdefault(key, [None, None, None, None])
    entry[3] = None  # ruamel's copy of ``before`` on the parent's entry
    # `key: {}` is three characters longer than `key:`: the user's comment keeps its distance from the code
    column = eol.column + 3 if eol is not None else 0
    tok = CommentToken((eol.value if eol is not None else "\n") + own + rest, CommentMark(column), None)
    entry[2] = tok
    mapping.fa.set_flow_style()
    mapping.ca.comment = [tok, None]


def _append(mapping, key, value) -> None:
    rest = ""
    if len(mapping):
        holder = _holder(mapping, list(mapping.keys())[-1])
        rest = _take_rest(*holder)
        stays, rest = _split_rest(rest, _key_column(mapping))
        _give_rest(*holder, stays)
    elif id(mapping) in _PENDING_REST:  # the first entry of a mapping created below: it takes the comments
        waiting, parent, parent_key, rest = _PENDING_REST.pop(id(mapping))
        parent.ca.items[parent_key][2] = None
    mapping[key] = value
    if rest and isinstance(value, (dict, list)) and len(value) == 0:
        # A mapping created to hold what comes next. Given to it now, the comments that followed would
        # make ruamel write it in flow style (one long line); they stay on its key's line until it gets
        # its first entry, then follow that entry, so the new mapping is block style like the file.
        from ruamel.yaml.error import CommentMark
        from ruamel.yaml.tokens import CommentToken

        mapping.ca.items.setdefault(key, [None, None, None, None])[2] = CommentToken("\n" + rest, CommentMark(0), None)
        _PENDING_REST[id(value)] = (value, mapping, key, rest)
        return
    _give_rest(*_holder(mapping, key), rest)


# id(new empty mapping) -> (the mapping, its parent, its key, comment lines waiting for its first entry).
# Holding the mapping keeps its id from being reused while it waits.
_PENDING_REST: dict = {}


def _key_column(mapping):
    """The column of ``mapping``'s keys in the file, or None for a mapping the fix created."""
    try:
        return mapping.lc.key(list(mapping.keys())[0])[1]
    except (AttributeError, KeyError, TypeError, IndexError):
        return None


def _split_rest(rest: str, column) -> tuple:
    """(lines indented deeper than ``column``, the rest from the first line that is not).

    Comment lines after a mapping's last entry lead into what follows, so a new entry goes before them;
    but those indented into the last entry's own block (a note left where a nested key was removed)
    belong to that entry and stay with it. Blank lines right before the split go with the second part.
    """
    if not rest or column is None:
        return "", rest
    lines = rest.splitlines(True)
    cut = len(lines)
    for i, ln in enumerate(lines):
        if ln.strip() and len(ln) - len(ln.lstrip(" ")) <= column:
            cut = i
            break
    while cut > 0 and not lines[cut - 1].strip():
        cut -= 1
    return "".join(lines[:cut]), "".join(lines[cut:])


def _replace(mapping, key, value) -> None:
    rest = _take_rest(*_holder(mapping, key))
    if _is_block(mapping[key]):
        rest = _take_rest(mapping, key) + rest  # lines before the first nested entry go with the old value
    mapping[key] = value
    _give_rest(*_holder(mapping, key), rest)


def _remove(mapping, key) -> str:
    """Delete ``mapping[key]``; returns the comment lines still to place when the mapping is now empty."""
    keys = list(mapping.keys())
    at = keys.index(key)
    rest = _take_rest(*_holder(mapping, key))
    del mapping[key]
    mapping.ca.items.pop(key, None)
    if not rest:
        return ""
    if at > 0:
        _give_rest(*_holder(mapping, keys[at - 1]), rest)
    elif len(keys) > 1:
        from ruamel.yaml.error import CommentMark
        from ruamel.yaml.tokens import CommentToken

        entry = mapping.ca.items.setdefault(keys[1], [None, None, None, None])
        entry[1] = [CommentToken(rest, CommentMark(0), None)] + list(entry[1] or [])
    else:
        return rest
    return ""
