"""The RL family: NeMo-RL configs whose policy trains with the Megatron backend
(frameworks/nemo_rl). Each error is an assert or raise of NeMo-RL's own setup, or of Megatron-Core on the
values NeMo-RL hands it, that stops the launch; the warning (RL303) is a setting that silently does not take
effect. Each docstring cites the line. RL0xx the policy and its cluster, RL1xx tensor parallelism, RL3xx data
parallelism and the optimizer, RL4xx precision, RL8xx context parallelism.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.results import Finding
from overlap_cli.rules.registry import rule

RL = ("nemo-rl",)
MEG = ("policy", "megatron_cfg")


def _finding(view, code: str, message: str, path: tuple, *also: tuple) -> Finding:
    """At ``path``'s place, or at the first of ``also`` written in the checked file when ``path`` is not."""
    line, column, origin = view.place(path)
    for other in also if line is None else ():
        where = view.place(other)
        if where[0] is not None:
            path, (line, column, origin) = other, where
            break
    return Finding(code=code, severity="error", message=message, key=".".join(path), line=line, column=column,
                   origin=origin)


def _int(value) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@rule("RL001", "both-policy-backends", "error", "Both the Megatron and the DTensor policy are enabled", frameworks=RL)
def both_policy_backends(view):
    """
    ## What it does
    Flags a NeMo-RL config whose policy enables the Megatron backend and the DTensor backend at once.

    ## Why it matters
    `Policy.__init__` refuses it before any worker starts (nemo_rl/models/policy/lm_policy.py:121-125):
    `Configure either Megatron (policy.megatron_cfg.enabled=true) or DTensor
    (policy.dtensor_cfg.enabled=true), not both.` A recipe that inherits a DTensor config and turns
    Megatron on has to turn DTensor off too.

    ## Example
    ```yaml
    grpo: {}
    policy:
      dtensor_cfg:
        enabled: true
      megatron_cfg:
        enabled: true
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: set `policy.dtensor_cfg.enabled: false` to train with Megatron.
    """
    if view.setting(("policy", "dtensor_cfg", "enabled")) is True:
        yield _finding(view, "RL001", "policy.megatron_cfg.enabled and policy.dtensor_cfg.enabled are both true: "
                                      "NeMo-RL stops with 'Configure either Megatron ... or DTensor ..., not both.' "
                                      "(lm_policy.py:121)", ("policy", "dtensor_cfg", "enabled"))


@rule("RL002", "world-size-does-not-hold-the-model", "error",
      "The policy's GPUs are not a multiple of TP × PP × CP", frameworks=RL)
def world_size_does_not_hold_the_model(view):
    """
    ## What it does
    Flags a policy whose world size (from `cluster`, as the algorithm places the policy, or
    `--world-size`) is smaller than TP × PP × CP or not a multiple of it.

    ## Why it matters
    `Policy.__init__` checks the cluster against the parallel sizes before it starts the workers
    (nemo_rl/models/policy/lm_policy.py:225-240) and raises `World size (8) must be divisible by
    PP * CP * TP (3)` (or `... is insufficient for the parallelism configuration`): the data-parallel size
    must be a whole number.

    ## Example
    ```yaml
    sft: {}
    policy:
      megatron_cfg:
        enabled: true
        tensor_model_parallel_size: 3
        pipeline_model_parallel_size: 1
        context_parallel_size: 1
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: choose TP, PP and CP whose product divides the policy's GPUs.
    """
    if view.dp_error:
        yield _finding(view, "RL002", view.dp_error, MEG + ("tensor_model_parallel_size",))


@rule("RL101", "inference-optimized-without-sp", "error",
      "transformer_impl inference_optimized with TP > 1 needs sequence parallelism", frameworks=RL)
def inference_optimized_without_sp(view):
    """
    ## What it does
    Flags `policy.megatron_cfg.transformer_impl: inference_optimized` with TP > 1 and
    `sequence_parallel: false`.

    ## Why it matters
    `validate_and_set_config` raises before the model is built (nemo_rl/models/megatron/setup.py:336-343):
    `transformer_impl=inference_optimized requires sequence parallelism with TP>1: set
    policy.megatron_cfg.sequence_parallel=true.`

    ## Example
    ```yaml
    grpo: {}
    policy:
      megatron_cfg:
        enabled: true
        transformer_impl: inference_optimized
        tensor_model_parallel_size: 2
        sequence_parallel: false
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: set `sequence_parallel: true`.
    """
    tp = _int(view.values.get("model.tensor_model_parallel_size"))
    if (view.setting(MEG + ("transformer_impl",)) == "inference_optimized" and tp is not None and tp > 1
            and view.values.get("model.sequence_parallel") is False):
        yield _finding(view, "RL101", "transformer_impl inference_optimized with TP > 1 and sequence_parallel false: "
                                      "NeMo-RL raises 'transformer_impl=inference_optimized requires sequence "
                                      "parallelism with TP>1' (setup.py:340)", MEG + ("sequence_parallel",))


@rule("RL301", "fused-logprobs-with-param-gather-overlap", "error",
      "use_fused_linear_logprobs with overlap_param_gather", frameworks=RL)
def fused_logprobs_with_param_gather_overlap(view):
    """
    ## What it does
    Flags `policy.megatron_cfg.use_fused_linear_logprobs: true` together with
    `distributed_data_parallel_config.overlap_param_gather: true`.

    ## Why it matters
    The fused forward reads `output_layer.weight` without calling the layer, so the distributed
    optimizer's param-gather prefetch chain is left with a stale handle; `_create_megatron_config`
    asserts the two apart (nemo_rl/models/megatron/setup.py:1396-1403): `use_fused_linear_logprobs is
    incompatible with overlap_param_gather`.

    ## Example
    ```yaml
    dpo: {}
    policy:
      megatron_cfg:
        enabled: true
        use_fused_linear_logprobs: true
        distributed_data_parallel_config:
          overlap_param_gather: true
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: set `overlap_param_gather: false` (as NeMo-RL's fused-logprobs recipes do).
    """
    if view.setting(MEG + ("use_fused_linear_logprobs",)) is True and view.values.get("ddp.overlap_param_gather") is True:
        yield _finding(view, "RL301", "use_fused_linear_logprobs with overlap_param_gather: NeMo-RL asserts "
                                      "'use_fused_linear_logprobs is incompatible with overlap_param_gather' "
                                      "(setup.py:1397)", MEG + ("distributed_data_parallel_config", "overlap_param_gather"))


@rule("RL302", "cpu-offload-without-distributed-optimizer", "error",
      "optimizer_cpu_offload without the distributed optimizer", frameworks=RL)
def cpu_offload_without_distributed_optimizer(view):
    """
    ## What it does
    Flags `policy.megatron_cfg.optimizer.optimizer_cpu_offload: true` with
    `use_distributed_optimizer: false`.

    ## Why it matters
    `_validate_optimizer_config` raises while the model config is set up
    (nemo_rl/models/megatron/setup.py:1222-1225): `optimizer_cpu_offload=True requires
    use_distributed_optimizer=True`.

    ## Example
    ```yaml
    sft: {}
    policy:
      megatron_cfg:
        enabled: true
        optimizer:
          optimizer_cpu_offload: true
          use_distributed_optimizer: false
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: turn the distributed optimizer on, or the offload off.
    """
    if view.values.get("optimizer.optimizer_cpu_offload") is True and view.values.get("optimizer.use_distributed_optimizer") is False:
        yield _finding(view, "RL302", "optimizer_cpu_offload without the distributed optimizer: NeMo-RL raises "
                                      "'optimizer_cpu_offload=True requires use_distributed_optimizer=True' "
                                      "(setup.py:1224)", MEG + ("optimizer", "optimizer_cpu_offload"))


# The keys of distributed_data_parallel_config _create_megatron_config passes (setup.py:1380, 1424-1441).
DDP_KEYS_PASSED = ("grad_reduce_in_fp32", "overlap_grad_reduce", "overlap_param_gather", "data_parallel_sharding_strategy")
# A key NeMo-RL declares (MegatronDDPConfig, nemo_rl/models/policy/__init__.py:286) for the DDP field it would
# stand for, but never reads.
DDP_KEY_FIELD = {"use_custom_fsdp": "use_megatron_fsdp"}


@rule("RL303", "ddp-key-not-passed", "warning",
      "A distributed_data_parallel_config key NeMo-RL does not pass to Megatron-Core", frameworks=RL)
def ddp_key_not_passed(view):
    """
    ## What it does
    Flags a key under `policy.megatron_cfg.distributed_data_parallel_config` that NeMo-RL does not hand to
    Megatron-Core, when the value written differs from the one Megatron-Core gets: `bucket_size`,
    `align_param_gather`, `average_in_collective: true`, `use_custom_fsdp: true`, ...

    ## Why it matters
    `_create_megatron_config` builds `DistributedDataParallelConfig` from four keys of that section
    (`grad_reduce_in_fp32`, `overlap_grad_reduce`, `overlap_param_gather`, `data_parallel_sharding_strategy`,
    nemo_rl/models/megatron/setup.py:1380, 1421-1441) and fixes `average_in_collective=False` and
    `check_for_nan_in_grad=True`; every other key of the section is read by nothing
    (`use_custom_fsdp` included: Megatron-FSDP stays off). The setting asked for silently does not take
    effect; Megatron-Core's default (or NeMo-RL's fixed value) runs instead.

    ## Example
    ```yaml
    grpo: {}
    policy:
      megatron_cfg:
        enabled: true
        distributed_data_parallel_config:
          overlap_grad_reduce: true
          align_param_gather: true
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: remove the key, or set the value through what NeMo-RL reads (for the model provider's
    fields, `policy.megatron_cfg.model_overrides`).
    """
    section = view.cfg.raw(MEG + ("distributed_data_parallel_config",))
    if not isinstance(section, dict):
        return
    from overlap_cli.frameworks.bridge import releases

    DDP_DEFAULTS = releases.of(view.target).DDP_DEFAULTS  # noqa: N806 (the release's table, read-only)

    for name in section:
        if name in DDP_KEYS_PASSED:
            continue
        field = DDP_KEY_FIELD.get(name, name)
        written = view.setting(MEG + ("distributed_data_parallel_config", name))
        key = f"ddp.{field}"
        if key in view.effective and view.effective[key].source != "unknown":
            used = view.effective[key].value
        elif field in DDP_DEFAULTS:
            used = DDP_DEFAULTS[field]
        else:
            used = None
            if name == "use_custom_fsdp":
                continue  # declared by NeMo-RL, nothing to compare with
        if written == used and (key in view.effective or field in DDP_DEFAULTS):
            continue
        shown = f"Megatron-Core gets {used!r}" if (key in view.effective or field in DDP_DEFAULTS) else \
            "Megatron-Core's default stands"
        yield Finding(code="RL303", severity="warning", key=".".join(MEG + ("distributed_data_parallel_config", name)),
                      message=f"distributed_data_parallel_config.{name}: {written!r} is not passed by NeMo-RL "
                              f"(setup.py:1421-1441): {shown}",
                      **_place(view, MEG + ("distributed_data_parallel_config", name)))


def _place(view, path: tuple) -> dict:
    line, column, origin = view.place(path)
    return {"line": line, "column": column, "origin": origin}


@rule("RL401", "precision-aware-optimizer-dtype", "error",
      "The precision-aware optimizer without the optimizer's bf16 / fp16 flag", frameworks=RL)
def precision_aware_optimizer_dtype(view):
    """
    ## What it does
    Flags `use_precision_aware_optimizer: true` when `policy.precision` is `bfloat16` (or `float16`) and
    `policy.megatron_cfg.optimizer.bf16` (or `fp16`) is false.

    ## Why it matters
    NeMo-RL passes the optimizer section to Megatron-Core's OptimizerConfig as written and then asserts
    the precisions agree (nemo_rl/models/megatron/setup.py:1338-1352): `policy.megatron_cfg.optimizer.bf16=True
    must be set if policy.precision=bfloat16 when using use_precision_aware_optimizer=True`.

    ## Example
    ```yaml
    grpo: {}
    policy:
      precision: bfloat16
      megatron_cfg:
        enabled: true
        optimizer:
          use_precision_aware_optimizer: true
          bf16: false
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: set `optimizer.bf16: true` (or turn the precision-aware optimizer off).
    """
    if view.values.get("optimizer.use_precision_aware_optimizer") is not True:
        return
    for model_key, opt in (("model.bf16", "bf16"), ("model.fp16", "fp16")):
        if view.values.get(model_key) is True and view.values.get(f"optimizer.{opt}") is False:
            yield _finding(view, "RL401", f"policy.precision makes the model {opt} but optimizer.{opt} is false with "
                                          f"use_precision_aware_optimizer: NeMo-RL asserts 'policy.megatron_cfg.optimizer."
                                          f"{opt}=True must be set' (setup.py:1338-1352)", MEG + ("optimizer", opt))


@rule("RL801", "context-parallel-needs-packing", "error",
      "Context parallelism without sequence packing, or with fused linear logprobs", frameworks=RL)
def context_parallel_needs_packing(view):
    """
    ## What it does
    Flags `context_parallel_size` > 1 when `policy.sequence_packing.enabled` is not true, or when
    `use_fused_linear_logprobs` is on.

    ## Why it matters
    `_apply_parallelism_config` asserts both while it sets up the model
    (nemo_rl/models/megatron/setup.py:875-885): `Sequence Packing must be enabled to use Context
    Parallelism with MCore.` and `Context Parallelism is not supported with linear CE fusion loss`.

    ## Example
    ```yaml
    grpo: {}
    policy:
      sequence_packing:
        enabled: false
      megatron_cfg:
        enabled: true
        context_parallel_size: 2
    cluster:
      gpus_per_node: 8
      num_nodes: 1
    ```

    ## Fix
    None offered: enable `policy.sequence_packing`, or keep CP at 1.
    """
    cp = _int(view.values.get("model.context_parallel_size"))
    if cp is None or cp <= 1:
        return
    packing = view.cfg.get(("policy", "sequence_packing", "enabled"))
    if packing is not True and (packing is False or not view.cfg.has(("policy", "sequence_packing", "enabled"))):
        yield _finding(view, "RL801", f"context_parallel_size {cp} without sequence packing: NeMo-RL asserts 'Sequence "
                                      "Packing must be enabled to use Context Parallelism with MCore.' (setup.py:880)",
                       MEG + ("context_parallel_size",))
    if view.setting(MEG + ("use_fused_linear_logprobs",)) is True:
        yield _finding(view, "RL801", f"context_parallel_size {cp} with use_fused_linear_logprobs: NeMo-RL asserts "
                                      "'Context Parallelism is not supported with linear CE fusion loss' (setup.py:883)",
                       MEG + ("use_fused_linear_logprobs",))
