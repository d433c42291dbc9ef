"""TP1xx — tensor-parallel communication overlap (userbuffers)."""

from __future__ import annotations

from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe, set_, unsafe

_REQUEST = "comm_overlap.tp_comm_overlap"


@rule("TP101", "tp-overlap-off-tp-size", "warning", "TP overlap requested with TP < 2: Bridge switches it off", fix="keeps")
def tp_too_small(view):
    """
    ## What it does
    Flags `comm_overlap.tp_comm_overlap: true` when `model.tensor_model_parallel_size` is below 2.

    ## Why it matters
    Bridge's gate (comm_overlap.py, `_get_model_comm_overlap_cfgs`) logs one warning,
    "Disabling tensor parallel communication overlap due to TP size < 2.", and sets
    `model.tp_comm_overlap=False`. A preset in `tp_comm_overlap_cfg` is then copied but unused. Several
    of Bridge's own perf recipes ship TP=1 with TP overlap requested.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 1}
    comm_overlap: {tp_comm_overlap: true}
    ```

    ## Fix
    Sets `comm_overlap.tp_comm_overlap: false`; a `tp_comm_overlap_cfg` stays (Bridge copies it onto the
    model either way; UB608 notes it as unused). **Safe — every effective value stays**: TP overlap can never apply with TP < 2, so the run does not change; the file stops claiming
    an overlap it does not get. (Raising TP would change the model's sharding — that is your call.)
    """
    if view.tp_gate == "tp":
        # Only the switch: a tp_comm_overlap_cfg stays (Bridge copies it onto the model either way, and the
        # recipe may keep it for a TP >= 2 variant); UB608 notes it as unused.
        edits = [set_(_REQUEST, False)]
        yield finding(
            view,
            "TP101",
            "warning",
            f"TP overlap requested but tensor_model_parallel_size={view.tp} < 2: Bridge silently disables it",
            _REQUEST,
            safe("set comm_overlap.tp_comm_overlap: false (TP overlap needs TP >= 2)", *edits),
        )


@rule("TP102", "tp-overlap-off-sequence-parallel", "warning", "TP overlap requested without sequence parallelism: Bridge switches it off", fix="keeps/overlap")
def tp_needs_sp(view):
    """
    ## What it does
    Flags `comm_overlap.tp_comm_overlap: true` with TP ≥ 2 and `model.sequence_parallel` false.

    ## Why it matters
    Userbuffers overlap only the all-gather / reduce-scatter that sequence parallelism introduces. Bridge
    logs "Disabling tensor parallel communication overlap due to sequence_parallel=False." and turns it
    off (comm_overlap.py); Megatron-LM's own launcher asserts instead.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: false}
    comm_overlap: {tp_comm_overlap: true}
    ```

    ## Fix
    Sets `model.sequence_parallel: true`. **Safe (b) — makes the requested overlap take effect**: it is what TP overlap requires, keeps the request,
    and sequence parallelism does not change the model's numerics (it shards LayerNorm/dropout
    activations across the TP group and lowers activation memory).

    Where you wrote `sequence_parallel: false` yourself (an override file, a dotlist, a Python assignment)
    and the TP overlap request is the recipe's or the base's, your false is your intent (sequence
    parallelism changes the activations you see while debugging): the fix sets
    `comm_overlap.tp_comm_overlap: false` instead. **Safe — every effective value stays**: Bridge switches
    the overlap off anyway; the run stops requesting what it does not get. Where you wrote both, the
    two are yours to reconcile: setting `sequence_parallel: true` is offered as unsafe, naming your line.
    """
    if view.tp_gate == "sp":
        on_sp = safe("set model.sequence_parallel: true (TP overlap needs sequence parallelism)", set_("model.sequence_parallel", True))
        if view.written("model.sequence_parallel") is not None and view.written(_REQUEST) is None:
            on_sp = safe("set comm_overlap.tp_comm_overlap: false (your model.sequence_parallel: false turns TP overlap off)",
                         set_(_REQUEST, False))
        yield finding(
            view,
            "TP102",
            "warning",
            "TP overlap requested but model.sequence_parallel is false: Bridge silently disables TP overlap",
            "model.sequence_parallel" if view.cfg.has(("model", "sequence_parallel")) else _REQUEST,
            on_sp,
        )


@rule("TP103", "tp-overlap-off-no-te", "warning", "TP overlap requested but Transformer Engine is absent on the target")
def tp_needs_te(view):
    """
    ## What it does
    Flags `comm_overlap.tp_comm_overlap: true` when the target has no Transformer Engine (`--no-te`, a
    `[tool.overlap]` setting, or `--detect` on a machine without it).

    ## Why it matters
    Bridge logs "Disabling tensor parallel communication overlap due to TE not detected." and runs
    without overlap. The target profile decides this; by default Transformer Engine is assumed present.

    ## Example
    Checked with `--no-te`:
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    ```

    ## Fix
    None offered: the file is not what is wrong, the target is. Install Transformer Engine on the target,
    or set `comm_overlap.tp_comm_overlap: false` yourself if this machine is really where the run goes.
    """
    if view.tp_gate == "te":
        yield finding(
            view,
            "TP103",
            "warning",
            "TP overlap requested but Transformer Engine is absent on the target: Bridge silently disables it",
            _REQUEST,
        )


@rule("TP104", "tp-overlap-on-model-only", "warning", "model.tp_comm_overlap: true without comm_overlap bypasses Bridge's gate")
def tp_on_model_without_section(view):
    """
    ## What it does
    Flags `model.tp_comm_overlap: true` in a config without a `comm_overlap` section.

    ## Why it matters
    Without `comm_overlap` none of Bridge's checks run; `initialize` sets up userbuffers whenever the model
    flag is true (megatron/bridge/training/initialize.py) and fails at start-up when Transformer Engine is
    missing. With TP < 2 or sequence parallelism off the run is misconfigured (Megatron-LM asserts
    sequence parallelism for TP overlap). Severity is error in those cases.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: false, tp_comm_overlap: true}
    # no comm_overlap section
    ```

    ## Fix
    None offered: move the request to `comm_overlap.tp_comm_overlap: true` yourself, where Bridge validates
    it. Not automatic because adding a `comm_overlap` section also switches on Bridge's p2p and
    data-parallel defaults (see CFG001), which changes more of the run than TP overlap.
    """
    if view.comm_overlap_present:
        return
    if view.get_final("model", "tp_comm_overlap") is True:
        bad = view.tp < 2 or not view.get_final("model", "sequence_parallel")
        extra = " and it cannot work here (needs TP >= 2 and sequence_parallel)" if bad else ""
        yield finding(
            view,
            "TP104",
            "error" if bad else "warning",
            "model.tp_comm_overlap: true without a comm_overlap section bypasses Bridge's TP/SP/TE checks" + extra,
            "model.tp_comm_overlap",
        )


@rule("TP105", "sequence-parallel-dropped", "info", "sequence_parallel with TP ≤ 1 is dropped silently")
def sp_dropped(view):
    """
    ## What it does
    Notes `model.sequence_parallel: true` with `tensor_model_parallel_size` ≤ 1.

    ## Why it matters
    Bridge's `TransformerConfig.finalize` sets `sequence_parallel=False` when TP ≤ 1 without a message
    (megatron/bridge/models/transformer_config.py), before Megatron-Core would reject the combination.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 1, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    None offered: Bridge already drops the flag, so the run is not affected. Remove the flag, or raise TP
    if sequence parallelism was the point (that changes the model's sharding).
    """
    if view.cfg.get(("model", "sequence_parallel")) is True and view.tp <= 1:
        yield finding(
            view,
            "TP105",
            "info",
            f"sequence_parallel: true with tensor_model_parallel_size={view.tp}: Bridge turns it off at model finalize",
            "model.sequence_parallel",
        )


# ----------------------------------------------------------------------------------------------
# Launch-time behaviour of Megatron-Core
# ----------------------------------------------------------------------------------------------


def _mla_buffer_name(view):
    """The first unsupported userbuffer name an MLA layer builds (megatron-core 0.19.2,
    transformer/multi_latent_attention.py:507-613 unfused, 1281-1326 fused), or None if every checked
    linear has a supported name."""
    if view.get_final("model", "mla_down_proj_fusion") is True:
        # qkv_down_proj is a LayerNorm-fused linear, which Megatron-Core does not check; the up-projections
        # are plain (checked) linears only without qk_layernorm.
        return None if view.get_final("model", "qk_layernorm") is True else "q_up_proj"
    # MLATransformerConfig's q_lora_rank default is 512 (transformer_config.py, MLATransformerConfig).
    return "q_proj" if view.get_final("model", "q_lora_rank", 512) is None else "q_down_proj"


@rule("TP106", "tp-overlap-off-mla-mtp", "warning", "MLA / MTP models: Megatron-Core turns TP overlap off while building", fix="unsafe")
def tp_overlap_off_mla_mtp(view):
    """
    ## What it does
    Flags effective TP overlap (`model.tp_comm_overlap` after comm_overlap) on a model with
    multi-latent attention (`multi_latent_attention: true`) or multi-token prediction (`mtp_num_layers > 0`).

    ## Why it matters
    When a Transformer Engine linear is built with a userbuffer name other than qkv / proj / fc1 / fc2,
    Megatron-Core sets `tp_comm_overlap = False` **on the shared model config** and warns
    (megatron-core 0.19.2, `megatron/core/extensions/transformer_engine.py:922-932`; the missing space is in
    the source):
    `The user buffer name q_down_proj is not supported inTransformer Engine. Disabling TP communication overlap for this layer.`
    Every layer built afterwards gets no userbuffers, while the buffers themselves were already allocated
    at initialisation (megatron/bridge/training/initialize.py:236).
    - MLA: the first attention's `q_proj` (no `q_lora_rank`) or `q_down_proj` flips it, so all MLP
      projections and all later layers run without TP overlap — the whole model, bar one projection.
      (Fused MLA with `qk_layernorm` builds only LayerNorm-fused linears, which are not checked.)
    - MTP: the MTP block's `mtp_eh_proj` flips it, but the decoder is built before MTP
      (megatron/core/models/gpt/gpt_model.py:227 vs 237), so only the MTP layer loses overlap: reported
      as info.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true, multi_latent_attention: true, q_lora_rank: 1536}
    comm_overlap: {tp_comm_overlap: true}
    ```

    ## Fix
    For MLA, sets `tp_comm_overlap: false` (in comm_overlap, or on the model without comm_overlap).
    **Unsafe**: it frees the userbuffers and drops the one projection that still overlapped.
    """
    if view.get_final("model", "tp_comm_overlap") is not True:
        return
    key = "comm_overlap.tp_comm_overlap" if view.comm_overlap_present else "model.tp_comm_overlap"
    mtp = view.get_final("model", "mtp_num_layers")
    if view.get_final("model", "multi_latent_attention") is True:
        name = _mla_buffer_name(view)
        if name is not None:
            yield finding(
                view,
                "TP106",
                "warning",
                f"TP overlap on a multi-latent-attention model: building the first attention, Megatron-Core warns "
                f"\"The user buffer name {name} is not supported inTransformer Engine. Disabling TP communication "
                "overlap for this layer.\" and turns TP overlap off for every layer built after it",
                key,
                _unsafe_off(key),
            )
            return
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        yield finding(
            view,
            "TP106",
            "info",
            f"TP overlap with mtp_num_layers={mtp}: building the MTP block, Megatron-Core warns \"The user buffer name "
            "mtp_eh_proj is not supported inTransformer Engine. Disabling TP communication overlap for this layer.\"; "
            "decoder layers are built first and keep TP overlap, the MTP layer loses it",
            key,
        )


def _unsafe_off(key: str):
    return unsafe(f"set {key}: false (Megatron-Core turns it off for almost every layer)", set_(key, False))
