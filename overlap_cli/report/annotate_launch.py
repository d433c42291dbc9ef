"""``overlap check --annotate`` for a Megatron-LM launch: the launch exactly as written, then one comment line
per effective setting (value, where it came from, the codes reported on its flag).

The comments go after the text, never on a line of it: a comment after a ``\\`` continuation would end
the command, and inside ``MODEL_ARGS`` it would sit among the flags. Both a shell script and a YAML file
read the block as comments, so the annotated copy launches as the original does.
"""

from __future__ import annotations


def _fmt(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def annotate_launch(checked) -> str:
    from overlap_cli.frameworks.megatron_lm import facts as lm

    result, view = checked.result, checked.view
    text = view.launch.text
    codes: dict = {}
    for f in result.findings:
        if f.key:
            codes.setdefault(f.key, []).append(f.code)
    lines = [f"# overlap: effective settings of this launch (world size {_fmt(view.world_size)}, DP {_fmt(view.dp)})"]
    for key, v in (result.effective or {}).items():
        section, name = key.split(".", 1)
        arg = view.given(lm.DEST_OF.get(key, name)) if section != "env" else None
        found = sorted(set(codes.get(key, []) + (codes.get(arg.flag, []) if arg is not None else [])))
        tail = f" [{' '.join(found)}]" if found else ""
        lines.append(f"# overlap: {key} = {_fmt(v.value)} ({v.source}: {v.reason}){tail}")
    sep = "" if not text or text.endswith("\n") else "\n"
    return text + sep + "\n".join(lines) + "\n"
