"""An analytical model of one training step: compute plus each kind of communication the overlap settings
hide or expose, on the critical path of one GPU of the first pipeline stage.

    step = compute + tp_exposed + cp_exposed + ep_exposed + dp_exposed + pp_bubble + p2p_exposed

- compute: hardware FLOPs per GPU (recompute included) at the GPU's dense peak times an achieved
  efficiency fitted per GPU and precision (constants.json), plus memory-bound element-wise work at the
  GPU's own HBM bandwidth (gpus.py: 3.35 TB/s H100, 8 TB/s B200/B300/GB200/GB300), plus the optimizer step
  (memory-bound), plus exposed host time of dropless MoE layers, plus SM time lost to userbuffers kernels
  and LayerNorm SM margins. The memory-bound work has two fitted byte counts: ``mem_bytes_per_element``
  per hidden element per sub-layer (norms, residuals, dropout, casts, the dense activation), and
  ``moe_bytes_per_element`` per routed-expert element of an MoE layer: top-k x hidden (permute and
  unpermute of every token copy) plus top-k x moe_ffn (x2 gated: the activation on the experts' output),
  the latter left out when Transformer Engine's fused grouped MLP does the activation in the GEMM epilogue.
  Host time: a dropless MoE layer needs each expert's token count on the host for its grouped GEMM, a
  device-to-host sync in every micro-batch that empties the GPU's queue; ``moe_sync_s`` (fitted) per MoE
  layer per micro-batch, none under a whole-iteration CUDA graph (Megatron-Core's full_iteration graph
  with the sync-free paged-stash MoE it requires). Per-layer TE graphs of the router/preprocess keep the sync.
- TP: with sequence parallelism one all-gather and one reduce-scatter of the full activation per transformer
  (attention or MLP) block forward and the same backward -- 4 per layer each way (Korthikanti et al. 2022,
  Sec. 4.2.2), ring cost (t-1)/t, the volume of Narayanan et al. 2021's 4 all-reduces per layer (Sec. 3.2);
  full recomputation runs the forward collectives once more. Userbuffers overlap (tp_comm_overlap) hides all but the first
  chunk of each ring (1/(2t) assumed) and anything beyond the GEMM time; without it the forward collectives
  are exposed and the backward ones too unless kernels are queued in order (CUDA_DEVICE_MAX_CONNECTIONS=1
  on Hopper or older; SM100+ assumed to order them with any value).
- CP: ring attention sends K/V (cp-1) times forward and K/V + dK/dV backward; it is hidden behind the
  attention core except what exceeds it (a2a CP: exposed).
- EP: dispatch + combine all-to-all, forward and backward, per MoE layer; overlap_moe_expert_parallel_comm
  hides it behind the other micro-batch's compute except a residual (assumed 25 %, 15 % with
  delay_wgrad_compute), moe_shared_expert_overlap hides the dispatch behind the shared expert.
- DP: gradient reduce-scatter (all-reduce without the distributed optimizer) and parameter all-gather of the
  first stage's parameters over the DP x CP group (experts: the expert-DP group), in buckets of
  ddp.bucket_size parameters. overlap_grad_reduce overlaps the buckets with the last micro-batch's backward:
  exposed = last bucket + what exceeds that backward; overlap_param_gather does the same with the first
  micro-batch's forward. Off: everything exposed. Each bucket pays a collective's latency.
- PP bubble: (p-1)/(v*m) of the per-micro-batch critical path (Narayanan et al. 2021, Sec. 2.2.2).
- p2p: 2*v*m activation transfers per step; overlap_p2p_comm leaves the warm-up and flush ones exposed.

Each term is one function of costs.py, citing where its figures come from; ``estimate`` adds them in turn.
Link bandwidths and latencies come from gpus.py; a group is on NVLink when its ranks (contiguous in
Megatron-Core's tp-cp-ep-dp-pp order) fit in one NVLink domain, else on the scale-out network.
"""

from __future__ import annotations

import functools
import json
import os

from overlap_cli.estimate import costs as C

PARTS = ("compute", "tp_exposed", "cp_exposed", "ep_exposed", "dp_exposed", "pp_bubble", "p2p_exposed")
CONSTANTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "constants.json")


@functools.lru_cache(maxsize=1)
def constants() -> dict:
    with open(CONSTANTS_FILE, encoding="utf-8") as fh:
        return json.load(fh)


class Estimate:
    """One config's estimate: step time, the parts, throughput, assumptions and a reason per part."""

    def __init__(self, parts: dict, model_flops: float, shape, assumptions: list, reasons: dict, details: dict,
                 const: dict = None):
        self.parts, self.model_flops, self.shape = parts, model_flops, shape
        self.assumptions, self.reasons, self.details = assumptions, reasons, details
        self.step_time = sum(parts.values())
        self.const, self._memory, self._interval = const, None, None

    @property
    def memory(self):
        """Per-rank memory of the most-loaded GPU (estimate/memory.py), counted on first use."""
        if self._memory is None:
            from overlap_cli.estimate.memory import estimate_memory

            self._memory = estimate_memory(self.shape)
        return self._memory

    @property
    def interval(self) -> dict:
        """The step time's interval from the held-out residuals of this run's class (``interval_for``)."""
        if self._interval is None:
            self._interval = interval_for(self.shape, self.step_time, self.const)
        return self._interval

    def to_json(self) -> dict:
        s = self.shape
        iv = self.interval
        return {
            "step_time_s": self.step_time,
            "interval_s": [iv["low_s"], iv["high_s"]],
            "interval": {k: v for k, v in iv.items() if k not in ("low_s", "high_s")},
            "tokens_per_s_per_gpu": s.gbs * s.seq / (self.step_time * s.world),
            "model_tflops_per_gpu": self.model_flops / (self.step_time * s.world) / 1e12,
            "breakdown_s": {p: self.parts[p] for p in PARTS},
            "memory": self.memory.to_json(),
            "warnings": [w for w in (self.memory.warning(s.gpu),) if w],
            "assumptions": list(self.assumptions),
            "step_time_unavailable": None,
        }


class MemoryOnly:
    """A run on a GPU without step-time figures (gpus.NOT_MODELLED): the memory needs no peak or bandwidth,
    only the step time does. ``why``: the sentence saying what is missing."""

    def __init__(self, shape, why: str):
        self.shape, self.why, self.assumptions = shape, why, list(shape.assumptions)
        self._memory = None

    memory = Estimate.memory

    def to_json(self) -> dict:
        return {
            "step_time_s": None, "interval_s": [None, None], "interval": None, "tokens_per_s_per_gpu": None,
            "model_tflops_per_gpu": None, "breakdown_s": None,
            "memory": self.memory.to_json(),
            "warnings": [w for w in (self.memory.warning(self.shape.gpu),) if w],
            "assumptions": list(self.assumptions),
            "step_time_unavailable": self.why,
        }


def class_name(shape) -> str:
    fam = "hopper" if shape.gpu in ("h100", "h200", "a100") else "blackwell"
    return f"{fam}/{'moe' if shape.kinds['moe'] else 'dense'}/{shape.peak_class}"


def interval_for(shape, step: float, const: dict) -> dict:
    """The range the measured step time fell in for held-out runs of this class (GPU family x dense/MoE x
    precision): the estimate times the 10th..90th percentile of measured / predicted over the class's
    leave-one-model-out residuals (constants.json ``intervals``, written by tools/fit_estimate.py). A class
    with fewer than ``MIN_CLASS_ROWS`` residuals takes its GPU family x dense/MoE residuals; a run outside
    what the calibration measured (a GPU without rows, a class without rows) takes every residual and says so."""
    table = const.get("intervals") or {}
    name = class_name(shape)
    parent = name.rsplit("/", 1)[0]
    measured_gpu = shape.gpu in const.get("efficiency", {})
    entry, used, covered = table.get(name), name, True
    if entry is None or entry["n"] < MIN_CLASS_ROWS:
        entry, used = table.get(parent), parent
        covered = table.get(name) is not None
    if entry is None or not measured_gpu:
        entry, used, covered = table.get("all"), "all", False
    if entry is None:
        return {"low_s": None, "high_s": None, "level": None, "class": name, "from": None, "n": 0, "covered": False,
                "note": "no held-out residuals in constants.json"}
    note = None
    if not covered:
        why = (f"no measured row on {shape.gpu}" if not measured_gpu else f"no measured row of class {name}")
        whose = "every held-out row" if used == "all" else f"the held-out rows of {used}"
        note = f"outside the calibration's coverage ({why}): the interval is that of {whose} ({entry['n']}), not of runs like this one"
    elif used != name:
        note = f"class {name} has fewer than {MIN_CLASS_ROWS} held-out rows: the interval of {used} is used"
    return {"low_s": step * entry["lo"], "high_s": step * entry["hi"], "level": entry["level"], "class": name,
            "from": used, "n": entry["n"], "covered": covered, "note": note}


MIN_CLASS_ROWS = 5


def estimate(shape, const: dict = None) -> Estimate:
    """The step of ``shape``: each cost term of costs.TERMS added in turn to one account (costs.Step)."""
    const = const or constants()
    step = C.Step(shape, const)
    for term in C.TERMS:
        term(step)
    return Estimate(step.parts(), step.model_flops, shape, step.assumptions, step.reasons, step.details, const)
