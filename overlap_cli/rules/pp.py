"""PP2xx — pipeline-parallel p2p communication and the pipeline bubble."""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.rules.registry import BOTH, rule
from overlap_cli.rules.common import finding, remove, safe, set_, unsafe


_MAX_VPP = 1024


def smallest_vpp(num_layers, pp: int):
    """Smallest VPP >= 2 with num_layers divisible by PP * VPP (None when there is none)."""
    if not isinstance(num_layers, int) or num_layers <= 0:
        return None
    # Bounded: a real model has a few hundred layers, and a huge num_layers (a typo, or hostile input)
    # must not turn this search into an hours-long loop. Past the bound no fix is offered.
    for vpp in range(2, min(num_layers // pp, _MAX_VPP) + 1):
        if num_layers % (pp * vpp) == 0:
            return vpp
    return None


@rule("PP201", "pp-p2p-choice", "info", "Which p2p mode Bridge picks for the pipeline", fix="unsafe")
def p2p_choice(view):
    """
    ## What it does
    Reports the pipeline p2p mode Bridge picks when `comm_overlap` is present and PP > 1.

    ## Why it matters
    Bridge enables `overlap_p2p_comm=True, batch_p2p_comm=False` only when PP > 1 **and**
    `virtual_pipeline_model_parallel_size` > 1 (null counts as 1). PP > 1 without VPP gets
    `overlap_p2p_comm=False, batch_p2p_comm=True`: the non-interleaved schedule cannot overlap p2p.
    Values set in `comm_overlap` win.

    ## Example
    ```yaml
    model: {num_layers: 32, pipeline_model_parallel_size: 4}   # no VPP: batched p2p, not overlapped
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    For PP > 1 without VPP: set `model.virtual_pipeline_model_parallel_size` to the smallest VPP ≥ 2 that
    divides `num_layers / PP`. **Unsafe** (only with `--unsafe-fixes`): the interleaved schedule changes
    memory use, layer placement and checkpoint layout. No fix when `num_layers` is unknown or no VPP fits.
    """
    if not view.comm_overlap_present or view.pp <= 1:
        return
    overlap, batch = view.value("model.overlap_p2p_comm"), view.value("model.batch_p2p_comm")
    if view.vp > 1:
        msg = f"PP={view.pp}, VPP={view.vp}: overlap_p2p_comm={str(overlap).lower()}, batch_p2p_comm={str(batch).lower()}"
        yield finding(view, "PP201", "info", msg, "model.pipeline_model_parallel_size")
        return
    fix = None
    vpp = smallest_vpp(view.get_final("model", "num_layers"), view.pp)
    if vpp is not None and view.cfg.get(("comm_overlap", "overlap_p2p_comm")) is None:
        fix = unsafe(
            f"set model.virtual_pipeline_model_parallel_size: {vpp} (interleaved schedule, enables p2p overlap)",
            set_("model.virtual_pipeline_model_parallel_size", vpp),
        )
    yield finding(
        view,
        "PP201",
        "info",
        f"PP={view.pp} without VPP: Bridge picks batch_p2p_comm=true, overlap_p2p_comm=false; "
        "p2p overlap needs virtual_pipeline_model_parallel_size > 1",
        "model.pipeline_model_parallel_size",
        fix,
    )


@rule("PP202", "p2p-overlap-non-interleaved", "error", "overlap_p2p_comm on a non-interleaved schedule crashes", fix="crash")
def overlap_without_vpp(view):
    """
    ## What it does
    Flags an effective `overlap_p2p_comm: true` with PP > 1 and `virtual_pipeline_model_parallel_size: null`.
    (An explicit VPP of 1 selects the interleaved schedule in Megatron-Core; PP203 covers that case.)

    ## Why it matters
    A value set in `comm_overlap` wins over Bridge's choice, unchecked. Megatron-Core's
    `forward_backward_pipelining_without_interleaving` then raises at the first training step:
    `ValueError: Non-interleaved pipeline parallelism does not support overlapping p2p communication`
    (megatron/core/pipeline_parallel/schedules.py).

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4}
    comm_overlap: {tp_comm_overlap: false, overlap_p2p_comm: true}
    ```

    ## Fix
    Removes the `overlap_p2p_comm: true` override (Bridge then picks batched p2p). **Safe (a) — removes a launch crash**: the
    override would crash the run. Getting p2p overlap instead needs VPP > 1, which changes memory use and
    the checkpoint layout, so it is PP201's unsafe fix: with `--unsafe-fixes` the next round adds the
    VPP and Bridge turns p2p overlap on by itself — the request then works rather than being dropped.
    """
    # Megatron-Core picks the interleaved schedule whenever VPP is not None — even VPP=1 — so only a
    # null VPP means the non-interleaved schedule (megatron/core/pipeline_parallel/schedules.py).
    if view.pp > 1 and view.vpp_final is None and view.value("model.overlap_p2p_comm") is True:
        if view.cfg.get(("comm_overlap", "overlap_p2p_comm")) is True:
            key = "comm_overlap.overlap_p2p_comm"
            fix = safe("remove comm_overlap.overlap_p2p_comm (crashes without VPP)", remove(key))
        else:
            key = "model.overlap_p2p_comm"
            fix = safe("set model.overlap_p2p_comm: false (crashes without VPP)", set_(key, False))
        yield finding(
            view,
            "PP202",
            "error",
            f"overlap_p2p_comm is true with PP={view.pp} and no VPP: Megatron-Core raises 'Non-interleaved pipeline "
            "parallelism does not support overlapping p2p communication' at the first step",
            key,
            fix,
        )


@rule("PP203", "p2p-overlap-and-batch", "error", "overlap_p2p_comm and batch_p2p_comm both true on the interleaved schedule", fix="crash")
def overlap_and_batch(view):
    """
    ## What it does
    Flags effective `overlap_p2p_comm: true` together with `batch_p2p_comm: true` when PP > 1 and VPP is set
    (the interleaved schedule; Megatron-Core uses it for any non-null VPP, even 1 — with VPP=1 Bridge's
    automatic `batch_p2p_comm=True` meets a user `overlap_p2p_comm: true`).

    ## Why it matters
    Setting only `comm_overlap.batch_p2p_comm: true` leaves Bridge's automatic `overlap_p2p_comm=True` in
    place. `forward_backward_pipelining_with_interleaving` then raises
    `ValueError: Can not use both overlap_p2p_comm and batch_p2p_comm` at the first step.

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: 2}
    comm_overlap: {tp_comm_overlap: false, batch_p2p_comm: true}   # Bridge adds overlap_p2p_comm=true
    ```

    ## Fix
    Sets `comm_overlap.batch_p2p_comm: false`. **Safe (a) — removes a launch crash**: keeps the requested p2p overlap, and the
    combination would crash.
    """
    if view.pp > 1 and view.vpp_final is not None and view.value("model.overlap_p2p_comm") is True and view.value("model.batch_p2p_comm") is True:
        where = "comm_overlap" if view.comm_overlap_present else "model"
        yield finding(
            view,
            "PP203",
            "error",
            "overlap_p2p_comm and batch_p2p_comm are both true with VPP > 1: Megatron-Core raises "
            "'Can not use both overlap_p2p_comm and batch_p2p_comm' at the first step",
            f"{where}.batch_p2p_comm",
            safe("set batch_p2p_comm: false (cannot be combined with overlap_p2p_comm)", set_(f"{where}.batch_p2p_comm", False)),
        )


@rule("PP204", "defer-embedding-wgrad-no-limit", "error", "defer_embedding_wgrad_compute without wgrad_deferral_limit", fix="unsafe")
def defer_without_limit(view):
    """
    ## What it does
    Flags `comm_overlap.defer_embedding_wgrad_compute: true` without `comm_overlap.wgrad_deferral_limit`.

    ## Why it matters
    Bridge writes `wgrad_deferral_limit=-1` onto the model unless the limit is set in `comm_overlap`
    (comm_overlap.py). Megatron-Core's ModelParallelConfig then raises at `model.finalize()`:
    `ValueError: Wgrad deferral limit should be greater than or equal to 0 when it is enabled!`
    (megatron/core/model_parallel_config.py). Bridge's own recipes always pass a limit (22, 50).

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: 2}
    comm_overlap: {tp_comm_overlap: false, defer_embedding_wgrad_compute: true}   # no wgrad_deferral_limit
    ```

    ## Fix
    Adds `comm_overlap.wgrad_deferral_limit: 0` (0 = defer the embedding wgrad of all micro-batches).
    **Unsafe**: the limit is a tuning knob that affects memory; pick your own value if you know it.
    """
    if view.value("model.defer_embedding_wgrad_compute") is True and view.value("model.wgrad_deferral_limit") is not None:
        if view.value("model.wgrad_deferral_limit") < 0:
            yield finding(
                view,
                "PP204",
                "error",
                f"defer_embedding_wgrad_compute is on but wgrad_deferral_limit is {view.value('model.wgrad_deferral_limit')}: "
                "Megatron-Core raises 'Wgrad deferral limit should be greater than or equal to 0 when it is enabled!'",
                "comm_overlap.defer_embedding_wgrad_compute" if view.comm_overlap_present else "model.wgrad_deferral_limit",
                unsafe(
                    "set wgrad_deferral_limit: 0 (deferred embedding wgrad needs a limit >= 0)",
                    Edit("set", ("comm_overlap" if view.comm_overlap_present else "model") + ".wgrad_deferral_limit", 0),
                ),
            )


# ----------------------------------------------------------------------------------------------
# Launch-time checks of Megatron-Core's ModelParallelConfig / TransformerConfig
# ----------------------------------------------------------------------------------------------


def _defer_key(view) -> str:
    if view.comm_overlap_present:
        return "comm_overlap.defer_embedding_wgrad_compute"
    return "model.defer_embedding_wgrad_compute"


@rule("PP205", "defer-embedding-wgrad-prerequisites", "error", "defer_embedding_wgrad_compute without PP > 1 or gradient accumulation fusion", fix="crash", frameworks=BOTH)
def defer_prerequisites(view):
    """
    ## What it does
    Flags an effective `defer_embedding_wgrad_compute: true` (from comm_overlap, or from the model when
    there is no comm_overlap section) with `pipeline_model_parallel_size: 1` or without
    `gradient_accumulation_fusion`.

    ## Why it matters
    Megatron-Core's `ModelParallelConfig.__post_init__` raises at model finalize (megatron-core 0.19.2,
    `megatron/core/model_parallel_config.py:545-557`), in this order:
    `ValueError: Cannot defer embedding wgrad compute when pipeline model parallel is not used`,
    `ValueError: Cannot defer embedding wgrad compute when gradient accumulation fusion is not used`,
    then the deferral-limit check (PP204). Bridge's GPT provider turns gradient accumulation fusion on when
    Transformer Engine imports on the machine that builds the recipe (megatron/bridge/models/gpt_provider.py:205),
    so the second check fires when a file sets it false or the target has no Transformer Engine. A file's
    value is the one that runs: `ConfigContainer.from_yaml` passes it to the provider and the
    `--config-file` merge writes it over the recipe's. A recipe dump made where Transformer Engine was not
    installed holds `gradient_accumulation_fusion: false`, so such a saved copy of a recipe that defers the
    embedding wgrad fails on every machine; the finding says so.

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 1}
    comm_overlap: {tp_comm_overlap: false, defer_embedding_wgrad_compute: true, wgrad_deferral_limit: 0}
    ```

    ## Fix
    Turns `defer_embedding_wgrad_compute` off. **Safe (a) — removes a launch crash**: the deferral cannot start without pipeline
    parallelism and the fused accumulation, so nothing that ran is lost.
    """
    if view.value("model.defer_embedding_wgrad_compute") is not True:
        return
    key = _defer_key(view)
    off = safe(f"set {key}: false (it cannot run here)", set_(key, False))
    if view.pp == 1:
        yield finding(
            view,
            "PP205",
            "error",
            "defer_embedding_wgrad_compute with pipeline_model_parallel_size=1: Megatron-Core raises "
            "\"Cannot defer embedding wgrad compute when pipeline model parallel is not used\"",
            key,
            off,
        )
    if not view.get_final("model", "gradient_accumulation_fusion"):
        if view.gaf_from_provider:
            why = "the target has no Transformer Engine, so the provider leaves gradient_accumulation_fusion off"
        elif view.gaf_dumped:
            where = view.cfg.where(("model", "gradient_accumulation_fusion"))
            why = (
                f"model.gradient_accumulation_fusion is false in {where}, and Bridge launches the value a file holds "
                "on any machine (the provider computes it only when it builds the recipe: a dump made where "
                "Transformer Engine was not installed writes false; true restores the recipe where the target has it)"
            )
        else:
            why = "model.gradient_accumulation_fusion is false"
        yield finding(
            view,
            "PP205",
            "error",
            f"defer_embedding_wgrad_compute but {why}: Megatron-Core raises "
            "\"Cannot defer embedding wgrad compute when gradient accumulation fusion is not used\"",
            key,
            off,
        )


@rule("PP206", "warmup-flush-needs-overlap-p2p", "error", "overlap_p2p_comm_warmup_flush without overlap_p2p_comm (or with batch_p2p_comm)", fix="crash", frameworks=BOTH)
def warmup_flush(view):
    """
    ## What it does
    Flags `model.overlap_p2p_comm_warmup_flush: true` when the effective `overlap_p2p_comm` is false or
    the effective `batch_p2p_comm` is true.

    ## Why it matters
    Megatron-Core raises at model finalize (megatron-core 0.19.2, `megatron/core/model_parallel_config.py:572`):
    `ValueError: Pipeline parallel communication overlapping in warmup and flush is only compatible with
    overlap_p2p_comm but not batch_p2p_comm.` The flag is not a comm_overlap field, but the p2p pair is:
    comm_overlap picks `false/true` for PP > 1 without VPP and `false/false` for PP = 1, so the flag only
    works on the interleaved schedule (or when the pair is set explicitly).

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4, overlap_p2p_comm_warmup_flush: true}   # no VPP
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    On the interleaved schedule: sets `overlap_p2p_comm: true` and `batch_p2p_comm: false` where they are
    decided (comm_overlap, else the model). **Safe (a) — removes a launch crash**: it is what the flag needs and what Bridge picks for
    VPP > 1 anyway. Otherwise turns the flag off. **Safe (a) — removes a launch crash**: it cannot work without p2p overlap.
    """
    if view.get_final("model", "overlap_p2p_comm_warmup_flush") is not True:
        return
    overlap, batch = view.value("model.overlap_p2p_comm"), view.value("model.batch_p2p_comm")
    if overlap is True and batch is not True:
        return
    if any(getattr(view.effective.get(k), "source", None) == "unknown" for k in ("model.overlap_p2p_comm", "model.batch_p2p_comm")):
        return  # whether it raises depends on a value not known statically
    section = "comm_overlap" if view.comm_overlap_present else "model"
    if view.pp > 1 and view.vpp_final is not None:
        fix = safe(
            f"set {section}.overlap_p2p_comm: true and {section}.batch_p2p_comm: false",
            set_(f"{section}.overlap_p2p_comm", True),
            set_(f"{section}.batch_p2p_comm", False),
        )
    else:
        fix = safe(
            "set model.overlap_p2p_comm_warmup_flush: false (p2p overlap needs the interleaved schedule)",
            set_("model.overlap_p2p_comm_warmup_flush", False),
        )
    yield finding(
        view,
        "PP206",
        "error",
        f"overlap_p2p_comm_warmup_flush with overlap_p2p_comm={str(overlap).lower()}, batch_p2p_comm={str(batch).lower()}: "
        "Megatron-Core raises \"Pipeline parallel communication overlapping in warmup and flush is only compatible "
        "with overlap_p2p_comm but not batch_p2p_comm.\"",
        "model.overlap_p2p_comm_warmup_flush",
        fix,
    )
