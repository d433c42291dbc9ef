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

Link bandwidths and latencies come from gpus.py; a group is on NVLink when its ranks (contiguous in
Megatron-Core's tp-cp-ep-dp-pp order) fit in one NVLink domain, else on the scale-out network.
"""

from __future__ import annotations

import functools
import json
import math
import os

from overlap_cli.estimate import flops as F
from overlap_cli.estimate import gpus as G

PARTS = ("compute", "tp_exposed", "cp_exposed", "ep_exposed", "dp_exposed", "pp_bubble", "p2p_exposed")
CONSTANTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "constants.json")

# Assumed (not fitted) residuals of each overlap, as fractions of the communication it overlaps.
TP_OVERLAP_RESIDUAL = 0.5  # times 1/t: the first chunk of a ring of t steps runs before any GEMM
EP_OVERLAP_RESIDUAL = 0.25
# Delaying the weight gradients gives the all-to-all nothing more to hide behind in the only published
# isolation of it (Qwen3-30B-A3B on 16 H100: 31.31 -> 31.20 s, bench/data/overlap_ab.jsonl).
EP_OVERLAP_RESIDUAL_DELAYED_WGRAD = EP_OVERLAP_RESIDUAL
LN_SHARE = 0.3
SERIALISED_RESIDUAL = 0.5  # share of overlapped communication exposed again when one hardware queue serialises it
BYTES_ACT = 2  # activations and gradients on the wire in BF16 (FP8 all-gathers are not modelled)


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


def efficiency(const: dict, gpu: str) -> float:
    """Achieved BF16 Tensor Core efficiency of ``gpu``: fitted where measured rows exist, else a published
    figure (``efficiency_published``), else the fitted value of the nearest part (``efficiency_fallback``)."""
    if gpu in const["efficiency"]:
        return const["efficiency"][gpu]
    published = const.get("efficiency_published", {}).get(gpu)
    if published:
        return published["value"]
    return const["efficiency"][const["efficiency_fallback"][gpu]]


def _domain(gpu: dict) -> int:
    d = gpu["nvlink_domain"]
    return 1 << (d.bit_length() - 1)  # the largest power of two in the domain (72 -> 64)


def _link(gpu: dict, span: int) -> tuple:
    """(bytes/s, latency s, name) of a group whose ranks span ``span`` consecutive GPUs."""
    kind = "nvlink" if span <= _domain(gpu) else "network"
    return gpu[kind] * 1e9 * G.LINK_EFFICIENCY[kind], G.COLLECTIVE_LATENCY_S[kind], kind


def _ring(size_bytes: float, ranks: int, link: tuple) -> float:
    """All-gather / reduce-scatter time of a ``size_bytes`` (gathered) buffer over ``ranks`` ranks."""
    if ranks <= 1:
        return 0.0
    return link[1] + size_bytes * (ranks - 1) / ranks / link[0]


def estimate(shape, const: dict = None) -> Estimate:
    const = const or constants()
    gpu = G.GPUS[shape.gpu]
    s = shape
    assumptions = list(s.assumptions)
    reasons, details = {}, {}
    peak = G.peak_tflops(gpu, s.peak_class) * 1e12
    eff = efficiency(const, s.gpu)
    eff *= const["precision_factor"].get(s.eff_class, 1.0)
    if s.peak_class not in gpu["peak"]:
        assumptions.append(f"{s.gpu} has no {s.peak_class.upper()} Tensor Cores: estimated at its {('fp8' if 'fp8' in gpu['peak'] else 'bf16').upper()} rate")

    model_flops, hw_flops = F.step_flops(s)
    n = s.world
    m = s.microbatches
    parts = F.layer_flops(s)
    t_gemm = hw_flops / n / (peak * eff)
    # Memory-bound element-wise work: bytes per hidden element per token per sub-layer (fitted), plus the
    # MoE permute/unpermute of top-k copies of each token.
    # Without sequence parallelism only the work outside the tensor-parallel region (norms, dropouts,
    # residual adds) is replicated on every TP rank; inside it (GeLU, softmax) is split as ever. Korthikanti
    # et al. 2022, Sec. 4.2: activations per layer are sbh(34 + 5as/h) with TP + SP and sbh(10 + 24/t +
    # 5as/(ht)) with TP alone, i.e. 10 of the 34 units stay whole; traffic is taken to split the same way.
    tokens_local = s.gbs * s.seq / (s.dp * s.cp) / s.tp
    if s.tp > 1 and not s.sp:
        tokens_local *= (24 + 10 * s.tp) / 34
    sublayers = (s.layers if s.mixer_per_layer else 2 * s.layers) + 2 * s.mtp
    moe_layers_all = s.kinds["moe"] + (s.mtp if s.kinds["moe"] else 0)
    # Routed experts: each token's top-k copies are permuted to the experts and back (hidden wide) and the
    # activation runs on top-k x moe_ffn elements; Transformer Engine's fused grouped MLP does the
    # activation (and the quantization of the second GEMM's input) in the GEMM epilogue, not in HBM.
    moe_elems = 0.0
    if moe_layers_all:
        act = 0.0 if s.fused_grouped_mlp else (s.moe_ffn * (2 if s.gated else 1))
        moe_elems = moe_layers_all * s.topk * (s.hidden + act)
    t_mem = tokens_local / s.pp * (s.hidden * sublayers * const["mem_bytes_per_element"]
                                   + moe_elems * const["moe_bytes_per_element"]) / (gpu["hbm"] * 1e9)
    # Host time a dropless MoE layer exposes in every micro-batch: the grouped GEMM needs each expert's token
    # count on the host, a device-to-host sync that drains the GPU's queue, so the CPU's launch of what
    # follows is on the critical path. A whole-iteration CUDA graph (sync-free paged-stash MoE) removes it.
    t_host = 0.0
    if moe_layers_all and s.dropless and s.cuda_graph != "full_iteration":
        t_host = const.get("moe_sync_s", 0.0) * moe_layers_all / s.pp * m
    dense_p, expert_p = F.parameters(s)
    p_local_dense = dense_p / (s.tp * s.pp)
    p_local_expert = expert_p / (s.ep * s.etp * s.pp) if expert_p else 0.0
    shard = max(1, s.dp * s.cp) if s.distopt else 1
    t_opt = (p_local_dense + p_local_expert) / shard * 32 / (gpu["hbm"] * 1e9)  # Adam: ~32 bytes per param
    compute = t_gemm + t_mem + t_opt + t_host
    t_mb = compute / m  # one micro-batch, forward + backward, on this stage
    t_bwd_mb, t_fwd_mb = t_mb * 2 / 3, t_mb / 3
    details.update(t_gemm=t_gemm, t_mem=t_mem, t_opt=t_opt, t_host=t_host, efficiency=eff)

    # ---------------- TP
    tp_exposed = 0.0
    tp_link = _link(gpu, s.tp)
    hopper = s.generation != "sm100-or-newer"
    ordered = (not hopper) or s.cdmc == "1"
    if s.tp > 1:
        # In FP8/FP4 Transformer Engine all-gathers the GEMM inputs already cast (1 byte); the reduce-scatters
        # stay BF16: the mean of the two per element.
        act = s.mbs * (s.seq / s.cp) * s.hidden * (BYTES_ACT if s.peak_class == "bf16" else (1 + BYTES_ACT) / 2)
        blocks = (s.kinds["attn"] + s.kinds["mamba"] + s.kinds["mlp"] + (s.kinds["moe"] if s.etp > 1 else 0) + s.mtp) / s.pp
        if not s.mixer_per_layer and s.etp == 1 and s.kinds["moe"]:
            blocks = (s.layers + s.kinds["mlp"] + s.mtp) / s.pp
        passes = 3 if s.recompute["granularity"] == "full" else 2  # forward (again when recomputed) and backward
        t_tp = m * blocks * 2 * passes * _ring(act, s.tp, tp_link)
        t_tp_gemm = t_gemm * 0.9  # the projections the collectives overlap with
        if s.tp_overlap and ordered:
            tp_exposed = max(t_tp * TP_OVERLAP_RESIDUAL / s.tp, t_tp - t_tp_gemm)
            hidden = t_tp - tp_exposed
            sm_cost = hidden * s.ub_sms / gpu["sms"]
            compute += sm_cost
            if sm_cost > 0:
                assumptions.append(f"tp_comm_overlap: userbuffers kernels hold ~{s.ub_sms} of {gpu['sms']} SMs while they run (+{sm_cost:.3f} s of compute)")
            reasons["tp_exposed"] = f"tp_comm_overlap is on (TP = {s.tp}{', SP' if s.sp else ''}): {t_tp:.3f} s of TP collectives, the first chunk of each ring exposed"
        else:
            frac = 1.0 if not ordered else 0.75
            tp_exposed = t_tp * frac
            why = "tp_comm_overlap is off" if not s.tp_overlap else f"CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc} on Hopper or older: communication is queued behind the GEMMs"
            if s.tp_overlap and not ordered:
                why = f"tp_comm_overlap is on but CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc or 'unset'} on Hopper or older queues its kernels behind the GEMMs"
            reasons["tp_exposed"] = f"{why} (TP = {s.tp}{', SP' if s.sp else ''}, {tp_link[2]})"
        details["t_tp"] = t_tp

    # ---------------- CP
    cp_exposed = 0.0
    if s.cp > 1:
        cp_link = _link(gpu, s.tp * s.cp)
        kv_dim = s.heads * (s.qk_dim + s.rope_dim + s.v_dim) if s.mla else 2 * s.groups * s.kv_channels
        kv = s.mbs * (s.seq / s.cp) * kv_dim * BYTES_ACT / max(1, s.tp if not s.mla else s.tp)
        attn_layers = (s.kinds["attn"] + s.mtp) / s.pp
        step_t = cp_link[1] + kv / cp_link[0]
        t_cp = m * attn_layers * 3 * (s.cp - 1) * step_t
        t_core = (parts["attn_core"] / max(1e-9, sum(parts.values()))) * t_gemm
        if s.cp_comm_type == "p2p" and ordered:
            cp_exposed = max(m * attn_layers * step_t, t_cp - t_core)
            reasons["cp_exposed"] = f"ring attention (CP = {s.cp}, {cp_link[2]}): K/V exchange hidden behind the attention core except the first step of each ring"
        else:
            cp_exposed = t_cp
            reasons["cp_exposed"] = (f"cp_comm_type {s.cp_comm_type}: context-parallel exchange not overlapped" if s.cp_comm_type != "p2p"
                                     else f"CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc or 'unset'} on Hopper or older: ring-attention exchange queued behind compute")
        details["t_cp"] = t_cp

    # ---------------- EP
    ep_exposed = 0.0
    if s.ep > 1 and s.kinds["moe"]:
        ep_link = _link(gpu, s.etp * s.ep)
        tokens_mb = s.mbs * s.seq / (s.cp * s.tp)
        # Dispatch + combine: each token goes to top-k experts. The share of destinations inside this GPU's
        # NVLink domain travels over NVLink, the rest over the network. The flex dispatcher (DeepEP /
        # HybridEP) sends a token once per remote node (at most moe_router_group_topk nodes) and forwards it
        # over NVLink, and dispatches FP8 when the model trains in FP8/FP4.
        span = s.etp * s.ep
        local = min(span, _domain(gpu)) / span
        nodes = max(1, span // _domain(gpu))
        dispatch_bytes = 1 if (s.flex and s.peak_class != "bf16") else BYTES_ACT
        copies_net = s.topk * (1 - local)
        if s.flex and nodes > 1:
            copies_net = min(s.topk, s.group_topk or s.topk, nodes) * (nodes - 1) / nodes
        nv = _link(gpu, 1)
        def one_way(bytes_per_elem):
            t_nv = tokens_mb * s.topk * local * s.hidden * bytes_per_elem / nv[0]
            t_net = tokens_mb * copies_net * s.hidden * bytes_per_elem / ep_link[0] if local < 1 else 0.0
            return ep_link[1] + max(t_nv, t_net)
        one = (one_way(dispatch_bytes) + one_way(BYTES_ACT)) / 2
        moe_layers = (s.kinds["moe"] + s.mtp) / s.pp
        t_ep = m * moe_layers * 4 * one
        if s.ep_overlap:
            residual = EP_OVERLAP_RESIDUAL_DELAYED_WGRAD if s.delay_wgrad else EP_OVERLAP_RESIDUAL
            one_queue = s.cdmc == "1"
            if one_queue:  # the all-to-all and the other micro-batch's compute share one hardware queue
                residual = max(residual, SERIALISED_RESIDUAL)
            ep_exposed = max(t_ep * residual, t_ep - compute * 0.5)
            reasons["ep_exposed"] = (f"overlap_moe_expert_parallel_comm is on (EP = {s.ep}, {ep_link[2]}"
                                     f"{', delay_wgrad_compute' if s.delay_wgrad else ''}): {t_ep:.3f} s of all-to-all, {int(residual * 100)} % left exposed"
                                     + ("; CUDA_DEVICE_MAX_CONNECTIONS=1 queues it with the compute" if one_queue else ""))
        else:
            ep_exposed = t_ep
            if s.shared_expert_overlap and s.shared_ffn:
                shared_t = (parts["moe_shared"] / max(1e-9, sum(parts.values()))) * t_gemm
                ep_exposed = max(t_ep / 2, t_ep - shared_t)
            reasons["ep_exposed"] = f"overlap_moe_expert_parallel_comm is off (EP = {s.ep}, {ep_link[2]}): dispatch and combine all-to-all exposed"
        details["t_ep"] = t_ep

    # ---------------- DP
    dp_exposed = 0.0
    grad_bytes = 4 if s.grad_fp32 else 2
    param_bytes = 1 if s.fp8_param_gather else 2
    dp_groups = []
    if s.dp * s.cp > 1 and p_local_dense:
        dp_groups.append((p_local_dense, s.dp * s.cp, _link(gpu, s.tp * s.cp * s.dp)))
    edp = n // (s.ep * s.etp * s.pp)
    if expert_p and edp > 1:
        dp_groups.append((p_local_expert, edp, _link(gpu, n // s.pp)))
    if s.peft:
        dp_groups = []  # frozen weights: only the adapters' gradients are reduced (negligible)
    bucket = s.bucket_size if isinstance(s.bucket_size, int) and s.bucket_size > 0 else None
    if bucket is None and s.overlap_grad_reduce:
        bucket = max(40_000_000, 1_000_000 * s.dp * s.cp)  # megatron/core/distributed/distributed_data_parallel.py:68-69
    rs_total = rs_last = ag_total = ag_first = 0.0
    buckets = 0
    for params, ranks, link in dp_groups:
        nb = max(1, math.ceil(params / bucket)) if (bucket and s.overlap_grad_reduce) else 1
        buckets += nb
        per = params / nb
        factor = 1 if s.distopt or s.fsdp else 2  # all-reduce = reduce-scatter + all-gather
        one_rs = factor * _ring(per * grad_bytes, ranks, link)
        rs_total += nb * one_rs
        rs_last = max(rs_last, one_rs)
        if s.distopt or s.fsdp:
            one_ag = _ring(per * param_bytes, ranks, link)
            ag_total += nb * one_ag
            ag_first = max(ag_first, one_ag)
    if dp_groups:
        if s.fsdp:
            total = m * (rs_total + 2 * ag_total)
            dp_exposed = max(rs_last + ag_first, total - compute * 0.9)
            reasons["dp_exposed"] = f"Megatron-FSDP (DP = {s.dp}): parameters gathered and gradients reduced every micro-batch, overlapped with compute"
        else:
            if s.overlap_grad_reduce:
                rs_exp = rs_last + max(0.0, rs_total - rs_last - t_bwd_mb)
            else:
                rs_exp = rs_total
            if s.overlap_param_gather and s.distopt:
                ag_exp = ag_first + max(0.0, ag_total - ag_first - t_fwd_mb)
            else:
                ag_exp = ag_total
            dp_exposed = rs_exp + ag_exp
            bits = [f"overlap_grad_reduce is {'on' if s.overlap_grad_reduce else 'off'}"]
            if s.distopt:
                bits.append(f"overlap_param_gather is {'on' if s.overlap_param_gather else 'off'}")
            else:
                bits.append("no distributed optimizer: gradients all-reduced")
            size = f"bucket {bucket / 1e6:.0f} M params, {buckets} bucket(s)" if bucket and s.overlap_grad_reduce else "one buffer"
            reasons["dp_exposed"] = f"{', '.join(bits)} (DP = {s.dp}{f' x CP {s.cp}' if s.cp > 1 else ''}, {size}, {dp_groups[0][2][2]})"
        details.update(t_dp_rs=rs_total, t_dp_ag=ag_total, buckets=buckets, bucket=bucket)

    # LayerNorm SM margins: TE's persistent LayerNorm kernels take every SM, so a collective overlapped with
    # them waits (margin 0): that share of the hidden TP / DP / EP communication is exposed. A margin keeps
    # SMs free for the collectives and slows the LayerNorm kernels by a quarter of margin / (SMs - margin)
    # (they are bandwidth-bound: fewer SMs still nearly saturate HBM). Assumed: LayerNorm is LN_SHARE of the
    # memory-bound time.
    margin = max(s.ln_margin_fwd, s.ln_margin_bwd)
    ln_time = t_mem * LN_SHARE
    if margin > 0:
        compute += 0.25 * ln_time * margin / max(1, gpu["sms"] - margin)
    else:
        share = min(1.0, ln_time / max(compute, 1e-12))
        hidden = {"tp_exposed": details.get("t_tp", 0.0) - tp_exposed,
                  "dp_exposed": details.get("t_dp_rs", 0.0) + details.get("t_dp_ag", 0.0) - dp_exposed if dp_groups and not s.fsdp else 0.0,
                  "ep_exposed": details.get("t_ep", 0.0) - ep_exposed}
        blocked = {k: max(0.0, v) * share for k, v in hidden.items()}
        tp_exposed += blocked["tp_exposed"]
        dp_exposed += blocked["dp_exposed"]
        ep_exposed += blocked["ep_exposed"]
        if sum(blocked.values()) > 1e-4:
            reasons["ln_margin"] = (f"NVTE_FWD/BWD_LAYERNORM_SM_MARGIN are 0: overlapped collectives wait for TE's LayerNorm "
                                    f"kernels ({sum(blocked.values()):.3f} s)")

    # ---------------- PP
    pp_bubble = p2p_exposed = 0.0
    if s.pp > 1:
        per_mb_path = (compute + tp_exposed + cp_exposed + ep_exposed) / m
        pp_bubble = (s.pp - 1) / s.vp * per_mb_path
        reasons["pp_bubble"] = f"(p-1)/(v*m) = ({s.pp}-1)/({s.vp}*{m}) of the pipeline's compute" + (
            "" if s.vp > 1 else ": no virtual pipeline (VPP would divide it)")
        pp_link = _link(gpu, s.tp * s.cp * s.dp * s.pp)
        act = s.mbs * (s.seq / s.cp) * s.hidden * BYTES_ACT / (s.tp if s.sp else 1)
        one = pp_link[1] + act / pp_link[0]
        t_p2p = 2 * s.vp * m * one
        if s.overlap_p2p:
            p2p_exposed = min(t_p2p, 2 * (s.pp - 1) * one)
            reasons["p2p_exposed"] = f"overlap_p2p_comm is on (PP = {s.pp}, VPP = {s.vp}, {pp_link[2]}): warm-up and flush transfers exposed"
        else:
            p2p_exposed = t_p2p
            reasons["p2p_exposed"] = f"overlap_p2p_comm is off (PP = {s.pp}, {pp_link[2]}): every activation transfer waits"
        details["t_p2p"] = t_p2p
    if s.cdmc == "1" and not hopper and (s.dp > 1 or s.pp > 1) and (s.tp > 1 or s.cp > 1):
        # SM100+ with TP/CP and DP/PP streams: one hardware queue serialises the DP/PP communication with the
        # TP/CP kernels (Bridge's launcher uses 32 there), so part of what the overlap hid is exposed again.
        hidden_dp = (details.get("t_dp_rs", 0.0) + details.get("t_dp_ag", 0.0) - dp_exposed) if dp_groups and not s.fsdp else 0.0
        hidden_p2p = details.get("t_p2p", 0.0) - p2p_exposed
        extra_dp, extra_p2p = SERIALISED_RESIDUAL * max(0.0, hidden_dp), SERIALISED_RESIDUAL * max(0.0, hidden_p2p)
        dp_exposed += extra_dp
        p2p_exposed += extra_p2p
        if extra_dp + extra_p2p > 0:
            reasons["cdmc"] = (f"CUDA_DEVICE_MAX_CONNECTIONS=1 on SM100+ with TP/CP and DP/PP streams: one hardware queue "
                               f"serialises them ({extra_dp + extra_p2p:.3f} s of overlapped DP/p2p communication exposed)")
            assumptions.append(f"CUDA_DEVICE_MAX_CONNECTIONS=1: {int(SERIALISED_RESIDUAL * 100)} % of the communication an overlap hides "
                               "is assumed exposed again when every stream shares one hardware queue")
    out = {
        "compute": compute, "tp_exposed": tp_exposed, "cp_exposed": cp_exposed, "ep_exposed": ep_exposed,
        "dp_exposed": dp_exposed, "pp_bubble": pp_bubble, "p2p_exposed": p2p_exposed,
    }
    return Estimate(out, model_flops, s, assumptions, reasons, details, const)
