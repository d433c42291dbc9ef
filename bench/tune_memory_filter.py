"""How many ``overlap tune`` candidates the memory filter removes over every shipped recipe.

    python bench/tune_memory_filter.py [--reshard]

For each recipe the model estimates (Rubin has no figures), the search as ``overlap tune`` runs it on the
recipe's own target (world size and GPU from the catalog); the counts of candidates estimated, dropped above
the GPU's memory, and whether any change is worth proposing (gain >= 1 % and above its uncertainty).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reshard", action="store_true")
    args = ap.parse_args()
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import Unsupported
    from overlap_cli.estimate.tune import search
    from overlap_cli.frameworks.bridge import recipes as R
    from bench.estimate_speed import recipe_on_its_target

    folder = tempfile.mkdtemp()
    n = evaluated = dropped = with_drop = proposing = weak = skipped = 0
    for name in R.names("0.6.2"):
        path, target = recipe_on_its_target(folder, name)
        checked = check(path, target, [])
        if checked.view is None:
            skipped += 1
            continue
        try:
            found = search(path, checked, target, [], reshard=args.reshard, verify_limit=20)
        except Unsupported:
            skipped += 1
            continue
        n += 1
        evaluated += found["evaluated"] + found["dropped_memory"]
        dropped += found["dropped_memory"]
        with_drop += found["dropped_memory"] > 0
        proposing += bool(found["candidates"])
        weak += (not found["candidates"]) and bool(found["weak"])
    print(f"{n} recipes searched ({skipped} not estimable){' with --allow-reshard' if args.reshard else ''}: "
          f"{evaluated} candidates, {dropped} dropped above the GPU's memory ({100 * dropped / max(1, evaluated):.1f} %) "
          f"in {with_drop} recipes; {proposing} recipes get a proposal, {weak} only changes not worth proposing")


if __name__ == "__main__":
    main()
