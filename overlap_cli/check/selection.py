"""Which findings a run reports.

Three layers, applied after the rules ran (rules always run in full: they are cheap, and a suppression
can only be called unused if its rule had a chance to fire):

1. Rule selection, like ruff: ``select`` / ``extend-select`` / ``ignore`` take codes (``TP102``), code
   prefixes (``TP``, ``TP1``), rule names (``tp-overlap-off-sequence-parallel``) or ``ALL``. Within one
   layer the most specific selector wins and ``ignore`` wins a tie; ``select`` replaces what the layer
   below chose. Layers: ``[tool.overlap]`` in the nearest pyproject.toml, then the command line.
2. ``per-file-ignores`` from ``[tool.overlap]``: glob (relative to the pyproject.toml's folder, or a bare
   file name) -> codes.
3. Inline suppressions in the YAML: ``# overlap: ignore[TP102, PP202]`` at the end of the line a finding
   points at, or alone on the line above it; ``# overlap: ignore-file`` (optionally ``[CODES]``) on a line
   of its own. A listed code that suppressed nothing is reported as CFG009 (info), like ruff's
   unused-noqa, so stale suppressions do not pile up.

``filter_findings`` is the one entry point; the check engine and the fixer both call it.
"""

from __future__ import annotations

import itertools
import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Iterable, Optional

from overlap_cli.results import Finding
from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

UNUSED_SUPPRESSION = "CFG009"


class SelectionError(ValueError):
    """A selector names no rule. The message names the closest codes."""


# ---------------------------------------------------------------------------------------------
# Selectors
# ---------------------------------------------------------------------------------------------


def _rules():
    from overlap_cli.rules import all_rules

    return all_rules()


def _closest(token: str, limit: int = 3) -> list[str]:
    import difflib

    rules = _rules()
    up = token.strip().upper()
    prefixed = [c for c in rules if c.startswith(up)] if up else []  # `TP` -> TP101, TP102, ...
    names = {r.name: c for c, r in rules.items()}
    close = difflib.get_close_matches(up, list(rules), n=limit, cutoff=0.5)
    close += [names[n] for n in difflib.get_close_matches(token.strip().lower(), list(names), n=limit, cutoff=0.6)]
    out: list[str] = []
    for c in prefixed + close:
        if c not in out:
            out.append(c)
    return out[:limit]


def unknown_message(token: str, what: str = "rule code or prefix") -> str:
    near = _closest(token)
    hint = f"; closest: {', '.join(near)}" if near else "; `overlap rules` lists every code"
    return f"unknown {what} {token!r}{hint}"


def expand(token: str) -> frozenset:
    """The codes one selector stands for. Raises SelectionError for a selector that matches nothing."""
    rules = _rules()
    t = token.strip()
    if t.upper() == "ALL":
        return frozenset(rules)
    up = t.upper()
    if up in rules:
        return frozenset((up,))
    by_name = [c for c, r in rules.items() if r.name == t.lower()]
    if by_name:
        return frozenset(by_name)
    # A prefix must start with a whole family name (TP, not T) so that `--ignore C` cannot mean CFG and CP.
    family = "".join(itertools.takewhile(str.isalpha, up))
    rest = up[len(family):]
    if family and (rest == "" or rest.isdigit()):
        matched = [c for c, r in rules.items() if r.family == family and c.startswith(up)]
        if matched:
            return frozenset(matched)
    raise SelectionError(unknown_message(t))


def _specificity(token: str) -> int:
    """ALL < family (TP) < longer prefix (TP1) < one rule (TP102 or its name)."""
    up = token.strip().upper()
    if up == "ALL":
        return 0
    rules = _rules()
    if up in rules or any(r.name == token.strip().lower() for r in rules.values()):
        return 100
    return len(up)


def split_selectors(values: Optional[Iterable[str]]) -> Optional[tuple]:
    """CLI values may repeat the flag or use commas: ``--select TP,PP --select DP301``."""
    if values is None:
        return None
    out = []
    for v in values:
        out += [p.strip() for p in str(v).split(",") if p.strip()]
    return tuple(out)


@dataclass(frozen=True)
class Selectors:
    """One layer of selection (the command line, or one [tool.overlap] table)."""

    select: Optional[tuple] = None  # None: keep what the layer below chose
    extend_select: tuple = ()
    ignore: tuple = ()

    def validate(self) -> None:
        for token in (self.select or ()) + self.extend_select + self.ignore:
            expand(token)

    def apply(self, enabled: set) -> set:
        """Codes enabled after this layer. Most specific selector wins; ``ignore`` wins a tie."""
        if self.select is None and not self.extend_select and not self.ignore:
            return set(enabled)
        best: dict[str, tuple[int, bool]] = {}  # code -> (specificity, on)
        for tokens, on in (((self.select or ()) + self.extend_select, True), (self.ignore, False)):
            for token in tokens:
                spec = _specificity(token)
                for code in expand(token):
                    prev = best.get(code)
                    if prev is None or spec > prev[0] or (spec == prev[0] and not on):
                        best[code] = (spec, on)
        out = set() if self.select is not None else set(enabled)
        for code, (_, on) in best.items():
            (out.add if on else out.discard)(code)
        return out


def _as_list(settings_path: str, key: str, value) -> tuple:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(InputProblem(settings_path, "must be a list of rule codes or prefixes", key=f"tool.overlap.{key}"))
    return tuple(value)


def _settings_layer(settings) -> tuple[Selectors, tuple]:
    """The selection layer and the per-file-ignores of one [tool.overlap] table (validated)."""
    if settings is None or not settings.data:
        return Selectors(), ()
    path = settings.path or "pyproject.toml"

    def get(key: str):
        for k in (key, key.replace("-", "_")):
            if k in settings.data:
                return k, settings.data[k]
        return key, None

    layer = {}
    for key in ("select", "extend-select", "ignore"):
        k, v = get(key)
        if v is not None:
            layer[key.replace("-", "_")] = _as_list(path, k, v)
            for token in layer[key.replace("-", "_")]:
                try:
                    expand(token)
                except SelectionError as exc:
                    raise InputError(InputProblem(path, str(exc), key=f"tool.overlap.{k}")) from None
    k, pfi = get("per-file-ignores")
    per_file: list = []
    if pfi is not None:
        if not isinstance(pfi, dict):
            raise InputError(InputProblem(path, "must be a table of glob = [codes]", key=f"tool.overlap.{k}"))
        for pattern, codes in pfi.items():
            tokens = _as_list(path, f"{k}.{pattern}", codes)
            try:
                expanded = frozenset().union(*(expand(t) for t in tokens)) if tokens else frozenset()
            except SelectionError as exc:
                raise InputError(InputProblem(path, str(exc), key=f"tool.overlap.{k}.{pattern}")) from None
            per_file.append((pattern, expanded))
    return Selectors(layer.get("select"), layer.get("extend_select", ()), layer.get("ignore", ())), tuple(per_file)


@dataclass
class RuleSelection:
    """Selection for a whole run: the command-line layer, plus each file's [tool.overlap] (found per file).

    Picklable (plain data), so ``--jobs`` workers get the same selection."""

    cli: Selectors = field(default_factory=Selectors)
    settings_path: Optional[str] = None  # an explicit --settings file; else found per config file
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self):
        return {"cli": self.cli, "settings_path": self.settings_path}

    def __setstate__(self, state):
        self.cli, self.settings_path, self._cache = state["cli"], state["settings_path"], {}

    def enabled_for(self, path: str) -> frozenset:
        """Codes reported for ``path``. Raises InputError for a bad [tool.overlap] table."""
        from overlap_cli.launch_profile.settings import find_settings

        settings = find_settings(path, self.settings_path)
        key = settings.path
        hit = self._cache.get(key)
        if hit is None:
            layer, per_file = _settings_layer(settings)
            enabled = self.cli.apply(layer.apply(set(_rules())))
            base = os.path.dirname(os.path.abspath(settings.path)) if settings.path else ""
            hit = self._cache[key] = (frozenset(enabled), per_file, base)
        enabled, per_file, base = hit
        if per_file:
            from overlap_cli.launch_profile.settings import path_matches

            drop = set()
            for pattern, codes in per_file:
                if path_matches(pattern, path, base):
                    drop |= codes
            if drop:
                return enabled - drop
        return enabled


def cli_selection(select=None, ignore=None, extend_select=None, settings_path: Optional[str] = None) -> RuleSelection:
    """Build the run's selection from command-line values. Raises SelectionError for an unknown selector."""
    layer = Selectors(split_selectors(select), split_selectors(extend_select) or (), split_selectors(ignore) or ())
    layer.validate()
    return RuleSelection(layer, settings_path)


# ---------------------------------------------------------------------------------------------
# Inline suppressions (the comments are parsed in suppression.py)
# ---------------------------------------------------------------------------------------------


def _token_codes(token: str) -> Optional[frozenset]:
    try:
        return expand(token)
    except SelectionError:
        return None


def filter_findings(
    findings: list,
    path: str,
    text: Optional[str],
    selection: Optional[RuleSelection] = None,
) -> list:
    """Apply rule selection, per-file-ignores and inline suppressions to one file's findings.

    Returns the findings to report, plus CFG009 findings for suppressions that suppressed nothing.
    Raises InputError for an invalid [tool.overlap] table."""
    selection = selection or RuleSelection()
    enabled = selection.enabled_for(path)
    kept = [f for f in findings if f.code in enabled]
    from overlap_cli.check.suppression import parse_directives

    directives = parse_directives(text) if text else []
    if not directives:
        return kept

    file_level = [d for d in directives if d.applies_to is None]
    if any(not d.tokens for d in file_level):
        return []  # `# overlap: ignore-file`: nothing from this file is reported
    by_line: dict[int, list] = {}
    for d in directives:
        if d.applies_to is not None:
            by_line.setdefault(d.applies_to, []).append(d)
    codes_of = {t: _token_codes(t) for d in directives for t in d.tokens}

    def suppressed_by(d, code: str) -> bool:
        if not d.tokens:
            d.used.add("")
            return True
        hit = False
        for t in d.tokens:
            codes = codes_of[t]
            if codes is not None and code in codes:
                d.used.add(t)
                hit = True
        return hit

    out = []
    for f in kept:
        hidden = any(suppressed_by(d, f.code) for d in file_level)
        for d in by_line.get(f.line, ()) if f.line is not None else ():
            hidden = suppressed_by(d, f.code) or hidden
        if not hidden:
            out.append(f)

    if UNUSED_SUPPRESSION in enabled:
        for d in directives:
            out += _unused(d, codes_of, enabled)
        # A CFG009 finding can itself be silenced by a file-level ignore naming it.
        out = [f for f in out if f.code != UNUSED_SUPPRESSION or not any(suppressed_by(d, f.code) for d in file_level)]
    return out


def _unused(d, codes_of: dict, enabled: frozenset) -> list:
    where = "this file" if d.applies_to is None else f"line {d.applies_to}"
    if not d.tokens:
        if "" in d.used:
            return []
        return [Finding(UNUSED_SUPPRESSION, "info", f"unused suppression: nothing is reported on {where}", None, d.line, d.column)]
    if any(codes_of[t] is not None and UNUSED_SUPPRESSION in codes_of[t] for t in d.tokens):
        return []  # the comment itself asks not to be judged
    out = []
    for t in d.tokens:
        codes = codes_of[t]
        if codes is None:
            msg = f"suppression names {unknown_message(t)}"
        elif t in d.used:
            continue
        elif not (codes & enabled):
            continue  # its rule is not selected in this run, so there is no telling whether it is needed
        else:
            msg = f"unused suppression: {t} is not reported on {where}"
        out.append(Finding(UNUSED_SUPPRESSION, "info", msg, None, d.line, d.column))
    return out
