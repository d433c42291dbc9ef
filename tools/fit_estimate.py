"""Regenerate overlap_cli/estimate/constants.json: the step-time model's fitted constants.

    python tools/fit_estimate.py           # fit on every joined row and write the file
    python tools/fit_estimate.py --check   # fit and print, write nothing

The free parameters are an achieved Tensor Core efficiency per GPU type (h100, b200, b300, gb200, gb300),
a factor per precision (FP8 current scaling, MXFP8, NVFP4 relative to each GPU's own peak for that
precision; BF16 = 1), the bytes moved per hidden element per token per sub-layer by memory-bound work, the
bytes per routed-expert element of an MoE layer (top-k copies of the hidden state permuted and back, and the
activation on top-k x moe_ffn unless the fused grouped MLP does it), and the host time a dropless MoE layer's
device-to-host sync exposes per micro-batch (none under a whole-iteration CUDA graph): eleven numbers for 125
measured rows of six models. Each row is estimated with its own release's benchmark settings
(bench/estimate_data.py ``release_overrides``). The releases enter as one
factor per release x GPU family x dense/MoE for every release older than the group's newest (set to the mean
log ratio of its rows at each step, not searched), so the constants predict the newest measured software.
A100 has no measured row: its efficiency is the published fraction of peak Megatron-LM reached (Narayanan
et al. 2021). Everything else (peaks, bandwidths, latencies, overlap residuals) is a cited or stated figure,
not fitted. The fit minimises the mean squared log error of the step time by coordinate descent
(bench/estimate_data.py ``fit``); the intervals every estimate carries are the 10th..90th percentiles of the
leave-one-model-out residuals per GPU family x dense/MoE x precision; bench/estimate_accuracy.py scores
held-out models and releases.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import estimate_data as E  # noqa: E402

START = {
    "efficiency": {"h100": 0.45, "b200": 0.4, "b300": 0.45, "gb200": 0.45, "gb300": 0.5},
    # GPUs without measured rows take the efficiency of the nearest measured part (same SMs/Tensor Cores).
    "efficiency_fallback": {"h200": "h100"},
    # A100 has no measured Bridge row: the fraction of peak Megatron-LM reached on A100 as published.
    "efficiency_published": {"a100": {"value": 0.52, "source": "Narayanan et al. 2021 (SC'21, arXiv:2104.04473) Sec. 5.1: "
                                      "163 TFLOP/s per A100 = 52 % of the 312 TFLOP/s peak (1T GPT, 3072 GPUs)"}},
    "precision_factor": {"bf16": 1.0, "fp8cs": 1.0, "mxfp8": 1.0, "nvfp4": 0.6},
    "mem_bytes_per_element": 100.0,
    "moe_bytes_per_element": 50.0,
    "moe_sync_s": 0.002,
}


LEVEL = 0.8  # the share of held-out runs an interval holds


def _quantile(xs: list, q: float) -> float:
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(len(xs) - 1, lo + 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def intervals(data: list, const: dict) -> dict:
    """class -> {"n", "lo", "hi", "level"}: the 10th and 90th percentile of measured / predicted over the
    leave-one-model-out predictions (older releases scaled by the training fold's factor), by
    GPU family x dense/MoE x precision, by GPU family x dense/MoE, and over every row ("all")."""
    held = [(s, r["step_time_s"] / p) for r, s, p, _ in E.leave_one_model_out(data, const) if p]
    groups: dict = {}
    for shape, ratio in held:
        cls = E.interval_class(shape)
        for key in ("/".join(cls), "/".join(cls[:2]), "all"):
            groups.setdefault(key, []).append(ratio)
    lo_q, hi_q = (1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2
    return {k: {"n": len(v), "lo": round(min(1.0, _quantile(v, lo_q)), 4), "hi": round(max(1.0, _quantile(v, hi_q)), 4),
                "level": LEVEL} for k, v in sorted(groups.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="print the fitted constants, write nothing")
    args = ap.parse_args()
    data, skipped = E.joined()
    const = E.fit(data, START)
    preds = [E.predict(s, const) for _, s, *_ in data]
    pinned = E.pinned_releases(data)
    const["release"] = {
        "predicts": {"/".join(g): rel for g, rel in sorted(pinned.items())},
        "how": "each GPU family x dense/MoE group is calibrated to the newest NeMo container with a measured row of it "
               "(26.06.x = Bridge 0.5.x; the 26.08 table of Bridge 0.6.x holds only models without a shipped recipe); "
               "older releases' rows enter the fit through a factor per release x group (bench/estimate_data.py loss)",
        "older_release_factors": {f"{'/'.join(g)}@{rel}": round(math.exp(f), 4)
                                  for (g, rel), f in sorted(E.release_factors(data, preds).items())},
    }
    const["intervals"] = intervals(data, const)
    const["meaning"] = {
        "efficiency": "achieved BF16 Tensor Core fraction of the GPU's dense peak on the GEMMs (fitted per GPU type)",
        "precision_factor": "achieved fraction relative to BF16 at the precision's own dense peak (FP8 / FP4 GEMMs, casts)",
        "mem_bytes_per_element": "HBM bytes moved per hidden element per token per sub-layer by element-wise kernels "
                                 "(norms, residual adds, dropout, casts, the dense MLP's activation), at the GPU's HBM bandwidth",
        "moe_bytes_per_element": "HBM bytes per routed-expert element per token of an MoE layer: top-k x hidden (permute / "
                                 "unpermute of each copy, forward and backward) plus top-k x moe_ffn (x2 gated) for the "
                                 "experts' activation unless the fused grouped MLP does it in the GEMM epilogue",
        "moe_sync_s": "seconds of host time exposed per dropless MoE layer per micro-batch (the device-to-host sync of the "
                      "experts' token counts for the grouped GEMM empties the GPU queue); 0 under a full-iteration CUDA graph",
    }
    const["how"] = (
        f"tools/fit_estimate.py: coordinate descent on the mean squared log error of step time over {len(data)} rows of "
        "Megatron-Bridge's published performance tables (bench/data/bridge_throughput.jsonl, 067f987d) joined to the shipped "
        "0.6.2 recipes, older releases scaled by a fitted factor per release x GPU family x dense/MoE; intervals from "
        "leave-one-model-out residuals; held-out scores: bench/estimate_accuracy.py"
    )
    text = json.dumps(const, indent=1, sort_keys=True) + "\n"
    if args.check:
        sys.stdout.write(text)
        return
    path = os.path.join(ROOT, "overlap_cli", "estimate", "constants.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
