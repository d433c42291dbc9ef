"""What the Python reader knows of Bridge's own objects: the values a recipe or script builds with them,
in the form Bridge's ``ConfigContainer.to_yaml()`` writes them (the form the rest of overlap-cli reads).

- ``CommOverlapConfig(...)`` (megatron/bridge/training/comm_overlap.py:377-403 of megatron-bridge 0.6.2): a
  kw-only dataclass; ``tp_comm_overlap`` has no default, every other field is None but
  ``tp_comm_bootstrap_backend`` ("nccl").
- the userbuffers presets (comm_overlap.py module constants ``userbuffers_*``): the preset data shipped in
  ``presets/``;
- the mixed-precision recipe functions (training/mixed_precision.py:184-429) and
  ``get_mixed_precision_config(name)`` (mixed_precision.py:432): a ``MixedPrecisionConfig`` with that
  recipe's fields;
- torch dtypes, written as Bridge's serializer writes a callable (``{_call_: false, _target_: torch.X}``).
"""

from __future__ import annotations

COMM_OVERLAP_TARGET = "megatron.bridge.training.comm_overlap.CommOverlapConfig"
MP_TARGET = "megatron.bridge.training.mixed_precision.MixedPrecisionConfig"
TORCH_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "float8_e4m3fn", "float8_e5m2")


def comm_overlap_config(kwargs: dict, release) -> dict:
    """The dump of ``CommOverlapConfig(**kwargs)`` in ``release`` (a frameworks.bridge.releases module);
    Refusal-free: the caller checks ``tp_comm_overlap``."""
    out = {"_target_": COMM_OVERLAP_TARGET}
    for key, default in release.COMM_OVERLAP_FIELDS.items():
        out[key] = None if default == "<required>" else default
    out.update(kwargs)
    return dict(sorted(out.items()))


def is_preset_name(name: str) -> bool:
    if not name.startswith("userbuffers_"):
        return False
    from overlap_cli.frameworks.bridge.presets import preset_names

    return name in preset_names()


def preset_value(name: str) -> dict:
    from overlap_cli.frameworks.bridge.presets import serialized_form

    return serialized_form(name)


def mixed_precision_names(release) -> set:
    return set(release.MP_RECIPES)


def mixed_precision_value(name: str, release):
    """The dump of the MixedPrecisionConfig recipe ``name`` returns, or None when Bridge has no such recipe."""
    from overlap_cli.frameworks.bridge.facts import lookup_mp_recipe

    fields = lookup_mp_recipe(name, release)
    if fields is None:
        return None
    out = {"_target_": MP_TARGET, **{k: (dict(v) if isinstance(v, dict) else v) for k, v in fields.items()}}
    # MixedPrecisionConfig.__setattr__ keeps fp8_param / fp4_param equal to their *_param_gather once both
    # exist (mixed_precision.py:84-101), so the built object (and its dump) holds the gather value.
    for param in ("fp8_param", "fp4_param"):
        if out.get(param) is None:
            out[param] = out.get(param + "_gather")
    return dict(sorted(out.items()))


def torch_dtype(name: str):
    return {"_call_": False, "_target_": f"torch.{name}"} if name in TORCH_DTYPES else None


# ---------------------------------------------------------------------------------------------------
# Bridge's config dataclasses, built field by field (``ConfigContainer(model=..., train=TrainingConfig(...))``)
# ---------------------------------------------------------------------------------------------------

CONTAINER_TARGET = "megatron.bridge.training.config.ConfigContainer"

# ConfigContainer's fields (megatron/bridge/training/config.py:965-1003 of megatron-bridge 0.6.2; the class
# is ``@dataclass(kw_only=True)``, config.py:961). Those without a default must be given, or Python raises
# TypeError; the others default to a fresh instance of their class or to None.
CONTAINER_FIELDS = (
    "env_vars", "rng", "rerun_state_machine", "train", "model", "optimizer", "optimizer_config_override_provider",
    "ddp", "validation", "scheduler", "dataset", "logger", "tokenizer", "checkpoint", "dist", "ft", "straggler",
    "nvrx_straggler", "profiling", "peft", "comm_overlap", "mixed_precision", "tensor_inspect", "inprocess_restart",
)
CONTAINER_REQUIRED = ("train", "model", "optimizer", "scheduler", "dataset", "logger", "tokenizer", "checkpoint")

_BRIDGE_CONFIG = "megatron.bridge.training.config"
_CORE_DDP = "megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig"

# The config classes whose every field overlap-cli reads has the default it holds for a key a config leaves
# out (the release's SECTION_DEFAULTS, LAUNCH_MODEL_DEFAULTS, OTHER_FIELD_DEFAULTS; checked against the classes'
# source and against the dumps Bridge writes of its own recipes): the class name, the modules a run may
# import it from -> the ``_target_`` a dump of it writes (the module that defines the class).
#   megatron-bridge 0.6.2: training/config.py:90 DistributedDataParallelConfig, :121 OptimizerConfig,
#   :146 DistributedInitConfig, :223 GPTDatasetConfig, :393 SchedulerConfig, :442 TrainingConfig,
#   :497 CheckpointConfig, :632 LoggerConfig, :736 ProfilingConfig, :181 RerunStateMachineConfig;
#   training/tokenizers/config.py:24 TokenizerConfig; models/gpt_provider.py:129 GPTModelProvider
#   (its defaults are the release's MODEL_DEFAULTS / LAUNCH_MODEL_DEFAULTS; gradient_accumulation_fusion is
#   computed where it is built, gpt_provider.py:205).
#   megatron-core 0.19.2: distributed/distributed_data_parallel_config.py:12 DistributedDataParallelConfig
#   (re-exported by megatron/core/distributed/__init__.py:9); megatron/training/config/common_config.py:7
#   RNGConfig, training_config.py:112 ValidationConfig (both re-exported by Bridge's config.py:40).
CONFIG_CLASSES: dict = {
    "DistributedDataParallelConfig": {
        _BRIDGE_CONFIG: f"{_BRIDGE_CONFIG}.DistributedDataParallelConfig",
        "megatron.core.distributed": _CORE_DDP,
        "megatron.core.distributed.distributed_data_parallel_config": _CORE_DDP,
    },
    "GPTModelProvider": {
        "megatron.bridge.models.gpt_provider": "megatron.bridge.models.gpt_provider.GPTModelProvider",
        "megatron.bridge.models": "megatron.bridge.models.gpt_provider.GPTModelProvider",
    },
    "TokenizerConfig": {
        _BRIDGE_CONFIG: "megatron.bridge.training.tokenizers.config.TokenizerConfig",
        "megatron.bridge.training.tokenizers.config": "megatron.bridge.training.tokenizers.config.TokenizerConfig",
    },
    "RNGConfig": {_BRIDGE_CONFIG: "megatron.training.config.common_config.RNGConfig",
                  "megatron.training.config": "megatron.training.config.common_config.RNGConfig"},
    "ValidationConfig": {_BRIDGE_CONFIG: "megatron.training.config.training_config.ValidationConfig",
                         "megatron.training.config": "megatron.training.config.training_config.ValidationConfig"},
    **{name: {_BRIDGE_CONFIG: f"{_BRIDGE_CONFIG}.{name}"} for name in (
        "OptimizerConfig", "DistributedInitConfig", "GPTDatasetConfig", "SchedulerConfig", "TrainingConfig",
        "CheckpointConfig", "LoggerConfig", "ProfilingConfig", "RerunStateMachineConfig")},
}

# The ConfigContainer field each known class is the type of (config.py:965-1003): a known class passed for
# another field is read as an object the tool does not know.
CLASS_FIELD = {
    "DistributedDataParallelConfig": "ddp", "GPTModelProvider": "model", "TokenizerConfig": "tokenizer",
    "RNGConfig": "rng", "ValidationConfig": "validation", "OptimizerConfig": "optimizer",
    "DistributedInitConfig": "dist", "GPTDatasetConfig": "dataset", "SchedulerConfig": "scheduler",
    "TrainingConfig": "train", "CheckpointConfig": "checkpoint", "LoggerConfig": "logger",
    "ProfilingConfig": "profiling", "RerunStateMachineConfig": "rerun_state_machine",
}


def config_class_target(module: str, name: str):
    """The ``_target_`` of the known config class ``name`` imported from ``module``, or None."""
    return CONFIG_CLASSES.get(name, {}).get(module)


def looks_like_config_class(module: str, name: str) -> bool:
    """A class of Megatron's (a ``...Config`` / ``...Provider`` / a sized provider such as
    ``Llama3ModelProvider8B``, imported from ``megatron.*``) the tool holds no defaults for: what its
    constructor is given is known, the rest is not."""
    return (module == "megatron" or module.startswith("megatron.")) and name[:1].isupper() and (
        name.endswith("Config") or "Provider" in name)


def mixed_precision_object(kwargs: dict, release) -> dict:
    """The dump of ``MixedPrecisionConfig(**kwargs)`` (training/mixed_precision.py:33): its defaults
    (the release's MP_DEFAULTS) and the fields given. ``__init__`` sets the fields in their order and ``__setattr__``
    (mixed_precision.py:77-95) then makes fp8_param / fp4_param equal to the *_param_gather set after them."""
    out = {"_target_": MP_TARGET, **{k: (dict(v) if isinstance(v, dict) else v) for k, v in release.MP_DEFAULTS.items()}}
    out.update(kwargs)
    for param in ("fp8_param", "fp4_param"):
        out[param] = out.get(param + "_gather")
    return dict(sorted(out.items()))
