"""``overlap check --annotate``: the whole config back as YAML, with the effective overlap values written
in and a trailing comment on each overlap-relevant key (effective value, where it came from, codes)."""

from __future__ import annotations

from typing import Any

from . import yamlrt


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dict):
        if v.get("preset"):
            return f"preset {v['preset']}"
        return "{...}"
    return str(v)


def annotate_text(result) -> str:
    view = getattr(result, "_view", None)
    y, data = yamlrt.load(view.cfg.text if view is not None else open(result.file, encoding="utf-8").read())
    if data is None:
        return ""
    # command-line overrides are part of the effective config
    if view is not None:
        for path in sorted(view.cfg.override_paths, key=len):
            if view.cfg.has(path):
                parent = yamlrt.ensure_mapping(data, path[:-1])
                if parent is not None:
                    parent[path[-1]] = yamlrt.to_rt(view.cfg.get(path))
            else:
                parent = yamlrt.get_node(data, path[:-1])
                if isinstance(parent, dict) and path[-1] in parent:
                    del parent[path[-1]]
    codes: dict = {}
    for f in result.findings:
        if f.key:
            codes.setdefault(f.key, []).append(f.code)
    for key, v in (result.effective or {}).items():
        path = tuple(key.split("."))
        if path[0] == "env":  # env.<NAME>: the launch environment; comment the env_vars entry if there is one
            node = yamlrt.get_node(data, ("env_vars",))
            if isinstance(node, dict) and key[4:] in node:
                yamlrt.set_eol_comment(node, key[4:], f"overlap: effective {_fmt(v.value)} ({v.source}: {v.reason})")
            continue
        parent = yamlrt.ensure_mapping(data, path[:-1])
        if parent is None:
            continue
        leaf = path[-1]
        if not isinstance(v.value, (dict, list)) and not (view is not None and path in view.cfg.interpolated_paths):
            if v.source != "unknown" or leaf not in parent:
                parent[leaf] = v.value
        elif leaf not in parent:
            parent[leaf] = None
        note = f"overlap: effective {_fmt(v.value)} ({v.source}: {v.reason})"
        if key in codes:
            note += " [" + ", ".join(codes.pop(key)) + "]"
        yamlrt.set_eol_comment(parent, leaf, note)
    for key, cs in codes.items():
        path = tuple(key.split("."))
        parent = yamlrt.get_node(data, path[:-1])
        if isinstance(parent, dict) and path[-1] in parent:
            yamlrt.set_eol_comment(parent, path[-1], "overlap: [" + ", ".join(cs) + "]")
    header = f"# overlap check --annotate: {result.file}\n"
    return header + yamlrt.dump(y, data)
