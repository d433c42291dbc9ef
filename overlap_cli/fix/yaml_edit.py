"""``overlap fix`` on a Bridge config written as YAML: one round of edits on the text.

A round takes every finding's fix, applies its edits to the round-trip tree, carries ruamel's changed lines
onto the original text (fix.text), and proves the result: it must parse to exactly the data the edits
describe and keep every user comment, also those on the lines of a removed key (they move to a comment line
where the key was, after a note saying what was removed and why). Anything that cannot be proven is refused
for the whole file (fix.text.Unmappable). Scalar edits in plain block style are made on the text directly
(fix.fast).

A value written as a ``${...}`` interpolation is never edited, nor is a node shared through a YAML
anchor or inherited through a ``<<`` merge key: the fix is reported as skipped.

``Session`` is how fix.loop works on a YAML text: ``\n`` line ends and a final newline while it works (what
ruamel writes), the file's own style put back at the end, and the notes (``# overlap: CODE why``) written
beside the changed keys.
"""

from __future__ import annotations

from typing import Optional

from overlap_cli.config import yamlrt
from overlap_cli.fix import text as fixtext
from overlap_cli.fix import tree as fixtree
from overlap_cli.fix.common import Applied, Skipped, own_words, reason, removal_refused
from overlap_cli.fix.common import Session as CommonSession
from overlap_cli.fix.tree import split_key
from overlap_cli.problems import InputError
from overlap_cli.results import Edit

Unmappable = fixtext.Unmappable


class Session(CommonSession):
    """One YAML file's text as the rounds work on it: ``\n`` line ends and a final newline while it works
    (what ruamel writes), the file's own style put back at the end, and the notes (``# overlap: CODE why``)
    written beside the changed keys."""

    def __init__(self, text: str):
        super().__init__(text)
        self.add_newline = bool(self.work) and not self.work.endswith("\n")
        if self.add_newline:
            self.work += "\n"
        self.notes: dict = {}  # path tuple -> "CODE reason" of the last change there

    def applied(self, a) -> None:
        """Remember the note of an applied fix's edits (a later edit of the same place supersedes it)."""
        for e in a.edits:
            p = split_key(e.key)
            for old in [q for q in self.notes if q[: len(p)] == p]:
                del self.notes[old]
            if e.op != "remove":
                why = own_words(getattr(e, "comment", None)) or reason(a.finding.fix.message)
                self.notes[p] = f"{a.finding.code} {why}"

    def finish(self, current: str, comments: bool, recheck) -> tuple:
        """(the text to write, its check) — the notes added when they change no value, the file's line ends
        and final newline as they were. ``recheck(text)`` checks a text."""
        result = None
        if comments and self.notes and current != self.work:
            noted = fixtext.add_notes(current, sorted(self.notes.items(), key=lambda kv: kv[0]))
            noted_data = _parse(noted)
            if noted_data is not None and fixtext.same(noted_data, _parse(current)):
                current = noted
                result = recheck(current)
        if current == self.work:
            return None, result
        if self.add_newline:
            current = current[:-1] if current.endswith("\n") else current
        return self.restore(current), result


def _parse(text: str):
    from overlap_cli.config.yamlnodes import parse_yaml

    try:
        return parse_yaml(text, "<fix>")[0]
    except InputError:
        return None


# ----------------------------------------------------------------------------------------------
# One round
# ----------------------------------------------------------------------------------------------


def edit_round(text: str, findings: list, cfg, notes: bool = True, release=None) -> tuple:
    """apply_round, with a text it cannot prove or ruamel cannot read refused as a whole (fix.common.Refused)."""
    from overlap_cli.fix.common import Refused

    try:
        return apply_round(text, findings, cfg, notes, release)
    except Unmappable as exc:
        raise Refused(f"not fixed: {exc}; the file is left untouched") from None
    except Exception as exc:  # ruamel refuses some texts PyYAML reads (an impossible date, a stray BOM)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise Refused(f"not fixed: the round-trip YAML parser cannot read this file ({first}); "
                      "the file is left untouched") from None


def apply_round(text: str, findings: list, cfg, notes: bool = True, release=None) -> tuple[str, list, list]:
    """(new text, Applied list, Skipped list). Raises fixtext.Unmappable when the text cannot be proven.

    Lines an edit takes away (a removed key, a block value replaced) lose no user comment: before the
    edit, ``fixtext.keep_comments`` moves their comments to comment lines just after them (with
    ``notes``, a note saying what was removed and why); the edit then runs on that text. Scalar edits in
    plain block style are made on the text directly (``fixfast``); the rest, and anything the proof
    refuses there, on ruamel's round-trip tree, whose changed lines are carried onto the text.
    """
    import copy

    from overlap_cli.fix import fast as fixfast
    from overlap_cli.config.yamlnodes import parse_yaml

    plain = parse_yaml(text, "<fix>")[0]
    if plain is None:  # an override file of comments only: its keys start after them
        return _fill_empty(text, findings, cfg, release)
    fast = fixfast.possible(text)
    if fast:  # no anchors or merges: plain data answers "does this edit change anything"
        y, data, before = None, copy.deepcopy(plain), None
    else:
        y, data = fixtree.load(text)
        before = yamlrt.dump(y, data)  # ruamel's own rendering of the unedited tree (dumping does not change it)
    touched: dict = {}
    applied, skipped = [], []
    removals: list = []
    # An "add" only fills a gap; let explicit "set"s of the same round go first.
    ordered = sorted(findings, key=lambda f: all(e.op == "add" for e in f.fix.edits))
    for f in ordered:
        edits = f.fix.edits
        if cfg.wrapped_model_keys:  # the GPTModelConfig form: model.X is written under model.transformer
            edits = tuple(Edit(e.op, cfg.file_key(e.key), e.value, e.comment) for e in edits)
        why = _blocked(edits, cfg, data)
        if why is None and cfg.layered:
            edits, why = _for_top_file(edits, cfg, data, release)
        if why:
            skipped.append(Skipped(f, why))
            continue
        if _conflicts(edits, touched):
            continue  # another fix changed this key this round; the next round decides again
        changed = []
        for e in edits:
            path = split_key(e.key)
            old = yamlrt.get_node(data, path)
            if old is not None and fast:
                old = copy.deepcopy(old)
            if fixfast.apply_plain_edit(data, e) if fast else fixtree.apply_edit(data, e):
                changed.append(e)
                if e.op == "remove" or isinstance(old, (dict, list)):
                    place = fixtext.key_place(text, path)
                    if place is not None:
                        why_words = own_words(e.comment) or reason(f.fix.message)
                        removals.append(fixtext.Removal(
                            *place, key_too=e.op == "remove", key=path[-1], code=f.code, why=why_words,
                            moved_to=_moved_to(e, old, edits),
                        ))
            fixtext.apply_plain(plain, e.op, path, e.value)
            touched[path] = (e.op, e.value)
        if changed:
            applied.append(Applied(f, changed, 0))
    if not applied:
        return text, [], skipped
    base = fixtext.keep_comments(text, removals, notes)
    edits_made = [e for a in applied for e in a.edits]
    if fast:
        new = fixfast.apply(base, edits_made)
        if new is not None and _proven(text, new, plain) is None:
            return new, applied, skipped
    if y is None or base != text:  # the same edits on the tree of the text whose comments are out of their way
        y, data = fixtree.load(base)
        before = yamlrt.dump(y, data)
        for e in edits_made:
            fixtree.apply_edit(data, e)
    new = fixtext.transplant(base, before, yamlrt.dump(y, data))
    problem = _proven(text, new, plain)
    if problem:
        raise fixtext.Unmappable(problem)
    return new, applied, skipped


def _fill_empty(text: str, findings: list, cfg, release) -> tuple:
    """apply_round for a document with no value (comments, blank lines): the edits become a new block
    mapping after the file's own lines, proven like any round's text."""
    y, data = fixtree.load("x: 0\n")  # a block mapping ruamel writes in block style once keys are added
    del data["x"]
    plain: dict = {}
    applied, skipped = [], []
    for f in sorted(findings, key=lambda f: all(e.op == "add" for e in f.fix.edits)):
        edits = f.fix.edits
        if cfg.layered:
            edits, why = _for_top_file(edits, cfg, data, release)
            if why:
                skipped.append(Skipped(f, why))
                continue
        changed = [e for e in edits if e.op != "remove"]
        for e in changed:
            fixtree.apply_edit(data, e)
            fixtext.apply_plain(plain, e.op, split_key(e.key), e.value)
        if changed:
            applied.append(Applied(f, changed, 0))
    if not applied:
        return text, [], skipped
    head = text if not text or text.endswith("\n") else text + "\n"
    new = head + yamlrt.dump(y, data)
    problem = _proven(text, new, plain)
    if problem:
        raise fixtext.Unmappable(problem)
    return new, applied, skipped


def _proven(text: str, new: str, plain) -> Optional[str]:
    """None when ``new`` means exactly ``plain`` and keeps every comment of ``text``; else why not."""
    got = _parse(new)
    if got is None or not fixtext.same(got, plain):
        return "the edited text would not mean what the fix says (unusual layout)"
    lost = fixtext.lost_comments(text, new)
    if lost:
        return f"the edit would drop the comment {lost[0]!r}"
    return None


def _moved_to(e, old, edits) -> str:
    """The section a removed key goes to when the same fix writes it there with the same value, else ""."""
    if e.op != "remove":
        return ""
    leaf, value = split_key(e.key)[-1], fixtree.plain(old)
    for o in edits:
        p = split_key(o.key)
        if o.op == "remove":
            continue
        if len(p) > 1 and p[-1] == leaf and fixtext.same(o.value, value):
            return ".".join(p[:-1])
        if isinstance(o.value, dict) and leaf in o.value and fixtext.same(o.value[leaf], value):
            return o.key  # a section written out whole (a recipe name spelled as a mapping)
    return ""


def _conflicts(edits, touched: dict) -> bool:
    for e in edits:
        p = split_key(e.key)
        for q, (op, value) in touched.items():
            if q == p:
                if (op, value) != (e.op, e.value) or not fixtext.same(value, e.value):
                    return True
            elif q[: len(p)] == p or p[: len(q)] == q:
                return True
    return False


def _for_top_file(edits, cfg, data, release) -> tuple:
    """(edits, None) as they are written into the top file of a merged run, or (edits, why not).

    A removal of a key a lower layer holds cannot be said by a file merged on top (OmegaConf.merge has no
    deletion), so it is refused. A mapping started in a section the layers below leave null (or hold as a
    recipe name) gets its class's ``_target_`` too, or Bridge would set it as a plain dict (CFG006)."""
    from overlap_cli.config.layers import DATACLASS_SECTIONS

    lower = cfg.lower_data or {}
    out = list(edits)
    for e in edits:
        p = split_key(e.key)
        if e.op == "remove":
            why = removal_refused(lower, p, e.key, cfg.layer_list[0].label if len(cfg.layer_list) < 3 else "a layer below",
                                  release)
            if why is not None:
                return edits, why
            continue  # the layers below hold nothing, or the class default a plain config falls back to
        section = p[0]
        if section in DATACLASS_SECTIONS and len(p) > 1 and not isinstance(lower.get(section), dict):
            top = data.get(section) if isinstance(data, dict) else None
            if not (isinstance(top, dict) and "_target_" in top) and not any(o.key == f"{section}._target_" for o in out):
                out.insert(0, Edit("set", f"{section}._target_", DATACLASS_SECTIONS[section][0]))
    return tuple(out), None


def _blocked(edits, cfg, data) -> Optional[str]:
    """Why the edits must not be applied to this file, or None."""
    for e in edits:
        p = split_key(e.key)
        for ip in getattr(cfg, "interpolated_paths", ()):
            if ip[: len(p)] == p or p[: len(ip)] == ip:
                return f"{'.'.join(map(str, ip))} comes from a ${{...}} interpolation; edit it by hand"
        node = data
        for i, part in enumerate(p[:-1]):
            if fixtree.anchored(node):
                return f"{'.'.join(p[:i]) or 'the document'} is shared through a YAML anchor; edit it by hand"
            if not isinstance(node, dict) or part not in node or fixtree.is_null(node[part]):
                break  # the rest of the path is created
            if fixtree.merged(node, part):
                return f"{'.'.join(p[: i + 1])} is inherited through a << merge key; edit it by hand"
            node = node[part]
            if not isinstance(node, dict):
                return f"{'.'.join(p[: i + 1])} is not a mapping"
        else:
            if fixtree.anchored(node):
                return f"{'.'.join(p[:-1])} is shared through a YAML anchor; edit it by hand"
            leaf = p[-1]
            if isinstance(node, dict) and leaf in node:
                if fixtree.merged(node, leaf):
                    return f"{e.key} is inherited through a << merge key; edit it by hand"
                if fixtree.anchored(node[leaf]):
                    return f"{e.key} is shared through a YAML anchor; edit it by hand"
    return None
