"""UB601-UB605 — the TP-overlap userbuffers config (``tp_comm_overlap_cfg``) as Bridge builds it and
Transformer Engine's ``initialize_ub`` reads it: TE's defaults, wgrad beside dgrad, a config Bridge cannot
build, the fp8_buf default, per-GEMM methods TE rejects. UB606-UB609 are in ``ub_config``.

The resolver recognises the config once (``view.ub``, a ``preset_fit.UbConfig``); Transformer Engine's
checks live in ``te_userbuffers``.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import preset_fit
from overlap_cli.frameworks.bridge import presets
from overlap_cli.results import Edit, Fix
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe, set_, te_version, unsafe
from overlap_cli.launch_profile import versions

CO_KEY = "comm_overlap.tp_comm_overlap_cfg"


def located(view, key: str) -> str:
    """``key`` if it is in the file, else the request it belongs to."""
    path = tuple(key.split("."))
    if view.cfg.has(path):
        return key
    return "comm_overlap.tp_comm_overlap" if view.comm_overlap_present else key


def _fp8(view) -> bool:
    return bool(view.get_final("model", "fp8"))


def exact_fits(shape) -> tuple:
    """(the preset that fits exactly or None, every exact fit)."""
    every = preset_fit.exact_fits(shape)
    return preset_fit.single_exact_fit(shape, every), every


def several_fit(every: list, shape) -> str:
    """'presets A, B all fit ...' naming what is missing to tell them apart."""
    from overlap_cli.frameworks.bridge.preset_fit import LABELS

    names = f"presets {', '.join(every)}" if len(every) <= 3 else f"{len(every)} presets ({', '.join(every[:2])}, ...)"
    missing = ", ".join(LABELS[f] for f in shape.unknown()) or "nothing"
    return f"{names} all fit what is known (unknown: {missing})"


def set_preset(name: str) -> Edit:
    return set_(CO_KEY, presets.serialized_form(name))


@rule("UB601", "tp-overlap-te-defaults", "info", "TP overlap on with tp_comm_overlap_cfg null: Transformer Engine defaults", fix="unsafe")
def te_defaults(view):
    """
    ## What it does
    Notes that TP overlap is effectively on while `tp_comm_overlap_cfg` is null, and names the shipped
    preset tuned for exactly this run when there is one.

    ## Why it matters
    Bridge logs "No overlap config provided. Initializing TP comm overlap with the default config." and
    hands `None` to the model (megatron/bridge/training/comm_overlap.py:619-625, megatron-bridge 0.6.2);
    `_initialize_tp_communicators` then passes `ub_cfgs={}` (initialize.py:346-353) and Transformer Engine
    uses its per-GEMM defaults: ring-exchange for the all-gather GEMMs, pipeline with 4 splits for
    proj/fc2 fprop, bulk for the dgrad/wgrad overlaps. That works; a preset sets SM counts and splits
    measured for one training shape.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true, tp_comm_overlap_cfg: null}
    ```

    ## Fix
    When exactly one preset (or a group with identical values) fits every known field of the run, sets
    `comm_overlap.tp_comm_overlap_cfg` to it in Bridge's serialized form. **Unsafe**: it replaces
    Transformer Engine's defaults with other SM counts and splits. `overlap presets suggest FILE` ranks them.
    """
    ub = view.ub
    if ub is None or ub.kind != "null" or not ub.tp_effective:
        return
    exact, every = exact_fits(ub.shape)
    fix = None
    if exact:
        tail = f"; preset {exact} was tuned for exactly this run (see `overlap presets suggest`)"
        if view.comm_overlap_present:
            fix = unsafe(f"set {CO_KEY} to preset {exact}", set_preset(exact))
    elif every:
        tail = "; " + several_fit(every, ub.shape)
    else:
        tail = "; no shipped preset fits this run exactly (`overlap presets suggest` lists the closest)"
    yield finding(
        view, "UB601", "info",
        "TP overlap is on with tp_comm_overlap_cfg null: Transformer Engine's built-in userbuffer settings are used" + tail,
        located(view, ub.key), fix,
    )  # fmt: skip


@rule("UB602", "wgrad-beside-non-bulk-dgrad", "error", "A wgrad overlap set beside a dgrad that is not bulk")
def wgrad_beside_dgrad(view):
    """
    ## What it does
    Flags `qkv_wgrad` / `fc1_wgrad` set while `qkv_dgrad` / `fc1_dgrad` uses a method other than `bulk`.

    ## Why it matters
    Bridge converts the config with `asdict()` and drops only `None` entries (comm_overlap.py:626-632).
    Transformer Engine's `initialize_ub` turns a non-bulk dgrad into a reduce-scatter overlap and asserts
    that the matching wgrad is absent from the config (`AssertionError` at start-up).
    The LoRA presets set both wgrads to null for this reason.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: true}
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        fc1_dgrad: {method: ring_exchange}
        fc1_wgrad: {method: bulk, num_sm: 4, cga_size: 2, set_sm_margin: false}
    ```

    ## Fix
    None offered: set the wgrad to null, or the dgrad back to `bulk` — which one is your tuning choice.
    """
    ub = view.ub
    if ub is None or ub.kind != "mapping" or not ub.tp_effective:
        return
    from overlap_cli.frameworks.bridge import te_userbuffers  # only for a userbuffers mapping: start-up time

    for p in te_userbuffers.wgrad_problems(ub.te_config or {}):
        yield finding(view, "UB602", p.severity, p.message, f"{ub.key}.{p.gemm}")


@rule("UB603", "tp-overlap-cfg-not-buildable", "error", "tp_comm_overlap_cfg Bridge cannot turn into a TransformerLayerTPOverlapCfg", fix="crash/unsafe")
def not_buildable(view):
    """
    ## What it does
    Flags a `comm_overlap.tp_comm_overlap_cfg` that Bridge cannot build: a string (a preset name or a
    path), any other scalar, a per-GEMM entry that is not a mapping, or one whose `_target_` lacks
    required fields. A mapping without a top-level `_target_` gets a warning.

    ## Why it matters
    `CommOverlapConfig.setup` calls `asdict()` on the value (comm_overlap.py:628): a string or plain dict
    raises `TypeError: asdict() should be called on dataclass instances` at launch
    (Megatron-Bridge#409). A YAML path is only read from `model.tp_comm_overlap_cfg` when there is no
    `comm_overlap` section (initialize.py:346-349). A mapping without `_target_` stays a dict when the file
    is loaded whole (`ConfigContainer.from_yaml`); it only works when merged over a recipe that already
    holds a TransformerLayerTPOverlapCfg. An override file or dotlist that writes `comm_overlap._target_`
    onto a recipe makes Bridge instantiate the section again from the merged dict, where the recipe's
    TransformerLayerTPOverlapCfg is a plain dict: that is an error. Required fields: `num_sm`, `cga_size`, `set_sm_margin`
    (and `num_splits` for PipelineOverlapCfg) have no default, so instantiation fails.
    Severity follows the source: error when TP overlap is effectively on; a string while the TP gate
    switched overlap off is a warning (it is copied onto the model but never converted).

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg: userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192
    ```

    ## Fix
    A shipped preset name is expanded into Bridge's serialized mapping (`_target_` keys, every field,
    `fp8_buf: [false]` where the preset keeps the default). **Safe (a) — removes a launch crash**: it is exactly the preset the name
    refers to. A mapping without `_target_` that equals a preset is replaced by the serialized form:
    **unsafe**, because merged over a recipe, fields you left out would have kept the recipe's values.
    No fix for a path or an unknown name.
    """
    ub = view.ub
    if ub is None or not view.comm_overlap_present or ub.key != CO_KEY:
        return
    if ub.kind in ("string", "other"):
        if ub.tp_effective:
            severity = "error"
        elif view.tp_requested:
            severity = "warning"
        else:
            return  # not requested at all: UB608 says it is unused
        when = "" if ub.tp_effective else " once TP overlap is on (it is off now)"
        if ub.kind == "string" and ub.given in presets.preset_names():
            yield finding(
                view, "UB603", severity,
                f"tp_comm_overlap_cfg is the string {ub.given!r}: Bridge's asdict() raises TypeError at launch{when}; "
                "write the preset as a mapping",
                CO_KEY, Fix("safe", f"expand preset {ub.given} into Bridge's serialized mapping", (set_preset(ub.given),),
                            respelled=(CO_KEY,)),
            )  # fmt: skip
            return
        hint = ""
        if ub.kind == "string":
            close = presets.closest_names(ub.given)
            hint = f" (not a shipped preset name; did you mean {', '.join(close)}?)" if close else " (not a shipped preset name)"
        what = f"the string {ub.given!r}" if ub.kind == "string" else f"{type(ub.given).__name__} {ub.given!r}"
        yield finding(
            view, "UB603", severity,
            f"tp_comm_overlap_cfg is {what}{hint}: Bridge's asdict() raises TypeError at launch{when}; "
            "a path is only accepted on model.tp_comm_overlap_cfg with comm_overlap null",
            CO_KEY,
        )  # fmt: skip
        return
    if ub.kind != "mapping":
        return
    from overlap_cli.frameworks.bridge import te_userbuffers  # only for a userbuffers mapping: start-up time

    for p in te_userbuffers.structure_problems(ub.given, te_reads=ub.tp_effective):
        if p.code == "UB603":
            yield finding(view, "UB603", p.severity, p.message, f"{CO_KEY}.{p.gemm}")
    if not ub.has_target and ub.tp_effective and ("comm_overlap",) in view.cfg.reinstantiated_paths:
        yield finding(
            view, "UB603", "error",
            "comm_overlap gets its _target_ from " + view.cfg.label(("comm_overlap", "_target_")) + ", so Bridge "
            "instantiates it again from the merged dict, where the recipe's tp_comm_overlap_cfg is a plain dict: "
            "asdict() raises \"TypeError: asdict() should be called on dataclass instances\" at launch",
            CO_KEY,
        )  # fmt: skip
        return
    if not ub.has_target and ub.tp_effective:
        fix = None
        if ub.named:
            fix = unsafe(f"replace with preset {ub.preset} in Bridge's serialized form", set_preset(ub.preset))
        yield finding(
            view, "UB603", "warning",
            "tp_comm_overlap_cfg has no _target_: loaded whole, Bridge keeps a plain dict and asdict() raises TypeError "
            "at launch; it only works merged over a recipe that already sets a TransformerLayerTPOverlapCfg",
            CO_KEY, fix,
        )  # fmt: skip


@rule("UB604", "pipeline-fp8-buf-default", "warning", "PipelineOverlapCfg without explicit fp8_buf in an FP8 run", fix="keeps")
def fp8_buf_default(view):
    """
    ## What it does
    Flags, in a custom config of an FP8 run, a `PipelineOverlapCfg` entry Transformer Engine reads
    `fp8_buf` from (`proj_fprop`, `fc2_fprop`, or a dgrad switched to `pipeline`) that leaves `fp8_buf` at
    its default or writes it as `[false]`.

    ## Why it matters
    The upstream default is the tuple `(False,)` (comm_overlap.py:52), which is **truthy**; Bridge's YAML
    dump writes it as `[false]`. Transformer Engine computes `fp8_buf = all_gather or (user_fp8_buf and
    pipeline)` and allocates a uint8 buffer in FP8 mode, so the reduce-scatter runs in FP8 although the file
    seems to say false. The shipped FP8 presets set `fp8_buf: true` explicitly; BF16
    runs are unaffected. An entry without `_target_` and without `fp8_buf` is not flagged: it reaches
    Transformer Engine as a plain dict and TE's own default (false) applies.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    mixed_precision: bf16_with_fp8_delayed_scaling_mixed
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        proj_fprop: {_target_: megatron.bridge.training.comm_overlap.PipelineOverlapCfg,
                     num_sm: 24, cga_size: 2, num_splits: 4, set_sm_margin: true}   # no fp8_buf
    ```

    ## Fix
    Writes `fp8_buf: true`. **Safe — every effective value stays**: Transformer Engine only tests truthiness, so the run is unchanged and
    the file now says what happens. Write `false` yourself for a BF16 reduce-scatter buffer.
    """
    ub = view.ub
    if ub is None or ub.kind != "mapping" or ub.named or not ub.tp_effective or not _fp8(view):
        return
    from overlap_cli.frameworks.bridge import te_userbuffers  # only for a userbuffers mapping: start-up time

    for gemm in te_userbuffers.defaulted_fp8_buf(ub.given, ub.te_config or {}):
        key = f"{ub.key}.{gemm}.fp8_buf"
        fix = safe(f"write {gemm}.fp8_buf: true (what Transformer Engine already uses)", set_(key, True)) if ub.key == CO_KEY else None
        yield finding(
            view, "UB604", "warning",
            f"{gemm}: PipelineOverlapCfg.fp8_buf is the (False,) default, which is truthy: in this FP8 run "
            "Transformer Engine gives the reduce-scatter an FP8 buffer; write fp8_buf explicitly",
            key, fix,
        )  # fmt: skip


@rule("UB605", "te-overlap-method-constraints", "error", "Per-GEMM method / atomic GEMM Transformer Engine rejects")
def te_method_constraints(view):
    """
    ## What it does
    Checks each GEMM of a custom (or preset) config as Transformer Engine's `initialize_ub` does:
    the method must be `ring_exchange`, `pipeline` or `bulk`; `pipeline` is rejected on the all-gather
    GEMMs (`qkv_fprop`, `fc1_fprop`, `proj_dgrad`, `fc2_dgrad`); `atomic_gemm` needs FP8 buffers; an
    atomic ring-exchange GEMM needs its TP-block pair (`qkv_fprop`/`proj_fprop`, `fc1_fprop`/`fc2_fprop`)
    to be atomic ring-exchange too.

    ## Why it matters
    These fail at start-up (TE `transformer_engine/pytorch/module/base.py`,
    `add_ub`): ValueError for pipeline on all-gather, AssertionError for atomic GEMM outside FP8 and for
    an unpaired atomic ring exchange, KeyError for an unknown dgrad method. Where the source differs from
    the catalogue, this rule follows the source: the atomic and pairing checks are assertions, not
    ValueErrors; an unknown method on a non-dgrad GEMM does not crash but silently builds a non-ring
    overlap (still an error: no one chose it); atomic GEMM with `bulk` in FP8 is only turned off with a
    warning (reported as warning). With TE >= 2.8, an FP8 run with BF16 first/last layers also gets
    non-FP8 userbuffers (initialize.py:364-369), where atomic GEMM fails as well.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: true}
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        qkv_fprop: {method: pipeline, num_sm: 8, cga_size: 2, num_splits: 4, set_sm_margin: true}
    ```

    ## Fix
    None offered: which method (and SM count, splits) replaces a rejected one is a tuning choice. Use a
    shipped preset (`overlap presets suggest FILE`) or correct the method yourself.
    """
    ub = view.ub
    if ub is None or ub.kind != "mapping" or not ub.tp_effective:
        return
    model = view.final.get("model", {})
    # TE >= 2.8 allocates separate userbuffers for the BF16 first/last layers of an FP8 run; a version
    # not given or unreadable is treated as new, the common case.
    new_te = versions.status(te_version(view), "2.8") != "too-old"
    bf16_layers = bool(
        new_te and model.get("fp8") is not None and model.get("first_last_layers_bf16")
        and ((model.get("num_layers_at_start_in_bf16") or 0) > 0 or (model.get("num_layers_at_end_in_bf16") or 0) > 0)
    )  # fmt: skip
    from overlap_cli.frameworks.bridge import te_userbuffers  # only for a userbuffers mapping: start-up time

    for p in te_userbuffers.method_problems(ub.te_config or {}, fp8=_fp8(view), bf16_layer_buffers=bf16_layers):
        yield finding(view, "UB605", p.severity, p.message, f"{ub.key}.{p.gemm}" + (f".{p.field}" if p.field else ""))
