"""CFG0xx — structure of the comm_overlap section and what it overwrites elsewhere."""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, fmt, remove, safe, set_, unsafe


@rule("CFG001", "no-comm-overlap", "info", "No comm_overlap section: Bridge applies no overlap tuning")
def no_comm_overlap(view):
    """
    ## What it does
    Notes that the config has no `comm_overlap` section (or `comm_overlap: null`).

    ## Why it matters
    `runtime_config_update` calls `CommOverlapConfig.setup` only when the section exists
    (megatron/bridge/training/config.py). Without it nothing is tuned: TP overlap is not enabled, the
    PP p2p mode keeps Megatron-Core's defaults (`overlap_p2p_comm=False`, `batch_p2p_comm=True`), and DP
    overlap stays off unless the `ddp` section turns it on by hand. No log line says so.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, pipeline_model_parallel_size: 4}
    # no comm_overlap
    ```

    ## Fix
    None offered: adding `comm_overlap: {tp_comm_overlap: false}` changes the PP and DP settings the run
    gets, which is a tuning decision. Add it yourself to let Bridge pick its defaults.
    """
    if not view.comm_overlap_present:
        yield finding(
            view,
            "CFG001",
            "info",
            "no comm_overlap section: Bridge applies no overlap tuning; Megatron-Core defaults and the ddp/model "
            "values in the file stand",
            "comm_overlap" if "comm_overlap" in view.cfg.data else None,
        )


@rule("CFG002", "missing-tp-comm-overlap", "error", "comm_overlap lacks the required field tp_comm_overlap", fix="crash")
def missing_required(view):
    """
    ## What it does
    Flags a `comm_overlap` section without `tp_comm_overlap`.

    ## Why it matters
    `CommOverlapConfig` is a keyword-only dataclass whose `tp_comm_overlap: bool` has no default
    (megatron/bridge/training/comm_overlap.py). Building it fails with
    `TypeError: CommOverlapConfig.__init__() missing 1 required keyword-only argument: 'tp_comm_overlap'`.

    ## Example
    ```yaml
    comm_overlap:
      overlap_grad_reduce: true
    ```

    ## Fix
    Adds `comm_overlap.tp_comm_overlap: false`. **Safe (a) — removes a launch crash**: the section cannot be constructed without it, and
    `false` is the value Bridge would otherwise write onto the model.
    """
    if view.comm_overlap_present and view.comm_overlap_missing_required:
        yield finding(
            view,
            "CFG002",
            "error",
            "comm_overlap has no tp_comm_overlap: it is a required field and CommOverlapConfig raises TypeError",
            "comm_overlap",
            safe(
                "add comm_overlap.tp_comm_overlap: false (required field of CommOverlapConfig)",
                Edit("add", "comm_overlap.tp_comm_overlap", False),
            ),
        )


@rule("CFG003", "unknown-comm-overlap-key", "error", "Unknown key under comm_overlap")
def unknown_key(view):
    """
    ## What it does
    Flags keys under `comm_overlap` that `CommOverlapConfig` does not have.

    ## Why it matters
    The section is built as `CommOverlapConfig(**fields)`, so an unknown key fails with
    `TypeError: ... got an unexpected keyword argument`. Launch variables such as
    `CUDA_DEVICE_MAX_CONNECTIONS` do not belong here either (see the ENV family); typos such as
    `overlap_grad_reduc` are caught here.

    ## Example
    ```yaml
    comm_overlap:
      tp_comm_overlap: true
      overlap_grad_reduc: true
    ```

    ## Fix
    None offered: which field a typo meant is a guess, and a wrong guess would silently change the run.
    Rename the key yourself (the message names the closest field).
    """
    co = view.cfg.data.get("comm_overlap")
    if not isinstance(co, dict):
        return
    env_like = getattr(view, "env_variable_names", ())
    for key in co:
        if key == "_target_" or key in view.release.COMM_OVERLAP_FIELDS:
            continue
        if isinstance(key, str) and (key.isupper() or key in env_like) and view.release.HAS_ENV_VARS:
            continue  # launch variables are reported by the ENV family with a fix (ENV507 moves them to env_vars)
        import difflib  # only for a typo: start-up time

        close = difflib.get_close_matches(str(key), list(view.release.COMM_OVERLAP_FIELDS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        yield finding(
            view,
            "CFG003",
            "error",
            f"comm_overlap.{key} is not a CommOverlapConfig field; Bridge raises TypeError{hint}",
            f"comm_overlap.{key}",
        )


@rule("CFG004", "model-overlap-overwritten", "warning", "A model-level overlap value is overwritten by comm_overlap", fix="keeps/overlap/unsafe")
def model_overwritten(view):
    """
    ## What it does
    Flags overlap fields written in the `model` section that `comm_overlap` overwrites at launch
    (`tp_comm_overlap`, `tp_comm_bootstrap_backend`, `overlap_p2p_comm`, `batch_p2p_comm`,
    `defer_embedding_wgrad_compute`, `wgrad_deferral_limit`, `overlap_moe_expert_parallel_comm`,
    `delay_wgrad_compute`).

    ## Why it matters
    `CommOverlapConfig.setup` copies every one of its fields onto any config object that has an
    attribute of that name, with no log line (comm_overlap.py `_apply_cfgs`). The value written on the
    model is silently replaced by comm_overlap's own (its default, or the value set in `comm_overlap`).

    In Bridge's own dumps (sections carrying `_target_`) every field is written out; a field holding its
    Megatron-Core default there is not counted as a choice, so this rule stays quiet on them.

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: 2, batch_p2p_comm: true}
    comm_overlap: {tp_comm_overlap: false}   # writes batch_p2p_comm=false
    ```

    ## Fix
    Moves the value into `comm_overlap` (same value, now effective) and removes it from `model`.
    **Safe (b) — makes the requested overlap take effect** when the value switches on an overlap
    (`tp_comm_overlap`, `overlap_p2p_comm`, `overlap_moe_expert_parallel_comm`, `delay_wgrad_compute`,
    `defer_embedding_wgrad_compute`) that comm_overlap switched off, in a run with the TP/PP group it
    needs. If that value then crashes (e.g. both p2p flags true), the PP rules report it and fix it in the
    next round. **Unsafe** for any other move (the p2p mode, a backend, a deferral limit, an overlap
    switched off): it changes what runs without a crash or an overlap to show for it.

    At DP = 1 an overlap switched on in ddp/optimizer and off by Bridge is info, not a warning: there is no
    data-parallel communication for it to hide, so nothing is lost (Bridge's recipes are written for
    several sizes and say "on" for the sizes where it counts).

    When `comm_overlap` sets the same field itself, the file holds two different requests and Bridge
    obeys the `comm_overlap` one; the fix removes the dead `model` value instead of overruling it.
    **Safe — every effective value stays**: the run does not change, and the file stops saying something that never happens.
    """
    for ow in view.co_overwrites:
        if ow.section != "model":
            continue
        yield finding(
            view,
            "CFG004",
            "warning",
            f"model.{ow.key}: {fmt(ow.file_value)} is overwritten by comm_overlap with {fmt(ow.new_value)}; "
            f"set it in comm_overlap.{ow.key} to make it effective",
            f"model.{ow.key}",
            _move_into_comm_overlap(view, "model", ow.key, ow.file_value, new_value=ow.new_value),
        )


# The overlap switches comm_overlap overwrites, with the parallel size each one needs a group of (> 1) for
# the overlap to have any communication to hide: DP overlap at DP = 1 overlaps nothing, and Bridge's DP
# path switches it off there on purpose (comm_overlap.py `_get_optimizer_overlap_cfgs`).
_OVERLAP_SWITCHES = {
    ("model", "tp_comm_overlap"): "tp",
    ("model", "overlap_p2p_comm"): "pp",
    ("model", "overlap_moe_expert_parallel_comm"): None,
    ("model", "delay_wgrad_compute"): None,
    ("model", "defer_embedding_wgrad_compute"): "pp",
    ("ddp", "overlap_grad_reduce"): "dp",
    ("ddp", "overlap_param_gather"): "dp",
    ("optimizer", "overlap_param_gather"): "dp",
    ("optimizer", "overlap_param_gather_with_optimizer_step"): "dp",
}


def _switches_on_a_working_overlap(view, section: str, key: str, value, new_value) -> bool:
    """True when moving ``section.key: value`` into comm_overlap switches on an overlap the file asked for
    and Bridge switched off, in a run that has the communication it overlaps (fix class (b))."""
    if (section, key) not in _OVERLAP_SWITCHES or value is not True or new_value is not False:
        return False
    group = _OVERLAP_SWITCHES[(section, key)]
    size = {"tp": view.tp, "pp": view.pp, "dp": view.dp}.get(group, 2) if group else 2
    return size is not None and size > 1


def _move_into_comm_overlap(view, section: str, key: str, value, *extra, new_value=None):
    """Move ``section.key`` into comm_overlap — unless comm_overlap already decides it: then drop it.

    Dropping a value comm_overlap overwrites keeps every effective value: safe. Moving it changes the
    effective value: safe only when that switches on an overlap the file asked for and the run can use
    (class (b)); any other change of what the run gets (a bucket size, the p2p mode, an overlap switched
    off, DP overlap at DP = 1 or unknown DP) is the user's call: unsafe.
    """
    if view.cfg.get(("comm_overlap", key)) is not None:
        return safe(f"remove {section}.{key} (comm_overlap.{key} decides it)", remove(f"{section}.{key}"), *extra)
    build = safe if _switches_on_a_working_overlap(view, section, key, value, new_value) else unsafe
    return build(
        f"move {section}.{key} into comm_overlap (comm_overlap overwrites {section})",
        set_(f"comm_overlap.{key}", value),
        remove(f"{section}.{key}"),
        *extra,
    )


@rule("CFG005", "dp-overlap-overwritten", "warning", "A ddp/optimizer overlap value is overwritten by comm_overlap", fix="keeps/overlap/unsafe")
def dp_overwritten(view):
    """
    ## What it does
    Flags `ddp.{overlap_grad_reduce, overlap_param_gather, align_param_gather, bucket_size,
    delay_wgrad_compute}` and `optimizer.{overlap_param_gather, overlap_param_gather_with_optimizer_step}`
    values in the file that comm_overlap's data-parallel path overwrites.

    ## Why it matters
    With `comm_overlap` present and `ddp.use_distributed_optimizer: true`, Bridge computes the DP
    defaults (bucket 134,217,728 parameters and overlap on when DP > 1; everything off when DP = 1),
    applies the values set in `comm_overlap`, and writes the result onto ddp and optimizer
    (comm_overlap.py `_get_optimizer_overlap_cfgs`). Values written directly in `ddp` lose — even though
    Bridge's performance guide tells users to set them there.

    ## Example
    Checked with `--world-size 1`:
    ```yaml
    ddp: {use_distributed_optimizer: true, overlap_grad_reduce: true}
    comm_overlap: {tp_comm_overlap: false}
    # with DP = 1, overlap_grad_reduce ends up false
    ```

    ## Fix
    Moves the value into `comm_overlap` and removes it from ddp/optimizer. **Safe (b) — makes the requested overlap take effect** when it switches on
    `overlap_grad_reduce`, `overlap_param_gather` or `overlap_param_gather_with_optimizer_step` that
    comm_overlap switched off, with DP > 1 known. **Unsafe** otherwise: at DP = 1 there is no
    data-parallel communication to overlap (Bridge switches DP overlap off there on purpose), with an
    unknown DP the value the run gets is not known, and moving a bucket size or an overlap switched off
    changes the run's tuning. The listing (`overlap fix FILE`) names every edit, e.g. the
    `optimizer.overlap_param_gather` removed with `ddp.overlap_param_gather`; each removal leaves a note.

    When `comm_overlap` sets the same field itself (a DP overlap request such as
    `comm_overlap.overlap_grad_reduce: true` next to `ddp.overlap_grad_reduce: false`), the request in
    `comm_overlap` is the one Bridge obeys, and the fix keeps it working: it removes the dead ddp/optimizer
    value rather than moving it over the request. **Safe — every effective value stays**: the run does not change.
    """
    for ow in view.co_overwrites:
        if ow.section not in ("ddp", "optimizer"):
            continue
        extra = []
        # overlap_param_gather exists in both sections; move both at once so one fix covers the pair.
        other = "optimizer" if ow.section == "ddp" else "ddp"
        if ow.key == "overlap_param_gather" and view.cfg.has((other, ow.key)):
            extra.append(remove(f"{other}.{ow.key}"))
        if view.dp == 1 and ow.file_value is True and ow.new_value is False:
            # DP = 1: no data-parallel communication to overlap, so Bridge's "off" loses nothing; a tuned
            # recipe written for several sizes says "on" for the sizes where it counts.
            severity = "info"
            message = (
                f"{ow.section}.{ow.key}: true is overwritten by comm_overlap's data-parallel path with false: "
                "at DP=1 there is no data-parallel communication to overlap"
            )
        else:
            severity = "warning"
            message = (
                f"{ow.section}.{ow.key}: {fmt(ow.file_value)} is overwritten by comm_overlap's data-parallel path "
                f"with {fmt(ow.new_value)}; set it in comm_overlap.{ow.key} to make it effective"
            )
        yield finding(
            view,
            "CFG005",
            severity,
            message,
            f"{ow.section}.{ow.key}",
            _move_into_comm_overlap(view, ow.section, ow.key, ow.file_value, *extra, new_value=ow.new_value),
        )
