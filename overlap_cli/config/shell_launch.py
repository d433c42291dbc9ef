"""The launch line of a script read by ``config.shell``: each path's words, environment and world size, and
the one ``LaunchText`` they make together.

The launch is the first command in the file that a path runs as a launch (``launchers.find_program``).
For each path that reaches it: the launch environment (what the script exports before it, then the
command's own ``NAME=value`` prefixes), torchrun's world size (``launchers.torchrun_options``) or srun's
task count, the training script, and the words after the script, each with the offset of every
character so a flag reached through ``"${ARGS[@]}"`` is reported at its line in the array and a word
written literally on the launch line can be edited there. Paths that agree give known values; a variable,
the world size or the script that differ between paths is unknown, with the decision that makes the
difference named (``argv.deciding_forks``). The flags are merged the same way after argparse reads each
path (``frameworks.megatron_lm.args``).
"""

from __future__ import annotations

import itertools
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config.argv import UNKNOWN, EnvVar, LaunchPath, LaunchText, Token, deciding_forks, variable_origin
from overlap_cli.config.launchers import srun_world_size, torchrun_options
from overlap_cli.config.shell_assign import assignment
from overlap_cli.config.shell_expand import expand_joined
from overlap_cli.config.shell_lex import Word
from overlap_cli.config.shell_values import Field


def launch_text(reader) -> LaunchText:
    node = min((rec[0] for rec in reader.records), key=lambda n: n.start)
    others = sorted({rec[0].line for rec in reader.records if rec[0] is not node} | set(reader.extra_launches))
    paths: list = []
    seen: dict = {}
    records = [rec for rec in reader.records if rec[0] is node]
    for rec in records:
        found = path_launch(reader, rec)
        if len(records) == 1:  # one path: nothing to tell apart (the signature sorts the whole environment)
            paths.append((found, rec[1].choices))
            break
        sig = _path_signature(found)
        if sig in seen:  # two paths that launch alike: the decisions between them did not matter
            k = seen[sig]
            paths[k] = (paths[k][0], tuple(c for c in paths[k][1] if c in rec[1].choices))
            continue
        seen[sig] = len(paths)
        paths.append((found, rec[1].choices))
    found = paths[0][0] if len(paths) == 1 else _merge(reader, paths)
    launch_line = found.launch_line
    others = [line for line in others if line != launch_line]
    if others:
        found.unknowns.append(
            "line(s) " + ", ".join(map(str, others)) + f": more launch lines; only the first (line {launch_line}) is checked")
    if reader.merged_note and reader.merged_note not in found.unknowns:
        found.unknowns.append(reader.merged_note)
    found.defaults_taken = reader.defaults_taken > 0
    return found


def _path_signature(found: LaunchText) -> tuple:
    return (tuple((t.text, t.line, t.column, t.multi, t.what) for t in found.tokens), found.script, found.world_size,
            tuple(sorted((k, repr(v.value), v.how) for k, v in found.env.items())))


def path_launch(reader, rec) -> LaunchText:
    """The launch one path makes: ``rec`` is (the launch command, the path's state there, the command's
    expanded words, the written word of each, (kind, index of the program word))."""
    node, st, fields, word_of, (kind, index), added = rec
    st = st.copy()  # the record stays as the reading left it (a cached reading is asked again)
    notes = st.notes
    launch_line = reader.pos(node.words[0].start)[0]
    found = LaunchText(file=reader.path, text=reader.text, kind="shell", script=None, launch_line=launch_line)
    for var in st.vars.values():  # the launch environment: the script's variables, then the command's prefixes
        if var.array or var.unset or not var.name.isidentifier():
            continue
        value: object = UNKNOWN if var.note or not var.fields or var.fields[0].unknown else var.fields[0].text
        line = var.export_line if var.exported else var.line
        how = "export" if var.exported else "assignment"
        found.env[var.name] = EnvVar(var.name, value, line, var.export_col if var.exported else 1, how, span=var.span)
    for p in node.prefix:
        if isinstance(p, tuple):
            continue
        name, _op, cut = assignment(p)
        origin = variable_origin(name, reader.pos(p.start)[0])
        first = p.parts[0]
        parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + p.parts[1:]
        field_ = expand_joined(reader, st, Word(parts, p.start + cut, p.end), origin)
        line, col = reader.pos(p.start)
        found.env[name] = EnvVar(name, UNKNOWN if field_.unknown else field_.text, line, col, "prefix", span=reader.span(p.start, p.end))
    _env_wrapper_assignments(reader, found, fields, word_of, index)
    _container_environment(reader, found, fields, index, launch_line)
    if fields and fields[0].text is None and fields[0].multi:
        what = fields[0].what or "an expansion"
        notes.append(f"line {launch_line}: {what} before the launcher is not known statically (it may wrap the "
                     "launch, or hold words of its own)")
    if kind in ("python", "script"):
        script_pos: Optional[int] = index
        found.script = reader.script_name(fields[index], True)
        if kind == "python":
            srun_world_size(reader, found, fields, index)
        else:
            found.unknowns.append(f"line {launch_line}: the launcher before {found.script} is not known statically; "
                                  "world size unknown")
    else:
        script_pos = torchrun_options(reader, found, fields, index + 1)
        if script_pos is not None:
            found.script = reader.script_name(fields[script_pos], False)
            if found.script is None:
                f = fields[script_pos]
                found.unknowns.append(f"line {reader.pos(word_of[script_pos].start)[0]}: the training script "
                                      f"{f.text or f.what or 'word'} is not known statically")
    if script_pos is not None:
        # the launcher and the training script's directory do not change the flags: what their words
        # could not expand is no unknown of the launch (the file name decides what runs)
        quiet = {s for w in word_of[:script_pos + 1] for s in added.get(id(w), ())}
        quiet -= {s for w in word_of[script_pos + 1:] for s in added.get(id(w), ())}
        # ... but the world size is read from torchrun's own options, or from srun's before the script
        sizes = word_of[index + 1:script_pos] if kind not in ("python", "script") else word_of[:index]
        quiet -= {s for w in sizes for s in added.get(id(w), ())}
        quiet = {s for s in quiet if not _sizes_word(s, fields, index, script_pos)}
        notes[:] = [s for s in notes if s not in quiet]
    found.unknowns[:0] = notes
    if script_pos is None:
        return found
    found.insert_at = reader.pos(word_of[script_pos].end)
    for f, w in zip(fields[script_pos + 1:], word_of[script_pos + 1:]):
        found.tokens.append(_token(reader, f, w))
    _note_broken_continuation(reader, found, node.words[-1].end if isinstance(node.words[-1], Word) else node.end)
    return found


_ASSIGN_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")


def _env_wrapper_assignments(reader, found: LaunchText, fields: list, word_of: list, index: int) -> None:
    """``env NAME=value ... torchrun ...``: the ``env`` program puts each ``NAME=value`` word into the
    environment of the command it runs (coreutils env), as a prefix assignment does."""
    k = 0
    while k < index:
        if (fields[k].text or "").rsplit("/", 1)[-1] != "env":
            k += 1
            continue
        k += 1
        while k < index:
            f = fields[k]
            literal = "".join(c for c in itertools.takewhile(lambda c: isinstance(c, str), f.chars))
            m = _ASSIGN_NAME.match(literal)
            if m is None:
                if literal.startswith("-"):
                    k += 1
                    continue
                break
            name, written = m.group(1), word_of[k]
            line, col = reader.pos(written.start)
            exact = f.word is written and not f.unknown
            found.env[name] = EnvVar(name, UNKNOWN if f.unknown else f.text[m.end():], line, col, "prefix",
                                     span=reader.span(written.start, written.end) if exact else None)
            k += 1


def _container_environment(reader, found: LaunchText, fields: list, index: int, launch_line: int) -> None:
    """``docker|podman run ... torchrun``: the container's environment is the image's plus ``-e NAME=VALUE`` /
    ``-e NAME`` (the value the script exports) only; the script's other variables do not reach the launch."""
    from overlap_cli.config.shell_containers import docker_env

    got = docker_env(reader, fields, index)
    if got is None:
        return
    at, given, env_file = got
    outside = found.env
    found.env = {}
    for name, value in given:
        mine = outside.get(name)
        if value is None:  # -e NAME: the docker client's NAME, which the script exports (or the caller's)
            if mine is not None and mine.how in ("export", "prefix"):
                found.env[name] = mine
            continue
        found.env[name] = EnvVar(name, value, launch_line, None, "prefix")
    dropped = sorted(n for n, v in outside.items() if v.how in ("export", "prefix") and n not in found.env)
    what = f" ({', '.join(dropped[:6])}{', ...' if len(dropped) > 6 else ''})" if dropped else ""
    found.unknowns.append(
        f"line {launch_line}: {reader.static_text(fields[at])} run starts the launch with the image's environment and "
        f"its -e/--env variables only: the script's exports{what} do not reach it, and what the image sets is not "
        "known statically" + ("; an --env-file adds more" if env_file else ""))


def _sizes_word(sentence: str, fields: list, index: int, script_pos: int) -> bool:
    """The sentence is about an expansion among torchrun's own options (the world size may depend on it)."""
    return any(f.unknown and f.what and f.what in sentence for f in fields[index + 1:script_pos])


def _note_broken_continuation(reader, found: LaunchText, end: int) -> None:
    """A launch whose last word ends in a backslash and a blank (``--bf16 \\ `` + newline): the blank is
    escaped, so the line does not continue, and the flags on the next lines never reach the launch."""
    text = reader.text
    line_end = reader.end_of_line(end)
    if not (end >= 2 and text[end - 2] == "\\" and text[end - 1] in " \t" and not text[end:line_end].strip()):
        return
    following = text[line_end + 1:reader.end_of_line(line_end + 1)].lstrip()
    if following.startswith("-"):
        line = reader.pos(end - 2)[0]
        found.unknowns.append(
            f"line {line}: the backslash is followed by a blank, so the line does not continue: the launch ends "
            f"here and the flags from line {line + 1} on are not passed (bash then runs them as a command)")


def _token(reader, f: Field, written: Word) -> Token:
    # a whole written word is placed where it starts (its opening quote); a piece of one, at its first character
    first = f.word.start if (f.whole and f.word is not None) else next((o for o in f.offsets if o is not None), None)
    if first is None:
        first = written.start
    line, col = reader.pos(first) if first is not None else (None, None)
    if f.unknown:
        return Token(None, line, col, f.origin, multi=f.multi, what=f.what, prefix=_known_prefix(f))
    literal = f.whole and f.word is not None
    span = reader.span(f.word.start, f.word.end) if literal else None
    return Token(f.text, line, col, f.origin, literal=literal and span is not None, span=span)


def _known_prefix(f: Field) -> str:
    out = []
    for c in f.chars:
        if c.__class__ is not str:
            break
        out.append(c)
    return "".join(out)


def _merge(reader, paths: list) -> LaunchText:
    """One LaunchText for the paths that reach the launch: what they agree on is known."""
    first = paths[0][0]
    choices = [c for _, c in paths]
    found = LaunchText(file=first.file, text=first.text, kind="shell", script=first.script,
                       launch_line=first.launch_line, tokens=list(first.tokens), insert_at=first.insert_at,
                       forks=dict(reader.forks))
    found.paths = [LaunchPath(p.tokens, p.script, c) for p, c in paths]
    for p, _ in paths:
        found.unknowns.extend(u for u in p.unknowns if u not in found.unknowns)
    names = dict.fromkeys(n for p, _ in paths for n in p.env)  # in the order first met, each once
    for name in names:
        evs = [p.env.get(name) for p, _ in paths]
        keys = [None if e is None else (repr(e.value), e.how) for e in evs]
        present = [e for e in evs if e is not None]
        if len(set(keys)) == 1:
            found.env[name] = present[0]
            continue
        base = next((e for e in present if e.how in ("export", "prefix")), present[0])
        found.env[name] = EnvVar(name, UNKNOWN, base.line, base.column, base.how, span=None)
        shown = sorted({"not set" if e is None else ("unknown" if e.value is UNKNOWN else repr(e.value)) for e in evs})
        found.unknowns.append(f"line {base.line}: {name} is {' or '.join(shown)} at the launch, depending on "
                              f"{deciding_forks(choices, keys, reader.forks)}")
    sizes = [(p.world_size, p.world_size_line) for p, _ in paths]
    if len({s[0] for s in sizes}) == 1:
        found.world_size, found.world_size_line = sizes[0]
    else:
        shown = sorted({"unknown" if s[0] is None else str(s[0]) for s in sizes})
        found.unknowns.append(f"line {first.launch_line}: the world size is {' or '.join(shown)}, depending on "
                              f"{deciding_forks(choices, [s[0] for s in sizes], reader.forks)}; unknown")
    scripts = [p.script for p, _ in paths]
    if len(set(scripts)) > 1:
        found.unknowns.append(f"line {first.launch_line}: the training script is {' or '.join(sorted(map(str, set(scripts))))}, "
                              f"depending on {deciding_forks(choices, scripts, reader.forks)}")
    return found

