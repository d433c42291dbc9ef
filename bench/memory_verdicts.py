"""The memory verdict of every shipped recipe on its own target, as ``overlap estimate --recipe NAME`` gives it.

    python bench/memory_verdicts.py [--stated] [--list VERDICT]

Without ``--stated`` the world size and GPU come from the recipe (its name, or the corpus convention
TP*PP*CP*8 where the name has no GPU count): a size nobody stated for the run. With ``--stated`` the same
values are given as flags (``--world-size N --gpu G``), the way a user who launches exactly that size would.
Prints the count of each verdict; ``--list`` prints the recipes of one verdict with their numbers.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stated", action="store_true")
    ap.add_argument("--list", default=None)
    args = ap.parse_args()
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import Unsupported, shape_from_view
    from overlap_cli.estimate.memory import estimate_memory, gib
    from overlap_cli.frameworks.bridge import recipes as R
    from overlap_cli.launch_profile.profile import build_target

    counts, listed = collections.Counter(), []
    for name in R.names("0.6.2"):
        flags = {"recipe": name}
        if args.stated:
            info = R.info("0.6.2", name)
            flags.update(world_size=info["world_size"], gpu=info["gpu"])
        checked = check(None, build_target(flags), [])
        try:
            m = estimate_memory(shape_from_view(checked.view, step_time=False))
        except (Unsupported, AttributeError):
            counts["no estimate"] += 1
            continue
        v = m.verdict()
        counts[v] += 1
        if v == args.list:
            s, f, at = m.shape, m.fields, m.fits_at()
            listed.append(f"{name}: {gib(m.total)} (weights and optimizer {gib(f['weights_and_optimizer_bytes'])}, activations "
                          f"{gib(f['activation_bytes'])}) of {gib(m.capacity) if m.capacity else '?'}; TP {s.tp} PP {s.pp} VPP {s.vp} "
                          f"CP {s.cp} EP {s.ep} DP {s.dp}" + (f"; fits at DP {at['data_parallel_size']} ({gib(at['total_bytes'])})" if at else ""))
    for v, n in counts.most_common():
        print(f"{v:34} {n}")
    for line in listed:
        print(line)


if __name__ == "__main__":
    main()
