"""How well ``overlap estimate`` predicts measured step times, against the 6*N*tokens/(GPUs*peak*0.4) baseline.

    python bench/estimate_accuracy.py            # scores; fits run here, constants.json is not touched
    python bench/estimate_accuracy.py --rows     # also every held-out prediction

Data: Megatron-Bridge's published throughput rows joined to the shipped recipes (bench/estimate_data.py).
Scores (MAPE, max error, Kendall tau of step time), overall, per model and per GPU, each beside the
baseline's on the same rows:

- leave-one-model-out on the newest releases: for each model, constants fitted on the other models' rows
  (every release, older ones through their release factor), scored on the model's rows of the newest
  containers (26.06.x: the software the 0.6.2 recipes belong to);
- leave-one-release-out: for each release after the first two, constants fitted on the older releases only,
  scored on that release's rows (the next container predicted from what was measured before);
- with --mixed also the older splits over every release (in-sample, leave-one-model-out, every 5th row).

Then the published A100 validation points (Korthikanti et al. 2022, Table 5), as hand-written configs
through the same pipeline, with CUDA_DEVICE_MAX_CONNECTIONS=1 as Megatron-LM required for sequence
parallelism (A100 has no measured Bridge row: its efficiency is the published 52 % of peak).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import estimate_data as E  # noqa: E402


def _line(label: str, sc: dict, base: dict) -> str:
    return (f"{label:28} n={sc['n']:3}  model: MAPE {sc['mape']:5.1f} %  max {sc['max']:6.1f} %  tau {sc['tau']:.3f}   "
            f"baseline: MAPE {base['mape']:6.1f} %  max {base['max']:7.1f} %  tau {base['tau']:.3f}")


def held_out_scores(data: list, start: dict, show_rows: bool = False) -> list:
    lines = []
    const = E.fit(data, start)
    meas = [r["step_time_s"] for r, *_ in data]
    lines.append(_line("in-sample (all rows)", E.scores(meas, [E.predict(s, const) for _, s, *_ in data]),
                       E.scores(meas, [E.baseline(r, s) for r, s, *_ in data])))
    # Leave one model out.
    models = sorted({r["model"] for r, *_ in data})
    pred, meas_all, base, shown = [], [], [], []
    per_model = []
    for model in models:
        train = [d for d in data if d[0]["model"] != model]
        test = [d for d in data if d[0]["model"] == model]
        c = E.fit(train, start)
        p = [E.predict(s, c) for _, s, *_ in test]
        m = [r["step_time_s"] for r, *_ in test]
        b = [E.baseline(r, s) for r, s, *_ in test]
        pred += p
        meas_all += m
        base += b
        per_model.append(_line(f"  held-out {model}", E.scores(m, p), E.scores(m, b)))
        shown += [(d, x) for d, x in zip(test, p)]
    lines.append(_line("leave-one-model-out", E.scores(meas_all, pred), E.scores(meas_all, base)))
    lines += per_model
    # Every fifth row held back.
    test = data[::5]
    train = [d for i, d in enumerate(data) if i % 5]
    c = E.fit(train, start)
    m = [r["step_time_s"] for r, *_ in test]
    lines.append(_line("held-out rows (every 5th)", E.scores(m, [E.predict(s, c) for _, s, *_ in test]),
                       E.scores(m, [E.baseline(r, s) for r, s, *_ in test])))
    if show_rows:
        for (row, shape, name, exact), p in shown:
            lines.append(f"    {row['model'][:14]:14} {row['release']:9} {row['gpu']:5} {row['precision']:6} {row['num_gpus']:5} GPUs "
                         f"measured {row['step_time_s']:7.2f} s  predicted {p:7.2f} s  ({100 * (p / row['step_time_s'] - 1):+.0f} %)  {name}")
    return lines


KORTHIKANTI_CONFIG = """model:
  num_layers: {layers}
  hidden_size: {hidden}
  ffn_hidden_size: {ffn}
  num_attention_heads: {heads}
  seq_length: 2048
  vocab_size: 51200
  tensor_model_parallel_size: {tp}
  pipeline_model_parallel_size: {pp}
  virtual_pipeline_model_parallel_size: {vpp}
  sequence_parallel: {sp}
  recompute_granularity: {granularity}
  recompute_method: {method}
  recompute_num_layers: {rnl}
train:
  global_batch_size: {gbs}
  micro_batch_size: {mbs}
env_vars:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
"""


def validation_points() -> list:
    import json

    from overlap_cli.check.engine import check
    from overlap_cli.cli.check import parse_overrides  # noqa: F401
    from overlap_cli.estimate.inputs import shape_from_view
    from overlap_cli.estimate.model import estimate
    from overlap_cli.launch_profile.profile import Target

    ref = json.loads((E.DATA / "validation_points.json").read_text())["korthikanti_2022_table5"]
    lines, errs = [], []
    for point in ref["points"]:
        for mode, measured in point["iter_time_s"].items():
            full = mode == "full"
            text = KORTHIKANTI_CONFIG.format(
                layers=point["layers"], hidden=point["hidden"], ffn=point["ffn"], heads=point["heads"], tp=point["tp"],
                pp=point["pp"], vpp=point["interleave"] if point["interleave"] > 1 else "null", sp="false" if full else "true",
                granularity="full" if full else "selective", method="uniform" if full else "null", rnl=1 if full else "null",
                gbs=point["global_batch"], mbs=point["micro_batch"])
            target = Target(world_size=point["gpus"])
            target.set("world_size", point["gpus"], "flag")
            target.set("gpu", "a100", "flag")
            checked = check(f"{point['model']}-{mode}.yaml", target, [], text=text)
            if checked.view is None:
                lines.append(f"  {point['model']} {mode}: {checked.result.error.one_line()}")
                continue
            est = estimate(shape_from_view(checked.view))
            err = est.step_time / measured - 1
            errs.append(abs(err))
            lines.append(f"  {point['model']:12} {mode:6} {point['gpus']:4} A100  measured {measured:6.2f} s  estimated {est.step_time:6.2f} s  ({100 * err:+.0f} %)")
    if errs:
        lines.append(f"  Korthikanti 2022 Table 5: MAPE {100 * sum(errs) / len(errs):.1f} %, max {100 * max(errs):.1f} % over {len(errs)} points")
    return lines


def _md(label: str, rows: list) -> list:
    """Markdown rows: overall, per model, per GPU; each with the baseline on the same rows."""
    def line(name, sub):
        meas = [r["step_time_s"] for r, _, p, b in sub]
        sc, base = E.scores(meas, [p for _, _, p, _ in sub]), E.scores(meas, [b for *_, b in sub])
        tau = f"{sc['tau']:.3f}" if len(sub) >= 3 else "-"
        btau = f"{base['tau']:.3f}" if len(sub) >= 3 else "-"
        return (f"| {label} | {name} | {len(sub)} | {sc['mape']:.1f} % | {sc['max']:.1f} % | {tau} | "
                f"{base['mape']:.1f} % | {base['max']:.1f} % | {btau} |")
    out = [line("**all**", rows)]
    for key in ("model", "gpu"):
        for value in sorted({r[key] for r, *_ in rows}):
            out.append(line(f"{key} {value}", [x for x in rows if x[0][key] == value]))
    return out


def release_splits(data: list, start: dict, show_rows: bool = False) -> list:
    """The two validations of how the tool is used: leave-one-model-out scored on the newest releases' rows,
    and leave-one-release-out (fit on the older releases, predict the next)."""
    lines = ["| split | rows | n | MAPE | max | Kendall tau | baseline MAPE | baseline max | baseline tau |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    lomo = [(r, s, p, E.baseline(r, s)) for r, s, p, _ in E.leave_one_model_out(data, start) if r["release"] in E.NEWEST]
    lines += _md(f"leave-one-model-out, releases {'/'.join(E.NEWEST[:2])}", lomo)
    loro = [(r, s, p, E.baseline(r, s)) for r, s, p, _ in E.leave_one_release_out(data, start)]
    lines += _md("leave-one-release-out (fit older, predict next)", loro)
    if show_rows:
        lines.append("")
        for name, rows in (("LOMO newest", lomo), ("LORO", loro)):
            for r, s, p, b in rows:
                lines.append(f"    {name:11} {r['model'][:14]:14} {r['release']:9} {r['gpu']:5} {r['precision']:6} {r['num_gpus']:4} GPUs "
                             f"measured {r['step_time_s']:7.2f} s  predicted {p:7.2f} s ({100 * (p / r['step_time_s'] - 1):+.0f} %)  "
                             f"baseline {b:7.2f} s")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", action="store_true", help="print every held-out prediction")
    ap.add_argument("--mixed", action="store_true", help="also the older splits over every release (in-sample, mixed LOMO, every 5th row)")
    args = ap.parse_args()
    from overlap_cli.estimate.model import constants

    data, skipped = E.joined()
    print(f"{len(data)} measured rows joined to recipes; left out: " + "; ".join(f"{v} {k}" for k, v in sorted(skipped.items())))
    for line in release_splits(data, constants(), args.rows):
        print(line)
    if args.mixed:
        for line in held_out_scores(data, constants(), False):
            print(line)
    print("published validation points (A100, Korthikanti et al. 2022 Table 5):")
    for line in validation_points():
        print(line)


if __name__ == "__main__":
    main()
