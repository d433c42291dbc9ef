"""Round-trip YAML (ruamel.yaml): the tree used where text is written back (annotate, fix).

Comments, key order and quoting survive a load/dump. Indentation is detected from the file so that a
dump of an unedited tree reproduces the input as closely as ruamel allows; ``fixer`` then transplants
only the changed lines onto the original text.
"""

from __future__ import annotations

import re
from typing import Any


def detect_indent(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, sequence dash offset) as used by the file."""
    mapping = None
    offset = None
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"^(\s*)[^\s#-][^#]*:\s*(#.*)?$", line)
        if not m:
            continue
        parent = len(m.group(1))
        nxt = lines[i + 1]
        n = re.match(r"^(\s*)(- )?\S", nxt)
        if not n or not nxt.strip() or nxt.lstrip().startswith("#"):
            continue
        child = len(n.group(1))
        if child <= parent and not n.group(2):
            continue
        if n.group(2):
            if offset is None:
                offset = child - parent
        elif mapping is None:
            mapping = child - parent
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = max(offset or 0, 0)
    return mapping, offset + 2, offset


def make_yaml(text: str = ""):
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    m, s, o = detect_indent(text)
    y.indent(mapping=m, sequence=s, offset=o)
    y.allow_duplicate_keys = False
    return y


def load(text: str):
    y = make_yaml(text)
    return y, y.load(text)


def dump(y, data) -> str:
    import io

    buf = io.StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def to_plain(value: Any) -> Any:
    """ruamel containers -> plain dict/list (for values placed into a tree)."""
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def to_rt(value: Any, flow: bool = False):
    """Plain value -> ruamel container (so nested mappings dump in block style)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = to_rt(v)
        return m
    if isinstance(value, (list, tuple)):
        s = CommentedSeq()
        for v in value:
            s.append(to_rt(v))
        return s
    return value


def get_node(data, path: tuple):
    node = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def ensure_mapping(data, path: tuple):
    """Walk to the mapping at ``path``, creating empty sections as needed. None if blocked by a scalar."""
    from ruamel.yaml.comments import CommentedMap

    node = data
    for part in path:
        if not isinstance(node, dict):
            return None
        if part not in node or node[part] is None:
            node[part] = CommentedMap()
        node = node[part]
    return node if isinstance(node, dict) else None


def set_eol_comment(mapping, key, comment: str) -> None:
    """Put ``# comment`` at the end of ``key``'s line, replacing any comment we put there before."""
    try:
        mapping.yaml_add_eol_comment(comment if comment.startswith("#") else "# " + comment, key)
    except Exception:
        pass
