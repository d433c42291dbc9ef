"""``overlap check --annotate``: the checked file back with its effective values, one annotator for every
input form, which asks the file's form (forms/) only where to put them:

- a YAML config (``annotate_yaml``): the whole config back as YAML, the effective overlap values written
  in and a trailing comment on each overlap-relevant key (effective value, where it came from, codes);
- a launch or a Python run (``annotate_after``): the file exactly as written, then one comment line per
  effective setting. The comments go after the text, never into it: a comment after a ``\\``
  continuation would end a shell command, and inside ``MODEL_ARGS`` it would sit among the flags, so the
  annotated copy runs as the original does.
"""

from __future__ import annotations

import re

from overlap_cli.config import yamlrt
from overlap_cli.report.common import effective_value
from overlap_cli.results import show_value


def annotate(checked) -> str:
    """The annotated copy of a file that checked without error (an engine.CheckedFile)."""
    return checked.form.annotate(checked)


def _codes(result) -> dict:
    codes: dict = {}
    for f in result.findings:
        if f.key:
            codes.setdefault(f.key, []).append(f.code)
    return codes


def annotate_after(checked, comment: str = "#", spell: str = "yaml") -> str:
    """The file as written, then ``# overlap: KEY = VALUE (source at layer: reason) [CODES]`` per effective
    setting, the values spelled as the file spells them (``spell``)."""
    result, view = checked.result, checked.view
    text = checked.run.text or ""
    codes = _codes(result)
    t = result.target or {}
    head = (f"{comment} overlap: effective settings of {result.file} (world size "
            f"{show_value(t.get('world_size'), missing='unknown')}, DP {show_value(t.get('data_parallel_size'), missing='unknown')})")
    lines = [head]
    flag_of = getattr(view, "given", None)  # a Megatron-LM launch: codes reported on the flag count too
    for key, v in (result.effective or {}).items():
        found = list(codes.get(key, []))
        if flag_of is not None and not key.startswith("env."):
            from overlap_cli.frameworks.megatron_lm import facts as lm

            arg = flag_of(lm.DEST_OF.get(key, key.split(".", 1)[1]))
            if arg is not None:
                found += codes.get(arg.flag, [])
        tail = f" [{' '.join(sorted(set(found)))}]" if found else ""
        where = f" at {v.layer}" if v.layer and v.layer != v.source else ""
        lines.append(f"{comment} overlap: {key} = {effective_value(v, spell)} ({v.source}{where}: {v.reason}){tail}")
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + "\n".join(lines) + "\n"


_NULL_TOKEN = re.compile(r"(~|null|Null|NULL)(?=\s|$|,|\}|\])")


class _NullAs(str):
    """A null written back with the spelling the file uses for it (``null``, ``~``, or nothing)."""


def _null_spellings(data, lines: list) -> tuple:
    """{id(container): {key: spelling}} for every null in the file, and the file's most common spelling.

    ruamel's round-trip dump writes every null as nothing (``key:``); these let the annotated copy keep
    ``null`` as ``null`` and ``~`` as ``~``. The spelling is read at the value's position in the source.
    """
    found: dict = {}
    counts: dict = {}

    def spelling(key_pos, value_pos) -> str:
        line, col = value_pos
        if key_pos is not None and line != key_pos[0]:
            return ""  # nothing after `key:` on its line: the value position is the next token's
        m = _NULL_TOKEN.match(lines[line], col) if 0 <= line < len(lines) else None
        return m.group(1) if m else ""

    def walk(node) -> None:
        if isinstance(node, dict):
            items = [(k, v, lambda k=k: (node.lc.key(k), node.lc.value(k))) for k, v in node.items()]
        elif isinstance(node, list):
            items = [(i, v, lambda i=i: (None, node.lc.item(i))) for i, v in enumerate(node)]
        else:
            return
        for k, v, where in items:
            if v is None:
                try:
                    text = spelling(*where())
                except (AttributeError, KeyError, TypeError, IndexError):
                    continue
                found.setdefault(id(node), {})[k] = text
                counts[text] = counts.get(text, 0) + 1
            else:
                walk(v)

    walk(data)
    usual = max(counts, key=lambda t: (counts[t], t == "null")) if counts else "null"
    return found, usual


def _spell_nulls(y, data, found: dict, usual: str) -> None:
    """Replace each None in the tree by its spelling (the file's own, or its usual one for a new key)."""
    y.representer.add_representer(_NullAs, lambda rep, v: rep.represent_scalar("tag:yaml.org,2002:null", str(v)))

    def walk(node) -> None:
        if isinstance(node, dict):
            keys = list(node.keys())
        elif isinstance(node, list):
            keys = list(range(len(node)))
        else:
            return
        own = found.get(id(node), {})
        for k in keys:
            v = node[k]
            if v is None:
                node[k] = _NullAs(own.get(k, usual))
            else:
                walk(v)

    walk(data)


def annotate_yaml(checked) -> str:
    """The YAML config of ``checked`` with its effective values written in and a comment on each
    overlap-relevant key."""
    result, view = checked.result, checked.view
    text = view.cfg.text
    y, data = yamlrt.load(text)
    if data is None:
        return ""
    null_spellings, usual_null = _null_spellings(data, text.splitlines())
    # command-line overrides are part of the effective config
    spelled = view.cfg.file_key  # the GPTModelConfig form: model.X is in the file as model.transformer.X
    for path in sorted(view.cfg.override_paths, key=len):
        at = tuple(spelled(".".join(map(str, path))).split(".")) if view.cfg.wrapped_model_keys else path
        if view.cfg.has(path):
            parent = yamlrt.ensure_mapping(data, at[:-1])
            if parent is not None:
                parent[path[-1]] = yamlrt.to_rt(view.cfg.get(path))
        else:
            parent = yamlrt.get_node(data, at[:-1])
            if isinstance(parent, dict) and path[-1] in parent:
                del parent[path[-1]]
    codes = _codes(result)
    for key, v in (result.effective or {}).items():
        path = tuple(key.split("."))
        if path[0] == "env":  # env.<NAME>: the launch environment; comment the env_vars entry if there is one
            node = yamlrt.get_node(data, ("env_vars",))
            if isinstance(node, dict) and key[4:] in node:
                yamlrt.set_eol_comment(node, key[4:], f"overlap: effective {effective_value(v)} ({v.source}: {v.reason})")
            continue
        parent = yamlrt.ensure_mapping(data, tuple(spelled(key).split("."))[:-1])
        if parent is None:
            continue
        leaf = path[-1]
        if not isinstance(v.value, (dict, list)) and path not in view.cfg.interpolated_paths:
            if v.source != "unknown" or leaf not in parent:
                parent[leaf] = v.value
        elif leaf not in parent:
            parent[leaf] = None
        note = f"overlap: effective {effective_value(v)} ({v.source}: {v.reason})"
        if key in codes:
            note += " [" + ", ".join(codes.pop(key)) + "]"
        yamlrt.set_eol_comment(parent, leaf, note)
    for key, cs in codes.items():
        path = tuple(spelled(key).split("."))
        parent = yamlrt.get_node(data, path[:-1])
        if isinstance(parent, dict) and path[-1] in parent:
            yamlrt.set_eol_comment(parent, path[-1], "overlap: [" + ", ".join(cs) + "]")
    _spell_nulls(y, data, null_spellings, usual_null)
    header = f"# overlap check --annotate: {result.file}\n"
    return header + yamlrt.dump(y, data)
