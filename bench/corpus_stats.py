"""What the tool says about Megatron-Bridge's own recipes: findings per severity and code, input and
internal errors, under the targets a user meets. A trust number, not a test: run it before and after a
change to rules or output.

    python bench/corpus_stats.py                 # each recipe with its own world size and GPU (manifest)
    python bench/corpus_stats.py --all-targets   # also: no target, TE 2.12 / 2.6 / absent (errors only)
    python bench/corpus_stats.py --json
    python bench/corpus_stats.py --as-recipe --te-version 2.12   # each as ``check --recipe NAME`` (built on
                                                                 # the target, no file) instead of its dump

The corpus is the shared reference folder beside the repository (or OVERLAP_CORPUS).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = Path(os.environ.get("OVERLAP_CORPUS") or ROOT.parent / "shared" / "reference" / "bridge_recipes")

VARIANTS = {"plain": {}, "te-2.12": {"te_version": "2.12"}, "te-2.6": {"te_version": "2.6"}, "no-te": {"te": False}}


def run(rows, manifest: bool, variant: dict, as_recipe: bool = False):
    from overlap_cli.cli.check import UsageError, target_from_options
    from overlap_cli.cli.options import TARGET, options
    from overlap_cli.check.engine import check, check_file

    severities: collections.Counter = collections.Counter()
    codes: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    for row in rows:
        try:
            target = target_from_options(options(
                TARGET, world_size=row["world_size"] if manifest else None, te=variant.get("te"),
                gpu=row["gpu"] if manifest else None, te_version=variant.get("te_version"),
                recipe=row["recipe"] if as_recipe else None,
            ))  # fmt: skip
        except UsageError as exc:
            errors[f"target refused: {exc}"[:120]] += 1
            continue
        try:
            r = check(None, target).result if as_recipe else check_file(str(CORPUS / row["file"]), target)
        except Exception as exc:  # an older tree lets a rule's exception through: count it as a crash
            errors[f"crash: {type(exc).__name__}: {exc}"[:120]] += 1
            continue
        if r.error is not None:
            kind = "internal" if getattr(r.error, "internal", False) else "input"
            errors[f"{kind}: {r.error.message}"[:120]] += 1
            continue
        for f in r.findings:
            severities[f.severity] += 1
            codes[f"{f.code} {f.severity}"] += 1
    return severities, codes, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all-targets", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--as-recipe", action="store_true", help="check each as --recipe NAME, not its dump file")
    ap.add_argument("--te-version", default=None, help="the target's Transformer Engine (with --as-recipe: what builds it)")
    a = ap.parse_args()
    rows = [json.loads(ln) for ln in (CORPUS / "manifest.jsonl").read_text().splitlines() if ln.strip()]
    t0 = time.perf_counter()
    sev, codes, errors = run(rows, True, {"te_version": a.te_version} if a.te_version else {}, a.as_recipe)
    out = {"recipes": len(rows), "severities": dict(sev), "codes": dict(codes.most_common()), "errors": dict(errors)}
    if a.all_targets:
        out["errors_by_target"] = {}
        for manifest in (False, True):
            for name, variant in VARIANTS.items():
                _, _, err = run(rows, manifest, variant)
                out["errors_by_target"][f"{'manifest' if manifest else 'no-target'}/{name}"] = sum(err.values())
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    total = sum(sev.values())
    print(f"{len(rows)} recipes {'as --recipe runs' if a.as_recipe else 'as dump files'} with their own target: {total} findings: " + ", ".join(
        f"{sev[s]} {s} ({100 * sev[s] / max(total, 1):.0f} %)" for s in ("error", "warning", "info")))
    for code, n in codes.most_common():
        print(f"  {n:5d}  {code}")
    for e, n in errors.most_common():
        print(f"  error x{n}: {e}")
    if a.all_targets:
        for k, v in out["errors_by_target"].items():
            print(f"  {k:22s} input/internal errors or refused targets: {v}")
    print(f"({out['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
