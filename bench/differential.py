"""The differential agreement table: every key `overlap check` prints, against the real Megatron-LM /
Megatron-Bridge, over the seeded generated sets of tests/frameworks/*/test_*differential.py.

    python bench/differential.py [--framework mlm|bridge|both] [--examples N] [--limit N] [--json FILE]
                                 [--results bench/results.md]

Needs the environment with the real packages (OVERLAP_BRIDGE_ENV, or bridge-env in the temp dir where ../shared/bridge-env/setup.sh builds it)
and bash. For each framework: how many cases the real code launches and refuses, how many the tool gets
right, and the disagreements grouped by key and by cause, with the first example ids of each group, then
the outcome disagreements grouped by the real message. The reference results (minutes to compute) are
shared with the tests through differential.cached: computed once per set of cases and reference code.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests", ROOT / "tests" / "frameworks" / "megatron_lm", ROOT / "tests" / "frameworks" / "bridge"):
    sys.path.insert(0, str(p))

from differential import OUTCOME, reference_python  # noqa: E402


def run_mlm(python: Path, folder: Path, limit: int | None = None) -> list:
    import mlm_compare

    items = mlm_compare.launches()[:limit]
    real = mlm_compare.reference_cached(python, items, folder / "mlm")
    return [(launch.id, launch.form, real[launch.id],
             mlm_compare.disagreements(launch, mlm_compare.check(launch, folder), real[launch.id])) for launch in items]


def run_bridge(python: Path, folder: Path, limit: int | None = None) -> list:
    import bridge_compare

    items = bridge_compare.runs()[:limit]
    real = bridge_compare.reference_cached(python, items, folder / "bridge")
    rows = []
    for run in items:
        if bridge_compare.unmodelled(run, real[run.id]):
            print(f"not modelled: {run.id}: {bridge_compare.unmodelled(run, real[run.id])}", file=sys.stderr)
            continue
        rows.append((run.id, run.form, real[run.id],
                     bridge_compare.disagreements(run, bridge_compare.check(run, folder), real[run.id])))
    return rows


def table(name: str, rows: list, examples: int) -> dict:
    launched = sum(1 for _, _, variants, _ in rows if not any(v["failed"] for v in variants))
    refused = sum(1 for _, _, variants, _ in rows if all(v["failed"] for v in variants))
    mixed = len(rows) - launched - refused
    clean = sum(1 for *_, d in rows if not d)
    by_key: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for cid, _, _, found in rows:
        for d in found:
            by_key[d.key][d.cause].append(cid)
    print(f"\n## {name}: {len(rows)} cases — real launches {launched}, refuses {refused}, depends on the caller {mixed}; "
          f"overlap agrees on everything in {clean} ({100 * clean / max(len(rows), 1):.0f}%)\n")
    forms = collections.Counter(form for _, form, _, _ in rows)
    print("forms: " + ", ".join(f"{k} {v}" for k, v in sorted(forms.items())) + "\n")
    print("| key | cases | cause | examples |")
    print("|---|---:|---|---|")
    summary = {}
    for key in sorted(by_key, key=lambda k: -sum(len(v) for v in by_key[k].values())):
        causes = by_key[key]
        summary[key] = {c: ids for c, ids in causes.items()}
        for cause, ids in sorted(causes.items(), key=lambda kv: -len(kv[1])):
            print(f"| `{key}` | {len(ids)} | {cause} | {', '.join(ids[:examples])} |")
    if not by_key:
        print("| (none) | 0 | | |")
    outcomes: dict = collections.defaultdict(list)
    for cid, _, variants, found in rows:
        for d in found:
            if d.key == OUTCOME and d.real:
                message = re.sub(r"\d+", "N", " ".join(str(d.real).split()))  # one group for every size
                where = next((v.get("where") for v in variants if v.get("failed") and v.get("where")), "")
                outcomes[(d.cause, message[:150], where)].append(cid)
    if outcomes:
        print("\nOutcome disagreements by the real message (where: the raising upstream file:line):\n")
        print("| cases | cause | real message | where | examples |")
        print("|---:|---|---|---|---|")
        for (cause, message, where), ids in sorted(outcomes.items(), key=lambda kv: -len(kv[1])):
            print(f"| {len(ids)} | {cause} | {message.replace('|', '/')} | {where} | {', '.join(ids[:examples])} |")
    return {"cases": len(rows), "launched": launched, "refused": refused, "mixed": mixed, "agree": clean,
            "disagreements": summary}


SECTION = "## Differential: every printed key against the real code (`python bench/differential.py --results bench/results.md`)"


class Tee:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for st in self.streams:
            st.write(text)

    def flush(self):
        for st in self.streams:
            st.flush()


def write_section(path: Path, tables: str) -> None:
    """The differential section of the results file: this run's tables (its framework headings as
    sub-headings), in place of the section's old text, or at the end."""
    body = tables.replace("\n## ", "\n### ").strip("\n")
    section = (f"{SECTION}\n\nmegatron-core 0.19.2 / megatron-bridge 0.6.2, seeded generated sets of "
               "tests/frameworks/*/test_*differential.py; a case agrees when the outcome (launch, or the error), "
               f"the data-parallel size and every key of `effective` agree.\n\n{body}\n")
    text = path.read_text() if path.exists() else ""
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    path.write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--framework", choices=("mlm", "bridge", "both"), default="both")
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the table as JSON")
    ap.add_argument("--limit", type=int, help="only the first N cases of each set (a quick look)")
    ap.add_argument("--results", type=Path, help="also write the tables into this file's differential section "
                                                 "(replaced when it is there, appended otherwise)")
    opts = ap.parse_args()
    python = reference_python()
    if python is None:
        print("no environment with megatron-bridge 0.6.2 / megatron-core 0.19.2 (set OVERLAP_BRIDGE_ENV)", file=sys.stderr)
        return 2
    out = {}
    printed = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(Tee(sys.stdout, printed)):
        folder = Path(tmp)
        if opts.framework in ("mlm", "both"):
            out["megatron-lm"] = table("Megatron-LM", run_mlm(python, folder, opts.limit), opts.examples)
        if opts.framework in ("bridge", "both"):
            out["bridge"] = table("Megatron-Bridge", run_bridge(python, folder, opts.limit), opts.examples)
    if opts.results:
        write_section(opts.results, printed.getvalue())
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
