"""Per-rank training memory of the most-loaded GPU, counted the way Megatron's own formulas count it, plus what
the overlap settings add, against the GPU's capacity (``overlap estimate`` JSON ``memory``; ``tune``'s filter).

The counts follow Megatron-Bridge 0.6.2's ``estimate_training_memory``
(megatron/bridge/training/utils/theoretical_memory_utils.py:127-228) and Megatron-LM's
``theoretical_memory_usage.py`` (megatron-core 0.19.2), which both use Korthikanti et al. 2022, Table 2:

- weights and optimizer: parameters on the most-loaded pipeline stage, split over TP (dense) or EP x ETP
  (routed experts); bytes per parameter 18 without the distributed optimizer, else 6 + 12 / shard where the
  shard is DP x CP for dense parameters and DP x TP x CP / (EP x ETP) for experts
  (theoretical_memory_utils.py:634-655);
- activations of the first pipeline stage: s*b*h*(18 + 4*ffn/h) bytes per layer (ffn/h averaged over the
  dense and MoE layers, top-k routed plus shared expert widths), the embedding terms, the interleaved
  penalty 1 + (p-1)/(p*v) or min(1, m/p) without interleaving, the logits term when PP = 1, all over TP x CP
  (theoretical_memory_utils.py:355-430).

Where those formulas do not model the run, this counts what the run holds (each difference is listed in
``DIFFERENCES``): BF16 gradients when grad_reduce_in_fp32 is off (4 + 12 / shard bytes), FP8 / FP4 GEMM
inputs kept quantized, Mamba layers by their own projections, hybrid MLP and MoE layers by their kind, frozen PEFT weights at 2 bytes with no gradient or Adam state (adapters at the full rate),
Megatron-FSDP sharding parameters, gradients and optimizer state over the data-parallel group, MLA by its
low-rank projections (Megatron-LM's formula, theoretical_memory_usage.py:63-88), gated linear units as three
projections whatever the activation function, the pipeline layout's real stage contents, the router weights
and the MTP projection; full recomputation stores only each checkpointed chunk's input; without sequence
parallelism 10 of the 34 units per layer are held by every TP rank (Korthikanti et al. 2022, Sec. 4.2);
activations offloaded to the CPU are not held.
"""

from __future__ import annotations

import math

from overlap_cli.estimate import gpus as G

DIFFERENCES = {
    "hybrid": "Bridge's formula counts every Mamba layer as attention + MLP and every layer of a hybrid model as MoE; "
              "counted here by kind (Mamba projections, attention, MLP, MoE)",
    "peft": "Bridge's formula gives frozen PEFT base weights gradients and Adam state (6 + 12/DP bytes); counted here at "
            "2 bytes, adapters at the full rate",
    "fsdp": "Bridge's formula ignores Megatron-FSDP's sharding of parameters and gradients; counted here as sharded over DP",
    "mla": "Bridge's formula counts multi-latent attention as ordinary attention; counted here by its low-rank projections",
    "gated": "Bridge's formula counts gated experts/MLPs as three projections only when activation_func is exactly F.silu; "
             "counted here as three for every gated linear unit",
    "layout": "Bridge's formula spreads layers evenly over the stages; counted here from pipeline_model_parallel_layout",
    "recompute": "Bridge's activation formula assumes selective recomputation; with full recomputation only each "
                 "checkpointed chunk's input is held",
    "no_sp": "Bridge's activation formula assumes sequence parallelism; without it 10 of 34 units per layer are held "
             "whole on every TP rank",
    "offload": "activations of the layers offloaded to the CPU (cpu_offloading_num_layers) are not held",
    "quantized_inputs": "Bridge's activation formula counts every stored activation in BF16; Transformer Engine keeps "
                        "the inputs of FP8 / FP4 GEMMs quantized (1 byte, MXFP8 1 + 1/32, NVFP4 0.5 + 1/16), counted so here",
    "bf16_grads": "Bridge's formula counts FP32 gradients (6 + 12/DP bytes per parameter); with grad_reduce_in_fp32 "
                  "off the gradient buffer holds the parameters' BF16, counted here at 4 + 12/DP",
}
USERBUFFER_METHODS = 10  # TE initialize_ub: qkv/proj/fc1/fc2 fprop, dgrad, wgrad buffers (an assumption: ~10)


def _attention_params(s) -> float:
    h = s.hidden
    if s.mla:  # Megatron-LM's MLA count (theoretical_memory_usage.py:63-83)
        qk = s.qk_dim + s.rope_dim
        q = s.q_lora * (h + s.heads * qk + 1) if s.q_lora else h * s.heads * qk
        return q + s.kv_lora * (h + s.heads * (s.qk_dim + s.v_dim) + 1) + h * s.rope_dim + s.heads * s.v_dim * h
    q = s.heads * s.kv_channels
    return 2 * h * q + 2 * h * s.groups * s.kv_channels + (h * q if s.gate else 0)


def _mamba_params(s) -> float:
    h = s.hidden
    d_in = s.mamba_heads * s.mamba_head_dim if s.mamba_heads else 2 * h
    nh = s.mamba_heads or d_in // s.mamba_head_dim
    gn = s.mamba_groups * s.mamba_state
    # in_proj, conv1d (kernel 4) over x, B, C, dt_bias / A_log / D, the gated norm, out_proj
    return h * (2 * d_in + 2 * gn + nh) + 4 * (d_in + 2 * gn) + 3 * nh + d_in + d_in * h


def _mlp(s, width: int, d: int = None) -> float:
    return (3 if s.gated else 2) * (d or s.hidden) * width


_MODEL_FIELDS = ("hidden", "heads", "groups", "kv_channels", "ffn", "gated", "experts", "moe_ffn", "shared_ffn", "latent",
                 "mla", "q_lora", "kv_lora", "qk_dim", "rope_dim", "v_dim", "gate", "mamba_heads", "mamba_head_dim",
                 "mamba_state", "mamba_groups", "hybrid_pattern", "layers", "mtp", "normalization")
_CACHE: dict = {}


def layer_params(s) -> list:
    """[(dense, routed) parameters] per layer in order, MTP depths last (each repeats the last layer's kind);
    memoised on the model's shape (tune asks for it once per candidate)."""
    key = tuple(getattr(s, f) for f in _MODEL_FIELDS) + (s.kinds["moe"], s.kinds["mlp"])
    if key not in _CACHE:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = _layer_params(s)
    return _CACHE[key]


def _layer_params(s) -> list:
    h = s.hidden
    norm = (1 if s.normalization == "RMSNorm" else 2) * h
    attn, mamba = _attention_params(s), _mamba_params(s)
    dense_mlp = _mlp(s, s.ffn)
    moe_dense = (_mlp(s, s.shared_ffn) if s.shared_ffn else 0) + h * s.experts + (2 * h * s.latent if s.latent else 0)
    routed = _mlp(s, s.moe_ffn, s.latent) * s.experts if s.experts else 0
    out = []
    if s.hybrid_pattern:
        main = s.hybrid_pattern.partition("/")[0].replace("|", "")
        for ch in main:
            if ch == "M":
                out.append((mamba + norm, 0.0))
            elif ch == "*":
                out.append((attn + norm, 0.0))
            elif ch == "-":
                out.append((dense_mlp + norm, 0.0))
            elif ch == "E":
                out.append((moe_dense + norm, routed))
    else:
        pattern = [0] * s.layers
        if s.kinds["moe"]:
            pattern = [1] * s.layers if s.kinds["moe"] == s.layers else None
            if pattern is None:  # recover the pattern from the counts: Megatron's first-k-dense layouts
                pattern = [0] * s.kinds["mlp"] + [1] * s.kinds["moe"]
        for is_moe in pattern:
            out.append((attn + 2 * norm + (moe_dense if is_moe else dense_mlp), routed if is_moe else 0.0))
    for _ in range(s.mtp):  # one more layer of the last kind plus the 2h x h projection and two norms
        d, r = out[-1] if out else (0.0, 0.0)
        out.append((d + 2 * h * h + 2 * norm, r))
    return out


def _stages(s, n_layers: int) -> tuple:
    """(decoder layer indices per PP rank, ranks holding the embedding, ranks holding the output layer, ranks
    holding the MTP depths) from the layout, the uneven first/last counts or an even split."""
    pp = s.pp
    if isinstance(s.pp_layout, str):
        from overlap_cli.frameworks.bridge.pipeline_layout import expand

        virtual = expand(s.pp_layout).split("|")
        ranks, emb, out, mtp = [[] for _ in range(pp)], set(), set(), set()
        i = 0
        for v, stage in enumerate(virtual):
            r = v % pp
            for ch in stage:
                if ch == "t":
                    ranks[r].append(i)
                    i += 1
                elif ch == "E":
                    emb.add(r)
                elif ch == "L":
                    out.add(r)
                elif ch == "m":
                    mtp.add(r)
        if i == n_layers:
            return ranks, emb, out, mtp
    counts = None
    if pp > 1 and (s.first_stage_layers or s.last_stage_layers):
        rest = n_layers - (s.first_stage_layers or 0) - (s.last_stage_layers or 0)
        middle = pp - bool(s.first_stage_layers) - bool(s.last_stage_layers)
        if middle >= 0 and (middle == 0 and rest == 0 or middle > 0 and rest % middle == 0 and rest > 0):
            counts = [rest // middle if middle else 0] * pp
            if s.first_stage_layers:
                counts[0] = s.first_stage_layers
            if s.last_stage_layers:
                counts[-1] = s.last_stage_layers
    if counts is None:
        return None, {0}, {pp - 1}, {pp - 1}
    ranks, i = [], 0
    for c in counts:
        ranks.append(list(range(i, i + c)))
        i += c
    return ranks, {0}, {pp - 1}, {pp - 1}


def _lora_params(s) -> float:
    """LoRA adapter parameters on one rank (dim x (in + out) per targeted linear, experts sharing one adapter)."""
    if not s.peft or not s.peft_dim:
        return 0.0
    targets = set(s.peft_targets or ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"))
    h, q = s.hidden, s.heads * s.kv_channels
    kv = s.groups * s.kv_channels
    ffn = s.moe_ffn if s.kinds["moe"] and not s.kinds["mlp"] else s.ffn
    sizes = {"linear_qkv": (h, q + 2 * kv), "linear_proj": (q, h), "linear_fc1": (h, ffn * (2 if s.gated else 1)),
             "linear_fc2": (ffn, h)}
    per_layer = sum(s.peft_dim * (a + b) for t, (a, b) in sizes.items() if t in targets)
    return per_layer * s.layers / (s.pp * s.tp)


# Where a world size comes from when nobody launching the run stated it: a catalog recipe's name (Bridge's
# ``<N>gpu`` is the recipe's model-parallel footprint TP x PP x CP, e.g. "Recommended parallelism: TP=1, PP=1,
# CP=2" for llama3_8b_pretrain_2gpu_h100_bf16_config, megatron/bridge/recipes/llama/h100/llama3.py:238, and
# "expected to run on 64 nodes with 8 GPUs each" for gpt3_175b_pretrain_32gpu_h100_bf16_config at TP 4 x PP 8,
# megatron/bridge/recipes/gpt/h100/gpt3_175b.py:29) or no statement at all (one data-parallel replica assumed).
# At such a size a run that does not fit says at which data-parallel size it does, instead of "does not fit".
NOT_STATED = ("recipe", "assumed", "unknown", "default")
FITS_WITH_MORE_DP = "fits with more data parallelism"
# Over the capacity of a GPU nobody named (h100 assumed, inputs.py), at every data-parallel size searched.
GPU_NOT_STATED = "over the assumed GPU"
# The vocabulary's rows are not known statically (inputs.vocabulary) and what the rest holds fits.
UNKNOWN_VOCABULARY = "unknown vocabulary"


class Memory:
    """The count of one rank. Where the vocabulary is unknown (``unknown``: why) the terms that hold it -- the
    embedding and output layer in the weights, the logits in the activations without pipelining -- are
    unknown: ``total`` is None and ``floor`` is what the rest holds, which only a verdict of "over" reads."""

    def __init__(self, fields: dict, notes: list, differs: list, shape=None):
        self.fields, self.notes, self.differs = fields, notes, differs
        self.shape = shape
        self.unknown = getattr(shape, "vocab_unknown", None)
        self._fits_at = False  # not searched yet (None: searched, no DP fits)

    @property
    def floor(self) -> float:
        """The sum of the terms (without the vocabulary's where it is unknown): at most the total."""
        f = self.fields
        return (f["weights_and_optimizer_bytes"] + f["activation_bytes"] + f["userbuffers_bytes"] + f["dp_buckets_bytes"]
                + f["param_gather_buffers_bytes"] + f["ep_overlap_bytes"])

    @property
    def total(self):
        return self.floor if self.unknown is None else None

    @property
    def capacity(self):
        return self.fields["capacity_bytes"]

    def fits(self):
        if self.capacity is None or (self.unknown is not None and self.floor <= self.capacity):
            return None
        return self.floor <= self.capacity

    def _over_verdict(self) -> str:
        """does not fit (the weights and optimizer state alone exceed the GPU: exact arithmetic) | may not fit (they
        fit, but with the activations Megatron's formula counts the total does not); only when over capacity."""
        return "does not fit" if self.fields["weights_and_optimizer_bytes"] > self.capacity else "may not fit"

    def world_stated(self) -> bool:
        """Whether the world size this count is at was stated for the run (flag, directive, settings, launch)."""
        return self.shape is None or getattr(self.shape, "world_from", None) not in NOT_STATED

    def gpu_stated(self) -> bool:
        return self.shape is None or getattr(self.shape, "gpu_stated", True)

    def verdict(self) -> str:
        """fits | does not fit | may not fit (see _over_verdict; the world size and GPU were stated for the run) |
        fits with more data parallelism (over the GPU at a world size nobody stated for the run, under it at the
        smallest DP of ``fits_at``) | over the assumed GPU (no --gpu, and over the assumed one's capacity) |
        unknown capacity | unknown vocabulary (the embedding's size is not known statically and the rest fits)."""
        if self.capacity is None:
            return "unknown capacity"
        if self.unknown is not None:  # over only when the floor is, at the size and on the GPU stated for the run
            stated = self.world_stated() and self.gpu_stated()
            return self._over_verdict() if stated and self.floor > self.capacity else UNKNOWN_VOCABULARY
        if self.total <= self.capacity:
            return "fits"
        if not self.world_stated() and self.fits_at() is not None:
            return FITS_WITH_MORE_DP
        if not self.gpu_stated():
            return GPU_NOT_STATED
        return self._over_verdict()

    def fits_at(self):
        """The smallest data-parallel size above this run's at which its count is under the GPU's capacity, as
        {"data_parallel_size", "world_size", "total_bytes", "weights_and_optimizer_bytes", "activation_bytes"},
        or None (no such size, or nothing to search). A DP size is one the launch accepts: micro_batch_size x DP
        divides global_batch_size (megatron/core/num_microbatches_calculator.py:382) and the world size is a
        multiple of ETP x EP x PP, i.e. TP x CP x DP of ETP x EP (megatron/core/parallel_state.py:881).
        Searched once, on first use."""
        if self._fits_at is not False:
            return self._fits_at
        self._fits_at = None
        s = self.shape
        if s is None or self.capacity is None or self.unknown is not None or self.total <= self.capacity:
            return None
        per_replica = s.gbs // s.mbs
        sizes = [dp for dp in range(s.dp + 1, per_replica + 1)
                 if not per_replica % dp and not (s.tp * s.cp * dp) % max(1, s.ep * s.etp)]
        # The count only falls as DP grows (optimizer shards, fewer micro-batches in flight): if the largest
        # accepted DP does not fit, none does.
        if not sizes or estimate_memory(self._at(sizes[-1], per_replica)).total > self.capacity:
            return None
        for dp in sizes:
            wider = self._at(dp, per_replica)
            m = estimate_memory(wider)
            if m.total <= self.capacity:
                f = m.fields
                self._fits_at = {"data_parallel_size": dp, "world_size": wider.world, "total_bytes": m.total,
                                 "weights_and_optimizer_bytes": f["weights_and_optimizer_bytes"],
                                 "activation_bytes": f["activation_bytes"]}
                break
        return self._fits_at

    def _at(self, dp: int, per_replica: int):
        s = self.shape
        return s.replace(dp=dp, world=s.tp * s.pp * s.cp * dp, microbatches=per_replica // dp)

    def _head(self, gpu: str) -> str:
        f = self.fields
        extra = self.floor - f["weights_and_optimizer_bytes"] - f["activation_bytes"]
        least = "at least " if self.unknown is not None else ""
        without = " without the embedding and output layer, whose vocabulary is unknown" if least else ""
        return (f"memory: {least}{gib(self.floor)} on the most-loaded rank (weights and optimizer {gib(f['weights_and_optimizer_bytes'])}, "
                f"activations {gib(f['activation_bytes'])}, overlap buffers {gib(extra)}{without}) is over the {gpu}'s {gib(self.capacity)}")

    def _fits_at_clause(self) -> str:
        at = self.fits_at()
        if at is None:
            return ""
        how = " (the distributed optimizer shards its state over DP x CP)" if self.shape.distopt or self.shape.fsdp else ""
        return (f"; at DP {at['data_parallel_size']} ({at['world_size']} GPUs) it is {gib(at['total_bytes'])}{how}: weights and "
                f"optimizer {gib(at['weights_and_optimizer_bytes'])}, activations {gib(at['activation_bytes'])}, which fits")

    def warning(self, gpu: str):
        """One sentence with the numbers when the run is over the GPU's memory at the world size stated for it,
        else None."""
        if self.verdict() not in ("does not fit", "may not fit"):
            return None
        if self.verdict() == "does not fit":
            tail = ": the weights and optimizer state alone exceed it, so the run does not fit as written"
        else:
            tail = ": it may not fit as written (Megatron's activation formula is an approximation; measure before relying on it)"
        return self._head(gpu) + tail + self._fits_at_clause()

    def note(self, gpu: str):
        """One sentence with the numbers when the run is over the GPU's memory only at a world size nobody stated
        (FITS_WITH_MORE_DP), else None."""
        v = self.verdict()
        if v not in (FITS_WITH_MORE_DP, GPU_NOT_STATED):
            return None
        s = self.shape
        head = self._head(("assumed " if not self.gpu_stated() else "") + gpu)
        if v == GPU_NOT_STATED:
            return head + ", a GPU not stated for this run (--gpu states it)" + self._fits_at_clause()
        where = "assumed" if s.world_from == "assumed" else f"from {s.world_label}"
        return (f"{head} at world size {s.world} ({where}; DP {s.dp}), a size not stated for this run "
                f"(--world-size or the launch states it){self._fits_at_clause()}")

    def to_json(self) -> dict:
        out = dict(self.fields)
        s = self.shape
        if self.unknown is not None:  # the terms that hold the vocabulary: unknown, their floor below
            out["weights_and_optimizer_bytes"] = None
            if s is None or s.pp == 1:
                out["activation_bytes"] = None
        out["total_bytes"] = self.total
        out["at_least_bytes"] = self.floor
        out["vocabulary"] = {"rows": None if self.unknown is not None or s is None else s.vocab,
                             "how": getattr(s, "vocab_how", None), "unknown": self.unknown}
        out["fits"] = self.fits()
        out["verdict"] = self.verdict()
        out["world_size_stated"] = self.world_stated()
        out["fits_at"] = self.fits_at() if self.total is not None and self.capacity is not None and self.total > self.capacity else None
        out["note"] = self.note(self.shape.gpu) if self.shape is not None else None
        out["differs_from_megatron_formula"] = [DIFFERENCES[k] for k in self.differs]
        out["notes"] = list(self.notes)
        return out


def memory_vocab(s) -> int:
    """The vocabulary rows the memory counts: the size ``setup()`` gives the model (inputs.vocabulary), or 0
    where it is unknown -- the count is then a floor without the embedding and output layer, never a guess."""
    return 0 if getattr(s, "vocab_unknown", None) else s.vocab


def weights_and_optimizer(s) -> tuple:
    """(bytes on the most-loaded rank, dense parameters on it, expert parameters on it, differences)."""
    differs = []
    per_layer = layer_params(s)
    n_main = len(per_layer) - s.mtp
    emb = s.hidden * memory_vocab(s)
    if s.mla:
        differs.append("mla")
    if s.hybrid_pattern:
        differs.append("hybrid")
    if s.gated and s.activation not in (None, "silu"):
        differs.append("gated")
    ranks, emb_ranks, out_ranks, mtp_ranks = _stages(s, n_main)
    final_norm = (1 if s.normalization == "RMSNorm" else 2) * s.hidden
    if ranks is None:  # even split, as Bridge's formula (theoretical_memory_utils.py:581-586)
        dense = (sum(d for d, _ in per_layer) + final_norm) / (s.pp * s.tp) + emb / s.tp
        if not s.tied and s.pp == 1:
            dense += emb / s.tp
        routed = sum(r for _, r in per_layer) / (s.pp * s.ep * s.etp)
    else:
        if s.pp_layout:
            differs.append("layout")
        best = (0.0, 0.0)
        for r, idx in enumerate(ranks):
            d = sum(per_layer[i][0] for i in idx)
            x = sum(per_layer[i][1] for i in idx)
            if r in emb_ranks:
                d += emb
            if r in out_ranks:
                d += final_norm + (emb if not s.tied or s.pp > 1 else 0)
            if r in mtp_ranks:
                d += sum(p[0] for p in per_layer[n_main:])
                x += sum(p[1] for p in per_layer[n_main:])
            if d / s.tp + x / (s.ep * s.etp) > best[0] / s.tp + best[1] / (s.ep * s.etp):
                best = (d, x)
        dense, routed = best[0] / s.tp, best[1] / (s.ep * s.etp)
    dense_shard = max(1, s.dp * s.cp)
    expert_shard = max(1, s.dp * s.tp * s.cp // max(1, s.ep * s.etp))

    # The gradient buffer holds FP32 only with grad_reduce_in_fp32, else the parameters' dtype
    # (megatron/core/distributed/param_and_grad_buffer.py:889,915: grad_dtype = torch.float if
    # grad_reduce_in_fp32 else param.dtype); Bridge's and Megatron-LM's formulas count 4 bytes either way.
    grad = 4.0 if s.grad_fp32 else 2.0

    def rate(shard: int) -> float:
        if s.fsdp:
            strategy = s.fsdp_strategy or "optim_grads_params"
            return {"optim_grads_params": 18.0 / shard, "optim_grads": 2 + 16.0 / shard}.get(strategy, 6 + 12.0 / shard)
        return 2 + grad + 12.0 / shard if s.distopt else 14.0 + grad

    if s.fsdp:
        differs.append("fsdp")
    elif not s.grad_fp32 and not s.peft:
        differs.append("bf16_grads")
    if s.peft:
        differs.append("peft")
        adapters = _lora_params(s)
        total = 2.0 * (dense + routed) + adapters * rate(dense_shard)
    else:
        total = dense * rate(dense_shard) + routed * rate(expert_shard)
    return total, dense, routed, differs


def _layer_units(s) -> list:
    """Activation bytes per s*b*h of each decoder layer (Korthikanti et al. 2022, Table 2, flash attention: no
    score matrix): attention block with its norm 13, MLP block with its norm 5 + 4*ffn/h, so a GPT layer is
    18 + 4*ffn/h; an MoE block counts top-k routed plus the shared expert width."""
    h = s.hidden
    moe_r = ((s.topk * s.moe_ffn) + (s.shared_ffn or 0)) / h if s.experts else 0.0
    q = gemm_input_bytes(s)
    if q != 2.0:  # the inputs of the QKV, fc1 and fc2 GEMMs kept quantized; the projection keeps a copy
        att, mlp = 11 + 2 * q, lambda r: 3 + q + (2 + q) * r
    else:
        att, mlp = 13.0, lambda r: 5 + 4 * r
    if s.hybrid_pattern:
        d_in = s.mamba_heads * s.mamba_head_dim if s.mamba_heads else 2 * h
        gn = s.mamba_groups * s.mamba_state
        nh = s.mamba_heads or d_in // s.mamba_head_dim
        mamba = 4 + 2 * (2 * d_in + 2 * gn + nh) / h + 2 * (d_in + 2 * gn) / h + 3 * 2 * d_in / h
        units = {"M": mamba, "*": att, "-": mlp(s.ffn / h), "E": mlp(moe_r)}
        return [units[c] for c in s.hybrid_pattern.partition("/")[0] if c in units]
    return [att + mlp(moe_r)] * s.kinds["moe"] + [att + mlp(s.ffn / h)] * s.kinds["mlp"]


# Bytes per element of a GEMM input Transformer Engine keeps for the backward pass of a quantized GEMM: it saves
# the quantized tensor, not the BF16 one (transformer_engine/pytorch/module/linear.py, _linear_forward: the
# input quantizer's output is ``saved_inputmat``, its row-wise data dropped; layernorm_linear.py likewise for
# ln_out). FP8 one byte; MXFP8 one byte plus an E8M0 scale per 32 elements; NVFP4 half a byte plus an FP8 scale
# per 16 elements. The attention core keeps its BF16 output as well, so the projection's FP8 copy is extra.
GEMM_INPUT_BYTES = {"bf16": 2.0, "fp8cs": 1.0, "mxfp8": 1.0 + 1 / 32, "nvfp4": 0.5 + 1 / 16}


def gemm_input_bytes(s) -> float:
    return GEMM_INPUT_BYTES.get(s.eff_class, 2.0)


def activations(s) -> tuple:
    """(activation bytes of the first stage, one micro-batch's share of it, differences, notes)."""
    differs, notes = [], []
    sbh = s.seq * s.mbs * s.hidden
    t, c = s.tp, s.cp
    units = _layer_units(s)
    units += [units[-1]] * s.mtp if units else []
    q = gemm_input_bytes(s)
    if q != 2.0:
        differs.append("quantized_inputs")
    if t > 1 and not s.sp:
        differs.append("no_sp")
        whole = 6 + 2 * q  # the norms' inputs, the dropout masks and the QKV and fc1 GEMMs' inputs
        per = [sbh * (whole + (u - whole) / t) / c for u in units]
    else:
        per = [sbh * u / (t * c) for u in units]
    layers_per_chunk = max(1, len(per) // (s.pp * s.vp))
    stage = sum(per) / s.pp  # the first stage holds 1/p of the layers (chunks of all virtual stages)
    transient = 0.0
    r = s.recompute
    if r["granularity"] == "full":
        differs.append("recompute")
        layer = sum(per) / max(1, len(per))
        inp = 2 * sbh / (c * (t if s.sp else 1))
        k = r["num_layers"] if isinstance(r["num_layers"], int) and r["num_layers"] > 0 else 1
        chunks = s.vp
        if r["method"] == "block":
            kept = max(0, layers_per_chunk - k) * chunks
            stage = kept * layer + min(k, layers_per_chunk) * chunks * inp
        else:
            stage = math.ceil(layers_per_chunk / k) * chunks * inp
        transient = min(k, layers_per_chunk) * layer  # one checkpointed chunk recomputed at a time
    if s.offload_layers:
        differs.append("offload")
        layer = sum(per) / max(1, len(per))
        stage = max(layer, stage - s.offload_layers * layer / s.pp)
    if s.fine_grained_offload:
        notes.append("fine_grained_activation_offloading is on: the offloaded modules are still counted as held")
    # Micro-batches in flight on the first stage (theoretical_memory_utils.py:393-414).
    if s.pp > 1 and s.vp > 1:
        in_flight = s.pp * (1 + (s.pp - 1) / (s.pp * s.vp))
    elif s.pp > 1:
        in_flight = min(s.microbatches, s.pp)
    else:
        in_flight = 1
    total = stage * in_flight + transient
    total += (8 * s.seq * s.mbs * s.pp + sbh * s.pp) / (t * c)  # embedding input and its dropout
    if s.pp == 1:  # inputs to the output layer and the loss
        total += sbh * 4 * (1 + memory_vocab(s) / s.hidden) / (t * c)
    return total, stage, differs, notes


def estimate_memory(s) -> Memory:
    w, dense, routed, differs = weights_and_optimizer(s)
    a, per_mb, adiff, notes = activations(s)
    differs += adiff
    sbh = s.seq * s.mbs * s.hidden
    ub = USERBUFFER_METHODS * sbh / s.cp * 2 if s.tp_overlap and s.tp > 1 else 0.0
    if ub:
        notes.append(f"tp_comm_overlap: Transformer Engine's userbuffers, ~{USERBUFFER_METHODS} (seq x mbs / CP) x hidden "
                     "BF16 buffers (an assumption)")
    pg = 0.0
    if s.fsdp:
        per_layer = max((d for d, _ in layer_params(s)), default=0.0) / s.tp
        pg = per_layer * (2 * 2 + 4)  # the unit being used and the one prefetched (BF16), its FP32 gradient
        notes.append("Megatron-FSDP: the gathered layer in use and the prefetched one (BF16) and one layer's FP32 "
                     "gradient before its reduce-scatter (an assumption)")
    ep = per_mb if s.ep_overlap and s.ep > 1 and s.kinds["moe"] else 0.0
    if ep:
        notes.append("overlap_moe_expert_parallel_comm: the combined 1F1B schedule holds one more micro-batch's "
                     "activations (an assumption)")
    notes.append("DP buckets are views of the gradient buffer counted above (megatron/core/distributed/"
                 "param_and_grad_buffer.py:1176-1188): nothing added")
    notes.append("not counted: the CUDA caching allocator's fragmentation, NCCL and cuBLAS workspaces, CUDA graphs")
    gpu = G.GPUS.get(s.gpu, {})
    cap = gpu.get("memory_gib")
    fields = {
        "weights_and_optimizer_bytes": w, "activation_bytes": a, "userbuffers_bytes": ub, "dp_buckets_bytes": 0.0,
        "param_gather_buffers_bytes": pg, "ep_overlap_bytes": ep,
        "capacity_bytes": cap * 2**30 if cap else None,
        "parameters_on_rank": dense + routed,
    }
    return Memory(fields, notes, differs, s)


def gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"
