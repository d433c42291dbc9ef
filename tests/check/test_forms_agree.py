"""The same Megatron-Bridge run in every form overlap-cli reads gives the same answer.

A seeded generator (tests/formslib.py) draws runs — a catalog recipe (dense and MoE alternating, every GPU
the catalog has), the recipe's world size or half or double it, 0-4 overrides of overlap-relevant keys —
and writes each in every form that can express it: ``--recipe NAME key=value`` words, ``--recipe NAME
over.yaml``, ``--base dump.yaml over.yaml``, a Python run (``cfg = NAME(); cfg.a.b = v``) and a
``run_recipe.py`` launch. Each form goes through the CLI in this process (``check --format json
--show-info``; ``fix --write`` and ``check`` of the fixed file; ``check --format concise``), and is compared
with the ``over.yaml`` form: exit status, input error, target (world size, data-parallel size, GPU),
effective values (value, source, layer, reason), findings (code, severity, key, message), notes; for fix:
the codes fixed, its exit status and stderr, the effective values and findings after it; and, within each
form, where ``fix`` names a finding left against where ``check`` names it.

What is normalised, and nothing else: file locations (tests/formslib.py, "normalising file locations").

A disagreement that has a known cause is assigned to it by a predicate over the observed data (``CAUSES``);
``test_forms_agree`` fails on any disagreement no cause explains. Each cause is one
``test_cause_is_gone[NAME]`` marked ``xfail(strict=True)``: it passes (and so fails the suite) as soon as no
run of the default sample shows the cause any more, and its mark is then to be removed with the cause.

OVERLAP_FORMS_RUNS=N (default 60) and OVERLAP_FORMS_SEED=S draw another or a longer sample.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: conftest, formslib

import formslib as F  # noqa: E402

# The default seed's 60 runs show every cause below (so each strict mark is live); a cause that vanishes
# from it after a change elsewhere (the catalog draws other recipes) is to be checked with a long run.
SEED = int(os.environ.get("OVERLAP_FORMS_SEED", "1"))
COUNT = int(os.environ.get("OVERLAP_FORMS_RUNS", "60"))
SEVERE = ("warning", "error")
# A cause the default sample shows is held by a strict xfail; another sample may miss a rare cause, so there
# its mark is not strict (the report of ``python tests/check/test_forms_agree.py`` is what a long run reads).
DEFAULT_SAMPLE = "OVERLAP_FORMS_RUNS" not in os.environ and "OVERLAP_FORMS_SEED" not in os.environ


@dataclass(frozen=True)
class Cause:
    name: str
    reason: str
    explains: object  # (Disagreement, {form: observed}) -> bool


def _notes_of(seen: dict, form: str) -> list:
    return seen[form]["check"].get("notes") or []


def _unknown_note(seen: dict, form: str) -> list:
    return [n for n in _notes_of(seen, form) if re.match(r"\d+ key\(s\) the run leaves unknown", n)]


def _fix_stderr(seen: dict, form: str) -> str:
    fix = seen[form]["fix"]
    return fix["stderr"] if fix else ""


def _is_finding(item) -> bool:
    return isinstance(item, tuple) and len(item) == 4 and item[1] in ("info", "warning", "error")


def _fix_place_named_by_check(d, seen) -> bool:
    """fix prints ``FILE:1:1`` (``<user>`` once normalised) where check prints ``FILE (recipe NAME: KEY)``
    (``<user> (<base>: KEY)``) or the dump's line (``<base>``) for a finding of the base's keys."""
    if d.aspect != "fix-places":
        return False
    fix_places, check_places = seen[d.form]["fix"]["places"]
    code, place = d.item
    if d.side == "fix":
        return place == "<user>" and any(c == code and "<base>" in p for c, p in check_places)
    return "<base>" in place and (code, "<user>") in fix_places


CAUSES = (
)
BY_NAME = {c.name: c for c in CAUSES}


def classify(found: list, seen_of: dict) -> list:
    """[(Disagreement, cause name or None)]. An exit status follows the findings: a differing ``exit`` takes
    the cause of the differing warning/error findings of the same run and form (``fix-exit``: of any
    differing fix aspect), when they all have one."""
    causes = [None] * len(found)
    for i, d in enumerate(found):
        if d.aspect not in ("exit", "fix-exit"):
            causes[i] = next((c.name for c in CAUSES if c.explains(d, seen_of[d.run.index])), None)
    for i, d in enumerate(found):
        if d.aspect not in ("exit", "fix-exit"):
            continue
        behind = [causes[j] for j, o in enumerate(found) if o.run == d.run and o.form == d.form and (
            (d.aspect == "exit" and o.aspect == "findings" and _is_finding(o.item) and o.item[1] in SEVERE)
            or (d.aspect == "fix-exit" and o.aspect.startswith("fix-") and o.aspect not in ("fix-exit", "fix-places")))]
        causes[i] = behind[0] if behind and None not in behind else None
    return list(zip(found, causes))


@pytest.fixture(scope="module")
def observed(tmp_path_factory) -> tuple:
    """(runs, {run index: {form: observed}}, [(Disagreement, cause)]) of the sample."""
    tmp = tmp_path_factory.mktemp("forms")
    runs = F.generate(SEED, COUNT)
    seen_of, found = {}, []
    for run in runs:
        seen_of[run.index] = F.observe(run, tmp / str(run.index), tmp / "dumps")
        found += F.disagreements(run, seen_of[run.index])
    return runs, seen_of, classify(found, seen_of)


def test_the_sample_is_varied(observed):
    runs, _, _ = observed
    from overlap_cli.frameworks.bridge import recipes

    moe = sum(1 for r in runs if (recipes.data("0.6.2", r.recipe)[0].get("model") or {}).get("num_moe_experts"))
    assert len(runs) >= min(COUNT, 60)
    assert 0.3 * len(runs) <= moe <= 0.7 * len(runs), moe
    assert len({r.gpu for r in runs}) >= 4
    assert len({len(r.overrides) for r in runs}) == 5  # 0 to 4 overrides
    assert sum(r.has_dump for r in runs) >= len(runs) // 3  # the dump form is well represented
    assert len({k for r in runs for k, _ in r.overrides}) >= len(F.KEYS) - 3


def test_forms_agree(observed):
    """Every disagreement between forms has a known cause (each held by test_cause_is_gone)."""
    _, _, causes = observed
    unexplained = [str(d) for d, c in causes if c is None]
    assert not unexplained, f"{len(unexplained)} disagreement(s) with no known cause:\n" + "\n".join(unexplained[:40])


if CAUSES:  # no cause held today: test_forms_agree then asserts that no run disagrees at all
    @pytest.mark.parametrize("cause", [
        pytest.param(c.name, marks=pytest.mark.xfail(strict=DEFAULT_SAMPLE, reason=c.reason)) for c in CAUSES
    ])
    def test_cause_is_gone(observed, cause):
        """No run shows ``cause`` (strict xfail while it does)."""
        _, _, causes = observed
        shown = [str(d) for d, c in causes if c == cause]
        assert not shown, f"{BY_NAME[cause].reason}\n{len(shown)} disagreement(s), e.g.:\n" + "\n".join(shown[:10])


def test_the_sample_reaches_fix(observed):
    """Fix is compared where it changes something: in the reference form some run gets fixes written and
    its effective values move, and some run is left with nothing to fix."""
    runs, seen_of, _ = observed
    ref = [seen_of[r.index][F.REFERENCE] for r in runs]
    moved = [o for o in ref if o["fix"]["fixed"] and o["fix"]["effective"] != o["check"]["effective"]]
    assert len(moved) >= 3, len(moved)
    assert any(o["fix"]["exit"] == 0 and not o["fix"]["fixed"] for o in ref)


def report(causes: dict) -> str:
    """The disagreements grouped by cause, for a long run: ``python tests/check/test_forms_agree.py``."""
    groups = defaultdict(list)
    for d, c in causes:
        groups[c].append(d)
    lines = []
    for c, ds in sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
        lines.append(f"== {c or 'NO KNOWN CAUSE'}: {len(ds)} item(s) in {len({d.run.index for d in ds})} run(s)")
        lines += [f"   {d}" for d in ds[:8]]
    return "\n".join(lines)


if __name__ == "__main__":
    import tempfile

    folder = Path(tempfile.mkdtemp())
    runs = F.generate(SEED, COUNT)
    seen_of, found = {}, []
    for run in runs:
        seen_of[run.index] = F.observe(run, folder / str(run.index), folder / "dumps")
        found += F.disagreements(run, seen_of[run.index])
    print(report(classify(found, seen_of)))
