"""Scripts a launch script hands to a new shell (``config.shell``): ``srun ... bash -c "$CMD"`` and
``sbatch <<EOF`` / ``bash <<EOF``; and the string ``eval`` runs in the script's own shell. The new shell parses the string (or the here-document) as a script of its
own and sees the exported variables; its text — what the script built — is read the same way, by a child
reader whose every offset maps to where the script wrote that character. What it does not know stays
unknown (each hole is a variable nobody sets). A string that runs a launch is kept in ``rd.inner``.
"""

from __future__ import annotations

import re

from overlap_cli.problems import InputError
from overlap_cli.config.shell_parse import parse_script
from overlap_cli.config.shell_expand import expand_joined
from overlap_cli.config.shell_values import Field, State, Var, text_field

# The words a launch cannot be without: a text with none of them is not read for one.
LAUNCH_WORDS = re.compile(r"torchrun|torch\.distributed\.(?:run|launch)|pretrain_\w*\.py|run_recipe\.py")
INNER_DEPTH = 4  # bash -c strings within bash -c strings


def read_shell_c(rd, node, st: State, fields: list, at: int) -> bool:
    """``srun ... bash -c "$CMD"`` (``fields[at]`` the string). True when the string runs a launch."""
    return _read_string(rd, node, st, fields[at], fields, at)


def read_heredoc(rd, node, st: State, fields: list) -> bool:
    """``sbatch <<EOF`` / ``bash <<EOF``: the here-document is the script the new shell runs (sbatch's
    job script: it takes the submitting shell's exported variables, ``--export=ALL``). Its expansions
    are the script's, made when the command runs (none for a quoted delimiter); the text is then read as
    a ``bash -c`` string is. True when it runs a launch."""
    base = (fields[0].text or "").rsplit("/", 1)[-1]
    if base not in ("sbatch", "bash", "sh") or not node.heredocs or not node.heredocs[0]:
        return False
    if any((f.text or "").endswith((".sh", ".sbatch", ".slurm", ".bash")) for f in fields[1:]):
        return False  # a script file given: the here-document is only its input
    body = expand_joined(rd, st, node.heredocs[0][0], "here-document")
    return _read_string(rd, node, st, body, fields, len(fields))


def read_eval(rd, node, st: State, fields: list) -> bool:
    """``eval WORDS``: bash joins the expanded words with blanks and runs the result as commands of this
    shell (quotes in it are quotes again, ``$`` expands again), with every variable of the script, not only
    the exported ones. True when the string runs a launch."""
    if len(fields) < 2:
        return False
    joined = Field("eval")
    for k, f in enumerate(fields[1:]):
        if k:
            joined.chars.append(" ")
            joined.offsets.append(None)
        joined.extend(f)
    return _read_string(rd, node, st, joined, fields, 1, same_shell=True)


def _read_string(rd, node, st: State, f: Field, fields: list, at: int, same_shell: bool = False) -> bool:
    if not f.chars or rd.depth > INNER_DEPTH:
        return False
    text, offsets, holes = _script_text(f)
    if not LAUNCH_WORDS.search(text):
        return False
    outer_pos, line = rd.pos, node.line

    def place(offset: int) -> tuple:
        if offset is not None and 0 <= offset < len(offsets) and offsets[offset] is not None:
            return outer_pos(offsets[offset])
        return (line, 1)

    inner = rd.child(text, place)
    if same_shell:
        start = st.copy()
        start.launched, start.status, start.key = False, True, None
    else:
        start = State()
        start.env_complete = st.env_complete
        passed = _container_env(rd, fields, at)
        for name, var in st.vars.items():  # the new shell's environment: what is exported
            if var.exported and (passed is None or passed.get(name, "") is None):
                start.vars[name] = var
        for name, value in (passed or {}).items():
            if value is not None:
                var = Var(name, [text_field(f"docker run -e {name} (line {node.line})", value)], False, node.line)
                var.exported, var.export_line, var.export_col = True, node.line, 1
                start.vars[name] = var
    for name, hole in holes.items():
        h = Field(f"the string of bash -c (line {node.line})")
        h.hole(hole.what, hole.constant)
        start.vars[name] = Var(name, [h], False, node.line)
    try:
        program, _parser = parse_script(rd.path, text)
        inner.exec(program, start)
    except (InputError, RecursionError):
        return False
    finally:
        rd.take_steps(inner)
    if not inner.records and not inner.inner:
        return False
    st.launched = True
    rd.inner.append((node, st.copy(), fields, at, inner))
    return True


def _container_env(rd, fields: list, at: int):
    """``docker|podman run`` before the shell: {NAME: its ``-e NAME=VALUE`` value, or None for ``-e NAME`` (the
    script's exported value)}: the container does not inherit the script's exports. None: no such container."""
    from overlap_cli.config.shell_containers import docker_env

    got = docker_env(rd, fields, at)
    return None if got is None else dict(got[1])


def _script_text(f: Field) -> tuple:
    """(the text, the script's offset of each of its characters, {name: hole}): each unknown stretch of
    the word becomes ``${__overlap_unknown_N}``, a variable nobody sets."""
    pieces: list = []
    offsets: list = []
    holes: dict = {}
    for ch, off in zip(f.chars, f.offsets):
        if ch.__class__ is str:
            pieces.append(ch)
            offsets.append(off)
            continue
        name = f"__overlap_unknown_{len(holes)}"
        holes[name] = ch
        ref = "${" + name + "}"
        pieces.append(ref)
        offsets.extend([off] * len(ref))
    return "".join(pieces), offsets, holes
