"""CFG010 — checks of Bridge's ``ConfigContainer.validate()`` and of the configs it builds that refuse a run
for reasons outside the overlap settings: batch sizes, the MoE / precision fields the model section holds,
the dataset section.

One small table (``CHECKS``) of ``frameworks.raises.Raise`` records: each reads a few values and, when every
one of them is known, says whether the real code raises; the record holds its message and upstream line. A value is known when the file (or the recipe and the
overrides merged onto it) holds it, or when its class default is stated here; anything else leaves the
check silent.
"""

from __future__ import annotations

from overlap_cli.frameworks.raises import Raise, failing
from overlap_cli.rules.common import finding
from overlap_cli.rules.registry import rule

UNKNOWN = object()

# The class defaults of the non-model fields read below are release data (VALIDATE_DEFAULTS of
# frameworks/bridge/releases/), read through releases.of(view.target).

# Dataset classes ``validate()`` compares sequence lengths for (config.py:1488-1498) and, for all but the
# first, checks the CP finetuning loss settings on (config.py:1439-1457); the ``_target_`` Bridge's dumps write.
_GPT_DATASET = "megatron.bridge.training.config.GPTDatasetConfig"
_SFT_DATASETS = ("megatron.bridge.data.builders.gpt_sft.GPTSFTDatasetConfig",)
# The datasets that are a BlendedMegatronDatasetConfig, whose __post_init__ asserts the fast cache path
# (megatron/core/datasets/blended_megatron_dataset_config.py:100-104).
_BLENDED_DATASETS = (_GPT_DATASET,)


def value(view, section: str, key: str):
    """The value a launch sees, or UNKNOWN. The model, ddp and optimizer sections after mixed precision wrote
    onto them (the resolver's ``final``); other sections as the file holds them. A key under what the run
    leaves unknown (a recipe read from source: its model) is UNKNOWN, never the class default."""
    from overlap_cli.frameworks.bridge.unknowns import unknown_reason

    if view.cfg.unknown and ((section, key) in view.cfg.sampled
                             or unknown_reason(view.cfg, (section, key)) is not None):
        return UNKNOWN  # a sampled stand-in (frameworks/bridge/unknowns.py) is no value Bridge validates
    if section == "model" and view.cfg.section("model") is None:
        # No model written (``model=None`` in a helper the caller must complete, recipes/common.py:60): the
        # class defaults the resolver holds for it are no value Bridge validates.
        return UNKNOWN
    if section in view.final:
        sec = view.final[section]
        if key in sec:
            return sec[key]
        if section == "model" and view.cfg.section("model") is not None and key in view.release.LAUNCH_MODEL_DEFAULTS:
            return view.release.LAUNCH_MODEL_DEFAULTS[key]
    elif view.cfg.has((section, key)):
        return view.cfg.get((section, key))
    from overlap_cli.frameworks.bridge import releases

    return releases.of(view.target).VALIDATE_DEFAULTS.get((section, key), UNKNOWN)


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dataset_target(view):
    sec = view.cfg.section("dataset")
    return sec.get("_target_") if isinstance(sec, dict) else None


_TC = "megatron/core/transformer/transformer_config.py"
NULL_DDP = "ddp: null"  # how a run's unknown ddp section says it is an explicit null


def _ep_without_experts(view):
    ep, experts = value(view, "model", "expert_model_parallel_size"), value(view, "model", "num_moe_experts")
    return {} if _int(ep) is not None and experts is not UNKNOWN and ep > 1 and experts is None else None


def _precision_param(kind: str, flag: str):
    def fails(view):
        on, mode = value(view, "model", flag), value(view, "model", kind)
        return {} if on is not UNKNOWN and mode is not UNKNOWN and on and not mode else None
    return fails


def _both_halves(section: str):
    def fails(view):
        bf16, fp16 = value(view, section, "bf16"), value(view, section, "fp16")
        return {} if bf16 is True and fp16 is True else None
    return fails


def _precision_aware_mismatch(view):
    """_validate_mixed_precision_consistency with the precision-aware optimizer (config.py:2006-2023): the
    optimizer's bf16 / fp16 must follow the model's, both off for an fp32 model."""
    if value(view, "optimizer", "use_precision_aware_optimizer") is not True:
        return None
    model = {k: value(view, "model", k) for k in ("bf16", "fp16")}
    opt = {k: value(view, "optimizer", k) for k in ("bf16", "fp16")}
    if UNKNOWN in model.values() or UNKNOWN in opt.values():
        return None
    for half in ("bf16", "fp16"):
        if model[half] is True and opt[half] is not True:
            return {"message": f"optimizer.{half}=True must be set when model.{half}=True and "
                               "use_precision_aware_optimizer=True."}
    if model["bf16"] is not True and model["fp16"] is not True and (opt["bf16"] is True or opt["fp16"] is True):
        return {"message": "optimizer.bf16 and optimizer.fp16 must both be False when model is using fp32 precision "
                           "(model.bf16=False, model.fp16=False) and use_precision_aware_optimizer=True."}
    return None


def _seq_length(view):
    if _dataset_target(view) not in (_GPT_DATASET,) + _SFT_DATASETS:
        return None
    data = value(view, "dataset", "seq_length")
    if data is UNKNOWN or data is None:
        # before 0.6.0 GPTDatasetConfig's field is megatron-core's sequence_length (seq_length a property over
        # it, config.py:409-416 of 0.5.1), which its dump writes
        data = value(view, "dataset", "sequence_length")
    model, data = _int(value(view, "model", "seq_length")), _int(data)
    return {"model": model, "data": data} if model is not None and data is not None and model != data else None


def _cp_finetuning(average: bool):
    def fails(view):
        if view.cp <= 1 or _dataset_target(view) not in _SFT_DATASETS:
            return None
        per_token = value(view, "model", "calculate_per_token_loss")
        if per_token is UNKNOWN or not per_token:
            return {} if per_token is not UNKNOWN and not average else None
        avg = value(view, "ddp", "average_in_collective")
        return {} if average and avg is not UNKNOWN and avg else None
    return fails


def _fast_cache(view):
    if _dataset_target(view) not in _BLENDED_DATASETS:
        return None
    fast, path = value(view, "dataset", "fast_cache_load"), value(view, "dataset", "path_to_cache")
    return {} if fast is True and path is None else None


def _ddp_null(view):
    """``ddp: null`` in the file: ``from_yaml`` instantiates the container with ``ddp=None`` (the field's
    default_factory is not called for a value given), mixed precision and comm_overlap pass it over
    (mixed_precision.py:134, comm_overlap.py:635-639), and validate() reads it."""
    reason = view.cfg.unknown.get(("ddp",))  # forms.bridge_run marks the section unknown: no class default stands in
    return {} if isinstance(reason, str) and reason.startswith(NULL_DDP) else None


def _ddp_null_delayed_wgrad(view):
    """comm_overlap's setup reads ``ddp_config.overlap_grad_reduce`` when delayed wgrad is asked for
    (comm_overlap.py:520-521), before validate()."""
    return _ddp_null(view) if view.requested("delay_wgrad_compute") is True else None


# comm_overlap's setup first (runtime_config_update, config.py:1885), then validate()
# In the order the real code meets them: the dataset and model configs' own __post_init__ run again in
# validate() (config.py:1262-1284) before its FSDP, batch-size, CP and sequence-length checks.
CHECKS = (
    Raise(at="megatron/bridge/training/comm_overlap.py:521", fails=_ddp_null_delayed_wgrad, kind="AttributeError",
          message="'NoneType' object has no attribute 'overlap_grad_reduce'", key="ddp"),
    Raise(at="megatron/core/datasets/blended_megatron_dataset_config.py:103", fails=_fast_cache,
          message="--data-cache-path must be provided when using --dataloader-fast-cache-load.",
          key="dataset.fast_cache_load"),
    Raise(at=f"{_TC}:1440", fails=_precision_param("fp8", "fp8_param"), kind="ValueError",
          message="fp8_param must be used together with fp8 mode.", key="model.fp8_param"),
    Raise(at=f"{_TC}:1444", fails=_precision_param("fp8", "fp8_output_proj"), kind="ValueError",
          message="fp8_output_proj must be used together with fp8 mode.", key="model.fp8_output_proj"),
    Raise(at=f"{_TC}:1452", fails=_precision_param("fp4", "fp4_param"), kind="ValueError",
          message="fp4_param must be used together with fp4 mode.", key="model.fp4_param"),
    Raise(at=f"{_TC}:1469", fails=_ep_without_experts, kind="ValueError",
          message="num_moe_experts must be non None to use expert-parallel.", key="model.expert_model_parallel_size"),
    Raise(at="megatron/bridge/training/config.py:1345", fails=_ddp_null, kind="AttributeError",
          message="'NoneType' object has no attribute 'use_megatron_fsdp'", key="ddp"),
    Raise(at="megatron/bridge/training/config.py:1998", fails=_both_halves("model"), key="model.bf16",
          message="Model config cannot have both bf16=True and fp16=True. Please set only one precision mode."),
    Raise(at="megatron/bridge/training/config.py:2001", fails=_both_halves("optimizer"), key="optimizer.bf16",
          message="Optimizer config cannot have both bf16=True and fp16=True. Please set only one precision mode."),
    Raise(at="megatron/bridge/training/config.py:2009", fails=_precision_aware_mismatch, message="{message}",
          key="optimizer.use_precision_aware_optimizer"),
    Raise(at="megatron/bridge/training/config.py:1452", fails=_cp_finetuning(average=False),
          message="When finetuning with CP>1, calculate_per_token_loss must be True", key="model.calculate_per_token_loss"),
    Raise(at="megatron/bridge/training/config.py:1455", fails=_cp_finetuning(average=True),
          message="When finetuning with CP>1, average_in_collective must be False", key="ddp.average_in_collective"),
    Raise(at="megatron/bridge/training/config.py:1505", fails=_seq_length, key="dataset.seq_length",
          message="Please ensure sequence length configuration in model config and dataset config match. "
                  "Sequence length in model config: {model}, Sequence length in dataset config: {data}"),
)


@rule("CFG010", "bridge-validate-rejects", "error", "Bridge's validate() or a config it builds refuses the run")
def validate_rejects(view):
    """
    ## What it does
    Evaluates a small table of the checks Bridge's `ConfigContainer.validate()` makes (megatron-bridge 0.6.2,
    `megatron/bridge/training/config.py`) and the `__post_init__` checks of the configs it re-runs there
    (megatron-core 0.19.2 `TransformerConfig`, `BlendedMegatronDatasetConfig`), each only when every value it
    reads is known:

    - `expert_model_parallel_size > 1` needs `num_moe_experts` (transformer_config.py:1469);
    - `fp8_param` / `fp8_output_proj` need `fp8`, `fp4_param` needs `fp4` (transformer_config.py:1440, 1444,
      1452) — after mixed precision wrote its fields onto the model (`fp8_param` follows `fp8_param_gather`);
    - with CP > 1 and an SFT dataset, `calculate_per_token_loss` true and `ddp.average_in_collective` false
      (config.py:1452-1457);
    - `model.seq_length` equal to `dataset.seq_length` for the GPT / SFT dataset configs (config.py:1505);
    - not both `bf16` and `fp16` on the model or on the optimizer, and with
      `optimizer.use_precision_aware_optimizer` the optimizer's `bf16` / `fp16` following the model's (both
      off for an fp32 model) — after mixed precision wrote them (config.py:1984-2023);
    - `dataset.fast_cache_load` needs `dataset.path_to_cache` (blended_megatron_dataset_config.py:103);
    - `ddp: null` (a saved `run_config.yaml` may hold it): `from_yaml` builds the container with `ddp=None`,
      mixed precision and comm_overlap pass it over, and validate() reads `self.ddp.use_megatron_fsdp`:
      `AttributeError` (config.py:1345; comm_overlap.py:521 first when `delay_wgrad_compute` is asked for).
      The DP values printed for such a file are the class defaults no run reaches.

    The evaluation batch against the eval DP size (config.py:1335) is DP314's.

    ## Why it matters
    Each one stops the launch in `runtime_config_update`, before any overlap setting matters, after the
    job waited in the queue. The message quotes the real one.

    ## Example
    Checked with `--world-size 8`:
    ```yaml
    model: {tensor_model_parallel_size: 1, expert_model_parallel_size: 2}
    ```

    ## Fix
    None offered: which batch size, precision field or dataset path is wrong is the run's choice.
    """
    # each ``at`` is a line of the newest release (or of the megatron-core it pins): another release's result
    # reads it as that release's line (frameworks/bridge/cites.py)
    for check, fields in failing(CHECKS, view):
        yield finding(view, "CFG010", "error", f"Bridge refuses the run: \"{check.text(fields)}\" ({check.at})",
                      check.key)
