"""Time of ``overlap estimate`` per config and of ``overlap tune`` per config, after start-up (in process).

    python bench/estimate_speed.py [--n 40]

Recipes of the shipped catalog, each written to a temporary file. estimate = check (load -> resolve ->
rules) + shape + model, the path the command takes; the model alone is timed too. tune = the whole search
(every candidate estimated and its memory counted, the best re-checked against the rules). Medians and
maxima over the recipes; then tune on the largest recipes, with and without --allow-reshard (best of 3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


LARGEST = ("deepseek_v3_pretrain_1024gpu_h100_bf16_config", "llama31_405b_pretrain_512gpu_h100_bf16_config")



def recipe_on_its_target(folder: str, name: str):
    """The catalog recipe NAME written to FOLDER as its dump, and the target its name states (world size and
    GPU as flags): what ``overlap estimate --world-size N --gpu G NAME.yaml`` is given."""
    from overlap_cli.frameworks.bridge import recipes as R
    from overlap_cli.launch_profile.profile import Target

    info = R.info("0.6.2", name)
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as fh:
        fh.write(R.text("0.6.2", name))
    target = Target(world_size=info["world_size"])
    target.set("world_size", info["world_size"], "flag")
    if info["gpu"]:
        target.set("gpu", info["gpu"], "flag")
    return path, target

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import Unsupported, shape_from_view
    from overlap_cli.estimate.model import estimate
    from overlap_cli.estimate.tune import search
    from overlap_cli.frameworks.bridge import recipes as R

    folder = tempfile.mkdtemp()
    names = [n for n in R.names("0.6.2") if R.info("0.6.2", n)["gpu"] not in (None, "vr200", "r100")]
    names = names[:: max(1, len(names) // args.n)][: args.n]
    est_t, model_t, tune_t, cands = [], [], [], []
    for name in names:
        path, target = recipe_on_its_target(folder, name)
        t0 = time.perf_counter()
        checked = check(path, target, [])
        try:
            shape = shape_from_view(checked.view)
        except Unsupported:
            continue
        t1 = time.perf_counter()
        e = estimate(shape)
        e.to_json()  # the interval and the memory count, as the command prints them
        t2 = time.perf_counter()
        est_t.append(t2 - t0)
        model_t.append(t2 - t1)
        t3 = time.perf_counter()
        found = search(path, checked, target, [])
        tune_t.append(time.perf_counter() - t3)
        cands.append(found["evaluated"])

    def row(label, xs, unit=1e3, suffix="ms"):
        return f"{label:34} median {statistics.median(xs) * unit:8.2f} {suffix}   max {max(xs) * unit:8.2f} {suffix}"

    print(f"{len(est_t)} recipes")
    print(row("estimate (check + shape + model)", est_t))
    print(row("  of which the model", model_t))
    print(row("tune (search + re-checks)", tune_t))
    print(f"{'tune candidates estimated':34} median {statistics.median(cands):8.0f}      min {min(cands):8.0f}")
    # The largest recipes (most parameters, most ranks): tune with the memory filter, with and without resharding.
    for name in LARGEST:
        path, target = recipe_on_its_target(folder, name)
        checked = check(path, target, [])
        for reshard in (False, True):
            best = None
            for _ in range(3):
                t0 = time.perf_counter()
                found = search(path, checked, target, [], reshard=reshard)
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            print(f"tune {name}{' --allow-reshard' if reshard else ''}: {best:.3f} s (best of 3), "
                  f"{found['evaluated']} candidates, {found['dropped_memory']} dropped above memory, {found['checked']} re-checked")


if __name__ == "__main__":
    main()
