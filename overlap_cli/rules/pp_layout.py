"""PP207-PP208 — ``model.pipeline_model_parallel_layout``: the virtual pipeline size it implies, and the
layouts Megatron-Core rejects.

Megatron-Core (0.19.2) reads the layout at model finalize (``transformer_config.py:1936-1985``), after
Bridge's comm_overlap chose its pipeline defaults from the raw, null VPP. The stage count comes from
``overlap_cli.frameworks.bridge.pipeline_layout`` through the resolver (``view.layout``, ``view.layout_vpp``).
"""

from __future__ import annotations

from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, safe, set_, unsafe

_LAYOUT = "model.pipeline_model_parallel_layout"


@rule("PP207", "vpp-implied-by-layout", "warning", "pipeline_model_parallel_layout implies VPP, but comm_overlap sees none", fix="crash/unsafe")
def vpp_implied_by_layout(view):
    """
    ## What it does
    Flags `model.pipeline_model_parallel_layout` with more stages than PP (so a virtual pipeline size of
    stages / PP > 1) while `virtual_pipeline_model_parallel_size` is null and comm_overlap is present.

    ## Why it matters
    Megatron-Core derives the VPP from the layout at model finalize (megatron-core 0.19.2,
    `transformer_config.py:1969-1981`) and runs the interleaved schedule. comm_overlap runs earlier and
    reads the null: it picks `overlap_p2p_comm=false, batch_p2p_comm=true` and `align_param_gather=false`
    — the non-interleaved choices — so pipeline p2p is not overlapped. With
    `comm_overlap.overlap_moe_expert_parallel_comm: true` it is an **error**: Bridge's EP pre-check
    (megatron-bridge 0.6.2, `comm_overlap.py:495`) asserts
    `If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1`
    although Megatron-Core would have accepted the derived value.

    ## Example
    ```yaml
    model: {num_layers: 14, pipeline_model_parallel_size: 4, pipeline_model_parallel_layout: "Et|tt|tt|tt|tt|tt|tt|tL"}
    comm_overlap: {tp_comm_overlap: false}   # 8 stages on PP=4: VPP=2, but VPP is null here
    ```

    ## Fix
    Sets `model.virtual_pipeline_model_parallel_size` to the layout's value. With EP overlap requested
    **Safe (a) — removes a launch crash**: Bridge's pre-check asserts without it, and Megatron-Core uses
    that value anyway. Otherwise **Unsafe**: Megatron-Core uses
    that value anyway (the schedule and layer placement do not change), but once comm_overlap sees it
    Bridge picks the interleaved p2p mode (`overlap_p2p_comm: true`, `batch_p2p_comm: false`) instead of
    batched p2p: a change of what runs that the file did not ask for.
    """
    if not view.comm_overlap_present or view.vpp is not None or view.pp <= 1:
        return
    vpp = view.layout_vpp
    if vpp is None or vpp <= 1:
        return
    edit = set_("model.virtual_pipeline_model_parallel_size", vpp)
    message = f"set model.virtual_pipeline_model_parallel_size: {vpp} (what the layout implies)"
    # Unsafe: once comm_overlap sees VPP > 1 it picks the interleaved p2p mode instead of batched p2p.
    fix = unsafe(message, edit)
    stages = f"the layout has {view.layout.stages} stages for PP={view.pp}, i.e. VPP={vpp}"
    if view.comm_overlap_present and view.requested("overlap_moe_expert_parallel_comm") is True:
        yield finding(
            view,
            "PP207",
            "error",
            f"{stages}, but virtual_pipeline_model_parallel_size is null: Bridge's EP-overlap pre-check asserts "
            "\"If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
            "pipeline_model_parallel_size > 1\"",
            _LAYOUT,
            safe(message, edit),  # the assert stops the launch: (a)
        )
        return
    yield finding(
        view,
        "PP207",
        "warning",
        f"{stages}, but virtual_pipeline_model_parallel_size is null: comm_overlap picks non-interleaved defaults "
        f"(overlap_p2p_comm={str(view.value('model.overlap_p2p_comm')).lower()}, align_param_gather=false) for a run "
        "that uses the interleaved schedule",
        _LAYOUT,
        fix,
    )


@rule("PP208", "layout-conflict", "error", "pipeline_model_parallel_layout that Megatron-Core rejects", fix="crash")
def layout_conflict(view):
    """
    ## What it does
    Checks `model.pipeline_model_parallel_layout` the way Megatron-Core reads it at model finalize
    (megatron-core 0.19.2, `transformer_config.py:1936-1985`, `pipeline_parallel_layer_layout.py`):
    - set together with `num_layers_in_first_pipeline_stage`, `num_layers_in_last_pipeline_stage`,
      `account_for_embedding_in_pipeline_split` or `account_for_loss_in_pipeline_split`:
      `ValueError: pipeline_model_parallel_layout cannot be set with other pipeline layout arguments.`
    - a character other than E, L, t, m (spaces included): `Invalid layer character: …`
    - stage count not divisible by PP: `pipeline_model_parallel_layout must be divisible by
      pipeline_model_parallel_size (len(layout)=…, pipeline_model_parallel_size=…)`
    - an explicit VPP different from stages / PP: `virtual_pipeline_model_parallel_size conflicts with
      pipeline_model_parallel_layout, …`
    - a layout implying VPP > 1 with PP = 1: `RuntimeError: pipeline-model-parallel size should be greater
      than 1 with interleaved schedule` (megatron/core/parallel_state.py:829, at initialisation).

    ## Why it matters
    The layout decides which layers each pipeline stage holds, so Megatron-Core has no fallback: it
    raises. The layout checks run in `TransformerConfig.__post_init__`, which Bridge's `validate()` reaches
    through `model.finalize()` (megatron-bridge 0.6.2, `config.py:1262`); the PP = 1 case fails a little
    later, when the process groups are built. Either way every rank stops during start-up, after the job
    waited in the queue.

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 2, pipeline_model_parallel_layout: "Et|tt|tL"}   # 3 stages on PP=2
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    For a conflicting explicit VPP: sets it to the layout's value. **Safe (a) — removes a launch crash**: Megatron-Core accepts
    nothing else. No fix otherwise (the layout is yours to write).
    """
    raw = view.get_final("model", "pipeline_model_parallel_layout")
    if raw is None or view.layout is None:
        return
    others = [
        k
        for k in (
            "num_layers_in_first_pipeline_stage",
            "num_layers_in_last_pipeline_stage",
            "account_for_embedding_in_pipeline_split",
            "account_for_loss_in_pipeline_split",
        )
        if view.get_final("model", k) not in (None, False)
    ]
    if others:
        yield finding(
            view, "PP208", "error",
            f"pipeline_model_parallel_layout together with {', '.join(others)}: Megatron-Core raises "
            "\"pipeline_model_parallel_layout cannot be set with other pipeline layout arguments.\"",
            _LAYOUT,
        )
    if view.layout.problem:
        yield finding(view, "PP208", "error", f"Megatron-Core cannot read the layout: \"{view.layout.problem}\"", _LAYOUT)
        return
    stages = view.layout.stages
    if stages % view.pp:
        yield finding(
            view, "PP208", "error",
            f"the layout has {stages} stages, not a multiple of PP={view.pp}: Megatron-Core asserts "
            f"\"pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (len(layout)={stages}, "
            f"pipeline_model_parallel_size={view.pp})\"",
            _LAYOUT,
        )
        return
    detected = view.layout_vpp
    if view.vpp is not None and view.vpp != detected:
        yield finding(
            view, "PP208", "error",
            f"virtual_pipeline_model_parallel_size={view.vpp} but the layout implies {detected}: Megatron-Core asserts "
            "\"virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout\"",
            "model.virtual_pipeline_model_parallel_size",
            safe(
                f"set model.virtual_pipeline_model_parallel_size: {detected} (the layout's value)",
                set_("model.virtual_pipeline_model_parallel_size", detected),
            ),
        )
    elif view.pp == 1 and view.vpp_final is not None:
        yield finding(
            view, "PP208", "error",
            f"the layout implies VPP={view.vpp_final} with pipeline_model_parallel_size=1: Megatron-Core raises "
            "\"pipeline-model-parallel size should be greater than 1 with interleaved schedule\"",
            _LAYOUT,
        )
