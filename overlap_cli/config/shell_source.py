"""``source FILE`` / ``. FILE`` (``config.shell``): a file at a path known statically runs in the script's
shell, on the path's variables, as bash runs it. Every position in it is the ``source`` line's, so a value
it sets names that line of the script (and a fix cannot edit it there). ``sourced_path`` says which file a
path names: literal, or a literal tail after the folder of the script (``$(dirname "$0")``) or of the file
being read (``${BASH_SOURCE[0]}``), or after the working directory.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.shell_values import State

from overlap_cli.problems import InputError
from overlap_cli.config.shell_parse import Parser
from overlap_cli.config.shell_values import Field, Hole, Var

SOURCE_DEPTH = 4  # files sourced within sourced files
SOURCE_BYTES = 1024 * 1024
# A command substitution naming the folder of a file: ``$(dirname "$0")``, ``$(dirname "$(readlink -f
# "$0")")`` or ``realpath``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``; quotes and braces removed.
DIR_OF = re.compile(r"^(?:\$\(|`)\s*(?:cd\s+)?(?:\$\(|`)?\s*dirname\s+(?:--\s+)?(?:\$\((?:readlink\s+-f|realpath)\s+)?"
                     r"\$(0|BASH_SOURCE(?:\[0\])?)\)?\s*(?:\)|`)?(?:\s*(?:&&|;)\s*pwd(?:\s+-P)?)?"
                     r"(?:\s*>\s*/dev/null(?:\s*2>&1)?)?\s*(?:\)|`)?$")
CWD_WORDS = ("`pwd`", "$(pwd)", "$PWD", "${PWD}")


def read_sourced(rd, node, fields: list, st: State) -> Optional[list]:
    """The paths after ``source FILE [ARGS]`` whose path is known: the file's commands run in this shell,
    on this path's variables. None — the file is not read, and what it may set is unknown — when the path
    is not known, the file cannot be read or parsed, it defines functions or runs the launch itself."""
    if len(fields) < 2 or len(rd.sourcing) >= SOURCE_DEPTH:
        return None
    rd.path_read[0] = True
    found = sourced_path(fields[1], rd.path, rd.file)
    if found is None:
        return None
    path, assumed = found
    real = os.path.realpath(path)
    if real in rd.sourcing or real == os.path.realpath(rd.path):
        return None
    text = _file_text(path)
    if text is None:
        return None
    at = rd.pos(node.start)
    frag = rd.child(text, lambda offset: at)
    frag.file, frag.sourced_files = path, rd.sourced_files
    frag.sourcing = rd.sourcing + (real,)
    start = st.copy()
    if len(fields) > 2:  # source FILE ARGS: the file's $1 ... (bash restores the caller's after it)
        start.positional = list(fields[2:])
    try:
        parser = Parser(rd.path, text)
        parser.pos = lambda offset: at  # the nodes' lines too are the source line's
        outs = frag.exec(parser.parse(), start)
    except (InputError, RecursionError):
        return None
    finally:
        rd.take_steps(frag)
    if frag.records or frag.inner or frag.extra_launches:
        return None  # a launch in the sourced file: its words are not placed in this one
    if any(s.funcs.get(k) is not v for s in outs for k, v in s.funcs.items() if k in st.funcs) \
            or any(k not in st.funcs for s in outs for k in s.funcs):
        return None  # a function of the sourced file would run its commands against this file's text
    _take_over(rd, frag)
    shown = os.path.relpath(path, os.path.dirname(os.path.abspath(rd.path)))
    sentence = (f"line {node.line}: read {shown}, which the script sources; what it sets is placed on that line"
                + (f" ({assumed})" if assumed else ""))
    if sentence not in rd.sourced_files:
        rd.sourced_files.append(sentence)
    placed: dict = {}
    for s in outs:
        for var_name, var in list(s.vars.items()):
            if st.vars.get(var_name) is not var:  # set by the file: its characters are written on the source line
                if id(var) not in placed:
                    placed[id(var)] = _written_at(var, node.start)
                s.vars[var_name] = placed[id(var)]
        if s.flow == ("return",):  # return ends the sourced file, not the script
            s.flow = None
        s.positional = st.positional
    return outs


def _file_text(path: str) -> Optional[str]:
    """A small text file's contents, or None (missing, too big, binary, not a regular file)."""
    from overlap_cli.config.safe_read import read_bytes

    try:
        data = read_bytes(path, SOURCE_BYTES)
    except InputError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _take_over(rd, frag) -> None:
    """What the sourced file's reading found that the script's reading reports."""
    rd.forks.update(frag.forks)
    rd.placeholders.extend(p for p in frag.placeholders if p not in rd.placeholders)
    rd.defaults_taken += frag.defaults_taken
    if frag.merged_note and not rd.merged_note:
        rd.merged_note = frag.merged_note


def _written_at(var: Var, offset: int) -> Var:
    """A copy of a variable a sourced file set, each character it wrote placed at ``offset`` of the script
    (the ``source`` command): the sourced file's own offsets mean nothing in the script's text."""
    new = var.copy()
    new.span = None
    fields = []
    for f in var.fields:
        g = Field(f.origin)
        g.chars = list(f.chars)
        g.offsets = [None if o is None else offset for o in f.offsets]
        g.multi, g.whole, g.word = f.multi, False, None
        fields.append(g)
    new.fields = fields
    return new


def sourced_path(f: Field, script: str, current: str) -> Optional[tuple]:
    """(the file ``source`` reads, the assumption made or "") for a path known statically: literal, or
    a literal tail after the folder of the script (``$0``) or of the file being read (``${BASH_SOURCE[0]}``),
    or after the working directory. None for any other path."""
    chars = f.chars
    if not chars or script.startswith("<"):
        return None
    here = os.path.dirname(os.path.abspath(script))
    cwd_note = "bash looks for it in the folder the script is run from; read from the script's own folder"
    if chars[0].__class__ is Hole:
        tail = chars[1:]
        if not tail or any(c.__class__ is Hole for c in tail) or tail[0] != "/":
            return None
        rest = "".join(tail).lstrip("/")
        what = chars[0].what
        norm = re.sub(r"\s+", " ", what.replace('"', "").replace("'", "").replace("${", "$").replace("}", "")).strip()
        m = DIR_OF.match(norm)
        if m is not None:
            folder = here if m.group(1) == "0" else os.path.dirname(os.path.abspath(current))
            return os.path.normpath(os.path.join(folder, rest)), ""
        if what in CWD_WORDS:
            return os.path.normpath(os.path.join(here, rest)), cwd_note
        return None
    text = f.text
    if text is None or not text or text.startswith("~"):
        return None
    if os.path.isabs(text):
        return os.path.normpath(text), ""
    if "/" not in text:  # bash searches $PATH first for a name without a slash
        return os.path.normpath(os.path.join(here, text)), cwd_note.replace("bash looks", "bash looks in $PATH, then")
    return os.path.normpath(os.path.join(here, text)), cwd_note
