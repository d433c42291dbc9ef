"""EP701-EP703 — expert-parallel all-to-all overlap (``overlap_moe_expert_parallel_comm``): the
prerequisites Megatron-Bridge and Megatron-Core assert at launch, and Megatron-Core's extra checks.
Delayed wgrad (EP704-EP710) is ``ep_wgrad``; the token dispatcher's own checks (EP711-EP712) are
``ep_dispatcher``.

Sources: megatron-bridge 0.6.2 ``megatron/bridge/training/comm_overlap.py`` (co.py) and megatron-core
0.19.2 ``megatron/core/transformer/transformer_config.py`` (tc.py). Messages are quoted verbatim so a
crash log can be matched to the rule with ``overlap explain``.
"""

from __future__ import annotations

from overlap_cli.frameworks.raises import Raise, failing
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
        return "bridge" if view.requested("overlap_moe_expert_parallel_comm") is True else None
    return "mcore" if view.get_final("model", "overlap_moe_expert_parallel_comm") is True else None


def ep_overlap_effective(view) -> bool:
    """EP overlap as Megatron-Core sees it at model finalize."""
    return view.get_final("model", "overlap_moe_expert_parallel_comm") is True


def _drop_request(view, path: str):
    """Safe fix when EP overlap can never apply: withdraw it (and delayed wgrad, which needs it)."""
    if path == "bridge":
        edits = [set_(_REQUEST, False)]
        if view.requested("delay_wgrad_compute") is True:
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

    The checks, their order and lines are those of the release checked against
    (`frameworks/bridge/releases/`): Megatron-Bridge 0.4.2 and 0.5.1 accept MTP only at None or 1
    (`MTP layernum only supports 1 when enabling overlap_moe_expert_parallel_comm.`, comm_overlap.py:503) and
    leave `moe` in `recompute_modules` to Megatron-Core's copy; megatron-core 0.17.1 (0.4.2) also needs
    PP > 1 for an MTP layer (`transformer_config.py:2138`).

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
    ask = _EPAsk(view, path)
    where = _REQUEST if path == "bridge" else _MODEL_FLAG
    who = "Bridge's EP-overlap pre-check asserts" if path == "bridge" else "Megatron-Core asserts at model finalize"
    precheck, core_copy = ep_tables(ep_release(view))
    for check, fields in failing(precheck if path == "bridge" else core_copy, ask):
        quote = check.text(fields)
        if check.id == "torch" and ask.torch_status != "too-old":  # the target does not say its torch
            yield finding(
                view, "EP701", "info",
                f"EP overlap needs torch >= 2.6.0 ({unknown_version_text(torch_version(view), 'torch', '--torch-version')}); "
                f"with an older torch the launch fails with \"{quote}\"",
                where,
            )
            continue
        lead, fix = _LEADS[check.id](view, ask)
        says = who if check.at.startswith(_CO) or path != "bridge" else "Megatron-Core asserts at model finalize"
        yield finding(view, "EP701", "error", f"{lead}; {says} \"{quote}\"", where, fix)


class _EPAsk:
    """What the EP-overlap checks read, as the check that runs reads it: Bridge's pre-check reads the model
    before comm_overlap writes it (model_at_setup), Megatron-Core's copy the model at finalize."""

    def __init__(self, view, path: str):
        def get(key):
            return model_value(view, key, path == "bridge")

        self.path = path
        self.ep = as_int(get("expert_model_parallel_size")) or 1
        self.experts = get("num_moe_experts")
        self.dispatcher = get("moe_token_dispatcher_type")
        self.half = get("bf16") is True or get("fp16") is True
        self.torch_status = versions.status(torch_version(view), "2.6.0")
        self.pp, self.vpp = view.pp, (view.vpp if path == "bridge" else view.vpp_final)
        self.pp_known = view.pp is not None and getattr(view, "vpp_known", True)  # a Megatron-LM launch may not say
        self.layout_implies_vpp = view.vpp is None and (view.layout_vpp or 0) > 1
        self.granularity, self.method = get("recompute_granularity"), get("recompute_method")
        self.num_layers = get("recompute_num_layers")
        modules = get("recompute_modules")
        if modules is None:
            modules = [] if path == "bridge" else ["core_attn"]  # Megatron-Core's default, set before its copy runs
        self.modules = modules
        self.shared = get("moe_shared_expert_overlap") is True
        self.mtp = get("mtp_num_layers")


def _when(condition):
    """A Raise's ``fails`` from a predicate over _EPAsk (no message fields)."""
    return lambda a: {} if condition(a) else None


def _vpp_missing(a) -> bool:
    # a layout that implies VPP is PP207's (it needs another fix) on Bridge's path
    return a.pp_known and a.pp > 1 and a.vpp is None and not (a.path == "bridge" and a.layout_implies_vpp)


_CO = "megatron/bridge/training/comm_overlap.py"
_TCF = "megatron/core/transformer/transformer_config.py"
_VPP = ("If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
        "pipeline_model_parallel_size > 1")
_TORCH = "A2A Overlap encounters hang issue with torch version < 2.6.0"
_ON = "when enabling overlap_moe_expert_parallel_comm"
_EP_SIZE, _DISPATCHER, _HALF = _when(lambda a: a.ep <= 1), "moe_token_dispatcher_type", _when(lambda a: not a.half)
_FULL, _METHOD = _when(lambda a: a.granularity == "full"), _when(lambda a: a.method is not None)
_NUM_LAYERS, _MOE = _when(lambda a: a.num_layers is not None), _when(
    lambda a: isinstance(a.modules, (list, tuple)) and "moe" in a.modules)
_SHARED = _when(lambda a: a.shared)
_TORCH_OLD, _VPP_MISSING = _when(lambda a: a.torch_status != "ok"), _when(_vpp_missing)


def _bad_dispatcher(a):
    return {"type": a.dispatcher} if a.dispatcher not in ("alltoall", "flex") else None


# Bridge's pre-check (comm_overlap.py, comm_overlap setup in runtime_config_update) and Megatron-Core's copy
# (transformer_config.py, at model finalize), each in its order: (id, kind, fails, message) — the line of each
# and which checks a release has are that release's data (EP_PRECHECK_LINES, EP_CORE_LINES, EP_MTP_*).
_BRIDGE_ORDER = (
    ("ep", "AssertionError", _EP_SIZE,
     "overlap_moe_expert_parallel_comm is only supported when expert_model_parallel_size > 1"),
    ("experts-null", "TypeError", _when(lambda a: a.experts is None),
     "TypeError: '>' not supported between instances of 'NoneType' and 'int'"),
    ("experts", "AssertionError",
     lambda a: {"n": a.experts} if as_int(a.experts) is not None and a.experts <= 1 else None,
     "overlap_moe_expert_parallel_comm is only supported when num_moe_experts > 1, ... but got {n}"),
    ("dispatcher", "AssertionError", _bad_dispatcher,
     "overlap_moe_expert_parallel_comm is only supported when moe_token_dispatcher_type == 'alltoall' or "
     "'flex', ... but got {type}"),
    ("half", "AssertionError", _HALF, "overlap_moe_expert_parallel_comm is only supported when using bf16 or fp16 models"),
    ("torch", "AssertionError", _TORCH_OLD, _TORCH),
    ("vpp", "AssertionError", _VPP_MISSING, _VPP),
    ("full", "AssertionError", _FULL, f"disable full recomputation {_ON}"),
    ("method", "AssertionError", _METHOD, f"disable recomputation method {_ON}"),
    ("num-layers", "AssertionError", _NUM_LAYERS, f"recompute_num_layers must be None {_ON}"),
    ("moe-module", "AssertionError", _MOE, f"disable moe in recompute_modules {_ON}"),
    ("shared", "AssertionError", _SHARED, f"disable moe_shared_expert_overlap {_ON}"),
    ("mtp", "AssertionError", None, None),  # the release's accepted depths and message
)
_CORE_ORDER = (
    ("experts-null", "ValueError", _when(lambda a: a.ep > 1 and a.experts is None),
     "num_moe_experts must be non None to use expert-parallel."),
    ("torch", "AssertionError", _TORCH_OLD, _TORCH),
    ("vpp", "AssertionError", _VPP_MISSING, _VPP),
    ("ep", "AssertionError", _EP_SIZE, "overlap_moe_expert_parallel_comm is only supported with expert model parallelism"),
    ("dispatcher", "AssertionError", _bad_dispatcher, "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher"),
    ("full", "AssertionError", _FULL, f"disable full recomputation {_ON}"),
    ("method", "AssertionError", _METHOD, f"disable recomputation method {_ON}"),
    ("num-layers", "AssertionError", _NUM_LAYERS, f"recompute_num_layers must be None {_ON}"),
    ("moe-module", "AssertionError", _MOE, f"disable moe in recompute_modules {_ON}"),
    ("half", "AssertionError", _HALF, "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model"),
    ("shared", "AssertionError", _SHARED, f"disable moe_shared_expert_overlap {_ON}"),
    ("mtp", "AssertionError", None, None),
)
_MTP_NEEDS_PP = ("Pipeline model parallel size must be larger than 1 when enabling overlap_moe_expert_parallel_comm "
                 "with MTP layer.")


def _table(release, order, lines: dict, at: str) -> tuple:
    out = []
    for check, kind, fails, message in order:
        if check not in lines:
            continue  # this release has no such check there
        if check == "mtp":
            allowed = release.EP_MTP_LAYERS
            fails, message = _when(lambda a: a.mtp not in allowed), release.EP_MTP_MESSAGE
        out.append(Raise(id=check, at=f"{at}:{lines[check]}", kind=kind, fails=fails, message=message))
    return tuple(out)


_TABLES: dict = {}


def ep_tables(release) -> tuple:
    """(Bridge's pre-check, Megatron-Core's copy) of ``release`` (a frameworks.bridge.releases module) as
    Raise tables in the order each meets its checks. A check Bridge's pre-check lacks but the core copy
    has (0.5.1's "moe" in recompute_modules) still stops a run Bridge's path lets through: it follows the
    pre-check's table, cited at the core's line. Megatron-Core 0.17's MTP check also needs PP > 1."""
    tables = _TABLES.get(release.BRIDGE_VERSION)
    if tables is None:
        core = list(_table(release, _CORE_ORDER, release.EP_CORE_LINES, _TCF))
        if release.EP_CORE_MTP_NEEDS_PP_LINE is not None:
            core.append(Raise(id="mtp-pp", at=f"{_TCF}:{release.EP_CORE_MTP_NEEDS_PP_LINE}", message=_MTP_NEEDS_PP,
                              fails=_when(lambda a: a.mtp == 1 and a.pp_known and a.pp <= 1)))
        bridge = list(_table(release, _BRIDGE_ORDER, release.EP_PRECHECK_LINES, _CO))
        bridge += [r for r in core if r.id not in release.EP_PRECHECK_LINES and r.id != "experts-null"]
        tables = _TABLES[release.BRIDGE_VERSION] = (tuple(bridge), tuple(core))
    return tables


def ep_release(view):
    """The release data whose EP-overlap checks the run meets: a Bridge run's own release; for a Megatron-LM
    launch, the newest Bridge release that pins the launch's megatron-core (the core's checks are the same
    code whichever framework built the config)."""
    if getattr(view, "framework", "bridge") == "bridge":
        return view.release
    from overlap_cli.frameworks.bridge.releases import BRIDGE
    from overlap_cli.frameworks.megatron_lm import releases as core_releases
    from overlap_cli.frameworks.releases import is_release

    core = core_releases.of(view.target).CORE_VERSION
    pinning = [v for v in BRIDGE.versions() if is_release(v) and BRIDGE.get(v).CORE_VERSION == core]
    if not pinning:
        from overlap_cli.problems import InputError, InputProblem

        raise InputError(InputProblem("<target>", f"core_version {core}: overlap-cli holds no EP-overlap checks of "
                                      "that megatron-core release", key="core_version"))
    return BRIDGE.get(pinning[-1])


def _no_full(view):
    return unsafe(
        "use selective recompute instead of full (recompute_method and recompute_num_layers null)",
        set_("model.recompute_granularity", "selective"),
        set_("model.recompute_method", None),
        set_("model.recompute_num_layers", None),
    )


def _vpp_fix(view, a):
    smallest = _smallest_vpp(view) if view.layout is None else None
    if smallest is None:
        return None
    return unsafe(f"set model.virtual_pipeline_model_parallel_size: {smallest} (interleaved schedule)",
                  set_("model.virtual_pipeline_model_parallel_size", smallest))


def _null_or_selective(view, a, key: str):
    if a.granularity == "full":
        return _no_full(view)
    return unsafe(f"set model.{key}: null (not allowed with EP overlap)", set_(f"model.{key}", None))


# The words before each quote and the fix it offers (the docstring's table says which is safe and why).
_LEADS = {
    "ep": lambda view, a: (f"expert_model_parallel_size={a.ep}: EP overlap needs expert parallelism",
                           _drop_request(view, a.path)),
    "experts-null": lambda view, a: (
        ("num_moe_experts is null (not a MoE model): the comparison fails with a TypeError", _drop_request(view, a.path))
        if a.path == "bridge" else (f"expert_model_parallel_size={a.ep} without num_moe_experts", None)),
    "experts": lambda view, a: (f"num_moe_experts={a.experts}: EP overlap needs more than one expert",
                                _drop_request(view, a.path)),
    "dispatcher": lambda view, a: (
        f"model.moe_token_dispatcher_type is {fmt(a.dispatcher)}; EP overlap needs 'alltoall' or 'flex'",
        unsafe("set model.moe_token_dispatcher_type: alltoall (EP overlap needs alltoall or flex)",
               set_("model.moe_token_dispatcher_type", "alltoall"))),
    "half": lambda view, a: ("the model is neither bf16 nor fp16 (after mixed precision)", None),
    "torch": lambda view, a: (f"target torch {torch_version(view)} is older than 2.6.0", None),
    "vpp": lambda view, a: (f"PP={a.pp} without virtual_pipeline_model_parallel_size", _vpp_fix(view, a)),
    "full": lambda view, a: ("recompute_granularity is 'full'", _no_full(view)),
    "method": lambda view, a: (f"recompute_method is {fmt(a.method)}", _null_or_selective(view, a, "recompute_method")),
    "num-layers": lambda view, a: (f"recompute_num_layers is {fmt(a.num_layers)}",
                                   _null_or_selective(view, a, "recompute_num_layers")),
    "moe-module": lambda view, a: ("recompute_modules contains 'moe'", unsafe(
        "drop 'moe' from model.recompute_modules (not allowed with EP overlap)",
        set_("model.recompute_modules", [m for m in a.modules if m != "moe"]))),
    "shared": lambda view, a: ("moe_shared_expert_overlap is true", safe(
        "set model.moe_shared_expert_overlap: false (EP overlap schedules the shared expert itself)",
        set_("model.moe_shared_expert_overlap", False))),
    "mtp": lambda view, a: (f"mtp_num_layers={fmt(a.mtp)}", None),
    "mtp-pp": lambda view, a: (f"mtp_num_layers=1 with PP={a.pp}", None),
}


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
    release = ep_release(view)
    graphs = release.EP_CORE_CUDA_GRAPH  # which fields the release's check reads, and whether it refuses other impls
    impl = model_value(view, "cuda_graph_impl")
    if impl not in (None, "none", "transformer_engine") and graphs["other_impls_refused"]:
        yield finding(
            view, "EP702", "error",
            f"cuda_graph_impl {fmt(impl)} with EP overlap on: Megatron-Core {release.CORE_VERSION} accepts only "
            "'transformer_engine' there and asserts \"CUDA graph scope on moe and mlp is not supported with "
            f"overlap_moe_expert_parallel_comm\" ({_TCF}:{graphs['line']})",
            model_key(view, "cuda_graph_impl", where),
        )
    if impl == "transformer_engine":
        from overlap_cli.rules.common import graph_module_names

        for key in graphs["fields"]:
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
        release.EP_CORE_NCCLEP
        and model_value(view, "moe_token_dispatcher_type") == "flex"
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
    if not ep_overlap_effective(view) or not ep_release(view).EP_CORE_NCCLEP:
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
