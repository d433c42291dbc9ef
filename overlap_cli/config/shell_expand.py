"""Parameter expansion, word splitting and patterns, as bash does them, over ``config.shell_lex`` words.

Every function takes the reader ``rd`` (the script's text: positions, ``read_default``, and the reading's
options) and the path's ``State`` ``st`` (its variables, positional parameters and sentences). An
expanded word is a list of ``shell_values.Field``; what is not known statically is a ``Hole``. Splitting an
unquoted expansion cuts at known blanks only: in ``OPTS="--num-layers 4 --save $CKPT"`` used as
``$OPTS``, three words are known and the fourth is a hole.

Where things are: ``expand`` (a word: ``$VAR``, ``"${ARR[@]}"``, ``$((...))``, ``$(cat <<'EOF')``, then
splitting), ``values_of`` (one ``$NAME`` / ``${NAME[i]}`` / ``${NAME:-default}`` / ``${NAME:=x}``),
``lookup`` (a variable or ``$1`` / ``$@`` / ``$#``), ``pattern_glob`` / ``match`` (``case`` and ``[[ == ]]``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.shell_cond import Glob
    from overlap_cli.config.shell_values import State

from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_lex import Word
from overlap_cli.config.shell_values import Field, Hole, Var, unknown_var

# $(cat <<'EOF' \n BODY \n EOF): a quoted delimiter (nothing in BODY expands), the delimiter alone on its line
_CAT_HEREDOC = re.compile(r"\$\(\s*cat\s*<<\s*(['\"])(\w+)\1[ \t]*\n(.*?\n)\2[ \t]*\n?\s*\)\Z", re.DOTALL)
_BRACE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#])(?:\[([^\]]+)\])?(?:(:?[-=+])(.*))?", re.S)


def set_unknown(rd, st: State, name: str, offset: int, note: str) -> None:
    """From here on the path does not know ``$name`` (``note`` says why)."""
    st.vars[name] = unknown_var(name, rd.pos(offset)[0], note)


def lookup(st: State, name: str) -> Optional[Var]:
    """The variable NAME, a positional parameter of the function being called, or None (not set by the
    script: the caller's environment, or the script's own arguments)."""
    if name.isdigit() or name in ("@", "*", "#"):
        args = st.positional
        if args is None:
            return None
        if name in ("@", "*"):
            return Var(name, list(args), True, 0)
        if name == "#":
            f = Field("")
            f.chars, f.offsets = list(str(len(args))), [None] * len(str(len(args)))
            return Var(name, [f], False, 0)
        i = int(name)
        if i == 0:
            return None
        if i > len(args):
            v = Var(name, [], False, 0)
            v.unset = True
            return v
        return Var(name, [args[i - 1]], False, 0)
    var = st.vars.get(name)
    if var is None and st.env_complete and st.sourced is None and not _SET_BY_RUNTIME.fullmatch(name):
        var = Var(name, [], False, 0)
        var.unset = True
    return var


# Variables a launch has although the caller's shell does not export them: bash's own (bash(1) "Shell
# Variables") and what a job scheduler or MPI launcher puts in the job's environment.
_SET_BY_RUNTIME = re.compile(
    r"(?:SLURM|SBATCH|SRUN|PBS|LSB|LSF|OMPI|PMI|PMIX|MPI|NGC|KUBERNETES|BASH|COMP|HIST|FLUX|COBALT|UCX|NCCL)_\w*"
    r"|(?:RANDOM|SECONDS|LINENO|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|PPID|UID|EUID|GROUPS|PWD|OLDPWD|SHLVL|SHELLOPTS"
    r"|BASHOPTS|BASHPID|EPOCHSECONDS|EPOCHREALTIME|SRANDOM|IFS|OPTIND|OPTARG|OPTERR|REPLY|PIPESTATUS|FUNCNAME"
    r"|DIRSTACK|PS[0-4]|HOME|PATH|USER|LOGNAME|SHELL|TERM|LANG|TMPDIR|MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK"
    r"|LOCAL_RANK|NODE_RANK|CUDA_VISIBLE_DEVICES)")


def note_unknown_var(rd, st: State, name: str, offset: int, expr: str) -> None:
    line = rd.pos(offset)[0]
    var = lookup(st, name)
    if var is not None and var.note:
        why = var.note
    elif name.isdigit() or name in ("@", "*", "#"):
        why = f"${name} is {'an argument' if name.isdigit() else 'the arguments'} the script is run with, not known statically"
    else:
        why = f"${name} is not set in the script (it comes from the environment)"
    st.note(f"line {line}: {why}" if expr == "$" + name else f"line {line}: {expr}: {why}")


def values_of(rd, st: State, part, origin: str) -> tuple:
    """(fields, unknown expression or None, is_array_all, the unknown is a constant) for a var/brace part."""
    kind = part[0]
    start = part[2]
    if kind == "var":
        name, index, op, default = part[1], None, None, None
        expr = "$" + name
    else:
        body = part[1]
        expr = "${" + body + "}"
        m = _BRACE.fullmatch(body)
        if not m:
            return None, expr, False, False
        name, index, op, default = m.group(1), m.group(2), m.group(3), m.group(4)
    var = lookup(st, name)
    if var is None and st.sourced is not None and not (name.isdigit() or name in ("@", "*", "#")):
        st.note(f"line {rd.pos(start)[0]}: {expr}: ${name} {st.sourced}")
        return None, expr, False, False
    if name in ("@", "*"):  # the parameters: all of them
        index = name
    constant = var is None  # the caller's environment or the script's arguments: one value throughout
    known = var is not None and not var.note
    unset = var is not None and var.unset
    if op:
        if op in (":-", "-", ":=", "="):
            return _default_of(rd, st, part, origin, (name, index, op, default, expr), var)
        return None, expr, False, False  # ${VAR:+alt} and the like: not followed
    if unset:
        return [], None, False, False
    if var is None or not known:
        note_unknown_var(rd, st, name, start, expr)
        return None, expr, False, constant
    if index is None:
        return list(var.fields[:1]), None, False, False
    if index in ("@", "*"):
        return list(var.fields), None, index == "@", False
    if index.isdigit():
        i = int(index)
        return (list(var.fields[i:i + 1]) if var.array else (list(var.fields) if i == 0 else [])), None, False, False
    return None, expr, False, False


def _default_of(rd, st: State, part, origin: str, parsed: tuple, var: Optional[Var]) -> tuple:
    """``${NAME:-default}`` / ``${NAME-default}`` / ``${NAME:=default}`` / ``${NAME=default}``: the value, or
    the default when NAME is unset (or empty, with ``:``); ``=`` also assigns it."""
    name, index, op, default, expr = parsed
    start = part[2]
    known = var is not None and not var.note
    empty = var is None or var.unset or (op.startswith(":") and known and (
        not var.fields or (not var.array and var.fields[0].text == "")))
    if var is not None and not known:
        note_unknown_var(rd, st, name, start, expr)
        return None, expr, False, False
    if var is None and not rd.take_defaults:
        note_unknown_var(rd, st, name, start, expr)
        return None, expr, False, True
    if not empty:
        return list(var.fields if index in ("@", "*") else var.fields[:1]), None, index == "@", False
    # the default: a word of its own, expanded in place (offsets inside the ${...})
    if var is None:
        line = rd.pos(start)[0]
        who = f"the script is run with argument {name}" if name.isdigit() else f"the environment sets {name}"
        st.note(f"line {line}: {expr} is {default_text(rd, st, part, default)!r} unless {who}")
        rd.defaults_taken += 1
    offset = part[3] - 1 - len(default)
    word, _ = rd.read_default(offset, part[3] - 1)
    fields = expand(rd, st, word, origin, split=False, keep_empty=True)
    if op in (":=", "=") and not name.isdigit():
        line = rd.pos(start)[0]
        st.vars[name] = Var(name, [join(fields, variable_origin(name, line))], False, line)
    return fields, None, False, False


def default_text(rd, st: State, part, default: str) -> str:
    """The default of ``${VAR:-default}`` as bash gives it (quotes removed), for a sentence."""
    offset = part[3] - 1 - len(default)
    word, _ = rd.read_default(offset, part[3] - 1)
    saved = st.notes
    st.notes = []
    try:
        f = join(expand(rd, st, word, "", split=False, keep_empty=True), "")
    finally:
        st.notes = saved
    return f.text if f.text is not None else default


def arithmetic(rd, st: State, expr: str) -> Optional[int]:
    """``$((expr))`` with bash's operators (config.shell_arith) over the integers the script states;
    None when a variable is not known statically, for an error, or when it assigns a variable."""
    from overlap_cli.config.shell_arith import evaluate

    value, assigned, _ok = evaluate(expr, lambda name: arith_lookup(st, name))
    if assigned:  # $((i++)) inside a word: not followed (the variable is unknown from here on)
        for name in assigned:
            set_unknown(rd, st, name, 0, f"${name} is assigned inside a $((...)) expansion")
        return None
    return value


def arith_lookup(st: State, name: str) -> Optional[str]:
    """A variable's text for arithmetic: None when not known statically (or not set by the script)."""
    var = lookup(st, name)
    if var is None or var.note:
        return None
    if var.unset or not var.fields:
        return ""
    return var.fields[0].text


def join(fields: list, origin: str) -> Field:
    out = Field(origin)
    for f in fields:
        out.extend(f)
    if len(fields) == 1:
        out.word, out.whole, out.origin, out.multi = fields[0].word, fields[0].whole, fields[0].origin, fields[0].multi
    else:
        out.whole = False
    return out


def expand_joined(rd, st: State, word: Word, origin: str) -> Field:
    """A word expanded as one string, without splitting (an assignment's value, a ``case`` subject)."""
    return join(expand(rd, st, word, origin, split=False, keep_empty=True), origin)


MAX_EXPANSION = 65_536  # characters of one word's expansion (all its fields); beyond, the word is not known
TOO_LONG = "a value of more than"


def over_budget(fields: list) -> bool:
    return sum(len(f.chars) for f in fields) > MAX_EXPANSION


def too_long(rd, st: State, word: Word, origin: str) -> list:
    """The one unknown field of a word whose expansion is longer than ``MAX_EXPANSION`` characters (``A=$A$A``
    forty times would be a terabyte): its value is not known, and the reason says so."""
    line = rd.pos(word.start)[0]
    st.note(f"line {line}: the value expands to more than {MAX_EXPANSION:,} characters; not followed")
    f = Field(origin)
    f.hole(f"{TOO_LONG} {MAX_EXPANSION:,} characters (line {line})")
    return [f]


class _Fields:
    """The fields of one word as ``expand`` builds them."""

    __slots__ = ("out", "cur", "origin", "started", "size")

    def __init__(self, word: Word, origin: str):
        self.out: list = []
        self.cur = Field(origin)
        self.cur.word = word
        self.origin = origin
        self.started = False  # the current field exists (it has text, a quoted part, or a hole)
        self.size = 0  # characters in ``out``

    def new_field(self) -> None:
        self.size += len(self.cur.chars)
        self.out.append(self.cur)
        self.cur = Field(self.origin)
        self.started = False


def expand(rd, st: State, word: Word, origin: str, split: bool, keep_empty: bool = False) -> list:
    """The fields a word expands to (bash: brace expansion, parameter expansion, then word splitting of
    unquoted results).

    ``split``: as a command argument, ``for`` word or array element (braces expand, unquoted expansions split
    on blanks); else as the value of an assignment. ``keep_empty``: an empty result is one empty field, not
    none."""
    if split and word.origin is None:  # a word written in the script (a variable's value is not brace-expanded)
        from overlap_cli.config.shell_braces import braced

        out = braced(rd, st, word, origin, _expand_word, too_long, MAX_EXPANSION)
        if out is not None:
            return out
    return _expand_word(rd, st, word, origin, split, keep_empty)


def _expand_word(rd, st: State, word: Word, origin: str, split: bool, keep_empty: bool) -> list:
    acc = _Fields(word, origin)
    only_unquoted_unknown = True  # the word is nothing but unquoted unknown expansions
    all_words = False  # an unknown "$@" / "${ARR[@]}": any number of words even when quoted
    pass_through = len(word.parts) == 1

    for part in word.parts:
        kind = part[0]
        if kind == "lit":
            acc.cur.chars.extend(part[1])
            acc.cur.offsets.extend(part[2])
            acc.started = acc.started or bool(part[1]) or len(part) > 3
            only_unquoted_unknown = False
            continue
        quoted = part[4]
        if kind == "arith":
            value = arithmetic(rd, st, part[1])
            if value is None:
                kind = "unknown"
                part = ("unknown", rd.text[part[2]:part[3]], part[2], part[3], quoted)
            else:  # an integer the script states: a word of its own text, written nowhere
                acc.cur.chars.extend(str(value))
                acc.cur.offsets.extend([part[2]] * len(str(value)))
                acc.cur.whole, acc.cur.word = False, None
                acc.started = True
                only_unquoted_unknown = False
                continue
        body = cat_heredoc(part) if kind == "unknown" else None
        if body is not None:  # $(cat <<'EOF' ... EOF): the here-document's text, as written
            values, expr, array_all, constant = [body], part[1], False, False
        elif kind == "unknown":
            acc.cur.hole(part[1])
            acc.started = True
            # $((...)) is one integer: never more than one word
            only_unquoted_unknown = only_unquoted_unknown and not quoted and part[1][:3] != "$(("
            st.note(f"line {rd.pos(part[2])[0]}: {part[1]} is not known statically")
            continue
        else:
            values, expr, array_all, constant = values_of(rd, st, part, origin)
        if values is None:
            acc.cur.hole(expr, constant)
            if part[1] in ("@", "*") or (part[0] == "brace" and re.search(r"\[[@*]\]$", part[1])):
                all_words = True  # "$@", "${ARR[@]}": any number of words, quoted or not
            acc.started = True
            only_unquoted_unknown = only_unquoted_unknown and not quoted
            continue
        only_unquoted_unknown = False
        if sum(len(v.chars) for v in values) + acc.size + len(acc.cur.chars) > MAX_EXPANSION:
            return too_long(rd, st, word, origin)
        _place_values(acc, values, origin, quoted, array_all, split, pass_through)
    out = acc.out
    if acc.started or keep_empty:
        out.append(acc.cur)
    if split and len(out) == 1 and out[0].unknown and (only_unquoted_unknown or (all_words and len(word.parts) == 1)):
        out[0].multi = True
    if not out and not split:
        out.append(Field(origin))
    for f in out:
        if f.word is word and not all(p[0] == "lit" for p in word.parts):
            f.word = None
        if word.origin is not None:  # a word made from a variable's value: not literal where it is used
            f.word, f.whole, f.origin = None, False, word.origin
    return out


def _place_values(acc: _Fields, values: list, origin: str, quoted: bool, array_all: bool, split: bool,
                  pass_through: bool) -> None:
    """The known values of one expansion into the word's fields: joined with a blank in an assignment,
    one field per element for ``"${ARR[@]}"``, split at blanks when unquoted."""
    if not split and len(values) > 1:  # an assignment's value: bash joins the elements with a blank
        append_field(acc.cur, join_with_space(values, origin), False)
        acc.started = True
        return
    if quoted:
        if array_all:  # "${ARR[@]}": one field per element
            for idx, v in enumerate(values):
                if idx:
                    acc.new_field()
                append_field(acc.cur, v, pass_through)
                acc.started = True
        else:  # "$X", "${ARR[*]}" (elements joined with a blank)
            joined = values[0] if len(values) == 1 else join_with_space(values, origin)
            if values:
                append_field(acc.cur, joined, pass_through)
            acc.started = True
        return
    if not split:
        for v in values:
            append_field(acc.cur, v, pass_through and len(values) == 1)
            acc.started = True
        return
    # unquoted: each value splits at its known blanks; a blank at either end ends the field
    for idx, v in enumerate(values):
        if idx and acc.started:
            acc.new_field()
        chars = v.chars
        if chars and chars[0] in (" ", "\t", "\n") and acc.started:
            acc.new_field()
        pieces = split_field(v)
        for pidx, piece in enumerate(pieces):
            if pidx:
                acc.new_field()
            append_field(acc.cur, piece, pass_through and len(pieces) == 1)
            acc.started = True
        if chars and chars[-1] in (" ", "\t", "\n") and acc.started:
            acc.new_field()


def cat_heredoc(part: tuple) -> Optional[Field]:
    """``$(cat <<'EOF' ... EOF)`` with a quoted delimiter: cat prints the here-document as written, and the
    command substitution drops its trailing newlines. Any other command substitution: None."""
    m = _CAT_HEREDOC.match(part[1])
    if m is None or len(part) < 4 or part[2] is None:
        return None
    body = m.group(3)
    start = part[2] + m.start(3)
    stripped = body.rstrip("\n")
    f = Field("here-document")
    f.chars = list(stripped)
    f.offsets = list(range(start, start + len(stripped)))
    f.whole = False
    return f


def append_field(cur: Field, v: Field, pass_through: bool) -> None:
    """Append v's characters to cur; cur stays v's written word when it is nothing but v."""
    empty = not cur.chars
    if pass_through and empty:
        cur.word, cur.whole = v.word, v.whole
    else:
        cur.whole, cur.word = False, None
    if empty:  # the field starts with v's text: it comes from where v does
        cur.origin, cur.multi = v.origin, v.multi
    else:
        cur.multi = False
    cur.extend(v)


def join_with_space(values: list, origin: str) -> Field:
    out = Field(origin)
    for idx, v in enumerate(values):
        if idx:
            out.chars.append(" ")
            out.offsets.append(None)
        out.extend(v)
    out.whole = False
    return out


def split_field(v: Field) -> list:
    """v cut at its known blanks (IFS's default); a piece that is a single hole is ``multi`` (the unknown
    text may hold blanks too)."""
    if not any(c in (" ", "\t", "\n") for c in v.chars if c.__class__ is str):
        if not v.chars:
            return []
        if len(v.chars) == 1 and v.chars[0].__class__ is Hole:
            alone = Field(v.origin)
            alone.extend(v)
            alone.whole, alone.multi = False, True
            return [alone]
        return [v]
    pieces: list = []
    cur: Optional[Field] = None
    for ch, off in zip(v.chars, v.offsets):
        if ch.__class__ is str and ch in " \t\n":
            if cur is not None:
                pieces.append(cur)
                cur = None
            continue
        if cur is None:
            cur = Field(v.origin)
            cur.whole = False
        cur.chars.append(ch)
        cur.offsets.append(off)
    if cur is not None:
        pieces.append(cur)
    for piece in pieces:
        if len(piece.chars) == 1 and piece.chars[0].__class__ is Hole:
            piece.multi = True
    return pieces


# --- patterns (case, [[ x == pattern ]]) ---------------------------------------------------------------

def constant(f: Field) -> bool:
    """Every unknown stretch of the word is a constant (its value is decided once for a path)."""
    return all(c.__class__ is str or c.constant for c in f.chars)


def pattern_glob(rd, st: State, pattern: Word) -> Optional[Glob]:
    """A bash pattern word as a ``Glob``: a quoted or backslash-escaped character matches itself;
    None when an expansion in it is not known."""
    from overlap_cli.config.shell_cond import glob_pattern

    pieces: list = []
    for part in pattern.parts:
        if part[0] == "lit":
            quoted = len(part) > 3
            for ch, off in zip(part[1], part[2]):
                escaped = quoted or (off > 0 and rd.text[off - 1] == "\\")
                pieces.append((ch, not escaped))
            continue
        mark = len(st.notes)
        fields = expand(rd, st, Word([part], part[2], part[3]), "", split=False, keep_empty=True)
        del st.notes[mark:]
        value = join(fields, "")
        if value.text is None:
            return None
        quoted = part[4] if len(part) > 4 else False
        pieces.extend((ch, not quoted) for ch in value.text)
    return glob_pattern(pieces)


def match(rd, st: State, subject: Field, pattern: Word) -> Optional[bool]:
    """Whether a word matches a bash pattern word (``case``, ``[[ x == pat ]]``)."""
    glob = pattern_glob(rd, st, pattern)
    if glob is None:
        return None
    text = subject.text
    if text is None:
        return True if glob.matches_everything else None
    return glob.matches(text)


def match_any(rd, st: State, subject: Field, patterns: list) -> Optional[bool]:
    unknown = False
    for p in patterns:
        hit = match(rd, st, subject, p)
        if hit:
            return True
        unknown = unknown or hit is None
    return None if unknown else False
