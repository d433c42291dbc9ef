"""Megatron-LM's command line with argparse's meaning, without argparse (or Megatron) at run time.

The option table of each megatron-core release (``releases/arguments-X.Y.Z.json``, named by the release's
module, ``releases.CORE``) is generated from that release's real parser (``tools/build_mlm_arguments.py``,
run in an environment holding it): ``parse_args`` builds ``argparse.ArgumentParser(allow_abbrev=False)``
and fills it with ``add_megatron_arguments`` (megatron/training/arguments.py:116-121), and the training
scripts add optional groups through ``extra_args_provider`` (``pretrain_gpt.py`` the ModelOpt arguments of
megatron/post_training/arguments.py, ``pretrain_vlm.py`` its VLM arguments, ``train_rl.py`` the inference
arguments). All of them are recognised here.

What mirrors argparse (Lib/argparse.py, Python 3.11), for a parser with no positionals:
- a flag is one of its exact spellings: ``allow_abbrev=False`` turns prefix matching off, but
  ``--flag=value`` still splits at the first ``=``;
- a word starting with ``-`` is an option unless it looks like a negative number or contains a space
  (``_parse_optional``); an option word that is no flag is collected and reported at the end as
  "unrecognized arguments", like any word no option consumed;
- values by ``nargs`` (None: one, ``?``, ``*``, ``+``, N); a value may not look like an option;
- ``store_true`` / ``store_false`` / ``store_const`` take no value (``--flag=x`` is an error);
  ``BooleanOptionalAction`` spells ``--x`` / ``--no-x``;
- each value is converted by the option's type, then checked against its choices; the last occurrence
  wins (``append`` accumulates).
argparse prints usage and exits 2 on the first error; here that error is one line with the file, the
line and column of the flag, the flag, and (for an unknown flag) the closest spelling.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.argv import LAUNCH_LINE, MODEL_ARGS, UNKNOWN, EnvVar, LaunchText, Token
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

__all__ = ["UNKNOWN", "Arg", "EnvVar", "Launch", "Token", "load_launch", "parse_tokens", "defaults", "option",
           "options_for", "table", "table_path", "LAUNCH_LINE", "MODEL_ARGS"]


@dataclass
class Arg:
    """One option the launch gives (the last occurrence of its dest)."""

    dest: str  # argparse dest, e.g. "tensor_model_parallel_size"
    value: object  # converted as argparse would (int, float, bool, list, str, None) or UNKNOWN
    flag: str  # the spelling used, e.g. "--tensor-model-parallel-size"
    line: Optional[int]  # 1-based line/column of the flag word in the file
    column: Optional[int]
    origin: str  # "launch line" | "variable NAME (line N)" | "MODEL_ARGS"
    # The flag word and its value words are literal text on the launch line (or the YAML key and its
    # value), so a fix can edit exactly them.
    placeable: bool
    value_span: Optional[tuple] = None  # (line, col_start, col_end) of the value word(s) when placeable; end exclusive
    flag_span: Optional[tuple] = None  # (line, col_start, col_end) of the flag word as written, when literal
    literal: bool = False  # flag and value words are literal text somewhere in the file (launch line or a variable's definition)
    occurrences: int = 1  # how many times the dest was given (the last wins)
    # Where the value comes from when it is not the flag's own place: a dotlist word of the command line, or
    # (value UNKNOWN) the decision not known statically that gives the flag on some paths only.
    reason: Optional[str] = None


@dataclass
class Launch:
    file: str
    text: str
    kind: str  # "shell" | "yaml"
    script: Optional[str]  # e.g. "pretrain_gpt.py"
    launch_line: Optional[int]
    args: dict = field(default_factory=dict)  # dest -> Arg, only what the launch gives (last occurrence wins)
    env: dict = field(default_factory=dict)  # NAME -> EnvVar
    world_size: Optional[int] = None
    world_size_line: Optional[int] = None
    argv: list = field(default_factory=list)  # the words after the script, as strings; an unknown word as None
    unknowns: list = field(default_factory=list)  # what could not be known statically, with lines
    # config.argv.Token for each word of argv (positions, origins); when the launch's paths differ, the first
    # path's words and then the open expansions (Token.multi) of the others
    tokens: list = field(default_factory=list)
    insert_at: Optional[tuple] = None  # (line, column) where a new flag goes on the launch (see LaunchText)
    defaults_taken: bool = False  # see LaunchText.defaults_taken
    sourced: list = field(default_factory=list)  # see LaunchText.sourced
    # The effective keys whose printed value the launch's unknowns can change (forms.megatron_lm fills it; None: not
    # computed)
    changeable: Optional[list] = None
    # When the launch's paths differ: each path's (decisions, dest -> Arg) as argparse reads it, and the decisions'
    # descriptions (LaunchText.forks), so what asserts on some paths only can be named (resolver.path_assertions)
    path_args: list = field(default_factory=list)
    forks: dict = field(default_factory=dict)
    core_version: Optional[str] = None  # the megatron-core release whose parser read the words (None: the newest held)


# --- the option table -------------------------------------------------------------------------------

_TABLES: dict = {}  # megatron-core release -> its table, each read on first use


def table_path(core: Optional[str] = None) -> str:
    """The option table of megatron-core ``core`` (None: the newest release held): the file its release module
    names (releases/, ``ARGUMENTS``). InputError for a release the tool holds no data for."""
    from overlap_cli.frameworks.megatron_lm.releases import CORE

    return os.path.join(os.path.dirname(__file__), "releases", CORE.get(core).ARGUMENTS)


def table(core: Optional[str] = None) -> dict:
    """The generated table of megatron-core ``core`` (None: the newest held): {"megatron_core", "parser",
    "groups", "options": [row...]} plus lookups."""
    cached = _TABLES.get(core)
    if cached is not None:
        return cached
    with open(table_path(core), encoding="utf-8") as fh:
        doc = json.load(fh)
    # spelling -> the rows that define it: core first, then each optional group's own version (a flag
    # two scripts define differently, e.g. --model-provider, has one row per meaning)
    by_flag: dict = {}
    by_dest: dict = {}
    for row in doc["options"]:
        if row["action"] == "help":
            continue
        meaning = None
        for spelling in row["flags"]:
            rows = by_flag.get(spelling)
            if rows is None:
                by_flag[spelling] = [row]
                continue
            if meaning is None:
                meaning = {k: v for k, v in row.items() if k != "group"}
            if not any({k: v for k, v in r.items() if k != "group"} == meaning for r in rows):
                rows.append(row)
        if not any(r["group"] == "core" for r in by_dest.get(row["dest"], ())) or row["group"] == "core":
            by_dest.setdefault(row["dest"], []).append(row)
    doc["by_flag"], doc["by_dest"] = by_flag, by_dest
    # training-script file name -> the optional groups its parser adds (scripts whose whole argument
    # set the table holds; tools/build_mlm_arguments.py script_table)
    doc["script_groups"] = {name: set(groups) for name, groups in doc.get("scripts", {}).items()}
    _TABLES[core] = doc
    return doc


def option(dest: str, core: Optional[str] = None) -> Optional[dict]:
    """The table row of a dest (action, type, nargs, choices, default, flags, group) in megatron-core ``core``'s
    parser, or None.

    A dest two options share (a deprecated spelling kept as its own action) gives the first one's row;
    ``options_for`` gives them all."""
    rows = table(core)["by_dest"].get(dest)
    return rows[0] if rows else None


def options_for(dest: str, core: Optional[str] = None) -> list:
    return list(table(core)["by_dest"].get(dest, ()))


def defaults(core: Optional[str] = None) -> dict:
    """dest -> the value argparse gives when the flag is absent (string defaults converted by the type, as
    argparse does), in megatron-core ``core``'s parser."""
    out: dict = {}
    for dest, rows in table(core)["by_dest"].items():
        row = rows[0]
        value = row.get("default")
        if isinstance(value, str) and row.get("type") in ("int", "float"):
            try:
                value = int(value) if row["type"] == "int" else float(value)
            except ValueError:
                pass
        out[dest] = value
    return out


# --- loading ----------------------------------------------------------------------------------------


def load_launch(path: str, text: Optional[str] = None, take_defaults: bool = True, env: Optional[dict] = None,
                core: Optional[str] = None) -> Launch:
    """Read a launch script or a functional-test YAML and give its Megatron-LM arguments, as the parser of
    megatron-core ``core`` (None: the newest release held) reads them.

    Raises InputError (one line: file:line:col, flag, message) for input Megatron-LM or the reader
    refuses: no launch line, an unknown flag, a value of the wrong type, a non-integer size."""
    if text is None:
        from overlap_cli.config.safe_read import read_text

        text = read_text(path)
    if is_yaml_path(path):
        from overlap_cli.config.mlm_yaml import read_mlm_yaml

        found = read_mlm_yaml(path, text)
    else:
        from overlap_cli.config.shell import read_launch_script

        found = read_launch_script(path, text, take_defaults, env)
    return launch_from_text(found, core)


def is_yaml_path(path: str) -> bool:
    return path.lower().endswith((".yaml", ".yml"))


def launch_from_text(found: LaunchText, core: Optional[str] = None) -> Launch:
    unknowns = list(found.unknowns)
    tokens = list(found.tokens)
    if len(found.paths) > 1:  # conditions not known statically: the flags every path agrees on are known
        from overlap_cli.frameworks.megatron_lm.paths import merge_paths

        args, notes, path_args = merge_paths(found, lambda script, kind: strict_for(script, kind, core),
                                             lambda *a, **k: parse_tokens(*a, core=core, **k))
        unknowns.extend(n for n in notes if n not in unknowns)
        for path in found.paths[1:]:  # an expansion that may hold any flags, on any path, stays open
            tokens.extend(t for t in path.tokens if t.multi and not any(t == u for u in tokens))
    else:
        path_args = []
        args = parse_tokens(found.file, found.tokens, unknowns, script=found.script,
                            strict=strict_for(found.script, found.kind, core), core=core)
    if "yaml_cfg" in args:  # parse_args replaces argparse's values with the file's (frameworks/megatron_lm/yaml_cfg.py)
        from overlap_cli.frameworks.megatron_lm.yaml_cfg import apply_yaml_cfg

        args = apply_yaml_cfg(found.file, args, unknowns, Arg, list(table(core)["by_dest"]))
    check_parallel_sizes(found.file, args)
    return Launch(
        file=found.file, text=found.text, kind=found.kind, script=found.script, launch_line=found.launch_line,
        args=args, env=found.env, world_size=found.world_size, world_size_line=found.world_size_line,
        argv=[t.text for t in tokens], unknowns=unknowns, tokens=tokens, insert_at=found.insert_at,
        defaults_taken=found.defaults_taken, sourced=list(found.sourced), path_args=path_args,
        forks=dict(getattr(found, "forks", None) or {}), core_version=core,
    )


# --- parallel sizes ---------------------------------------------------------------------------------

# Each size argparse takes as any int (type=int) that validate_args divides by or multiplies into the world:
# with 0, what megatron-core 0.19.2 does (None: validate_args lets it through, and the process groups
# cannot be built from it). A negative size passes validate_args (world_size % -2 == 0 and
# data_parallel_size comes out negative, arguments.py:430-446); the Bridge paths refuse both, and so does
# this reader, with the same words (frameworks/bridge/schema.py).
_ZERO_DIVIDES = {
    "tensor_model_parallel_size": "arguments.py:430",
    "pipeline_model_parallel_size": "arguments.py:430",
    "context_parallel_size": "arguments.py:430",
    "num_layers_per_virtual_pipeline_stage": "arguments.py:938",
    "expert_model_parallel_size": None,
    "expert_tensor_parallel_size": None,
    "num_virtual_stages_per_pipeline_rank": None,
}
from overlap_cli.frameworks.limits import MAX_PARALLEL_SIZE  # noqa: E402 (one limit for every form)


def check_parallel_sizes(file: str, args: dict) -> None:
    """The one check of the launch's parallel sizes, once every form (flags, a functional-test YAML,
    ``--yaml-cfg``, command-line dotlist words) has set them: every consumer reads a positive size below
    ``MAX_PARALLEL_SIZE``, or UNKNOWN. InputError naming the flag's line otherwise."""
    for dest, zero_at in _ZERO_DIVIDES.items():
        arg = args.get(dest)
        if arg is None or arg.value is UNKNOWN or not isinstance(arg.value, int) or isinstance(arg.value, bool):
            continue
        value = arg.value
        if 0 < value <= MAX_PARALLEL_SIZE:
            continue
        if value > MAX_PARALLEL_SIZE:
            message = f"parallel size too large: expected at most 2**31, got int {value}"
        else:
            message = f"non-positive parallel size: expected a positive integer, got int {value}"
            if value == 0 and zero_at is not None:
                message += f" (validate_args stops with ZeroDivisionError: integer modulo by zero, megatron/training/{zero_at})"
            elif value == 0:
                message += " (validate_args lets it through; no process group can be built from it)"
            else:
                message += " (validate_args does not check the sign; the Bridge paths refuse it)"
        raise InputError(InputProblem(file, message, key=arg.flag, line=arg.line, column=arg.column))


# --- argparse semantics -----------------------------------------------------------------------------


def _negative_number(text: str) -> bool:
    # argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$' (Python 3.11)
    body = text[1:]
    if body.isdigit() and body.isascii():
        return True
    whole, dot, frac = body.partition(".")
    return bool(dot) and (not whole or (whole.isdigit() and whole.isascii())) and frac.isdigit() and frac.isascii()


def _classify(token: Token, by_flag: dict):
    """("O", row, flag, explicit) for an option word, ("U", None, word, None) for an unknown option word,
    ("A", ...) for a value-like word (argparse's 'A'), ("?", ...) for a word not known statically."""
    text = token.text
    if text is None:
        return ("?", None, None, None)
    if not text or text[0] != "-" or text == "-":
        return ("A", None, None, None)
    if text == "--":
        return ("--", None, None, None)
    rows = by_flag.get(text)
    if rows is not None:
        return ("O", rows, text, None)
    if "=" in text:
        name, _, explicit = text.partition("=")
        rows = by_flag.get(name)
        if rows is not None:
            return ("O", rows, name, explicit)
    if _negative_number(text) or " " in text:
        return ("A", None, None, None)
    return ("U", None, text.partition("=")[0], None)


class _Fail(Exception):
    def __init__(self, token: Token, flag: Optional[str], message: str):
        super().__init__(message)
        self.token, self.flag, self.message = token, flag, message


def _convert(row: dict, flag: str, raw: str, token: Token):
    kind = row.get("type")
    try:
        if kind == "int":
            value = int(raw)
        elif kind == "float":
            value = float(raw)
        elif kind == "bool":
            value = bool(raw)  # argparse calls bool(str): any non-empty word is True
        elif kind in ("moe_freq_type", "la_freq_type", "no_rope_freq_type"):
            # megatron/training/arguments.py:303-374: an int, or a Python list expression kept as written
            # (Megatron evaluates it; a pattern string is all a static reader needs).
            value = raw if "[" in raw else int(raw)
        elif kind == "tuple_type":
            value = [int(i) for i in raw.strip("()").split(",")]  # arguments.py:376 tuple_type
        else:  # str, enum (by member name, checked against the choices), and types kept as text
            value = raw
    except ValueError:
        raise _Fail(token, flag, f"invalid {kind} value: {raw!r}") from None
    choices = row.get("choices")
    if choices is not None and value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise _Fail(token, flag, f"invalid choice: {raw!r} (choose from {shown})")
    return value


def _is_value(token: Token, by_flag: dict) -> bool:
    kind = _classify(token, by_flag)[0]
    return kind in ("A", "?")


def _span_of(tokens: list) -> Optional[tuple]:
    if not tokens or not all(t.literal and t.span for t in tokens):
        return None
    line = tokens[0].span[0]
    if any(t.span[0] != line for t in tokens):
        return None
    return (line, tokens[0].span[1], tokens[-1].span[2])


def _rows_for_script(rows: list, flag: str, script: Optional[str], token: Token, core: Optional[str]) -> list:
    """The rows of a flag the training script's parser has: core, and the groups that script adds. A
    script none of the groups names (a user's own) may add any of them."""
    if script is None:
        return rows
    doc = table(core)
    mine = doc["script_groups"].get(script)
    if mine is None:
        return rows
    kept = [r for r in rows if r["group"] == "core" or r["group"] in mine]
    if not kept:
        owners = sorted({s for r in rows for s in doc["groups"].get(r["group"], {}).get("scripts", ())})
        raise _Fail(token, flag, f"{script} has no such flag (argparse exits 2: unrecognized arguments); "
                                 f"it is an option of {', '.join(owners)}")
    return kept


def strict_for(script: Optional[str], kind: str, core: Optional[str] = None) -> bool:
    """Whether a flag the table lacks is an error: for a functional-test YAML (the harness runs the
    scripts the table covers) and for a script whose whole argument set the table holds. Another script
    (``run_text_generation.py``, a user's ``train.py``) may add arguments of its own."""
    return kind == "yaml" or script in table(core)["script_groups"]


def parse_tokens(file: str, tokens: list, unknowns: Optional[list] = None, script: Optional[str] = None,
                 strict: bool = True, core: Optional[str] = None) -> dict:
    """dest -> Arg for the argument words of a launch, with argparse's meaning; InputError on what
    argparse rejects. Words not known statically give UNKNOWN values; where one could be flags (an
    unquoted unknown expansion), a sentence goes to ``unknowns``. Not ``strict``: a flag the table lacks
    (and the value words after it) is noted in ``unknowns`` instead of being an error. ``core``: the
    megatron-core release whose parser reads them (None: the newest held)."""
    doc = table(core)
    by_flag = doc["by_flag"]
    out: dict = {}
    unrecognized: list = []  # argparse reports them after everything else parsed
    notes = unknowns if unknowns is not None else []
    i, n = 0, len(tokens)
    try:
        while i < n:
            tok = tokens[i]
            kind, row, flag, explicit = _classify(tok, by_flag)
            if kind == "?":
                if tok.multi:
                    notes.append(f"line {tok.line}: {tok.what or 'a word'} expands to words not known statically; flags in it are not seen")
                else:
                    notes.append(f"line {tok.line}: {tok.what or 'a word'} is not known statically; if it is a flag, it is not seen")
                i += 1
                continue
            if kind == "--":
                unrecognized.extend(tokens[i + 1:] or [tok])
                break
            if kind == "U":
                from overlap_cli.frameworks.megatron_lm.respelled import fork_flag, respelled

                alias = respelled(flag, by_flag)
                if alias is not None:
                    i = fork_flag(tokens, i, alias, by_flag[alias][0], (script, strict, doc["megatron_core"]), out,
                                  notes, lambda tok: _is_value(tok, by_flag), Arg)
                    continue
            if kind == "U" and not strict:
                i += 1
                while i < n and _is_value(tokens[i], by_flag):
                    i += 1
                notes.append(f"line {tok.line}: {flag} is not a Megatron-LM flag; {script or 'the training script'} "
                             "may add it (its own extra_args_provider), so it is not checked")
                continue
            if kind in ("A", "U"):
                unrecognized.append(tok)
                i += 1
                continue
            i += 1
            rows = _rows_for_script(row, flag, script, tok, core)
            row = rows[0]
            action = row["action"]
            nargs = row.get("nargs")
            values: list = []
            if action in ("store_true", "store_false", "store_const", "append_const", "count", "boolean_optional"):
                if explicit is not None:
                    raise _Fail(tok, flag, f"ignored explicit argument {explicit!r}")
            elif explicit is not None:
                if nargs not in (None, "?", "*", "+", 1):
                    raise _Fail(tok, flag, f"expected {nargs} arguments")
                # The value part of ``--flag=value``: exactly placeable when the word was written as is
                # (no quotes or escapes, so the word's span is its text).
                exact = tok.literal and tok.span is not None and tok.span[2] - tok.span[1] == len(tok.text)
                values = [Token(explicit, tok.line, None if tok.column is None else tok.column + len(flag) + 1, tok.origin,
                                literal=exact, span=(tok.span[0], tok.span[1] + len(flag) + 1, tok.span[2]) if exact else None)]
            else:
                want_min, want_max = {None: (1, 1), "?": (0, 1), "*": (0, None), "+": (1, None)}.get(nargs, (nargs, nargs))
                while (want_max is None or len(values) < want_max) and i < n and _is_value(tokens[i], by_flag):
                    values.append(tokens[i])
                    i += 1
                if len(values) < want_min:
                    if nargs is None:
                        raise _Fail(tok, flag, "expected one argument")
                    if nargs == "+":
                        raise _Fail(tok, flag, "expected at least one argument")
                    raise _Fail(tok, flag, f"expected {nargs} arguments")
            value = _value_by_any(rows, flag, values, out.get(row["dest"]))
            previous = out.get(row["dest"])
            literal = tok.literal and all(v.literal and v.origin == tok.origin for v in values)
            out[row["dest"]] = Arg(
                dest=row["dest"], value=value, flag=flag, line=tok.line, column=tok.column, origin=tok.origin,
                placeable=literal and tok.origin in (LAUNCH_LINE, MODEL_ARGS),
                value_span=_span_of(values) if values and literal else None, flag_span=tok.span if tok.literal else None,
                literal=literal, occurrences=(previous.occurrences + 1) if previous else 1,
            )
    except _Fail as exc:
        raise InputError(InputProblem(file, exc.message, key=exc.flag, line=exc.token.line, column=exc.token.column)) from None
    if unrecognized:
        first = unrecognized[0]
        words = " ".join(t.text if t.text is not None else "?" for t in unrecognized)
        message = f"unrecognized arguments: {words}"
        if first.text == "\r":
            message = ("unrecognized argument '\\r': the script has CRLF line ends, so bash reads each `\\` at a line's "
                       "end as an escaped carriage return, not a continuation (argparse exits 2); convert it to LF")
        elif first.text is not None and not first.text.strip():
            message = (f"unrecognized argument {first.text!r}: an escaped blank (a backslash followed by a space at the "
                       "end of a line does not continue it; argparse exits 2)")
        if first.origin == MODEL_ARGS and first.text in ("false", "False", "FALSE"):
            # the harness passes `--flag: false` as two words (tests/functional_tests/shell_test_utils/_run_training.sh)
            message += " (`--flag: false` hands argparse the word 'false'; leave the key out to keep the flag off)"
        key = None
        if first.text and first.text.startswith("-") and not _negative_number(first.text):
            key = first.text.partition("=")[0]
            import difflib

            other = other_release(key, doc["megatron_core"])
            if other is not None:
                message = f"not a flag of megatron-core {doc['megatron_core']} (argparse exits 2: unrecognized arguments): {other}"
            else:
                close = difflib.get_close_matches(key, list(by_flag), n=1, cutoff=0.6)
                message = "no such Megatron-LM flag (argparse exits 2: unrecognized arguments)"
                if close:
                    message += f"; did you mean {close[0]}?"
        raise InputError(InputProblem(file, message, key=key, line=first.line, column=first.column))
    return out


def other_release(flag: str, core: str) -> Optional[str]:
    """Where ``flag``, which megatron-core ``core``'s parser lacks, comes from, as a clause: the first newer
    release the tool holds whose table has it ("it arrives in megatron-core 0.19.x (0.19.2 has it)"), else
    the in-development parser of newer_flags.json (tools/build_mlm_newer_flags.py), else the newest older
    release whose table has it ("it was removed after megatron-core 0.17.1"); None when none has it.
    Another release's table is read only here, on the way to the error."""
    from overlap_cli.frameworks.megatron_lm.releases import CORE
    from overlap_cli.frameworks.releases import is_release

    held = [v for v in CORE.versions() if is_release(v)]  # oldest first
    mine = held.index(core)
    for version in held[mine + 1:]:
        if flag in table(version)["by_flag"]:
            series = ".".join(version.split(".")[:2])
            return f"it is newer, added in megatron-core {series}.x ({version} has it)"
    with open(os.path.join(os.path.dirname(__file__), "newer_flags.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    for entry in doc["releases"]:
        if flag in entry["flags"]:
            project, ref, commit = entry["source"].split(" ")
            release = entry["release"]
            where = f"{project} {ref} {commit[:7]}"
            return "it is newer, first in " + (release[:-1] + f"; {where})" if release.endswith(")") else f"{release} ({where})")
    for version in reversed(held[:mine]):
        if flag in table(version)["by_flag"]:
            return f"megatron-core {version} has it; it was removed after that release"
    return None


def _value_by_any(rows: list, flag: str, values: list, previous: Optional[Arg]):
    """The value by the first row (meaning of the flag) that accepts it; the first row's error otherwise."""
    first_error = None
    for row in rows:
        if row.get("nargs") != rows[0].get("nargs") or row["action"] != rows[0]["action"]:
            continue
        try:
            return _action_value(row, flag, values, previous)
        except _Fail as exc:
            first_error = first_error or exc
    raise first_error


def _action_value(row: dict, flag: str, values: list, previous: Optional[Arg]):
    action = row["action"]
    if action == "store_true":
        return True
    if action == "store_false":
        return False
    if action == "store_const":
        return row.get("const")
    if action == "boolean_optional":
        return not flag.startswith("--no-")
    if action == "count":
        before = previous.value if previous is not None and isinstance(previous.value, int) else 0
        return before + 1
    nargs = row.get("nargs")
    if any(v.text is None for v in values):
        converted: object = UNKNOWN
    elif nargs is None:
        converted = _convert(row, flag, values[0].text, values[0])
    elif nargs == "?":
        converted = _convert(row, flag, values[0].text, values[0]) if values else row.get("const")
    else:
        converted = [_convert(row, flag, v.text, v) for v in values]
    if action == "append":
        before = previous.value if previous is not None and isinstance(previous.value, list) else list(row.get("default") or [])
        return UNKNOWN if converted is UNKNOWN or before is UNKNOWN else before + [converted]
    if action == "append_const":
        before = previous.value if previous is not None and isinstance(previous.value, list) else []
        return before + [row.get("const")]
    return converted
