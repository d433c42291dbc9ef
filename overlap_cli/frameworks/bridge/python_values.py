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


class Unknown:
    """A value the reader cannot know, with the reason (naming ``FILE:LINE``)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unknown({self.reason!r})"

    def __bool__(self):
        raise TypeError("Unknown has no truth value")


class Refusal(Exception):
    """Bridge (or Python) raises on this line when the run is built: the reader says so and stops."""

    def __init__(self, message: str, line: int, column: int = 1):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def comm_overlap_config(kwargs: dict) -> dict:
    """The dump of ``CommOverlapConfig(**kwargs)``; Refusal-free: the caller checks ``tp_comm_overlap``."""
    from overlap_cli.frameworks.bridge.facts import COMM_OVERLAP_FIELDS

    out = {"_target_": COMM_OVERLAP_TARGET}
    for key, default in COMM_OVERLAP_FIELDS.items():
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


def mixed_precision_names() -> set:
    from overlap_cli.frameworks.bridge.facts import MP_RECIPES

    return set(MP_RECIPES)


def mixed_precision_value(name: str):
    """The dump of the MixedPrecisionConfig recipe ``name`` returns, or None when Bridge has no such recipe."""
    from overlap_cli.frameworks.bridge.facts import lookup_mp_recipe

    fields = lookup_mp_recipe(name)
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
