"""The safe-fix contract over Bridge's own recipes: `fix --write` never undoes a tuned recipe.

Every recipe dump of megatron-bridge 0.6.2 (the shared reference corpus, with each file's world size and
GPU from its manifest) is fixed in a temporary copy, in this process, and checked with the tool's own
resolver before and after:

- every effective value stays, unless the change is justified by a fix that was applied:
  (a) a crash fix (its rule's class says ``crash`` and the finding is an error) changes the keys it edits;
  (b) an overlap fix (class ``overlap``) makes a value Bridge had forced off take the file's value (now
      ``user``), with the parallel group it needs, and may edit the keys that need (e.g. sequence_parallel);
- every value the file sets in ``env_vars`` is still there, unchanged;
- every applied fix is a safe one of a finding at or above the default threshold (warning), of a rule
  whose class is safe.

Skipped cleanly when the reference corpus is not next to the repository.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
CORPUS = ROOT.parent / "shared" / "reference" / "bridge_recipes"
MANIFEST = CORPUS / "manifest.jsonl"

pytestmark = pytest.mark.skipif(not MANIFEST.exists(), reason=f"reference corpus not present ({CORPUS})")

# An effective key, and the file keys whose edit can change it (comm_overlap writes onto model/ddp/optimizer).
SECTIONS = ("model", "ddp", "optimizer")
GROUP = {"ddp.overlap_grad_reduce": "dp", "ddp.overlap_param_gather": "dp", "optimizer.overlap_param_gather": "dp",
         "model.tp_comm_overlap": "tp", "model.overlap_p2p_comm": "pp"}  # fmt: skip


def _targets():
    from overlap_cli.launch_profile.profile import GPUS

    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        flags = {"world_size": row.get("world_size")}
        if row.get("gpu") in GPUS:  # GPU names the tool does not know yet run without a GPU
            flags["gpu"] = row["gpu"]
        yield row["file"], flags


def _effective_keys(edit_key: str) -> set:
    section, _, leaf = edit_key.partition(".")
    if section == "comm_overlap":
        return {f"{s}.{leaf}" for s in SECTIONS}
    return {edit_key}


def _plain(value):
    return json.dumps(value, sort_keys=True, default=str)


def violations(name: str, before, after, outcome, original_env: dict, fixed_env: dict) -> list:
    from overlap_cli.results import SEVERITY_RANK
    from overlap_cli.rules import SAFE_FIX_CLASSES, get_rule

    out = []
    crash_keys, overlap_keys, overlap_fixes = set(), set(), False
    for a in outcome.applied:
        f = a.finding
        classes = set(get_rule(f.code).fix.split("/"))
        if f.fix.applicability != "safe" or not classes & set(SAFE_FIX_CLASSES):
            out.append(f"{name}: {f.code} applied a fix that is not safe")
        if SEVERITY_RANK[f.severity] < SEVERITY_RANK["warning"]:
            out.append(f"{name}: {f.code} is {f.severity} but its fix was applied")
        keys = set().union(*(_effective_keys(e.key) for e in a.edits))
        if "crash" in classes and f.severity == "error":
            crash_keys |= keys
        if "overlap" in classes:
            overlap_keys |= keys
            overlap_fixes = True
    dp, tp, pp = after.target.get("data_parallel_size"), None, None
    eff_a = after.effective or {}
    tp = eff_a.get("model.tensor_model_parallel_size").value if "model.tensor_model_parallel_size" in eff_a else None
    pp = eff_a.get("model.pipeline_model_parallel_size").value if "model.pipeline_model_parallel_size" in eff_a else None
    sizes = {"dp": dp, "tp": tp, "pp": pp}
    eff_b = before.effective or {}
    for key in sorted(set(eff_b) | set(eff_a)):
        if key.startswith("env."):
            continue  # the launch environment: env_vars below (env.* also holds the tool's recommendations)
        vb, va = eff_b.get(key), eff_a.get(key)
        if vb is not None and va is not None and _plain(vb.value) == _plain(va.value):
            continue
        if key in crash_keys:
            continue  # (a)
        if overlap_fixes and va is not None and vb is not None:
            group = GROUP.get(key)
            has_group = group is None or (sizes[group] is not None and sizes[group] > 1)
            if vb.source == "forced-off" and va.source == "user" and has_group:
                continue  # (b): the overlap the file asked for now takes effect
            if key in overlap_keys:
                continue  # (b): what that overlap needs
        out.append(
            f"{name}: {key} {vb.value if vb else None!r} -> {va.value if va else None!r} "
            f"(fixes: {', '.join(a.finding.code for a in outcome.applied)})"
        )
    for var, value in original_env.items():
        if var not in fixed_env or _plain(fixed_env[var]) != _plain(value):
            out.append(f"{name}: env_vars.{var} {value!r} -> {fixed_env.get(var)!r}")
    return out


def test_fix_write_over_every_recipe_keeps_the_contract(tmp_path):
    from overlap_cli.check.engine import check_file
    from overlap_cli.fix.loop import fix_file
    from overlap_cli.config.yamlnodes import parse_yaml
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.fix.write import atomic_write

    problems, fixed_files, checked = [], 0, 0
    for name, flags in _targets():
        dst = tmp_path / name
        original = (CORPUS / name).read_text(encoding="utf-8")
        dst.write_text(original, encoding="utf-8")
        target = build_target(flags)
        before = check_file(str(dst), target)
        if before.error is not None:
            continue  # not checkable: fix never edits it (tested elsewhere)
        checked += 1
        outcome = fix_file(str(dst), target)
        assert outcome.error is None and outcome.problem is None, (name, outcome.error, outcome.problem)
        if not outcome.changed:
            assert not outcome.applied
            continue
        atomic_write(str(dst), outcome.fixed)  # what `fix --write` writes
        fixed_files += 1
        after = check_file(str(dst), target)
        assert after.error is None, (name, after.error)
        env_b = (parse_yaml(original, name)[0] or {}).get("env_vars") or {}
        env_a = (parse_yaml(outcome.fixed, name)[0] or {}).get("env_vars") or {}
        problems += violations(name, before, after, outcome, env_b, env_a)
        # a second run changes nothing
        assert not fix_file(str(dst), target).changed, name
    assert checked > 400
    assert fixed_files > 0  # the corpus does exercise fixes (TP101, PP205, PP208, ENV501)
    assert not problems, "\n".join(problems)


def test_info_findings_offer_no_safe_fix_on_any_recipe():
    from overlap_cli.check.engine import check_file
    from overlap_cli.launch_profile.profile import build_target

    offending = []
    for name, flags in _targets():
        result = check_file(str(CORPUS / name), build_target(flags))
        for f in result.findings:
            if f.severity == "info" and f.fix and f.fix.applicability == "safe":
                offending.append(f"{name}: {f.code}")
    assert not offending, offending
