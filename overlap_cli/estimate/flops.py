"""FLOPs and parameters of a Shape, counted per token (2 FLOPs per multiply-add, GEMMs and attention only).

The counts follow the structure Megatron-Bridge's own MODEL_TFLOP/s counter uses
(megatron/bridge/training/utils/flop_utils.py, ``num_floating_point_operations``): training = 3 x forward
(forward, data gradient, weight gradient), causal attention over an average context of half the sequence,
GQA key/value projections, MLA low-rank projections, routed experts times top-k plus shared experts,
Mamba in/out projections and scan, and the logits over the padded vocabulary. Recomputation adds
forward work that Bridge's counter leaves out (it counts model FLOPs, not hardware FLOPs).
"""

from __future__ import annotations


def _mlp(h: int, f: int, gated: bool) -> float:
    return 2.0 * h * f * (3 if gated else 2)


def _context(shape, swa: bool) -> float:
    """Average causal attention context per query token."""
    s = shape.seq
    if swa and shape.window and shape.window < s:
        w = shape.window
        return w - w * (w - 1) / (2 * s)
    return s / 2


def attention_parts(shape) -> tuple:
    """(projection FLOPs, core FLOPs at full context, core FLOPs with sliding window) per token, forward."""
    h = shape.hidden
    if shape.mla:
        qk = shape.qk_dim + shape.rope_dim
        if shape.q_lora:
            q = 2.0 * (h * shape.q_lora + shape.q_lora * shape.heads * qk)
        else:
            q = 2.0 * h * shape.heads * qk
        kv = 2.0 * (h * (shape.kv_lora + shape.rope_dim) + shape.kv_lora * shape.heads * (shape.qk_dim + shape.v_dim))
        o = 2.0 * shape.heads * shape.v_dim * h
        per_ctx = 2.0 * shape.heads * (qk + shape.v_dim)
        return q + kv + o, per_ctx * _context(shape, False), per_ctx * _context(shape, True)
    qd = shape.heads * shape.kv_channels
    kvd = shape.groups * shape.kv_channels
    proj = 2.0 * h * (qd + 2 * kvd + (qd if shape.gate else 0)) + 2.0 * qd * h
    per_ctx = 4.0 * qd
    return proj, per_ctx * _context(shape, False), per_ctx * _context(shape, True)


def mamba_flops(shape) -> float:
    h = shape.hidden
    d_in = shape.mamba_heads * shape.mamba_head_dim if shape.mamba_heads else 2 * h
    nheads = shape.mamba_heads or d_in // shape.mamba_head_dim
    n, g = shape.mamba_state, shape.mamba_groups
    return 2.0 * h * (2 * d_in + 2 * g * n + nheads) + 7.0 * d_in * n + 2.0 * d_in * h


def moe_parts(shape) -> tuple:
    """(routed expert FLOPs, shared expert + router FLOPs) per token, forward."""
    h = shape.hidden
    if shape.latent:
        routed = shape.topk * _mlp(shape.latent, shape.moe_ffn, shape.gated) + 4.0 * h * shape.latent
    else:
        routed = shape.topk * _mlp(h, shape.moe_ffn, shape.gated)
    shared = _mlp(h, shape.shared_ffn, shape.gated) if shape.shared_ffn else 0.0
    return routed, shared + 2.0 * h * shape.experts


def layer_flops(shape) -> dict:
    """Forward FLOPs per token of the whole model by part: attn_proj, attn_core, mlp, moe_routed,
    moe_shared, mamba, logits (MTP depths included as extra layers and logits)."""
    k = shape.kinds
    proj, core_full, core_swa = attention_parts(shape)
    full_layers = k["attn"] - shape.swa_layers
    routed, shared = moe_parts(shape) if k["moe"] else (0.0, 0.0)
    mlp = _mlp(shape.hidden, shape.ffn, shape.gated)
    out = {
        "attn_proj": proj * k["attn"],
        "attn_core": core_full * full_layers + core_swa * shape.swa_layers,
        "mlp": mlp * k["mlp"],
        "moe_routed": routed * k["moe"],
        "moe_shared": shared * k["moe"],
        "mamba": mamba_flops(shape) * k["mamba"] if k["mamba"] else 0.0,
        "logits": 2.0 * shape.hidden * shape.vocab * (1 + shape.mtp),
    }
    if shape.mtp:
        # Each MTP depth: one more transformer layer (the last layer's kind) and an h x 2h projection.
        last_ffn = routed + shared if k["moe"] else mlp
        out["attn_proj"] += proj * shape.mtp
        out["attn_core"] += core_full * shape.mtp
        out["moe_routed" if k["moe"] else "mlp"] += (routed if k["moe"] else last_ffn) * shape.mtp
        if k["moe"]:
            out["moe_shared"] += shared * shape.mtp
        out["mlp"] += 4.0 * shape.hidden * shape.hidden * shape.mtp
    return out


def recompute_extra(shape, parts: dict) -> float:
    """Forward FLOPs per token recomputed in the backward pass (Megatron-Core's recompute settings)."""
    r = shape.recompute
    if r["granularity"] == "full":
        body = sum(v for key, v in parts.items() if key != "logits")
        n = r["num_layers"]
        frac = 1.0
        if r["method"] == "block" and isinstance(n, int):
            frac = min(1.0, n * shape.pp * shape.vp / max(1, shape.layers))
        return body * frac
    if r["granularity"] == "selective":
        mods = set(r["modules"] or ["core_attn"])
        extra = 0.0
        if "core_attn" in mods:
            extra += parts["attn_core"]
        if "mla_up_proj" in mods and shape.mla:
            extra += 0.5 * parts["attn_proj"]  # the up projections: about half of MLA's projection work
        if "mlp" in mods:
            extra += parts["mlp"]
        if "moe" in mods:
            extra += parts["moe_routed"] + parts["moe_shared"]
        return extra
    return 0.0


def step_flops(shape) -> tuple:
    """(model FLOPs, hardware FLOPs) of one optimizer step: model = 3 x forward (2 x forward with PEFT,
    whose frozen weights get no weight gradient) as Bridge counts; hardware adds recomputation."""
    parts = layer_flops(shape)
    fwd = sum(parts.values())
    tokens = shape.gbs * shape.seq
    factor = 2.0 if shape.peft else 3.0
    model = factor * fwd * tokens
    return model, model + recompute_extra(shape, parts) * tokens


def parameters(shape) -> tuple:
    """(dense parameters, expert parameters) of the model (GEMM weights and embeddings)."""
    k = shape.kinds
    proj, _, _ = attention_parts(shape)
    h = shape.hidden
    dense = proj / 2 * (k["attn"] + shape.mtp) + _mlp(h, shape.ffn, shape.gated) / 2 * k["mlp"]
    if k["mamba"]:
        dense += mamba_flops(shape) / 2 * k["mamba"]  # the projections dominate; the scan has no weights
    expert = 0.0
    if k["moe"]:
        per_expert = _mlp(shape.latent or h, shape.moe_ffn, shape.gated) / 2
        expert = per_expert * shape.experts * (k["moe"] + shape.mtp)
        dense += (_mlp(h, shape.shared_ffn, shape.gated) / 2 if shape.shared_ffn else 0) * k["moe"] + h * shape.experts * k["moe"]
    dense += shape.vocab * h * (1 if shape.tied else 2)
    return dense, expert
