"""The cost terms of one training step (model.py composes them), each a function over ``Step``, the running
account of one GPU of the first pipeline stage: what each term adds to the compute time or exposes of its
communication, why (``reasons``), the figures it assumes (``assumptions``) and its raw times (``details``).

The terms run in ``TERMS`` order: the later ones read what the earlier ones left (the userbuffers SM cost
is compute the EP and DP overlaps hide behind; the pipeline bubble is a share of everything before it).
Where the figures come from is in each term's docstring and in model.py's module docstring.
"""

from __future__ import annotations

import math

from overlap_cli.estimate import flops as F
from overlap_cli.estimate import gpus as G

# Assumed (not fitted) residuals of each overlap, as fractions of the communication it overlaps.
TP_OVERLAP_RESIDUAL = 0.5  # times 1/t: the first chunk of a ring of t steps runs before any GEMM
EP_OVERLAP_RESIDUAL = 0.25
# Delaying the weight gradients gives the all-to-all nothing more to hide behind in the only published
# isolation of it (Qwen3-30B-A3B on 16 H100: 31.31 -> 31.20 s, bench/data/overlap_ab.jsonl).
EP_OVERLAP_RESIDUAL_DELAYED_WGRAD = EP_OVERLAP_RESIDUAL
LN_SHARE = 0.3
SERIALISED_RESIDUAL = 0.5  # share of overlapped communication exposed again when one hardware queue serialises it
BYTES_ACT = 2  # activations and gradients on the wire in BF16 (FP8 all-gathers are not modelled)


def efficiency(const: dict, gpu: str) -> float:
    """Achieved BF16 Tensor Core efficiency of ``gpu``: fitted where measured rows exist, else a published
    figure (``efficiency_published``), else the fitted value of the nearest part (``efficiency_fallback``)."""
    if gpu in const["efficiency"]:
        return const["efficiency"][gpu]
    published = const.get("efficiency_published", {}).get(gpu)
    if published:
        return published["value"]
    return const["efficiency"][const["efficiency_fallback"][gpu]]


def nvlink_domain(gpu: dict) -> int:
    d = gpu["nvlink_domain"]
    return 1 << (d.bit_length() - 1)  # the largest power of two in the domain (72 -> 64)


def link(gpu: dict, span: int) -> tuple:
    """(bytes/s, latency s, name) of a group whose ranks span ``span`` consecutive GPUs."""
    kind = "nvlink" if span <= nvlink_domain(gpu) else "network"
    return gpu[kind] * 1e9 * G.LINK_EFFICIENCY[kind], G.COLLECTIVE_LATENCY_S[kind], kind


def ring(size_bytes: float, ranks: int, link: tuple) -> float:
    """All-gather / reduce-scatter time of a ``size_bytes`` (gathered) buffer over ``ranks`` ranks."""
    if ranks <= 1:
        return 0.0
    return link[1] + size_bytes * (ranks - 1) / ranks / link[0]


class Step:
    """The running account of one step: the parts (model.PARTS) so far, and what the terms share."""

    def __init__(self, shape, const: dict):
        self.s, self.const, self.gpu = shape, const, G.GPUS[shape.gpu]
        self.m = shape.microbatches
        self.assumptions = list(shape.assumptions)
        self.reasons: dict = {}
        self.details: dict = {}
        self.compute = self.tp_exposed = self.cp_exposed = self.ep_exposed = 0.0
        self.dp_exposed = self.pp_bubble = self.p2p_exposed = 0.0
        # Queued in issue order: SM100+ (assumed with any value), or CUDA_DEVICE_MAX_CONNECTIONS=1 before it.
        self.hopper = shape.generation != "sm100-or-newer"
        self.ordered = (not self.hopper) or shape.cdmc == "1"
        self.model_flops = self.t_gemm = self.t_mem = self.efficiency = 0.0
        self.t_mb = 0.0  # one micro-batch, forward + backward, on this stage, before any overlap's cost
        self.flops_parts: dict = {}
        self.p_local_dense = self.p_local_expert = self.expert_p = 0.0
        self.dp_groups: list = []

    def parts(self) -> dict:
        return {
            "compute": self.compute, "tp_exposed": self.tp_exposed, "cp_exposed": self.cp_exposed,
            "ep_exposed": self.ep_exposed, "dp_exposed": self.dp_exposed, "pp_bubble": self.pp_bubble,
            "p2p_exposed": self.p2p_exposed,
        }


def gemm_time(c: Step) -> None:
    """Tensor Core time: hardware FLOPs per GPU (recompute included, flops.step_flops) at the GPU's dense peak
    (gpus.py) times the achieved efficiency fitted per GPU (constants.json ``efficiency``) and precision
    (``precision_factor``)."""
    s, gpu = c.s, c.gpu
    peak = G.peak_tflops(gpu, s.peak_class) * 1e12
    eff = efficiency(c.const, s.gpu)
    eff *= c.const["precision_factor"].get(s.eff_class, 1.0)
    if s.peak_class not in gpu["peak"]:
        c.assumptions.append(f"{s.gpu} has no {s.peak_class.upper()} Tensor Cores: estimated at its {('fp8' if 'fp8' in gpu['peak'] else 'bf16').upper()} rate")
    c.model_flops, hw_flops = F.step_flops(s)
    c.flops_parts = F.layer_flops(s)
    c.t_gemm = hw_flops / s.world / (peak * eff)
    c.efficiency = eff


def memory_bound_time(c: Step) -> None:
    """Element-wise work at the GPU's HBM bandwidth (gpus.py): ``mem_bytes_per_element`` (fitted) per hidden
    element per token per sub-layer, plus ``moe_bytes_per_element`` (fitted) per routed-expert element.
    Without sequence parallelism only the work outside the tensor-parallel region (norms, dropouts, residual
    adds) is replicated on every TP rank; inside it (GeLU, softmax) is split as ever. Korthikanti et al. 2022,
    Sec. 4.2: activations per layer are sbh(34 + 5as/h) with TP + SP and sbh(10 + 24/t + 5as/(ht)) with TP
    alone, i.e. 10 of the 34 units stay whole; traffic is taken to split the same way."""
    s, const = c.s, c.const
    tokens_local = s.gbs * s.seq / (s.dp * s.cp) / s.tp
    if s.tp > 1 and not s.sp:
        tokens_local *= (24 + 10 * s.tp) / 34
    sublayers = (s.layers if s.mixer_per_layer else 2 * s.layers) + 2 * s.mtp
    # Routed experts: each token's top-k copies are permuted to the experts and back (hidden wide) and the
    # activation runs on top-k x moe_ffn elements; Transformer Engine's fused grouped MLP does the
    # activation (and the quantization of the second GEMM's input) in the GEMM epilogue, not in HBM.
    moe_elems = 0.0
    moe_layers_all = _moe_layers_all(s)
    if moe_layers_all:
        act = 0.0 if s.fused_grouped_mlp else (s.moe_ffn * (2 if s.gated else 1))
        moe_elems = moe_layers_all * s.topk * (s.hidden + act)
    c.t_mem = tokens_local / s.pp * (s.hidden * sublayers * const["mem_bytes_per_element"]
                                     + moe_elems * const["moe_bytes_per_element"]) / (c.gpu["hbm"] * 1e9)


def _moe_layers_all(s) -> int:
    return s.kinds["moe"] + (s.mtp if s.kinds["moe"] else 0)


def host_sync_time(s, const: dict, m: int) -> float:
    """Host time a dropless MoE layer exposes in every micro-batch: the grouped GEMM needs each expert's token
    count on the host, a device-to-host sync that drains the GPU's queue, so the CPU's launch of what follows
    is on the critical path: ``moe_sync_s`` (fitted) per MoE layer per micro-batch. A whole-iteration CUDA
    graph (Megatron-Core's full_iteration graph, with the sync-free paged-stash MoE it requires) removes it."""
    moe_layers_all = _moe_layers_all(s)
    if moe_layers_all and s.dropless and s.cuda_graph != "full_iteration":
        return const.get("moe_sync_s", 0.0) * moe_layers_all / s.pp * m
    return 0.0


def optimizer_time(c: Step) -> float:
    """The optimizer step, memory-bound: Adam reads and writes ~32 bytes per local parameter at HBM bandwidth,
    over the DP x CP shard with the distributed optimizer."""
    s = c.s
    dense_p, c.expert_p = F.parameters(s)
    c.p_local_dense = dense_p / (s.tp * s.pp)
    c.p_local_expert = c.expert_p / (s.ep * s.etp * s.pp) if c.expert_p else 0.0
    shard = max(1, s.dp * s.cp) if s.distopt else 1
    return (c.p_local_dense + c.p_local_expert) / shard * 32 / (c.gpu["hbm"] * 1e9)


def compute_time(c: Step) -> None:
    """compute = Tensor Core time + memory-bound time + optimizer step + exposed host time (the terms above)."""
    gemm_time(c)
    memory_bound_time(c)
    t_host = host_sync_time(c.s, c.const, c.m)
    t_opt = optimizer_time(c)
    c.compute = c.t_gemm + c.t_mem + t_opt + t_host
    c.t_mb = c.compute / c.m
    c.details.update(t_gemm=c.t_gemm, t_mem=c.t_mem, t_opt=t_opt, t_host=t_host, efficiency=c.efficiency)


def tp_comm(c: Step) -> None:
    """TP with sequence parallelism: one all-gather and one reduce-scatter of the full activation per
    transformer block forward and the same backward (Korthikanti et al. 2022, Sec. 4.2.2), ring cost (t-1)/t;
    full recomputation runs the forward collectives once more. Userbuffers overlap hides all but the first
    chunk of each ring (TP_OVERLAP_RESIDUAL / t, assumed) and anything beyond the GEMM time, and costs the SMs
    its kernels hold (``ub_sms``); without it the forward collectives are exposed, and the backward ones too
    unless kernels are queued in order."""
    s, gpu = c.s, c.gpu
    tp_link = link(gpu, s.tp)
    if s.tp <= 1:
        return
    # In FP8/FP4 Transformer Engine all-gathers the GEMM inputs already cast (1 byte); the reduce-scatters
    # stay BF16: the mean of the two per element.
    act = s.mbs * (s.seq / s.cp) * s.hidden * (BYTES_ACT if s.peak_class == "bf16" else (1 + BYTES_ACT) / 2)
    blocks = (s.kinds["attn"] + s.kinds["mamba"] + s.kinds["mlp"] + (s.kinds["moe"] if s.etp > 1 else 0) + s.mtp) / s.pp
    if not s.mixer_per_layer and s.etp == 1 and s.kinds["moe"]:
        blocks = (s.layers + s.kinds["mlp"] + s.mtp) / s.pp
    passes = 3 if s.recompute["granularity"] == "full" else 2  # forward (again when recomputed) and backward
    t_tp = c.m * blocks * 2 * passes * ring(act, s.tp, tp_link)
    t_tp_gemm = c.t_gemm * 0.9  # the projections the collectives overlap with
    if s.tp_overlap and c.ordered:
        c.tp_exposed = max(t_tp * TP_OVERLAP_RESIDUAL / s.tp, t_tp - t_tp_gemm)
        hidden = t_tp - c.tp_exposed
        sm_cost = hidden * s.ub_sms / gpu["sms"]
        c.compute += sm_cost
        if sm_cost > 0:
            c.assumptions.append(f"tp_comm_overlap: userbuffers kernels hold ~{s.ub_sms} of {gpu['sms']} SMs while they run (+{sm_cost:.3f} s of compute)")
        c.reasons["tp_exposed"] = f"tp_comm_overlap is on (TP = {s.tp}{', SP' if s.sp else ''}): {t_tp:.3f} s of TP collectives, the first chunk of each ring exposed"
    else:
        frac = 1.0 if not c.ordered else 0.75
        c.tp_exposed = t_tp * frac
        why = "tp_comm_overlap is off" if not s.tp_overlap else f"CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc} on Hopper or older: communication is queued behind the GEMMs"
        if s.tp_overlap and not c.ordered:
            why = f"tp_comm_overlap is on but CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc or 'unset'} on Hopper or older queues its kernels behind the GEMMs"
        c.reasons["tp_exposed"] = f"{why} (TP = {s.tp}{', SP' if s.sp else ''}, {tp_link[2]})"
    c.details["t_tp"] = t_tp


def cp_comm(c: Step) -> None:
    """CP: ring attention sends K/V (cp-1) times forward and K/V + dK/dV backward; hidden behind the attention
    core (its share of the layer FLOPs, flops.layer_flops) except the first step of each ring and what exceeds
    the core; a2a CP (or an unordered queue): exposed."""
    s = c.s
    if s.cp <= 1:
        return
    cp_link = link(c.gpu, s.tp * s.cp)
    kv_dim = s.heads * (s.qk_dim + s.rope_dim + s.v_dim) if s.mla else 2 * s.groups * s.kv_channels
    kv = s.mbs * (s.seq / s.cp) * kv_dim * BYTES_ACT / max(1, s.tp if not s.mla else s.tp)
    attn_layers = (s.kinds["attn"] + s.mtp) / s.pp
    step_t = cp_link[1] + kv / cp_link[0]
    t_cp = c.m * attn_layers * 3 * (s.cp - 1) * step_t
    parts = c.flops_parts
    t_core = (parts["attn_core"] / max(1e-9, sum(parts.values()))) * c.t_gemm
    if s.cp_comm_type == "p2p" and c.ordered:
        c.cp_exposed = max(c.m * attn_layers * step_t, t_cp - t_core)
        c.reasons["cp_exposed"] = f"ring attention (CP = {s.cp}, {cp_link[2]}): K/V exchange hidden behind the attention core except the first step of each ring"
    else:
        c.cp_exposed = t_cp
        c.reasons["cp_exposed"] = (f"cp_comm_type {s.cp_comm_type}: context-parallel exchange not overlapped" if s.cp_comm_type != "p2p"
                                   else f"CUDA_DEVICE_MAX_CONNECTIONS={s.cdmc or 'unset'} on Hopper or older: ring-attention exchange queued behind compute")
    c.details["t_cp"] = t_cp


def _ep_one_all_to_all(c: Step) -> tuple:
    """(seconds of one all-to-all, forward or backward, averaged over dispatch and combine; the EP link).
    Each token goes to top-k experts: the share of destinations inside this GPU's NVLink domain travels
    over NVLink, the rest over the network. The flex dispatcher (DeepEP / HybridEP) sends a token once per
    remote node (at most moe_router_group_topk nodes) and forwards it over NVLink, and dispatches FP8 when
    the model trains in FP8/FP4."""
    s, gpu = c.s, c.gpu
    ep_link = link(gpu, s.etp * s.ep)
    tokens_mb = s.mbs * s.seq / (s.cp * s.tp)
    span = s.etp * s.ep
    local = min(span, nvlink_domain(gpu)) / span
    nodes = max(1, span // nvlink_domain(gpu))
    dispatch_bytes = 1 if (s.flex and s.peak_class != "bf16") else BYTES_ACT
    copies_net = s.topk * (1 - local)
    if s.flex and nodes > 1:
        copies_net = min(s.topk, s.group_topk or s.topk, nodes) * (nodes - 1) / nodes
    nv = link(gpu, 1)

    def one_way(bytes_per_elem):
        t_nv = tokens_mb * s.topk * local * s.hidden * bytes_per_elem / nv[0]
        t_net = tokens_mb * copies_net * s.hidden * bytes_per_elem / ep_link[0] if local < 1 else 0.0
        return ep_link[1] + max(t_nv, t_net)

    return (one_way(dispatch_bytes) + one_way(BYTES_ACT)) / 2, ep_link


def ep_all_to_all(c: Step) -> None:
    """EP: dispatch + combine all-to-all, forward and backward, per MoE layer. overlap_moe_expert_parallel_comm
    hides it behind the other micro-batch's compute except EP_OVERLAP_RESIDUAL (assumed; the delayed-wgrad
    figure from bench/data/overlap_ab.jsonl), SERIALISED_RESIDUAL when one hardware queue serialises it;
    moe_shared_expert_overlap hides the dispatch behind the shared expert."""
    s = c.s
    if not (s.ep > 1 and s.kinds["moe"]):
        return
    one, ep_link = _ep_one_all_to_all(c)
    moe_layers = (s.kinds["moe"] + s.mtp) / s.pp
    t_ep = c.m * moe_layers * 4 * one
    if s.ep_overlap:
        residual = EP_OVERLAP_RESIDUAL_DELAYED_WGRAD if s.delay_wgrad else EP_OVERLAP_RESIDUAL
        one_queue = s.cdmc == "1"
        if one_queue:  # the all-to-all and the other micro-batch's compute share one hardware queue
            residual = max(residual, SERIALISED_RESIDUAL)
        c.ep_exposed = max(t_ep * residual, t_ep - c.compute * 0.5)
        c.reasons["ep_exposed"] = (f"overlap_moe_expert_parallel_comm is on (EP = {s.ep}, {ep_link[2]}"
                                   f"{', delay_wgrad_compute' if s.delay_wgrad else ''}): {t_ep:.3f} s of all-to-all, {int(residual * 100)} % left exposed"
                                   + ("; CUDA_DEVICE_MAX_CONNECTIONS=1 queues it with the compute" if one_queue else ""))
    else:
        c.ep_exposed = t_ep
        if s.shared_expert_overlap and s.shared_ffn:
            parts = c.flops_parts
            shared_t = (parts["moe_shared"] / max(1e-9, sum(parts.values()))) * c.t_gemm
            c.ep_exposed = max(t_ep / 2, t_ep - shared_t)
        c.reasons["ep_exposed"] = f"overlap_moe_expert_parallel_comm is off (EP = {s.ep}, {ep_link[2]}): dispatch and combine all-to-all exposed"
    c.details["t_ep"] = t_ep


def dp_groups(c: Step) -> list:
    """[(local parameters, ranks, link)] the DP collectives run over: the first stage's dense parameters over
    the DP x CP group, the experts' over the expert-DP group; none with PEFT (frozen weights: only the
    adapters' gradients are reduced, negligible). Ranks are contiguous in Megatron-Core's tp-cp-ep-dp-pp order."""
    s, gpu = c.s, c.gpu
    groups = []
    if s.dp * s.cp > 1 and c.p_local_dense:
        groups.append((c.p_local_dense, s.dp * s.cp, link(gpu, s.tp * s.cp * s.dp)))
    edp = s.world // (s.ep * s.etp * s.pp)
    if c.expert_p and edp > 1:
        groups.append((c.p_local_expert, edp, link(gpu, s.world // s.pp)))
    if s.peft:
        groups = []
    return groups


def dp_bucket(s):
    """ddp.bucket_size parameters; with overlap_grad_reduce and none given, Megatron-Core's default
    max(40M, 1M x DP x CP) (megatron/core/distributed/distributed_data_parallel.py:68-69)."""
    bucket = s.bucket_size if isinstance(s.bucket_size, int) and s.bucket_size > 0 else None
    if bucket is None and s.overlap_grad_reduce:
        bucket = max(40_000_000, 1_000_000 * s.dp * s.cp)
    return bucket


def dp_collectives(c: Step, bucket) -> dict:
    """Gradient reduce-scatter (all-reduce without the distributed optimizer or FSDP) and parameter all-gather
    over each DP group, in buckets when the grad reduce overlaps; each bucket pays a collective's latency:
    totals, the last reduce-scatter bucket, the first all-gather bucket, the bucket count."""
    s = c.s
    grad_bytes = 4 if s.grad_fp32 else 2
    param_bytes = 1 if s.fp8_param_gather else 2
    rs_total = rs_last = ag_total = ag_first = 0.0
    buckets = 0
    for params, ranks, group_link in c.dp_groups:
        nb = max(1, math.ceil(params / bucket)) if (bucket and s.overlap_grad_reduce) else 1
        buckets += nb
        per = params / nb
        factor = 1 if s.distopt or s.fsdp else 2  # all-reduce = reduce-scatter + all-gather
        one_rs = factor * ring(per * grad_bytes, ranks, group_link)
        rs_total += nb * one_rs
        rs_last = max(rs_last, one_rs)
        if s.distopt or s.fsdp:
            one_ag = ring(per * param_bytes, ranks, group_link)
            ag_total += nb * one_ag
            ag_first = max(ag_first, one_ag)
    return {"rs_total": rs_total, "rs_last": rs_last, "ag_total": ag_total, "ag_first": ag_first, "buckets": buckets}


def dp_comm(c: Step) -> None:
    """DP grad reduce and param gather: overlap_grad_reduce overlaps the buckets with the last micro-batch's
    backward (2/3 of it): exposed = the last bucket + what exceeds that backward; overlap_param_gather does the
    same with the first micro-batch's forward (1/3). Off: everything exposed. Megatron-FSDP gathers and
    reduces every micro-batch, overlapped with 90 % of the compute."""
    s = c.s
    c.dp_groups = dp_groups(c)
    bucket = dp_bucket(s)
    t = dp_collectives(c, bucket)
    if not c.dp_groups:
        return
    rs_total, rs_last, ag_total, ag_first = t["rs_total"], t["rs_last"], t["ag_total"], t["ag_first"]
    if s.fsdp:
        total = c.m * (rs_total + 2 * ag_total)
        c.dp_exposed = max(rs_last + ag_first, total - c.compute * 0.9)
        c.reasons["dp_exposed"] = f"Megatron-FSDP (DP = {s.dp}): parameters gathered and gradients reduced every micro-batch, overlapped with compute"
    else:
        t_bwd_mb, t_fwd_mb = c.t_mb * 2 / 3, c.t_mb / 3
        if s.overlap_grad_reduce:
            rs_exp = rs_last + max(0.0, rs_total - rs_last - t_bwd_mb)
        else:
            rs_exp = rs_total
        if s.overlap_param_gather and s.distopt:
            ag_exp = ag_first + max(0.0, ag_total - ag_first - t_fwd_mb)
        else:
            ag_exp = ag_total
        c.dp_exposed = rs_exp + ag_exp
        bits = [f"overlap_grad_reduce is {'on' if s.overlap_grad_reduce else 'off'}"]
        if s.distopt:
            bits.append(f"overlap_param_gather is {'on' if s.overlap_param_gather else 'off'}")
        else:
            bits.append("no distributed optimizer: gradients all-reduced")
        size = f"bucket {bucket / 1e6:.0f} M params, {t['buckets']} bucket(s)" if bucket and s.overlap_grad_reduce else "one buffer"
        c.reasons["dp_exposed"] = f"{', '.join(bits)} (DP = {s.dp}{f' x CP {s.cp}' if s.cp > 1 else ''}, {size}, {c.dp_groups[0][2][2]})"
    c.details.update(t_dp_rs=rs_total, t_dp_ag=ag_total, buckets=t["buckets"], bucket=bucket)


def _hidden_dp(c: Step) -> float:
    """The DP communication the overlaps hid (none counted under Megatron-FSDP)."""
    d = c.details
    return d.get("t_dp_rs", 0.0) + d.get("t_dp_ag", 0.0) - c.dp_exposed if c.dp_groups and not c.s.fsdp else 0.0


def layernorm_sm_margin(c: Step) -> None:
    """LayerNorm SM margins: TE's persistent LayerNorm kernels take every SM, so a collective overlapped with
    them waits (margin 0): that share of the hidden TP / DP / EP communication is exposed. A margin keeps SMs
    free for the collectives and slows the LayerNorm kernels by a quarter of margin / (SMs - margin) (they are
    bandwidth-bound: fewer SMs still nearly saturate HBM). Assumed: LayerNorm is LN_SHARE of the memory-bound
    time."""
    s = c.s
    margin = max(s.ln_margin_fwd, s.ln_margin_bwd)
    ln_time = c.t_mem * LN_SHARE
    if margin > 0:
        c.compute += 0.25 * ln_time * margin / max(1, c.gpu["sms"] - margin)
        return
    share = min(1.0, ln_time / max(c.compute, 1e-12))
    hidden = {"tp_exposed": c.details.get("t_tp", 0.0) - c.tp_exposed,
              "dp_exposed": _hidden_dp(c),
              "ep_exposed": c.details.get("t_ep", 0.0) - c.ep_exposed}
    blocked = {k: max(0.0, v) * share for k, v in hidden.items()}
    c.tp_exposed += blocked["tp_exposed"]
    c.dp_exposed += blocked["dp_exposed"]
    c.ep_exposed += blocked["ep_exposed"]
    if sum(blocked.values()) > 1e-4:
        c.reasons["ln_margin"] = (f"NVTE_FWD/BWD_LAYERNORM_SM_MARGIN are 0: overlapped collectives wait for TE's LayerNorm "
                                  f"kernels ({sum(blocked.values()):.3f} s)")


def pp_bubble(c: Step) -> None:
    """PP bubble: (p-1)/(v*m) of the per-micro-batch critical path (compute and the TP / CP / EP exposed)
    times m (Narayanan et al. 2021, Sec. 2.2.2)."""
    s, m = c.s, c.m
    if s.pp <= 1:
        return
    per_mb_path = (c.compute + c.tp_exposed + c.cp_exposed + c.ep_exposed) / m
    c.pp_bubble = (s.pp - 1) / s.vp * per_mb_path
    c.reasons["pp_bubble"] = f"(p-1)/(v*m) = ({s.pp}-1)/({s.vp}*{m}) of the pipeline's compute" + (
        "" if s.vp > 1 else ": no virtual pipeline (VPP would divide it)")


def pp_p2p(c: Step) -> None:
    """p2p: 2*v*m activation transfers per step (sequence-parallel activations split by TP);
    overlap_p2p_comm leaves the 2*(p-1) warm-up and flush ones exposed."""
    s, m = c.s, c.m
    if s.pp <= 1:
        return
    pp_link = link(c.gpu, s.tp * s.cp * s.dp * s.pp)
    act = s.mbs * (s.seq / s.cp) * s.hidden * BYTES_ACT / (s.tp if s.sp else 1)
    one = pp_link[1] + act / pp_link[0]
    t_p2p = 2 * s.vp * m * one
    if s.overlap_p2p:
        c.p2p_exposed = min(t_p2p, 2 * (s.pp - 1) * one)
        c.reasons["p2p_exposed"] = f"overlap_p2p_comm is on (PP = {s.pp}, VPP = {s.vp}, {pp_link[2]}): warm-up and flush transfers exposed"
    else:
        c.p2p_exposed = t_p2p
        c.reasons["p2p_exposed"] = f"overlap_p2p_comm is off (PP = {s.pp}, {pp_link[2]}): every activation transfer waits"
    c.details["t_p2p"] = t_p2p


def one_hardware_queue(c: Step) -> None:
    """SM100+ with TP/CP and DP/PP streams and CUDA_DEVICE_MAX_CONNECTIONS=1: one hardware queue serialises the
    DP/PP communication with the TP/CP kernels (Bridge's launcher uses 32 there), so SERIALISED_RESIDUAL
    (assumed) of what the DP and p2p overlaps hid is exposed again."""
    s = c.s
    if not (s.cdmc == "1" and not c.hopper and (s.dp > 1 or s.pp > 1) and (s.tp > 1 or s.cp > 1)):
        return
    hidden_p2p = c.details.get("t_p2p", 0.0) - c.p2p_exposed
    extra_dp, extra_p2p = SERIALISED_RESIDUAL * max(0.0, _hidden_dp(c)), SERIALISED_RESIDUAL * max(0.0, hidden_p2p)
    c.dp_exposed += extra_dp
    c.p2p_exposed += extra_p2p
    if extra_dp + extra_p2p > 0:
        c.reasons["cdmc"] = (f"CUDA_DEVICE_MAX_CONNECTIONS=1 on SM100+ with TP/CP and DP/PP streams: one hardware queue "
                             f"serialises them ({extra_dp + extra_p2p:.3f} s of overlapped DP/p2p communication exposed)")
        c.assumptions.append(f"CUDA_DEVICE_MAX_CONNECTIONS=1: {int(SERIALISED_RESIDUAL * 100)} % of the communication an overlap hides "
                             "is assumed exposed again when every stream shares one hardware queue")


# The terms in the order they are added: each reads what the ones before it left.
TERMS = (compute_time, tp_comm, cp_comm, ep_all_to_all, dp_comm, layernorm_sm_margin, pp_bubble, pp_p2p,
         one_hardware_queue)
