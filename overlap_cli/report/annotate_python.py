"""``overlap check --annotate`` for a Bridge run written in Python: the file exactly as written, then one
comment line per effective setting (value, where it came from, the codes reported on its key). Comments go
after the code, never into it, so the annotated copy runs as the original does."""

from __future__ import annotations


def _fmt(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, dict):
        return f"preset {v['preset']}" if v.get("preset") else "{...}"
    return repr(v)


def annotate_python(checked) -> str:
    result, view = checked.result, checked.view
    text = view.cfg.text
    codes: dict = {}
    for f in result.findings:
        if f.key:
            codes.setdefault(f.key, []).append(f.code)
    t = result.target or {}
    lines = [f"# overlap: effective settings of {result.file} (world size {t.get('world_size')}, DP {t.get('data_parallel_size')})"]
    for key, v in (result.effective or {}).items():
        found = sorted(set(codes.get(key, [])))
        tail = f" [{' '.join(found)}]" if found else ""
        where = f" at {v.layer}" if v.layer and v.layer != v.source else ""
        lines.append(f"# overlap: {key} = {_fmt(v.value)} ({v.source}{where}: {v.reason}){tail}")
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + "\n".join(lines) + "\n"
