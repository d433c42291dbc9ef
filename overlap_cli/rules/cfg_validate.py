"""CFG010 — checks of Bridge's ``ConfigContainer.validate()`` and of the configs it builds that refuse a run
for reasons outside the overlap settings: batch sizes, the MoE / precision fields the model section holds,
the dataset section.

One small table (``CHECKS``): each entry reads a few values and, when every one of them is known, says
whether the real code raises and with which message. A value is known when the file (or the recipe and the
overrides merged onto it) holds it, or when its class default is stated here; anything else leaves the
check silent.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import facts as bridge
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
        if section == "model" and view.cfg.section("model") is not None and key in bridge.LAUNCH_MODEL_DEFAULTS:
            return bridge.LAUNCH_MODEL_DEFAULTS[key]
    elif view.cfg.has((section, key)):
        return view.cfg.get((section, key))
    from overlap_cli.frameworks.bridge import releases

    return releases.of(view.target).VALIDATE_DEFAULTS.get((section, key), UNKNOWN)


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dataset_target(view):
    sec = view.cfg.section("dataset")
    return sec.get("_target_") if isinstance(sec, dict) else None


def _ep_without_experts(view):
    ep, experts = value(view, "model", "expert_model_parallel_size"), value(view, "model", "num_moe_experts")
    if _int(ep) is None or experts is UNKNOWN or not (ep > 1 and experts is None):
        return None
    return ("num_moe_experts must be non None to use expert-parallel.", "model.expert_model_parallel_size",
            "megatron/core/transformer/transformer_config.py:1469")


def _precision_param(kind: str, flag: str, line: int):
    def check(view):
        on, mode = value(view, "model", flag), value(view, "model", kind)
        if on is UNKNOWN or mode is UNKNOWN or not on or mode:
            return None
        return (f"{flag} must be used together with {kind} mode.", f"model.{flag}",
                f"megatron/core/transformer/transformer_config.py:{line}")
    return check


def _seq_length(view):
    if _dataset_target(view) not in (_GPT_DATASET,) + _SFT_DATASETS:
        return None
    model, data = _int(value(view, "model", "seq_length")), _int(value(view, "dataset", "seq_length"))
    if model is None or data is None or model == data:
        return None
    return ("Please ensure sequence length configuration in model config and dataset config match. "
            f"Sequence length in model config: {model}, Sequence length in dataset config: {data}",
            "dataset.seq_length", "megatron/bridge/training/config.py:1505")


def _cp_finetuning(view):
    if view.cp <= 1 or _dataset_target(view) not in _SFT_DATASETS:
        return None
    per_token, average = value(view, "model", "calculate_per_token_loss"), value(view, "ddp", "average_in_collective")
    if per_token is UNKNOWN:
        return None
    if not per_token:
        return ("When finetuning with CP>1, calculate_per_token_loss must be True", "model.calculate_per_token_loss",
                "megatron/bridge/training/config.py:1452")
    if average is not UNKNOWN and average:
        return ("When finetuning with CP>1, average_in_collective must be False", "ddp.average_in_collective",
                "megatron/bridge/training/config.py:1455")
    return None


def _fast_cache(view):
    if _dataset_target(view) not in _BLENDED_DATASETS:
        return None
    fast, path = value(view, "dataset", "fast_cache_load"), value(view, "dataset", "path_to_cache")
    if fast is not True or path is not None:
        return None
    return ("--data-cache-path must be provided when using --dataloader-fast-cache-load.", "dataset.fast_cache_load",
            "megatron/core/datasets/blended_megatron_dataset_config.py:103")


# In the order the real code meets them: the dataset and model configs' own __post_init__ run again in
# validate() (config.py:1280-1284) before its batch-size and CP checks.
CHECKS = (
    _fast_cache,
    _precision_param("fp8", "fp8_param", 1440),
    _precision_param("fp8", "fp8_output_proj", 1444),
    _precision_param("fp4", "fp4_param", 1452),
    _ep_without_experts,
    _cp_finetuning,
    _seq_length,
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
    - `dataset.fast_cache_load` needs `dataset.path_to_cache` (blended_megatron_dataset_config.py:103).

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
    for check in CHECKS:
        hit = check(view)
        if hit is None:
            continue
        message, key, where = hit
        yield finding(view, "CFG010", "error", f"Bridge refuses the run: \"{message}\" ({where})", key)
