"""Where an edit of a Megatron-LM launch goes: the candidate texts fix.script proves, best first.

A flag is added on a new line after a related flag's line (ANCHORS), with that line's indentation and its
``\\`` continuation, or right after the related flag's words on the same line; a removed flag takes its line
when it stands alone there (the line before loses its continuation when the flag was the command's last
word), else only its words. ``CUDA_DEVICE_MAX_CONNECTIONS`` is exported on a line of its own just before
the launch command, or its literal ``NAME=value`` is rewritten; in a functional-test YAML it goes under
``ENV_VARS:``. Lines keep their own line endings.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

# Where a new flag goes: beside the first of these dests the launch gives (then beside the finding's flag).
ANCHORS = {
    "sequence_parallel": ("tp_comm_overlap", "tensor_model_parallel_size"),
    "overlap_grad_reduce": ("use_distributed_optimizer", "overlap_param_gather"),
    "overlap_param_gather": ("overlap_grad_reduce", "use_distributed_optimizer"),
    "use_distributed_optimizer": ("overlap_grad_reduce", "overlap_param_gather"),
}


def flag_row(flag: str, core: Optional[str] = None) -> Optional[dict]:
    """The table row of a flag spelling in megatron-core ``core``'s parser (the first, where scripts define it
    differently: same dest)."""
    from overlap_cli.frameworks.megatron_lm.args import table

    rows = table(core)["by_flag"].get(flag)
    return rows[0] if rows else None


def _lines(text: str) -> list:
    return text.splitlines(True)


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")):] or "\n"


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def candidates(text: str, launch, goal: tuple, finding):
    kind, name, value = goal
    if kind == "env":
        yield from (_env_yaml if launch.kind == "yaml" else _env_shell)(text, launch, name, value)
    elif value is None:
        yield from _remove_flag(text, launch, name)
    else:
        yield from _add_flag(text, launch, name, finding)


def _anchors(launch, flag: str, finding) -> list:
    """Args beside which a new flag may go, best first."""
    dest = flag_row(flag, launch.core_version)["dest"]
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
        stop = (anchor.value_span or anchor.flag_span)[2] - 1
        same_line = "".join(lines[:i] + [body[:stop] + f" {flag}" + body[stop:] + eol] + lines[i + 1:])
        if body.rstrip().endswith("\\"):
            yield "".join(lines[: i + 1] + [f"{indent}{flag} \\{eol}"] + lines[i + 1:])
        else:
            yield "".join(lines[: i + 1] + [f"{indent}{flag}{eol}"] + lines[i + 1:])  # an array or a string's lines
            continued = i > 0 and _body(lines[i - 1]).rstrip().endswith("\\")
            if not continued:  # a one-line command: the flag joins it rather than starting a line at column 1
                yield same_line
            yield "".join(lines[:i] + [body.rstrip() + f" \\{eol}", f"{indent}{flag}{eol}"] + lines[i + 1:])
        yield same_line  # right after the anchor's words
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
