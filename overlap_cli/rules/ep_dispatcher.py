"""EP711-EP712 — the MoE token dispatcher's own launch checks: DeepEP / HybridEP SM counts that
disagree, and a flex dispatcher backend the target GPU does not support.

Sources: megatron-core 0.19.2 ``megatron/core/transformer/transformer_config.py`` and megatron-bridge
0.6.2 ``megatron/bridge/training/flex_dispatcher_backend.py``. EP701-EP703 are in ``ep``, EP704-EP710
in ``ep_wgrad``.
"""

from __future__ import annotations

from overlap_cli.rules.common import finding, fmt, model_key, model_value, safe, set_
from overlap_cli.rules.registry import rule


_SM_KNOBS = ("moe_deepep_num_sms", "moe_hybridep_num_sms")


@rule("EP711", "conflicting-dispatcher-sm-knobs", "error", "Deprecated DeepEP and HybridEP SM counts that disagree", fix="crash")
def conflicting_sm_knobs(view):
    """
    ## What it does
    Flags `model.moe_deepep_num_sms` and `model.moe_hybridep_num_sms` both set, to different values, while
    `model.moe_flex_dispatcher_num_sms` is null.

    ## Why it matters
    Megatron-Core 0.19.2 folded the two deprecated per-backend knobs into `moe_flex_dispatcher_num_sms`,
    the number of SMs the flex token dispatcher's all-to-all dispatch/combine kernels take
    (`transformer_config.py:1616-1635`, in `__post_init__`, which Bridge runs at model finalize inside
    `validate()`). When the unified knob is null it takes the deprecated value, and two different ones
    stop the launch, on every rank, whatever the dispatcher:
    `ValueError: Conflicting deprecated SM-count knobs {'moe_deepep_num_sms': 20, 'moe_hybridep_num_sms': 16};
    set a single moe_flex_dispatcher_num_sms instead.` Bridge's own recipe
    `qwen3_235b_a22b_pretrain_128gpu_b200_fp8mx_deepep_dev_config` fails this way. Equal values, or an
    explicit `moe_flex_dispatcher_num_sms`, pass (a warning that the knobs are deprecated).

    ## Example
    ```yaml
    model: {moe_token_dispatcher_type: flex, moe_flex_dispatcher_backend: deepep,
            moe_deepep_num_sms: 20, moe_hybridep_num_sms: 16}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    Sets `model.moe_flex_dispatcher_num_sms` to the deprecated value of the backend in use
    (`moe_flex_dispatcher_backend`, default `deepep`; `hybridep` reads `moe_hybridep_num_sms`) — the
    migration Bridge itself applies to old checkpoints (`training/model_load_save.py:226-244`).
    **Safe (a) — removes a launch crash**: the config cannot start, and the dispatcher in use keeps the SM
    count the file gave it. With the `ncclep` backend neither knob is the backend's own: no fix is offered.
    """
    from overlap_cli.rules.ep import ep_release

    if ("model", "moe_flex_dispatcher_num_sms") in ep_release(view).ABSENT_FIELDS:
        return  # a Megatron-Core before the unified knob (0.17, 0.18): each backend reads its own, no check
    values = {name: model_value(view, name) for name in _SM_KNOBS}
    given = {name: v for name, v in values.items() if v is not None}
    if len(given) < 2 or len(set(given.values())) < 2 or model_value(view, "moe_flex_dispatcher_num_sms") is not None:
        return
    backend = model_value(view, "moe_flex_dispatcher_backend")
    own = {"deepep": "moe_deepep_num_sms", "hybridep": "moe_hybridep_num_sms"}.get(backend)
    fix = None
    if own is not None:
        fix = safe(
            f"set model.moe_flex_dispatcher_num_sms: {given[own]} (the {backend} backend's own SM count)",
            set_("model.moe_flex_dispatcher_num_sms", given[own]),
        )
    shown = "{" + ", ".join(f"'{k}': {v}" for k, v in given.items()) + "}"
    yield finding(
        view, "EP711", "error",
        f"moe_deepep_num_sms={fmt(given['moe_deepep_num_sms'])} and moe_hybridep_num_sms={fmt(given['moe_hybridep_num_sms'])} "
        f"disagree with moe_flex_dispatcher_num_sms null: Megatron-Core raises \"Conflicting deprecated SM-count knobs "
        f"{shown}; set a single moe_flex_dispatcher_num_sms instead.\" at model finalize",
        model_key(view, "moe_hybridep_num_sms", "model.moe_deepep_num_sms"),
        fix,
    )


# The device name torch reports for each --gpu (torch.cuda.get_device_properties(0).name starts so).
_DEVICE_NAMES = {
    "a100": "NVIDIA A100", "h100": "NVIDIA H100", "h200": "NVIDIA H200", "b200": "NVIDIA B200",
    "b300": "NVIDIA B300", "gb200": "NVIDIA GB200", "gb300": "NVIDIA GB300",
}


def _flex_backend_refusal(backend: str, major: int, name: str):
    """Bridge's validate_flex_dispatcher_backend (megatron/bridge/training/flex_dispatcher_backend.py:101-125)."""
    if backend == "deepep" and not (major in (8, 9) or name.startswith(("NVIDIA B200", "NVIDIA B300"))):
        return f"DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs. Current GPU: {name}"
    if backend == "hybridep" and major not in (8, 9, 10):
        return "HybridEP is supported for GB200, GB300 with NVL72 and for Ampere, Hopper, B200 and B300 GPUs"
    if backend == "ncclep" and major not in (9, 10):
        return f"NCCL EP is supported for Hopper and Blackwell GPUs. Current GPU: {name}"
    return None


@rule("EP712", "flex-dispatcher-backend-gpu", "error", "MoE flex dispatcher backend not supported on the target GPU")
def flex_backend_gpu(view):
    """
    ## What it does
    Checks the MoE flex token dispatcher's communication backend (`moe_token_dispatcher_type: flex` with
    `moe_flex_dispatcher_backend`, or the deprecated `moe_enable_deepep`) against the target GPU, as
    Bridge's `validate()` does (megatron-bridge 0.6.2, `training/config.py:1511-1515` →
    `training/flex_dispatcher_backend.py:101-125`, which reads `torch.cuda.get_device_properties(0)`):
    - `deepep` needs compute capability 8.x / 9.x or a device named `NVIDIA B200…` / `NVIDIA B300…` —
      so not GB200 / GB300: `DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs.
      Current GPU: {name}`;
    - `hybridep` needs compute capability 8, 9 or 10: `HybridEP is supported for GB200, GB300 with NVL72
      and for Ampere, Hopper, B200 and B300 GPUs`;
    - `ncclep` needs compute capability 9 or 10: `NCCL EP is supported for Hopper and Blackwell GPUs.
      Current GPU: {name}`.

    Needs the GPU (`--gpu`, `[tool.overlap] gpu`, `--detect`); quiet when it, or its compute capability
    (vr200, r100), is not known.

    ## Why it matters
    ValueError in `validate()`, on every rank, before the model is built. A recipe function falls back
    to the all-to-all dispatcher with a warning on such GPUs (`apply_flex_dispatcher_backend`), but a
    config file that names the backend goes straight to this check.

    ## Example
    Checked with `--gpu gb200`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: flex,
            moe_flex_dispatcher_backend: deepep}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    None offered: which dispatcher backend to use on this GPU (hybridep on GB200/GB300, or the all-to-all
    dispatcher Bridge's recipes fall back to) is a performance choice.
    """
    model = view.final.get("model", {})
    if model.get("moe_enable_deepep") is True:
        backend = "deepep"  # Megatron-Core turns the deprecated switch into flex + deepep at model finalize
    elif model_value(view, "moe_token_dispatcher_type") == "flex":
        backend = model_value(view, "moe_flex_dispatcher_backend")
    else:
        return
    cc = view.target.get("compute_capability")
    gpu = view.target.get("gpu")
    name = view.target.get("gpu_name") or _DEVICE_NAMES.get(gpu)
    if not cc or not name:
        return
    try:
        major = int(str(cc).split(".")[0])
    except ValueError:
        return
    refusal = _flex_backend_refusal(backend, major, name)
    if refusal:
        yield finding(
            view, "EP712", "error",
            f"moe_flex_dispatcher_backend {backend} on {gpu or name} (compute capability {cc}): Bridge raises \"{refusal}\" in validate()",
            model_key(view, "moe_flex_dispatcher_backend", model_key(view, "moe_token_dispatcher_type", "model.moe_enable_deepep")),
        )
