"""EP704-EP710 — delayed weight-gradient computation (``delay_wgrad_compute``) and its variants.

Sources: megatron-bridge 0.6.2 ``megatron/bridge/training/comm_overlap.py:520-557`` (Bridge's pre-check,
only when ``comm_overlap.delay_wgrad_compute: true``); megatron-core 0.19.2
``megatron/core/transformer/transformer_config.py:2749-2776`` (at model finalize) and
``megatron/core/extensions/transformer_engine.py:916-920`` (when Transformer Engine layers are built).
"""

from __future__ import annotations

from overlap_cli.launch_profile import versions
from overlap_cli.results import Edit
from overlap_cli.rules.registry import BOTH, rule
from overlap_cli.rules.common import finding, has_graph_module, model_key, model_value, safe, set_, te_version, unknown_version_text, unsafe
from overlap_cli.rules.ep import ep_overlap_effective

_DELAY = "comm_overlap.delay_wgrad_compute"
_EP = "overlap_moe_expert_parallel_comm"


def _delay_in_comm_overlap(view) -> bool:
    return view.comm_overlap_present and view.requested("delay_wgrad_compute") is True


def _delay_effective(view) -> bool:
    return view.get_final("model", "delay_wgrad_compute") is True


def _where(view) -> str:
    return _DELAY if _delay_in_comm_overlap(view) else "model.delay_wgrad_compute"


def _wgrad_in_graph(view) -> tuple[bool, bool]:
    """(weight gradients inside a CUDA graph, attention captured) as Bridge decides it at comm_overlap setup
    (co.py:538-543). ``has_cuda_graph_module`` ignores cuda_graph_impl, so "none" still counts."""
    attn = has_graph_module(view, "attn", at_setup=True)
    router = (
        has_graph_module(view, "moe_router", at_setup=True)
        and model_value(view, "moe_shared_expert_intermediate_size", True) is not None
        and not model_value(view, "moe_shared_expert_overlap", True)
    )
    return attn or router, attn


def _clear_graph_modules_fix(view):
    """Safe when cuda_graph_impl is 'none': validate() clears the modules anyway (cuda_graph.py:134-153),
    but only after comm_overlap's check has seen them."""
    if model_value(view, "cuda_graph_impl") != "none":
        return None
    edits = []
    for key in ("cuda_graph_modules", "cuda_graph_scope"):
        if view.cfg.get(("model", key)) not in (None, "full", "", []):
            edits.append(set_(f"model.{key}", [] if key == "cuda_graph_modules" else None))
    if not edits:
        return None
    return safe("clear the CUDA-graph modules (cuda_graph_impl is 'none', so they capture nothing)", *edits)


@rule("EP704", "delay-wgrad-without-ep-overlap", "error", "delay_wgrad_compute without EP overlap", fix="crash", frameworks=BOTH)
def delay_without_ep_overlap(view):
    """
    ## What it does
    Flags `delay_wgrad_compute: true` when expert-parallel overlap is not requested at all.

    ## Why it matters
    Delayed wgrad is scheduled by the EP all-to-all overlap. With `comm_overlap.delay_wgrad_compute: true`
    Bridge asserts that EP overlap is set on the model or in comm_overlap (megatron-bridge 0.6.2,
    `comm_overlap.py:532`): `overlap_moe_expert_parallel_comm is required for delay_wgrad_compute`.
    Without a comm_overlap section, `model.delay_wgrad_compute: true` reaches Megatron-Core
    (megatron-core 0.19.2, `transformer_config.py:2750`):
    `overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute`.
    (EP overlap set only on the model under comm_overlap is a different trap: EP705.)

    ## Example
    ```yaml
    comm_overlap: {tp_comm_overlap: false, delay_wgrad_compute: true}
    ```

    ## Fix
    Turns `delay_wgrad_compute` off. **Safe (a) — removes a launch crash**: the request cannot start. (Enabling EP overlap instead is
    a larger change with its own prerequisites, EP701.)
    """
    if _delay_in_comm_overlap(view):
        if model_value(view, _EP, at_setup=True) or view.cfg.get(("comm_overlap", _EP)):
            return
        yield finding(
            view, "EP704", "error",
            "comm_overlap.delay_wgrad_compute is true but EP overlap is not requested: Bridge asserts "
            "\"overlap_moe_expert_parallel_comm is required for delay_wgrad_compute\"",
            _DELAY,
            safe("set comm_overlap.delay_wgrad_compute: false (needs EP overlap)", set_(_DELAY, False)),
        )
    elif not view.comm_overlap_present and _delay_effective(view) and not ep_overlap_effective(view):
        yield finding(
            view, "EP704", "error",
            "model.delay_wgrad_compute is true without EP overlap: Megatron-Core asserts "
            "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\"",
            "model.delay_wgrad_compute",
            safe("set model.delay_wgrad_compute: false (needs EP overlap)", set_("model.delay_wgrad_compute", False)),
        )


@rule("EP705", "ep-overlap-reset-trap", "error", "delay_wgrad_compute with EP overlap set only on the model", fix="crash")
def ep_overlap_reset_trap(view):
    """
    ## What it does
    Flags `comm_overlap.delay_wgrad_compute: true` together with `model.overlap_moe_expert_parallel_comm:
    true` when `comm_overlap.overlap_moe_expert_parallel_comm` is not true.

    ## Why it matters
    Bridge's pre-check accepts EP overlap from either place (megatron-bridge 0.6.2, `comm_overlap.py:532`),
    so it passes. Then comm_overlap writes its own value onto the model — false unless set in comm_overlap
    (`comm_overlap.py:438`, applied at 618) — and Megatron-Core asserts at model finalize
    (megatron-core 0.19.2, `transformer_config.py:2750`):
    `overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute`.
    The check that should have caught it looked at the value that was about to be erased.

    ## Example
    ```yaml
    model: {overlap_moe_expert_parallel_comm: true}
    comm_overlap: {tp_comm_overlap: false, delay_wgrad_compute: true}
    ```

    ## Fix
    Moves the flag into `comm_overlap.overlap_moe_expert_parallel_comm: true` and removes it from the
    model. **Safe (a) — removes a launch crash**: it keeps both requests and is where Bridge reads them. EP701 then checks the EP
    prerequisites, as Megatron-Core would have.
    """
    if not _delay_in_comm_overlap(view):
        return
    if model_value(view, _EP, at_setup=True) is True and view.cfg.get(("comm_overlap", _EP)) is not True:
        explicit = view.cfg.get(("comm_overlap", _EP)) is False
        yield finding(
            view, "EP705", "error",
            "model.overlap_moe_expert_parallel_comm is true but comm_overlap"
            + (" sets it false" if explicit else " does not set it")
            + ": Bridge's check passes, comm_overlap then resets the model flag to false and Megatron-Core asserts "
            "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\"",
            model_key(view, _EP, _DELAY),
            safe(
                "move overlap_moe_expert_parallel_comm: true into comm_overlap (comm_overlap resets the model flag)",
                set_(f"comm_overlap.{_EP}", True),
                Edit("remove", f"model.{_EP}"),
            ),
        )


def _te_requirements(view) -> list:
    """(minimum TE version, why, message at launch) for delayed wgrad, in launch order."""
    reqs = []
    have = te_version(view) or "{version}"
    if _delay_in_comm_overlap(view):
        if view.ddp_at_setup.get("overlap_grad_reduce") or view.cfg.get(("comm_overlap", "overlap_grad_reduce")):
            reqs.append((
                "2.7.0", "with overlap_grad_reduce (Bridge, comm_overlap.py:522)",
                "TE version >= 2.7.0 is required for overlap_grad_reduce when usingdelay_wgrad_compute. "
                f"Current TE version: {have}",
            ))
        if model_value(view, "gradient_accumulation_fusion", at_setup=True) is True:
            reqs.append((
                "2.7.0", "with gradient_accumulation_fusion (Bridge, comm_overlap.py:527)",
                "TE version >= 2.7.0 is required for gradient_accumulation_fusion when usingdelay_wgrad_compute. "
                f"Current TE version: {have}",
            ))
        if _wgrad_in_graph(view)[0]:
            reqs.append((
                "2.12.0", "with weight gradients inside a CUDA graph (Bridge, comm_overlap.py:546)",
                "CUDA graph with delay_wgrad_compute requires TE version >= 2.12.0.",
            ))
    if _delay_effective(view):
        if model_value(view, "cuda_graph_impl") == "transformer_engine":
            reqs.append((
                "2.10.0", "with cuda_graph_impl 'transformer_engine' (Megatron-Core, transformer_config.py:2754)",
                "TE version >= 2.10.0 is required for delay_wgrad_compute with partial cuda graph",
            ))
        if view.get_final("model", "transformer_impl") == "transformer_engine":
            reqs.append((
                "2.3.0", "to build Transformer Engine layers (Megatron-Core, extensions/transformer_engine.py:920)",
                "Only TE with version >=2.3.0 supports delay_wgrad_compute now.",
            ))
    return reqs


@rule("EP706", "delay-wgrad-te-version", "error", "delay_wgrad_compute needs a newer Transformer Engine", fix="crash")
def delay_wgrad_te_version(view):
    """
    ## What it does
    Checks the target's Transformer Engine version (`--te-version`; 0.0.0 with `--no-te`, as Megatron-Core
    reports it) against every minimum that delayed wgrad implies here, in launch order:

    | Minimum | When | Message at launch |
    |---|---|---|
    | 2.7.0 | `ddp.overlap_grad_reduce` as written, or `comm_overlap.overlap_grad_reduce` (Bridge, `comm_overlap.py:522`) | `TE version >= 2.7.0 is required for overlap_grad_reduce when usingdelay_wgrad_compute. Current TE version: {v}` |
    | 2.7.0 | `gradient_accumulation_fusion` true (Bridge, `comm_overlap.py:527`) | `TE version >= 2.7.0 is required for gradient_accumulation_fusion when usingdelay_wgrad_compute. Current TE version: {v}` |
    | 2.12.0 | weight gradients in a CUDA graph: `attn` in the graph modules, or `moe_router` with shared experts not overlapped (Bridge, `comm_overlap.py:546`) | `CUDA graph with delay_wgrad_compute requires TE version >= 2.12.0.` |
    | 2.10.0 | `cuda_graph_impl: transformer_engine` (Megatron-Core 0.19.2, `transformer_config.py:2754`) | `TE version >= 2.10.0 is required for delay_wgrad_compute with partial cuda graph` |
    | 2.3.0 | any Transformer Engine layer (Megatron-Core, `extensions/transformer_engine.py:920`, RuntimeError) | `Only TE with version >=2.3.0 supports delay_wgrad_compute now.` |

    The first three run only for `comm_overlap.delay_wgrad_compute: true` (Bridge's pre-check), the last
    two whenever delayed wgrad reaches the model. The missing space in "usingdelay_wgrad_compute" is in
    Bridge's source. Bridge tests `overlap_grad_reduce` **before** its own data-parallel defaults, so an
    overlap that only Bridge's DP default turns on does not trigger the 2.7.0 check.

    ## Why it matters
    AssertionError during start-up. Megatron-LM's launcher differs (it wants 2.8 with overlap_grad_reduce);
    this rule follows what Bridge runs. Without `--te-version` the rule reports, as info, the minimum needed.

    ## Example
    Checked with `--torch-version 2.6 --te-version 2.6`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: alltoall}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}
    # gradient_accumulation_fusion is on by default with Transformer Engine: it needs TE >= 2.7.0
    ```

    ## Fix
    None for a too-old TE (upgrade it). **Safe (a) — removes a launch crash** when the 2.12.0 minimum comes only from
    `cuda_graph_modules` naming `attn` while `cuda_graph_impl` is `none`: those modules capture nothing
    (validate() clears them), so the fix clears them too.
    """
    reqs = _te_requirements(view)
    if not reqs:
        return
    have = te_version(view)
    status = {need: versions.status(have, need) for need, _, _ in reqs}
    if all(s == "unknown" for s in status.values()):
        top = max((need for need, _, _ in reqs), key=versions.sort_key)
        why = "; ".join(f">= {need} {reason}" for need, reason, _ in reqs)
        yield finding(
            view, "EP706", "info",
            f"delay_wgrad_compute here needs Transformer Engine {why} "
            f"({unknown_version_text(have, 'Transformer Engine', '--te-version')}; the highest minimum is {top})",
            _where(view),
        )
        return
    for need, reason, quote in reqs:
        if status[need] != "too-old":
            continue
        fix = _clear_graph_modules_fix(view) if need == "2.12.0" else None
        yield finding(
            view, "EP706", "error",
            f"Transformer Engine {have} is older than {need}, needed {reason}: the launch fails with \"{quote}\"",
            _where(view),
            fix,
        )


def _dumped_false(view) -> str:
    """Why a file's ``gradient_accumulation_fusion: false`` is there, for a class that computes the default on
    the machine that builds it (gpt_provider.py:205): most likely a dump made without Transformer Engine."""
    where = view.cfg.where(("model", "gradient_accumulation_fusion"))
    return (f"false in {where}, which Bridge launches on any machine; a dump made where Transformer Engine was not "
            "installed writes false, the recipe built on a target with it has true")


@rule("EP707", "delay-wgrad-cuda-graph", "error", "delay_wgrad_compute with weight gradients in a CUDA graph", fix="crash/unsafe")
def delay_wgrad_cuda_graph(view):
    """
    ## What it does
    With `comm_overlap.delay_wgrad_compute: true` and weight gradients inside a CUDA graph (`attn` in
    `cuda_graph_modules` / `cuda_graph_scope`, or `moe_router` with shared experts that are not
    overlapped), checks Bridge's two non-version requirements (megatron-bridge 0.6.2,
    `comm_overlap.py:549-557`):
    - `gradient_accumulation_fusion` must be on: `CUDA graph with delay_wgrad_compute requires
      gradient_accumulation_fusion to be enabled. This is because default gradient accumulation does not
      use static memory addresses, which breaks CUDA graph requirements.`
    - with `attn` captured, no attention bias (`add_bias_linear` — **true by default** in Megatron-Core —
      and `add_qkv_bias` both false): `CUDA graph with delay_wgrad_compute does not support attention bias
      for now.`

    ## Why it matters
    Bridge reads the module names without looking at `cuda_graph_impl`, before validate() clears them for
    `cuda_graph_impl: none`, so even modules that will never be captured trigger these asserts.

    ## Example
    Checked with `--torch-version 2.6 --te-version 2.12`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: alltoall,
            gradient_accumulation_fusion: false, cuda_graph_impl: transformer_engine, cuda_graph_modules: [attn]}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}
    ```

    ## Fix
    **Safe (a) — removes a launch crash** with `cuda_graph_impl: none`: clear the modules (they capture nothing). Otherwise
    **unsafe** for fusion: set `model.gradient_accumulation_fusion: true` (a different gradient
    accumulation kernel). None for attention bias (a model change).
    """
    if not _delay_in_comm_overlap(view):
        return
    in_graph, attn = _wgrad_in_graph(view)
    if not in_graph:
        return
    clear = _clear_graph_modules_fix(view)
    if not model_value(view, "gradient_accumulation_fusion", at_setup=True):
        yield finding(
            view, "EP707", "error",
            "weight gradients are in a CUDA graph but gradient_accumulation_fusion is off"
            + (f" ({_dumped_false(view)})" if view.gaf_dumped else "") + ": Bridge asserts "
            "\"CUDA graph with delay_wgrad_compute requires gradient_accumulation_fusion to be enabled.\"",
            model_key(view, "gradient_accumulation_fusion", _DELAY),
            clear or unsafe("set model.gradient_accumulation_fusion: true (CUDA-graphed wgrad needs static buffers)", set_("model.gradient_accumulation_fusion", True)),
        )
    if attn and (model_value(view, "add_bias_linear", True) or model_value(view, "add_qkv_bias", True)):
        which = [k for k in ("add_bias_linear", "add_qkv_bias") if model_value(view, k, True)]
        default = " (Megatron-Core's default)" if which == ["add_bias_linear"] and not view.cfg.has(("model", "add_bias_linear")) else ""
        yield finding(
            view, "EP707", "error",
            f"attention is CUDA-graphed with {' and '.join(which)} true{default}: Bridge asserts "
            "\"CUDA graph with delay_wgrad_compute does not support attention bias for now.\"",
            model_key(view, which[0], _DELAY),
            clear,
        )


@rule("EP708", "dispatch-backward-wgrad-conflict", "error", "overlap_dispatch_backward_with_experts_wgrad conflicts", fix="crash", frameworks=BOTH)
def dispatch_backward_conflict(view):
    """
    ## What it does
    Checks `model.overlap_dispatch_backward_with_experts_wgrad: true` against Megatron-Core's three
    requirements, in order (megatron-core 0.19.2, `transformer_config.py:2759-2770`):
    - EP overlap off: `overlap_moe_expert_parallel_comm must be disabled when enabling
      overlap_dispatch_backward_with_experts_wgrad.`
    - Transformer Engine ≥ 2.3.0 (`--te-version`; info when unknown): `TE version >= 2.3.0 is required for
      overlap_dispatch_backward_with_experts_wgrad`
    - delayed wgrad off: `delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually
      exclusive; use only one`

    ## Why it matters
    These are alternative ways to hide the expert wgrad behind the dispatch; only one may be on.
    AssertionError at model finalize.

    ## Example
    Checked with `--torch-version 2.6 --te-version 2.3`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: alltoall,
            overlap_dispatch_backward_with_experts_wgrad: true}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}
    ```

    ## Fix
    Turns `overlap_dispatch_backward_with_experts_wgrad` off when it conflicts with the other overlap.
    **Safe (a) — removes a launch crash**: the combination cannot start, and the other, already requested overlap stays.
    """
    if view.get_final("model", "overlap_dispatch_backward_with_experts_wgrad") is not True:
        return
    key = "model.overlap_dispatch_backward_with_experts_wgrad"
    off = safe("set model.overlap_dispatch_backward_with_experts_wgrad: false (exclusive with the other wgrad overlap)", set_(key, False))
    if ep_overlap_effective(view):
        yield finding(
            view, "EP708", "error",
            "overlap_dispatch_backward_with_experts_wgrad with EP overlap on: Megatron-Core asserts "
            "\"overlap_moe_expert_parallel_comm must be disabled when enabling overlap_dispatch_backward_with_experts_wgrad.\"",
            key, off,
        )
    have = te_version(view)
    status = versions.status(have, "2.3.0")
    quote = "TE version >= 2.3.0 is required for overlap_dispatch_backward_with_experts_wgrad"
    if status == "too-old":
        yield finding(view, "EP708", "error", f"Transformer Engine {have} is older than 2.3.0: Megatron-Core asserts \"{quote}\"", key)
    elif status == "unknown":
        yield finding(
            view, "EP708", "info",
            f"overlap_dispatch_backward_with_experts_wgrad needs Transformer Engine >= 2.3.0 "
            f"({unknown_version_text(have, 'Transformer Engine', '--te-version')})",
            key,
        )
    if _delay_effective(view):
        yield finding(
            view, "EP708", "error",
            "overlap_dispatch_backward_with_experts_wgrad with delay_wgrad_compute: Megatron-Core asserts "
            "\"delay_wgrad_compute and overlap_dispatch_backward_with_experts_wgrad are mutually exclusive; use only one\"",
            key, off,
        )


@rule("EP709", "early-attn-release-without-ep-overlap", "error", "ep_overlap_early_attn_memory_release without EP overlap", fix="crash", frameworks=BOTH)
def early_attn_release(view):
    """
    ## What it does
    Flags `model.ep_overlap_early_attn_memory_release: true` when EP overlap is off at model finalize —
    including EP overlap set only on the model, which comm_overlap resets to false.

    ## Why it matters
    Megatron-Core asserts (megatron-core 0.19.2, `transformer_config.py:2773`):
    `overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release`.

    ## Example
    ```yaml
    model: {overlap_moe_expert_parallel_comm: true, ep_overlap_early_attn_memory_release: true}
    comm_overlap: {tp_comm_overlap: false}   # resets the model's EP overlap to false
    ```

    ## Fix
    Sets it to false. **Safe (a) — removes a launch crash**: without EP overlap there is nothing to release early, and the run would
    not start.
    """
    if view.get_final("model", "ep_overlap_early_attn_memory_release") is True and not ep_overlap_effective(view):
        key = "model.ep_overlap_early_attn_memory_release"
        yield finding(
            view, "EP709", "error",
            "ep_overlap_early_attn_memory_release is true but EP overlap is off at model finalize: Megatron-Core asserts "
            "\"overlap_moe_expert_parallel_comm must be enabled when enabling ep_overlap_early_attn_memory_release\"",
            key,
            safe("set model.ep_overlap_early_attn_memory_release: false (needs EP overlap)", set_(key, False)),
        )


@rule("EP710", "ddp-delay-wgrad-not-set", "warning", "delay_wgrad_compute reaches the model but not DDP", fix="unsafe")
def ddp_delay_wgrad_not_set(view):
    """
    ## What it does
    Flags delayed wgrad (with EP overlap) on the model while `ddp.delay_wgrad_compute` stays false.

    ## Why it matters
    comm_overlap writes `delay_wgrad_compute` onto ddp only on its distributed-optimizer path
    (megatron-bridge 0.6.2, `comm_overlap.py:636-643`). Without it, Megatron-Core's DDP registers the
    gradient-reduce hook on each parameter instead of on the module's delayed-wgrad hook
    (megatron-core 0.19.2, `distributed/distributed_data_parallel.py:365`), so the reduction is not tied
    to the delayed weight-gradient step. No error is raised; the runtime effect was not verified here.

    ## Example
    Checked with `--torch-version 2.6 --te-version 2.12`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: alltoall}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}
    # no distributed optimizer: comm_overlap never writes ddp.delay_wgrad_compute
    ```

    ## Fix
    Sets `ddp.delay_wgrad_compute: true`, what the distributed-optimizer path would write. **Unsafe**:
    it changes where gradient reduction hooks fire.
    """
    if not (_delay_effective(view) and ep_overlap_effective(view)):
        return
    if view.get_final("ddp", "delay_wgrad_compute") is True or view.megatron_fsdp:
        return
    why = "the distributed optimizer is off when comm_overlap runs" if view.comm_overlap_present else "there is no comm_overlap section"
    yield finding(
        view, "EP710", "warning",
        f"delay_wgrad_compute is on for the model but ddp.delay_wgrad_compute stays false ({why}): "
        "DDP hooks gradient reduction per parameter, not on the delayed wgrad step",
        model_key(view, "delay_wgrad_compute", _where(view)) if not view.cfg.has(("ddp", "delay_wgrad_compute")) else "ddp.delay_wgrad_compute",
        unsafe("set ddp.delay_wgrad_compute: true (as the distributed-optimizer path would)", set_("ddp.delay_wgrad_compute", True)),
    )
