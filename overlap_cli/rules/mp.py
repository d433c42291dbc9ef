"""MP4xx — mixed precision and what it overwrites."""

from __future__ import annotations

from overlap_cli.frameworks.bridge import facts as bridge
from overlap_cli.results import Edit
from overlap_cli.rules.registry import rule
from overlap_cli.launch_profile import versions
from overlap_cli.rules.common import finding, fmt, safe, te_version, unknown_version_text, unsafe

_WATCHED = ("grad_reduce_in_fp32", "fp8_param_gather")


@rule("MP401", "ddp-overwritten-by-mixed-precision", "warning", "ddp precision knob overwritten by mixed precision", fix="unsafe")
def ddp_overwritten(view):
    """
    ## What it does
    Flags `ddp.grad_reduce_in_fp32` or `ddp.fp8_param_gather` written by the user (in the file, an override
    file, the command line or a Python run's assignment — not a value a catalog recipe or a dump holds, which
    is Bridge's own output) with a value that the mixed-precision recipe replaces. A value set under
    `mixed_precision`, as Bridge's guidance asks, is the one that runs: it is no finding when the `ddp` value
    it replaces is the recipe's or the dump's.

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
        if ow.section != "ddp" or ow.key not in _WATCHED:  # mp_overwrites holds only values the user wrote
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
        recipe = bridge.lookup_mp_recipe(raw, view.release) or {}
        spelled = {"_target_": "megatron.bridge.training.mixed_precision.MixedPrecisionConfig"}
        for k, v in recipe.items():
            if k in ("fp8_param", "fp4_param"):
                continue  # finalize() derives them from *_param_gather
            spelled[k] = v
        spelled[key] = value
        edits.append(Edit("set", "mixed_precision", spelled))
    else:
        edits.append(Edit("set", f"mixed_precision.{key}", value))
    if not view.cfg.layered:  # in a merged run the recipe below holds ddp.X too: the two now agree
        edits.append(Edit("remove", f"ddp.{key}"))
    return unsafe(f"move ddp.{key} into mixed_precision (mixed precision overwrites ddp)", *edits)


@rule("MP402", "unknown-mixed-precision-recipe", "error", "Unknown mixed-precision recipe name")
def unknown_recipe(view):
    """
    ## What it does
    Flags a `mixed_precision` string that is not one of Bridge's registered recipes.

    ## Why it matters
    `get_mixed_precision_config` replaces `-` with `_` and looks the name up; an unknown name raises
    `ValueError: Unknown mixed-precision recipe '...'. Available recipes: ...` at launch.

    ## Example
    ```yaml
    mixed_precision: bf16_mix
    ```

    ## Fix
    None offered: the closest name is not always the recipe you meant (`bf16_mixed` and
    `bf16_with_mxfp8_mixed` train differently). The message names the closest recipe; write the one you want.
    """
    if view.mp_unknown_name is not None:
        import difflib

        close = difflib.get_close_matches(view.mp_unknown_name.replace("-", "_"), list(view.release.MP_RECIPES), n=1)
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

    ## Example
    ```yaml
    mixed_precision: {bf16: true, grad_reduce_in_fp32_typo: false}
    ```

    ## Fix
    None offered: which field a typo meant is a guess. Rename or remove the key yourself (the message
    names the closest field).
    """
    raw = view.cfg.data.get("mixed_precision")
    if not isinstance(raw, dict):
        return
    for key in raw:
        if key == "_target_" or key in view.release.MP_DEFAULTS:
            continue
        import difflib

        close = difflib.get_close_matches(str(key), list(view.release.MP_DEFAULTS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        yield finding(
            view,
            "MP403",
            "error",
            f"mixed_precision.{key} is not a MixedPrecisionConfig field{hint}",
            f"mixed_precision.{key}",
        )


# ----------------------------------------------------------------------------------------------
# Launch-time precision checks
# ----------------------------------------------------------------------------------------------


def _mp_key(view, key: str) -> str:
    """Where a mixed-precision field is written: the mapping's key, or the recipe name."""
    if isinstance(view.cfg.data.get("mixed_precision"), dict):
        return f"mixed_precision.{key}" if view.cfg.has(("mixed_precision", key)) else "mixed_precision"
    return "mixed_precision"


@rule("MP404", "fp8-with-fp4", "error", "fp8 and fp4 both set")
def fp8_with_fp4(view):
    """
    ## What it does
    Flags a precision setup with both `fp8` and `fp4` set: in the `mixed_precision` mapping, or on the
    model when there is no `mixed_precision`.

    ## Why it matters
    Bridge's `MixedPrecisionConfig.finalize` raises before anything else runs (megatron-bridge 0.6.2,
    `megatron/bridge/training/mixed_precision.py:108`), and Megatron-Core repeats the check at model
    finalize (megatron-core 0.19.2, `transformer_config.py:1455`), both with
    `ValueError: fp4 and fp8 cannot be used simultaneously. Please choose one.`

    ## Example
    ```yaml
    mixed_precision: {bf16: true, fp8: hybrid, fp4: e2m1}
    ```

    ## Fix
    None offered: FP8 and NVFP4 are different trainings (numerics, speed, required hardware); choose one
    and remove the other yourself.
    """
    quote = "fp4 and fp8 cannot be used simultaneously. Please choose one."
    if view.mp is not None:
        if view.mp.get("fp8") and view.mp.get("fp4"):
            yield finding(
                view, "MP404", "error",
                f"mixed precision sets fp8={fmt(view.mp.get('fp8'))} and fp4={fmt(view.mp.get('fp4'))}: Bridge raises \"{quote}\"",
                _mp_key(view, "fp4"),
            )
    elif "mixed_precision" not in view.cfg.data or view.cfg.data.get("mixed_precision") is None:
        fp8, fp4 = view.get_final("model", "fp8"), view.get_final("model", "fp4")
        if fp8 and fp4:
            yield finding(
                view, "MP404", "error",
                f"model.fp8={fmt(fp8)} and model.fp4={fmt(fp4)}: Megatron-Core raises \"{quote}\"",
                "model.fp4",
            )


@rule("MP405", "fp4-te-version", "error", "NVFP4 needs Transformer Engine >= 2.7.0.dev0")
def fp4_te_version(view):
    """
    ## What it does
    Flags `fp4` in the mixed-precision setup when the target's Transformer Engine (`--te-version`; 0.0.0
    with `--no-te`) is older than 2.7.0.dev0. Without `--te-version` it reports the requirement as info.

    ## Why it matters
    `MixedPrecisionConfig.finalize` raises (megatron-bridge 0.6.2, `mixed_precision.py:111`):
    `ValueError: fp4 requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling support.`

    ## Example
    Checked with `--te-version 2.6`:
    ```yaml
    mixed_precision: bf16_with_nvfp4_mixed
    ```

    ## Fix
    None offered: the file is fine for a newer target. Upgrade Transformer Engine, or choose another
    precision yourself (that changes the training).
    """
    if view.mp is None or not view.mp.get("fp4"):
        return
    have = te_version(view)
    status = versions.status(have, "2.7.0.dev0")
    quote = "fp4 requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling support."
    if status == "too-old":
        yield finding(view, "MP405", "error", f"Transformer Engine {have} with fp4: Bridge raises \"{quote}\"", _mp_key(view, "fp4"))
    elif status == "unknown":
        yield finding(
            view, "MP405", "info",
            f"fp4 needs Transformer Engine >= 2.7.0.dev0 ({unknown_version_text(have, 'Transformer Engine', '--te-version')})",
            _mp_key(view, "fp4"),
        )


@rule("MP406", "mxfp8-param-gather-without-reuse", "error", "MXFP8 parameter gather without grad-buffer reuse", fix="crash")
def mxfp8_gather_without_reuse(view):
    """
    ## What it does
    Flags a `mixed_precision` mapping with `fp8_recipe: mxfp8` and `fp8_param_gather: true` but
    `reuse_grad_buf_for_mxfp8_param_ag` false, without Megatron-FSDP.

    ## Why it matters
    Bridge's `validate()` asserts (megatron-bridge 0.6.2, `megatron/bridge/training/config.py:1356`; 0.4.2
    asserts it in `MixedPrecisionConfig.finalize`, `mixed_precision.py:108`, under Megatron-FSDP too):
    `When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be set to True`.
    Only the mixed-precision object is read, so setting the flag on ddp or optimizer does not help. The
    `*_with_mxfp8_mixed` recipes already set it.

    ## Example
    ```yaml
    mixed_precision: {bf16: true, fp8: e4m3, fp8_recipe: mxfp8, fp8_param_gather: true}
    ```

    ## Fix
    Sets `mixed_precision.reuse_grad_buf_for_mxfp8_param_ag: true`. **Safe (a) — removes a launch crash**: it is what the launch
    requires and lowers memory (the gradient buffer holds the MXFP8 parameter all-gather). Not offered when
    `overlap_param_gather_with_optimizer_step` is on, which cannot be combined with the reuse (DP308).
    """
    assert_at = view.release.MXFP8_REUSE_ASSERT  # validate()'s, skipped under FSDP; 0.4.2: MixedPrecisionConfig.finalize's
    if view.mp is None or (view.megatron_fsdp and not assert_at["under_fsdp"]):
        return
    if not (view.mp.get("fp8_param_gather") and view.mp.get("fp8_recipe") == "mxfp8"):
        return
    if view.mp.get("reuse_grad_buf_for_mxfp8_param_ag"):
        return
    fix = None
    if isinstance(view.cfg.data.get("mixed_precision"), dict) and not view.value("optimizer.overlap_param_gather_with_optimizer_step"):
        fix = safe(
            "set mixed_precision.reuse_grad_buf_for_mxfp8_param_ag: true (MXFP8 parameter gather requires it)",
            Edit("set", "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag", True),
        )
    yield finding(
        view, "MP406", "error",
        "MXFP8 with fp8_param_gather but without reuse_grad_buf_for_mxfp8_param_ag: Bridge asserts \"When "
        "fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be set to True\" "
        f"({assert_at['at']})",
        _mp_key(view, "reuse_grad_buf_for_mxfp8_param_ag"),
        fix,
    )


@rule("MP407", "mxfp8-reuse-without-param-gather", "error", "Grad-buffer reuse without FP8 parameter gather", fix="crash")
def reuse_without_param_gather(view):
    """
    ## What it does
    Flags `reuse_grad_buf_for_mxfp8_param_ag: true` reaching ddp (from `mixed_precision`, or from ddp
    when there is none) while `fp8_param_gather` is false there.

    ## Why it matters
    Megatron-Core's `DistributedDataParallelConfig.__post_init__` asserts when Bridge finalizes ddp
    (megatron-core 0.19.2, `distributed_data_parallel_config.py:253-254`):
    `Reuse grad buffer only when keeping params in MXFP8.` This runs before Megatron-FSDP would switch the
    reuse off, so FSDP does not avoid it.

    The same assertion fires earlier for a file Bridge loads with `ConfigContainer.from_yaml` (the checked
    file, or a `--base` dump): the dataclass is instantiated from the `ddp` section as written, before
    mixed precision writes `fp8_param_gather`. Bridge's own dumps of MXFP8 recipes with parameter gather
    hold `reuse_grad_buf_for_mxfp8_param_ag: true` beside `fp8_param_gather: false` (the dump is written
    before the runtime update), so such a saved recipe does not load; built as `--recipe NAME` it does.

    ## Example
    ```yaml
    mixed_precision: {bf16: true, fp8: e4m3, fp8_recipe: mxfp8, fp8_param_gather: false,
                      reuse_grad_buf_for_mxfp8_param_ag: true}
    ```

    ## Fix
    Turns the reuse off where it is set. **Safe (a) — removes a launch crash**: without FP8 parameters there is nothing to reuse the
    buffer for, and the run would not start. At load, when mixed precision sets `fp8_param_gather: true`:
    writes `ddp.fp8_param_gather: true`. **Safe (a)**: it is the value mixed precision writes there anyway.
    """
    yield from _reuse_at_load(view)
    if view.get_final("ddp", "reuse_grad_buf_for_mxfp8_param_ag") is not True or view.get_final("ddp", "fp8_param_gather"):
        return
    if view.mp is not None:
        key = _mp_key(view, "reuse_grad_buf_for_mxfp8_param_ag")
        fix_key = "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag" if isinstance(view.cfg.data.get("mixed_precision"), dict) else None
    else:
        key = fix_key = "ddp.reuse_grad_buf_for_mxfp8_param_ag"
    yield finding(
        view, "MP407", "error",
        "reuse_grad_buf_for_mxfp8_param_ag is true but fp8_param_gather is false: Megatron-Core asserts "
        "\"Reuse grad buffer only when keeping params in MXFP8.\"",
        key,
        safe(f"set {fix_key}: false (nothing to reuse without FP8 parameters)", Edit("set", fix_key, False)) if fix_key else None,
    )


def _reuse_at_load(view):
    """The same assertion at load: ``ConfigContainer.from_yaml`` instantiates DistributedDataParallelConfig
    from the file's ddp section, so ``__post_init__`` (distributed_data_parallel_config.py:253-254) sees the
    values as written -- before mixed precision's setup writes ``fp8_param_gather``. A recipe dump holds
    them in that order: Bridge's recipe sets the reuse flag on ddp, and ``to_yaml`` runs before the runtime
    update, so a dump of an MXFP8 recipe with parameter gather does not load. A ``--recipe`` run is built in
    Python and never meets it."""
    ddp = view.cfg.constructed("ddp")
    if ddp is None or ddp.get("reuse_grad_buf_for_mxfp8_param_ag") is not True or ddp.get("fp8_param_gather") is not False:
        return
    if {("ddp", "reuse_grad_buf_for_mxfp8_param_ag"), ("ddp", "fp8_param_gather")} & view.cfg.override_paths:
        return  # a dotlist changed them after the load: the file's own values are what load sees, not these
    lands = view.mp is not None and view.mp.get("fp8_param_gather") is True
    fix = None
    if lands and not view.cfg.layered:
        # mixed precision writes fp8_param_gather: true onto ddp anyway (MixedPrecisionConfig.setup), so
        # writing it in the file changes nothing Bridge computes after the load
        fix = safe("set ddp.fp8_param_gather: true (what mixed precision writes there anyway)", Edit("set", "ddp.fp8_param_gather", True))
    then = " (mixed precision would set it true only later, at the runtime update)" if lands else ""
    yield finding(
        view, "MP407", "error",
        "ddp holds reuse_grad_buf_for_mxfp8_param_ag: true with fp8_param_gather: false as written, and "
        "ConfigContainer.from_yaml builds ddp from them" + then + ": Megatron-Core asserts \"Reuse grad buffer "
        "only when keeping params in MXFP8.\" when the file loads (a recipe dump written before the runtime update holds this order)",
        "ddp.fp8_param_gather",
        fix,
    )
