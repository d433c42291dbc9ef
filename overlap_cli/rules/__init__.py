"""The rules. A rule is metadata (code, severity, title, documentation) plus one pure function
``check(view) -> Iterable[Finding]`` over the resolved view (see ``registry``). Each module holds the
rules of one family and is named after it: ``tp`` holds TP1xx, ``dp_fsdp`` DP3xx rules about
Megatron-FSDP, ``cfg_suppressions`` CFG009. ``common`` and ``env_common`` are helpers. The rule
modules are imported once, on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.rules.registry import FAMILY_NAMES, FIX_CLASSES, RULES, SAFE_FIX_CLASSES, Rule, code_sort_key, unregistered

__all__ = [
    "FAMILY_NAMES", "FIX_CLASSES", "SAFE_FIX_CLASSES", "Rule", "RuleCrashed", "all_rules", "code_sort_key",
    "get_rule", "run_rules",
]  # fmt: skip

_SORTED: Optional[dict] = None


def all_rules() -> dict[str, Rule]:
    """Every rule by code, in code_sort_key order."""
    return dict(_table())


def _table() -> dict:
    """The sorted table of every rule (shared: not to be changed), made again when RULES changes."""
    global _SORTED
    if _SORTED is None or _SORTED.keys() != RULES.keys():  # imported and sorted once per process, not once per file
        # Each import registers its module's rules. cfg_suppressions holds CFG009, which the selection
        # step (not a family check) reports.
        from overlap_cli.rules import cfg, cfg_layers, cfg_model, cfg_suppressions, cfg_validate, cp, dp, dp_eval, dp_fsdp, dp_grid  # noqa: F401
        from overlap_cli.rules import dp_optimizer, dp_param_gather, env, env_section, ep, ep_dispatcher, ep_wgrad, mp, mp_model, pp, pp_layout, pp_split  # noqa: F401
        from overlap_cli.rules import tp, ub, ub_config  # noqa: F401
        from overlap_cli.rules import lm, lm_dp, lm_env, lm_precision, lm_sizes  # noqa: F401  (Megatron-LM launches)
        from overlap_cli.rules import rl  # noqa: F401  (NeMo-RL's Megatron policies)

        missing = unregistered(RULES)
        if missing:  # a code taken in codes.py whose rule no module registers
            raise RuntimeError(f"rules/codes.py lists {', '.join(missing)} but no rule module registers it")
        _SORTED = dict(sorted(RULES.items(), key=lambda kv: code_sort_key(kv[0])))
    return _SORTED


def get_rule(code: str) -> Optional[Rule]:
    return _table().get(code)


class RuleCrashed(Exception):
    """A rule's check raised: a bug in that rule. ``code`` names it; ``error`` is what it raised."""

    def __init__(self, code: str, error: Exception):
        super().__init__(f"{code}: {error!r}")
        self.code, self.error = code, error


_APPLICABLE: dict = {}  # framework / (framework, id(release)) -> (the rule table, the rules that run), in code order


def _applicable(framework: str, view) -> tuple:
    """The rules for ``framework``; of those with a release fact (``Rule.needs``), the ones whose fact the
    view's release (``view.release``, asked only then) has. Made again when a rule is registered or removed."""
    table = _table()
    hit = _APPLICABLE.get(framework)
    if hit is None or hit[0] is not table:
        hit = _APPLICABLE[framework] = (table, tuple(r for r in table.values() if framework in r.frameworks))
    rules = hit[1]
    if not any(r.needs for r in rules):
        return rules
    release = view.release
    hit = _APPLICABLE.get((framework, id(release)))
    if hit is None or hit[0] is not table or hit[1] is not release:
        hit = _APPLICABLE[(framework, id(release))] = (table, release, tuple(
            r for r in rules if not (r.needs and not getattr(release, r.needs))))
    return hit[2]


def run_rules(view) -> list:
    """The findings of every rule for the view's framework (``view.framework``, Bridge when it has none:
    see ``Rule.frameworks``). A check that raises stops the run for this view with RuleCrashed: its
    file gets one internal-error line instead of a report built on a partial rule set."""
    from overlap_cli.results import Finding

    framework = getattr(view, "framework", "bridge")
    findings: list[Finding] = []
    watch = None
    if framework == "bridge" and getattr(getattr(view, "cfg", None), "unknown", None):
        # A run with unknown keys: a finding that read one of them (its class default stands in) is marked
        # with what it read (Finding.depends_on); the Bridge engine reports it as depending on them.
        from overlap_cli.frameworks.bridge.unknowns import ReadWatch

        watch = ReadWatch(view)
    try:
        for r in _applicable(framework, view):
            if watch is not None:
                watch.reads.clear()
            try:
                produced = list(r.check(view) or ())
            except RecursionError:
                raise
            except Exception as exc:
                raise RuleCrashed(r.code, exc) from exc
            for f in produced:
                if not f.code:
                    f.code = r.code
                if watch is not None and watch.reads:
                    f.depends_on = tuple(sorted(watch.reads))
                findings.append(f)
    finally:
        if watch is not None:
            watch.restore()
    from overlap_cli.rules.common import keep_user_values

    return keep_user_values(view, findings)  # a safe fix never changes a value the user wrote
