"""EP701-EP703 — expert-parallel all-to-all overlap (``overlap_moe_expert_parallel_comm``): the
prerequisites Megatron-Bridge and Megatron-Core assert at launch, and Megatron-Core's extra checks.
Delayed wgrad (EP704-EP710) is ``ep_wgrad``; the token dispatcher's own checks (EP711-EP712) are
``ep_dispatcher``.

Sources: megatron-bridge 0.6.2 ``megatron/bridge/training/comm_overlap.py`` (co.py) and megatron-core
0.19.2 ``megatron/core/transformer/transformer_config.py`` (tc.py). Messages are quoted verbatim so a
crash log can be matched to the rule with ``overlap explain``.
"""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.rules.registry import BOTH, rule
from overlap_cli.launch_profile import versions
from overlap_cli.rules.common import as_int, finding, fmt, model_key, model_value, safe, set_, torch_version, unknown_version_text, unsafe

_REQUEST = "comm_overlap.overlap_moe_expert_parallel_comm"
_MODEL_FLAG = "model.overlap_moe_expert_parallel_comm"


def ep_overlap_path(view):
    """Which EP-overlap check runs at launch.

    "bridge": comm_overlap asks for it, so Bridge's pre-check runs (co.py:478) and then Megatron-Core's copy.
    "mcore": only the model asks and there is no comm_overlap section to reset it, so only Megatron-Core's
    copy runs (tc.py:2669). None: EP overlap is off at launch (a model-only request under comm_overlap is
    reset to false — CFG004 / EP705 report that).
    """
    if view.comm_overlap_present:
        return "bridge" if view.cfg.get(("comm_overlap", "overlap_moe_expert_parallel_comm")) is True else None
    return "mcore" if view.get_final("model", "overlap_moe_expert_parallel_comm") is True else None


def ep_overlap_effective(view) -> bool:
    """EP overlap as Megatron-Core sees it at model finalize."""
    return view.get_final("model", "overlap_moe_expert_parallel_comm") is True


def _drop_request(view, path: str):
    """Safe fix when EP overlap can never apply: withdraw it (and delayed wgrad, which needs it)."""
    if path == "bridge":
        edits = [set_(_REQUEST, False)]
        if view.cfg.get(("comm_overlap", "delay_wgrad_compute")) is True:
            edits.append(set_("comm_overlap.delay_wgrad_compute", False))
    else:
        edits = [set_(_MODEL_FLAG, False)]
        if view.get_final("model", "delay_wgrad_compute") is True:
            edits.append(set_("model.delay_wgrad_compute", False))
    return safe("turn EP overlap off (it cannot apply to this model)", *edits)


def _smallest_vpp(view):
    from overlap_cli.rules.pp import smallest_vpp as smallest  # the same choice PP201 offers

    return smallest(view.get_final("model", "num_layers"), view.pp)


@rule("EP701", "ep-overlap-prerequisite", "error", "EP all-to-all overlap requested but a prerequisite fails", fix="crash/unsafe",
      frameworks=BOTH)
def ep_overlap_prerequisites(view):
    """
    ## What it does
    Checks every prerequisite of `overlap_moe_expert_parallel_comm` and reports **one finding per failing
    requirement, in the order the launch checks them**, each quoting the exact assertion text. With
    `comm_overlap.overlap_moe_expert_parallel_comm: true` that is Bridge's pre-check
    (megatron-bridge 0.6.2, `megatron/bridge/training/comm_overlap.py:478-518`, AssertionError):

    | # | Requirement | Message at launch |
    |---|---|---|
    | 1 | `expert_model_parallel_size > 1` | `overlap_moe_expert_parallel_comm is only supported when expert_model_parallel_size > 1` |
    | 2 | `num_moe_experts > 1` (null raises TypeError `'>' not supported between instances of 'NoneType' and 'int'`) | `overlap_moe_expert_parallel_comm is only supported when num_moe_experts > 1, … but got {n}` |
    | 3 | `moe_token_dispatcher_type` is `alltoall` or `flex` | `overlap_moe_expert_parallel_comm is only supported when moe_token_dispatcher_type == 'alltoall' or 'flex', … but got {type}` |
    | 4 | `bf16` or `fp16` (after mixed precision) | `overlap_moe_expert_parallel_comm is only supported when using bf16 or fp16 models` |
    | 5 | torch ≥ 2.6.0 (target profile) | `A2A Overlap encounters hang issue with torch version < 2.6.0` |
    | 6 | VPP set when PP > 1 | `If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1` |
    | 7 | `recompute_granularity` is not `full` | `disable full recomputation when enabling overlap_moe_expert_parallel_comm` |
    | 8 | `recompute_method` is null | `disable recomputation method when enabling overlap_moe_expert_parallel_comm` |
    | 9 | `recompute_num_layers` is null | `recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm` |
    | 10 | `moe` not in `recompute_modules` | `disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm` |
    | 11 | `moe_shared_expert_overlap` false | `disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm` |
    | 12 | `mtp_num_layers` is null, 0 or 1 | `MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.` |

    Without a `comm_overlap` section, `model.overlap_moe_expert_parallel_comm: true` reaches
    Megatron-Core's copy instead (megatron-core 0.19.2, `transformer_config.py:2669-2716`, at
    `model.finalize()`), in its order: torch, VPP, EP size (`… is only supported with expert model
    parallelism`), dispatcher (`… is supported with alltoall/flex token dispatcher`), the four recompute
    checks, precision (`… is only supported with bf16 or fp16 model`), shared-expert overlap, MTP. It has
    no expert-count check; EP > 1 without `num_moe_experts` fails earlier with
    `num_moe_experts must be non None to use expert-parallel.` (tc.py:1468).

    ## Why it matters
    Each failure is an AssertionError during start-up on every rank, after the job waited in the queue.
    Launches stop at the first failing requirement; this rule lists all of them so one edit fixes the lot.
    The torch version comes from `--torch-version`; without it requirement 5 is reported as info. Note
    that NGC builds such as `2.6.0a0+…` are pre-releases and count as **below** 2.6.0, as in Megatron-Core.
    When VPP is null but `pipeline_model_parallel_layout` implies one, requirement 6 is reported by PP207
    (it needs a different fix).

    ## Example
    ```yaml
    model: {pipeline_model_parallel_size: 4, expert_model_parallel_size: 8, num_moe_experts: 64,
            moe_token_dispatcher_type: alltoall}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}   # no VPP: requirement 6
    ```

    ## Fix
    Per requirement. **Safe (a) — removes a launch crash**: EP ≤ 1 or not a MoE model (1, 2) turns the request off, since it can never
    apply; shared-expert overlap (11) is switched off, keeping the requested EP overlap. **Unsafe**
    (`--unsafe-fixes`): dispatcher `alltoall` (3), the smallest VPP that divides the layers (6, changes the
    schedule, memory and checkpoint layout), selective instead of full recompute (7-9, more activation
    memory), `moe` dropped from `recompute_modules` (10). No fix for precision, torch, MTP depth.
    """
    path = ep_overlap_path(view)
    if path is None:
        return
    where = _REQUEST if path == "bridge" else _MODEL_FLAG
    at_setup = path == "bridge"  # Bridge reads the model before comm_overlap writes it
    who = "Bridge's EP-overlap pre-check asserts" if path == "bridge" else "Megatron-Core asserts at model finalize"

    def get(key):
        return model_value(view, key, at_setup)

    def err(message, quote, fix=None, severity="error"):
        return finding(view, "EP701", severity, f"{message}; {who} \"{quote}\"", where, fix)

    ep = as_int(get("expert_model_parallel_size")) or 1
    experts = get("num_moe_experts")
    dispatcher = get("moe_token_dispatcher_type")
    half = get("bf16") is True or get("fp16") is True
    pp, vpp = view.pp, (view.vpp if path == "bridge" else view.vpp_final)
    layout_implies_vpp = view.vpp is None and (view.layout_vpp or 0) > 1
    granularity, method, num_layers = get("recompute_granularity"), get("recompute_method"), get("recompute_num_layers")
    modules = get("recompute_modules")
    if modules is None:
        modules = [] if path == "bridge" else ["core_attn"]  # Megatron-Core's default, set before its copy runs
    mtp = get("mtp_num_layers")

    checks = []  # (position in the order of the check that runs, finding)

    def add(bridge_pos, mcore_pos, found):
        checks.append((bridge_pos if path == "bridge" else mcore_pos, found))

    if ep <= 1:
        quote = (
            "overlap_moe_expert_parallel_comm is only supported when expert_model_parallel_size > 1"
            if path == "bridge"
            else "overlap_moe_expert_parallel_comm is only supported with expert model parallelism"
        )
        add(1, 3, err(f"expert_model_parallel_size={ep}: EP overlap needs expert parallelism", quote, _drop_request(view, path)))
    if path == "bridge" and (experts is None or (as_int(experts) is not None and experts <= 1)):
        if experts is None:
            add(2, 0, err(
                "num_moe_experts is null (not a MoE model): the comparison fails with a TypeError",
                "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
                _drop_request(view, path),
            ))
        else:
            add(2, 0, err(
                f"num_moe_experts={experts}: EP overlap needs more than one expert",
                f"overlap_moe_expert_parallel_comm is only supported when num_moe_experts > 1, ... but got {experts}",
                _drop_request(view, path),
            ))
    if path == "mcore" and ep > 1 and experts is None:
        add(0, 0, err(
            f"expert_model_parallel_size={ep} without num_moe_experts", "num_moe_experts must be non None to use expert-parallel."
        ))
    if dispatcher not in ("alltoall", "flex"):
        quote = (
            f"overlap_moe_expert_parallel_comm is only supported when moe_token_dispatcher_type == 'alltoall' or 'flex', ... but got {dispatcher}"
            if path == "bridge"
            else "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher"
        )
        add(3, 4, err(
            f"model.moe_token_dispatcher_type is {fmt(dispatcher)}; EP overlap needs 'alltoall' or 'flex'",
            quote,
            unsafe("set model.moe_token_dispatcher_type: alltoall (EP overlap needs alltoall or flex)", set_("model.moe_token_dispatcher_type", "alltoall")),
        ))
    if not half:
        quote = (
            "overlap_moe_expert_parallel_comm is only supported when using bf16 or fp16 models"
            if path == "bridge"
            else "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model"
        )
        add(4, 9, err("the model is neither bf16 nor fp16 (after mixed precision)", quote))
    status = versions.status(torch_version(view), "2.6.0")
    if status != "ok":
        quote = "A2A Overlap encounters hang issue with torch version < 2.6.0"
        if status == "too-old":
            add(5, 1, err(f"target torch {torch_version(view)} is older than 2.6.0", quote))
        else:
            add(5, 1, finding(
                view, "EP701", "info",
                f"EP overlap needs torch >= 2.6.0 ({unknown_version_text(torch_version(view), 'torch', '--torch-version')}); "
                f"with an older torch the launch fails with \"{quote}\"",
                where,
            ))
    pp_known = pp is not None and getattr(view, "vpp_known", True)  # a Megatron-LM launch may leave them unknown
    if pp_known and pp > 1 and vpp is None and not (path == "bridge" and layout_implies_vpp):
        fix = None
        smallest = _smallest_vpp(view) if view.layout is None else None
        if smallest is not None:
            fix = unsafe(
                f"set model.virtual_pipeline_model_parallel_size: {smallest} (interleaved schedule)",
                set_("model.virtual_pipeline_model_parallel_size", smallest),
            )
        add(6, 2, err(
            f"PP={pp} without virtual_pipeline_model_parallel_size",
            "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1",
            fix,
        ))
    no_full = unsafe(
        "use selective recompute instead of full (recompute_method and recompute_num_layers null)",
        set_("model.recompute_granularity", "selective"),
        set_("model.recompute_method", None),
        set_("model.recompute_num_layers", None),
    )
    if granularity == "full":
        add(7, 5, err("recompute_granularity is 'full'", "disable full recomputation when enabling overlap_moe_expert_parallel_comm", no_full))
    if method is not None:
        fix = no_full if granularity == "full" else unsafe("set model.recompute_method: null (not allowed with EP overlap)", set_("model.recompute_method", None))
        add(8, 6, err(f"recompute_method is {fmt(method)}", "disable recomputation method when enabling overlap_moe_expert_parallel_comm", fix))
    if num_layers is not None:
        fix = no_full if granularity == "full" else unsafe("set model.recompute_num_layers: null (not allowed with EP overlap)", set_("model.recompute_num_layers", None))
        add(9, 7, err(f"recompute_num_layers is {fmt(num_layers)}", "recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm", fix))
    if isinstance(modules, (list, tuple)) and "moe" in modules:
        rest = [m for m in modules if m != "moe"]
        add(10, 8, err(
            "recompute_modules contains 'moe'",
            "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm",
            unsafe("drop 'moe' from model.recompute_modules (not allowed with EP overlap)", set_("model.recompute_modules", rest)),
        ))
    if get("moe_shared_expert_overlap") is True:
        add(11, 10, err(
            "moe_shared_expert_overlap is true",
            "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm",
            safe("set model.moe_shared_expert_overlap: false (EP overlap schedules the shared expert itself)",
                 set_("model.moe_shared_expert_overlap", False)),
        ))
    if mtp not in (None, 0, 1):
        add(12, 11, err(f"mtp_num_layers={fmt(mtp)}", "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm."))

    for _, found in sorted(checks, key=lambda c: c[0]):
        yield found


def _offload_fix(view, modules):
    rest = [m for m in modules if m != "expert_fc1"]
    return unsafe("drop 'expert_fc1' from model.offload_modules (ncclep EP overlap frees that input early)", Edit("set", "model.offload_modules", rest))


@rule("EP702", "ep-overlap-mcore-only", "error", "EP overlap with CUDA-graphed MoE/MLP or ncclep expert_fc1 offload", fix="unsafe")
def ep_overlap_mcore_only(view):
    """
    ## What it does
    Flags the two EP-overlap checks that only Megatron-Core makes (Bridge's pre-check passes them),
    when EP overlap is on at model finalize:
    - `cuda_graph_impl: transformer_engine` with `moe` or `mlp` in `cuda_graph_modules` (or the deprecated
      `cuda_graph_scope`): `CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm`
      (megatron-core 0.19.2, `transformer_config.py:2740`). Whole-layer capture (`full` / empty) passes;
      the `local` implementation is not checked here.
    - `moe_token_dispatcher_type: flex` with `moe_flex_dispatcher_backend: ncclep`, fine-grained activation
      offloading on and `expert_fc1` in `offload_modules`: `overlap_moe_expert_parallel_comm with ncclep does
      not support offloading 'expert_fc1': it forces expert FC1 to save the raw bf16 input, which the overlap
      path eagerly frees.` (tc.py:2729).

    ## Why it matters
    AssertionError at `model.finalize()` inside Bridge's `validate()`, on every rank.

    ## Example
    Checked with `--torch-version 2.6`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: alltoall,
            cuda_graph_impl: transformer_engine, cuda_graph_modules: [attn, moe]}
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}
    ```

    ## Fix
    **Unsafe**: drop `moe`/`mlp` from the CUDA-graph modules (less is graphed: launch overhead returns),
    or drop `expert_fc1` from `offload_modules` (more activation memory).
    """
    if not ep_overlap_effective(view):
        return
    where = _REQUEST if ep_overlap_path(view) == "bridge" else _MODEL_FLAG
    if model_value(view, "cuda_graph_impl") == "transformer_engine":
        from overlap_cli.rules.common import graph_module_names

        for key in ("cuda_graph_modules", "cuda_graph_scope"):
            value = model_value(view, key)
            names = graph_module_names(value)
            hit = sorted(names & {"moe", "mlp"})
            if hit:
                rest = [n for n in (value if isinstance(value, list) else str(value).split(",")) if str(n).rsplit(".", 1)[-1] not in ("moe", "mlp")]
                yield finding(
                    view, "EP702", "error",
                    f"model.{key} captures {', '.join(hit)} with cuda_graph_impl 'transformer_engine' and EP overlap on: "
                    "Megatron-Core asserts \"CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm\"",
                    model_key(view, key, where),
                    unsafe(f"drop {', '.join(hit)} from model.{key} (not capturable with EP overlap)", set_(f"model.{key}", rest)),
                )
    modules = model_value(view, "offload_modules") or []
    if (
        model_value(view, "moe_token_dispatcher_type") == "flex"
        and model_value(view, "moe_flex_dispatcher_backend") == "ncclep"
        and model_value(view, "fine_grained_activation_offloading") is True
        and isinstance(modules, list)
        and "expert_fc1" in modules
    ):
        yield finding(
            view, "EP702", "error",
            "EP overlap with the ncclep backend and 'expert_fc1' offloaded: Megatron-Core asserts "
            "\"overlap_moe_expert_parallel_comm with ncclep does not support offloading 'expert_fc1'\"",
            model_key(view, "offload_modules", where),
            _offload_fix(view, modules),
        )


@rule("EP703", "ep-overlap-ncclep-dynamic-shape", "warning", "EP overlap with ncclep and dynamic shapes loses the overlap")
def ncclep_dynamic_shape(view):
    """
    ## What it does
    Flags EP overlap with `moe_token_dispatcher_type: flex`, `moe_flex_dispatcher_backend: ncclep` and
    `moe_ncclep_static_shape: false` (the default).

    ## Why it matters
    Megatron-Core warns (megatron-core 0.19.2, `transformer_config.py:2721-2728`):
    `overlap_moe_expert_parallel_comm with ncclep and moe_ncclep_static_shape=False:
    get_permuted_hidden_states_by_experts does a device-to-host sync that serializes the 1F1B overlap
    (correct, but loses the overlap benefit). Set moe_ncclep_static_shape=True for the overlapped path
    (needs the fused op on sm100+).` The run trains correctly but pays for an overlap it does not get.

    ## Example
    Checked with `--torch-version 2.6`:
    ```yaml
    model: {expert_model_parallel_size: 8, num_moe_experts: 64, moe_token_dispatcher_type: flex,
            moe_flex_dispatcher_backend: ncclep}   # moe_ncclep_static_shape defaults to false
    mixed_precision: bf16_mixed
    comm_overlap: {tp_comm_overlap: false, overlap_moe_expert_parallel_comm: true}
    ```

    ## Fix
    None offered: `moe_ncclep_static_shape: true` needs the fused operator on sm100+ GPUs, which the file
    cannot tell. Set it yourself on such GPUs, or accept the serialized path (or drop EP overlap).
    """
    if not ep_overlap_effective(view):
        return
    if (
        model_value(view, "moe_token_dispatcher_type") == "flex"
        and model_value(view, "moe_flex_dispatcher_backend") == "ncclep"
        and model_value(view, "moe_ncclep_static_shape") is not True
    ):
        yield finding(
            view, "EP703", "warning",
            "EP overlap with ncclep and moe_ncclep_static_shape=false: Megatron-Core warns that a device-to-host sync "
            "\"serializes the 1F1B overlap (correct, but loses the overlap benefit)\"",
            model_key(view, "moe_ncclep_static_shape", model_key(view, "moe_flex_dispatcher_backend", _REQUEST)),
        )
