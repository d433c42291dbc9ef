"""``overlap fix`` on a launch of Bridge's recipe runner (``run_recipe.py --recipe NAME KEY=VALUE ...``):
an edit of the run is an override word of the launch line, as the runner's user writes one.

- a key a trailing override word already sets gets its value replaced in that word, when the word is
  literal text of the line (not built by an expansion) and written without quotes;
- any other key gets a new word ``KEY=VALUE`` after the launch's last word, when that word is literal: the
  runner applies trailing overrides last and in order (run_recipe.py:450), so the new word wins over a
  convenience flag and over the recipe;
- a removal takes the key's override words away (literal words of the line only); refused when the recipe
  holds another value than the class default (the runner merges onto the recipe, which has no deletion);
- a value that is no plain scalar, or a launch whose last word comes from a variable is refused with the
  reason.

Each edit is proven by reading the edited launch again (config/shell.py, frameworks/bridge/run_recipe.py):
the runner must see exactly the overrides it saw, with this one replaced or added, and the same recipe.
"""

from __future__ import annotations

from overlap_cli.fix.common import Unplaceable


def _word(key: str, value) -> str:
    if isinstance(value, bool):
        shown = "true" if value else "false"
    elif value is None:
        shown = "null"
    elif isinstance(value, (int, float)):
        shown = repr(value)
    elif isinstance(value, str) and value and all(c.isalnum() or c in "._-/:" for c in value):
        shown = value
    else:
        raise Unplaceable(f"the value {value!r} of {key} is not a plain word to write on a launch line")
    return f"{key}={shown}"


def _read(path: str, text: str, env: dict):
    from overlap_cli.config.shell import read_launch_script
    from overlap_cli.frameworks.bridge import run_recipe

    found = read_launch_script(path, text, env=env)
    return found, run_recipe.read(found)


def _splice(text: str, span: tuple, new: str) -> str:
    line, start, end = span
    lines = text.split("\n")
    row = lines[line - 1]
    lines[line - 1] = row[: start - 1] + new + row[end - 1:]
    return "\n".join(lines)


def place(path: str, text: str, env: dict, edit, cfg=None, release=None) -> str:
    """``text`` with ``edit`` (a results.Edit) made as an override word, proven; Unplaceable otherwise.
    ``cfg``: the run's merged config; a new word for a key it lacks is ``+KEY=VALUE`` (Hydra's struct mode,
    which the runner's overrides go through, refuses a new key without ``+``)."""
    found, before = _read(path, text, env)
    given = [t for t in found.tokens if t.text is not None and t.text.startswith(edit.key + "=")
             and not t.text.startswith("-")]
    if edit.op == "remove":
        return _remove(path, text, env, edit.key, given, before, cfg, release)
    word = _word(edit.key, edit.value)
    if given:
        tok = given[-1]
        if not tok.literal or tok.span is None or tok.span[2] - tok.span[1] != len(tok.text):
            raise Unplaceable(f"{edit.key} is given by a word that is not plain text of the line ({tok.origin}): edit it by hand")
        new = _splice(text, tok.span, word)
        want = [(word if raw == tok.text else raw) for raw, _ in before.overrides]
    else:
        last = found.tokens[-1] if found.tokens else None
        if last is None or not last.literal or last.span is None:
            raise Unplaceable("the launch line's last word is not plain text of the line: add the override by hand")
        line, _start, end = last.span
        if cfg is not None and not cfg.has(tuple(edit.key.split("."))):
            word = "+" + word
        new = _splice(text, (line, end, end), " " + word)
        want = [raw for raw, _ in before.overrides] + [word]
    _found, after = _read(path, new, env)
    if [raw for raw, _ in after.overrides] != want or after.recipe != before.recipe:
        raise Unplaceable(f"{word} does not read back as the runner's override (the launch line's layout)")
    return new


def _remove(path: str, text: str, env: dict, key: str, given: list, before, cfg, release) -> str:
    """``text`` without the override words of ``key``, proven; Unplaceable when the recipe below holds a
    value other than the class default (the runner merges onto the recipe, which has no deletion)."""
    from overlap_cli.fix.common import removal_refused

    below = cfg.layer_list[0].label if cfg is not None and cfg.layer_list else "the recipe"
    why = removal_refused(cfg.lower_data if cfg is not None else None, tuple(key.split(".")), key, below, release)
    if why is not None:
        raise Unplaceable(why)
    new = text
    for tok in reversed(given):  # the last word first: the spans of the words before it stay right
        if not tok.literal or tok.span is None or tok.span[2] - tok.span[1] != len(tok.text):
            raise Unplaceable(f"{key} is given by a word that is not plain text of the line ({tok.origin}): edit it by hand")
        line, start, end = tok.span
        row = new.split("\n")[line - 1]
        lead = start - 1
        while lead > 0 and row[lead - 1] in " \t":
            lead -= 1
        new = _splice(new, (line, lead + 1, end), "")
    dropped = {t.text for t in given}
    _found, after = _read(path, new, env)
    if [raw for raw, _ in after.overrides] != [raw for raw, _ in before.overrides if raw not in dropped] \
            or after.recipe != before.recipe:
        raise Unplaceable(f"removing {key} does not read back as the runner's overrides (the launch line's layout)")
    return new


def apply_round(current: str, findings: list, checked) -> tuple:
    """(new text, [Applied], [Skipped]): each finding's edits placed in turn."""
    from overlap_cli.fix.common import each_fix
    from overlap_cli.forms.megatron_lm import launch_env_of

    path, env, cfg, release = checked.run.file, launch_env_of(checked.run.target), checked.view.cfg, checked.view.release

    def place_fix(text: str, f) -> str:
        for e in f.fix.edits:
            text = place(path, text, env, e, cfg, release)
        return text

    return each_fix(current, findings, place_fix)
