"""MP4xx — mixed precision and what it overwrites."""

from __future__ import annotations

import difflib

from .. import bridge
from ..model import Edit
from . import rule
from ._helpers import finding, fmt, unsafe

_WATCHED = ("grad_reduce_in_fp32", "fp8_param_gather")


@rule("MP401", "ddp-overwritten-by-mixed-precision", "warning", "ddp precision knob overwritten by mixed precision", fix="unsafe")
def ddp_overwritten(view):
    """
    ## What it does
    Flags `ddp.grad_reduce_in_fp32` or `ddp.fp8_param_gather` written in the file with a value that the
    mixed-precision recipe replaces.

    ## Why it matters
    `MixedPrecisionConfig.setup` copies every one of its fields onto model, optimizer and ddp where a
    field of the same name exists, logging only at DEBUG level (megatron/bridge/training/mixed_precision.py).
    `grad_reduce_in_fp32` defaults to **true** in every recipe but `fp16_*` — a user override
    `ddp.grad_reduce_in_fp32=false` is silently undone (reported upstream as Megatron-Bridge#5365), which
    doubles the gradient communication volume.

    ## Example
    ```yaml
    mixed_precision: bf16_mixed
    ddp: {grad_reduce_in_fp32: false}
    ```

    ## Fix
    Moves the value into the `mixed_precision` section: a recipe name becomes a mapping with the recipe's
    values spelled out plus the moved field, so nothing else changes. **Unsafe**: it changes the gradient
    reduction dtype (numerics, memory) relative to what would run today.
    """
    if view.mp is None:
        return
    for ow in view.mp_overwrites:
        if ow.section != "ddp" or ow.key not in _WATCHED:
            continue
        yield finding(
            view,
            "MP401",
            "warning",
            f"ddp.{ow.key}: {fmt(ow.file_value)} is overwritten with {fmt(ow.new_value)} by mixed precision "
            f"({view.mp_name}); set it under mixed_precision to make it effective",
            f"ddp.{ow.key}",
            _move_into_mixed_precision(view, ow.key, ow.file_value),
        )


def _move_into_mixed_precision(view, key: str, value):
    raw = view.cfg.data.get("mixed_precision")
    edits = []
    if isinstance(raw, str):
        recipe = bridge.lookup_mp_recipe(raw) or {}
        spelled = {"_target_": "megatron.bridge.training.mixed_precision.MixedPrecisionConfig"}
        for k, v in recipe.items():
            if k in ("fp8_param", "fp4_param"):
                continue  # finalize() derives them from *_param_gather
            spelled[k] = v
        spelled[key] = value
        edits.append(Edit("set", "mixed_precision", spelled))
    else:
        edits.append(Edit("set", f"mixed_precision.{key}", value))
    edits.append(Edit("remove", f"ddp.{key}"))
    return unsafe(f"move ddp.{key} into mixed_precision", *edits)


@rule("MP402", "unknown-mixed-precision-recipe", "error", "Unknown mixed-precision recipe name")
def unknown_recipe(view):
    """
    ## What it does
    Flags a `mixed_precision` string that is not one of Bridge's registered recipes.

    ## Why it matters
    `get_mixed_precision_config` replaces `-` with `_` and looks the name up; an unknown name raises
    `ValueError: Unknown mixed-precision recipe '...'. Available recipes: ...` at launch.

    ## Fix
    None automatic: the message names the closest recipe.
    """
    if view.mp_unknown_name is not None:
        close = difflib.get_close_matches(view.mp_unknown_name.replace("-", "_"), list(bridge.MP_RECIPES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        yield finding(
            view,
            "MP402",
            "error",
            f"unknown mixed-precision recipe {view.mp_unknown_name!r}: Bridge raises ValueError{hint}",
            "mixed_precision",
        )


@rule("MP403", "unknown-mixed-precision-key", "error", "Unknown key in the mixed_precision mapping")
def unknown_key(view):
    """
    ## What it does
    Flags keys in a `mixed_precision` mapping that `MixedPrecisionConfig` does not have.

    ## Why it matters
    The mapping is built as `MixedPrecisionConfig(**fields)`; an unknown key raises `TypeError` at launch.

    ## Fix
    None automatic: rename or remove the key.
    """
    raw = view.cfg.data.get("mixed_precision")
    if not isinstance(raw, dict):
        return
    for key in raw:
        if key == "_target_" or key in bridge.MP_DEFAULTS:
            continue
        close = difflib.get_close_matches(str(key), list(bridge.MP_DEFAULTS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        yield finding(
            view,
            "MP403",
            "error",
            f"mixed_precision.{key} is not a MixedPrecisionConfig field{hint}",
            f"mixed_precision.{key}",
        )
