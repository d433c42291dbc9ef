"""Resolve a Megatron-LM launch into the settings Megatron-LM hands to Megatron-Core — a pure function.

Mirrors, in order, what happens to the parsed flags (megatron-core 0.19.2's ``megatron/training``; a launch of an
older release skips the steps' records its code lacks and cites its own lines, cites.py):

1. ``parse_args``: argparse defaults, then the flags; ``WORLD_SIZE`` from the launcher (arguments.py:144);
2. ``validate_args`` (arguments.py:388): the data-parallel size (arguments.py:430-446), the virtual
   pipeline (arguments.py:894-949), the p2p / align-param-gather forcing without it (arguments.py:966-985),
   the DP-overlap, FSDP and optimizer-step assertions (arguments.py:990-1145), sequence parallelism at
   TP = 1 and the TP-overlap assertion (arguments.py:1393-1402), ``CUDA_DEVICE_MAX_CONNECTIONS``
   before Blackwell (arguments.py:1413-1439), ``--freeze-all-layers`` (arguments.py:1759-1768);
3. the configs built from ``args`` (configs.py): ``core_transformer_config_from_args`` (argument_utils.py:277,
   ``batch_p2p_comm = not overlap_p2p_comm``), ``get_megatron_ddp_config`` (training.py:1977) and
   ``resolve_ddp_bucket_size`` (training.py:1552: ``max(40_000_000, 1_000_000 * |dp_cp|)``, None without
   ``overlap_grad_reduce``).

``VALIDATE_ARGS`` is step 2 as a table: one function per block of validate_args, keyed by the arguments.py
lines it mirrors and run in that order; before each step the launch checks of assertions.py for earlier lines
run against the values as they are then.

Every effective value has a provenance: ``user`` (a flag, with its line), ``default``, ``forced-off``,
``derived`` or ``unknown`` (the flag's value is not known statically). What would assert is recorded in
launch order, with the message the launch prints; rules report it.
"""

from __future__ import annotations


from overlap_cli.results import DEFAULT, FORCED_OFF, UNKNOWN as UNKNOWN_SOURCE, USER, Value
from overlap_cli.frameworks.megatron_lm import facts as lm
from overlap_cli.frameworks.megatron_lm.configs import DERIVED, MAX_CONNECTIONS, build_configs, how_set
from overlap_cli.frameworks.megatron_lm.view import Assertion, Forcing, LaunchConfig, LMResolved
from overlap_cli.launch_profile import versions
from overlap_cli.launch_profile.profile import HOPPER_OR_OLDER, SM100_OR_NEWER



def resolve(launch, target) -> LMResolved:
    """The launch resolved: parse_args' values, then validate_args' steps (VALIDATE_ARGS) in launch order
    with the table's launch checks (assertions.py) run before each step's line, then the configs built from
    ``args`` and the checks of initialize."""
    from overlap_cli.frameworks.megatron_lm import assertions
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN, defaults

    s = _Launch(launch, LMResolved(launch=launch, cfg=LaunchConfig(launch), target=target), dict(defaults(launch.core_version)), UNKNOWN)
    _parsed_args(s)
    r, a = s.r, s.a
    # The derived values the launch checks read (assertions.py); UNKNOWN where not known.
    s.runner = assertions.Runner(lambda: {**a, **s.derived}, s.fail_check, launch.core_version)
    _target_values(r, launch, s.derived, UNKNOWN)
    for where, step in VALIDATE_ARGS:
        s.runner.until(_line(where))
        step(s)
    build_configs(r, a, s.prov, s.known, UNKNOWN, s.fail)
    s.runner.after_validate()
    # -- initialize: TP overlap's userbuffers come from Transformer Engine (initialize.py:157-198) ------
    if a.get("tp_comm_overlap") is True and r.target.transformer_engine is False:
        s.fail("tp-overlap-te", lm.TP_OVERLAP_NEEDS_TE, lm.TP_OVERLAP_NEEDS_TE_AT, "tp_comm_overlap")
    r.args = a
    r.model_at_setup = r.final["model"]
    r.grid = _grid(r, a, s.integer)
    r.path_assertions = path_assertions(launch, target, r.assertions)
    _cite_release(r, launch.core_version)
    return r


def _cite_release(r: LMResolved, core) -> None:
    """The upstream lines the effective values' reasons cite, read as the launch's megatron-core release has
    them (cites.py; the mirror cites the newest release's lines)."""
    from overlap_cli.frameworks.megatron_lm.cites import cite

    for v in r.effective.values():
        v.reason = cite(v.reason, core)


MAX_PATHS = 16  # a launch with more ways through it is reported on its merged reading only (cost bound)


def path_assertions(launch, target, merged: list) -> list:
    """What asserts on some of a launch's paths, each resolved alone, where the paths merged leave it unknown
    (a flag one path gives as 8 and another leaves to a sourced file): (Assertion, the decisions that lead to
    the paths where it asserts in words — ``unless ...`` / ``depending on ...`` —, or "" when every path argparse
    reads asserts it)."""
    if not 1 < len(launch.path_args) <= MAX_PATHS:
        return []
    import copy

    from overlap_cli.config.argv import deciding_forks

    seen = {(x.id, x.message) for x in merged}
    per_path, found = [], {}
    for _choices, args in launch.path_args:
        one = copy.copy(launch)
        one.args, one.path_args = args, []
        hits = set()
        for x in resolve(one, target).assertions:
            key = (x.id, x.message)
            if key not in seen:
                found.setdefault(key, x)
                hits.add(key)
        per_path.append(hits)
    choices = [c for c, _ in launch.path_args]
    out = []
    for key, assertion in found.items():
        fired = [key in hits for hits in per_path]
        out.append((assertion, "" if all(fired) else _unless(choices, fired, launch.forks)
                    or f"depending on {deciding_forks(choices, fired, launch.forks)}"))
    return out


def _unless(choices: list, fired: list, forks: dict) -> str:
    """``unless D1 and D2``: the decisions every path that does not assert takes and no path that asserts
    does; "" when there are none."""
    quiet = [set(c) for c, f in zip(choices, fired) if not f]
    loud = set().union(*(set(c) for c, f in zip(choices, fired) if f))
    common = [d for d in choices[fired.index(False)] if all(d in q for q in quiet) and d not in loud]
    if not common:
        return ""
    return "unless " + " and ".join(f"{forks.get(fork, 'a decision')} {branch}" for fork, branch in common)


class _Launch:
    """What validate_args' steps share: ``a``, the args as the steps leave them (dest -> value, UNKNOWN where
    not known); ``prov``, dest -> Value; ``derived``, the values beyond ``args`` the launch checks read; ``r``,
    the result; ``runner``, the launch checks of assertions.py. Its methods record what validate_args does."""

    __slots__ = ("launch", "r", "a", "prov", "derived", "runner", "unknown")

    def __init__(self, launch, r: LMResolved, a: dict, unknown):
        self.launch, self.r, self.a, self.unknown = launch, r, a, unknown
        self.prov: dict = {}
        self.derived: dict = {}
        self.runner = None

    def known(self, x) -> bool:
        return x is not self.unknown

    def fail(self, id_: str, message: str, at: str, *dests: str) -> None:
        """An assert of a step of validate_args (in the newest release's words and lines; the launch's release
        may not have it, or print another message at another line: cites.py)."""
        from overlap_cli.frameworks.megatron_lm import cites

        core = self.launch.core_version
        if id_ in cites.absent(core):
            return
        self.r.assertions.append(Assertion(id_, cites.check_message(id_, message, core), cites.check_at(id_, at, core), dests))

    def fail_check(self, c, message: str) -> None:
        from overlap_cli.frameworks.megatron_lm.cites import check_at

        self.r.assertions.append(Assertion(c.id, message, check_at(c.id, c.at, self.launch.core_version), c.flags,
                                           c.who, c.bare))

    def force(self, id_: str, dest: str, new, at: str, printed: str = "", why: str = "") -> None:
        from overlap_cli.frameworks.megatron_lm import cites

        if id_ in cites.absent(self.launch.core_version):
            return
        at = cites.check_at(id_, at, self.launch.core_version)
        old = self.a.get(dest)
        if old is new or old == new and type(old) is type(new):
            return
        self.r.forcings.append(Forcing(id_, dest, old, new, at, printed))
        self.a[dest] = new
        source = FORCED_OFF if new is False or new is None else DERIVED
        self.prov[dest] = Value(new, source, why or f"validate_args sets it ({at})")

    def unknown_because(self, dest: str, why: str) -> None:
        """validate_args would change ``dest`` depending on a value not known statically."""
        self.a[dest] = self.unknown
        self.prov[dest] = Value(None, UNKNOWN_SOURCE, why)

    def integer(self, dest: str):
        v = self.a.get(dest)
        return v if self.known(v) and isinstance(v, int) and not isinstance(v, bool) else None

    def flag_words(self, dest: str) -> str:
        arg = self.launch.args.get(dest)
        return f"{arg.flag} (line {arg.line})" if arg is not None else dest


def _line(where: str) -> int:
    """The first line of ``file:line`` or ``file:first-last``."""
    return int(where.rsplit(":", 1)[1].split("-")[0])


def _parsed_args(s: _Launch) -> None:
    """parse_args: argparse defaults, then the launch's flags; --use-checkpoint-args (arguments.py:90-100);
    whether it is an inference run and which words of the launch may hold any flag."""
    launch, a, prov = s.launch, s.a, s.prov
    for dest, arg in launch.args.items():
        a[dest] = arg.value
        where = arg.reason or f"{arg.flag} on line {arg.line}" + ("" if arg.origin == "launch line" else f" (through {arg.origin})")
        if s.known(arg.value):
            prov[dest] = Value(arg.value, USER, where)
        else:
            prov[dest] = Value(None, UNKNOWN_SOURCE, f"{where}: its value is not known statically")
    _checkpoint_args(a, prov, launch, s.unknown)
    # Unquoted unknown expansions ($EXTRA_ARGS from outside): any flag may be among their words.
    s.r.inference = _inference(launch)
    s.r.open_words = [t.what or "an unknown expansion" for t in launch.tokens if getattr(t, "multi", False)]


# -- validate_args (arguments.py:388-1909), one step per block it runs, in its order -------------------


def _use_dist_ckpt(s: _Launch) -> None:
    """update_use_dist_ckpt (arguments.py:409 -> training/utils/common_utils.py:556): a checkpoint format
    other than torch is a distributed checkpoint."""
    ckpt = s.a.get("ckpt_format")
    s.derived["use_dist_ckpt"] = (ckpt != "torch") if s.known(ckpt) else s.unknown


def _world_size(s: _Launch) -> None:
    """The world size (WORLD_SIZE from the launcher, arguments.py:144; the target's unless the launch states
    it), the parallel sizes and the GTP weight shards (arguments.py:411-416)."""
    from overlap_cli.launch_profile.profile import for_run, launch_sizes_apply

    launch, r, target = s.launch, s.r, s.r.target
    ws = launch.world_size if isinstance(launch.world_size, int) and not isinstance(launch.world_size, bool) else None
    if ws is not None and not launch_sizes_apply(target) and target.world_size is not None:
        ws = None  # flag > file: --world-size / --nodes / a directive states the scale to check it at
    if ws is not None:
        target = for_run(target, launch_world_size=ws)
        r.target = target
        r.world_source = "launch"
    else:
        ws = target.world_size
        r.world_source = target.source("world_size")
    r.world_size = ws
    r.tp, r.pp, r.cp = s.integer("tensor_model_parallel_size"), s.integer("pipeline_model_parallel_size"), s.integer("context_parallel_size")
    r.ep = s.integer("expert_model_parallel_size")
    r.gtp = _remat_size(s.a.get("tensor_parallel_num_weight_shards"), r.tp, s.known)
    s.derived["world_size"] = ws if ws is not None else s.unknown
    s.derived["gtp_weight_remat_size"] = r.gtp if r.gtp is not None else s.unknown


def _data_parallel_size(s: _Launch) -> None:
    """The data-parallel size: world size / (TP * PP * CP * GTP), asserting it divides (arguments.py:430-446)."""
    r, ws = s.r, s.r.world_size
    if ws is not None and None not in (r.tp, r.pp, r.cp, r.gtp):
        size = r.tp * r.pp * r.cp * r.gtp
        if ws % size:
            r.dp_error = lm.WORLD_NOT_DIVISIBLE.format(ws=ws, size=size)
            s.fail("world", r.dp_error, lm.WORLD_NOT_DIVISIBLE_AT, "tensor_model_parallel_size")
        else:
            r.dp = ws // size
    s.a["world_size"], s.a["data_parallel_size"] = ws, r.dp
    s.derived["data_parallel_size"] = r.dp if r.dp is not None else s.unknown
    r.dp_unknown_why = _dp_unknown_why(r, s.launch)


def _expert_tensor_parallel(s: _Launch) -> None:
    """Expert tensor parallelism defaults to TP (arguments.py:569-570)."""
    if s.a.get("expert_tensor_parallel_size") is None:
        s.a["expert_tensor_parallel_size"] = s.r.tp if s.r.tp is not None else s.unknown
    s.r.etp = s.integer("expert_tensor_parallel_size")


def _cuda_graph_impl(s: _Launch) -> None:
    """--enable-cuda-graph / --external-cuda-graph name an implementation (arguments.py:600-613)."""
    if s.a.get("enable_cuda_graph") is True:
        s.a["cuda_graph_impl"] = "local"
    elif s.a.get("external_cuda_graph") is True:
        s.a["cuda_graph_impl"] = "transformer_engine"


def _batch_sizes(s: _Launch) -> None:
    """The global batch size defaults to micro batch * DP; the eval sizes to the training ones
    (arguments.py:677-696)."""
    a = s.a
    mbs = a.get("micro_batch_size")
    if a.get("global_batch_size") is None:
        a["global_batch_size"] = mbs * s.r.dp if isinstance(mbs, int) and s.r.dp is not None else s.unknown
    if a.get("eval_global_batch_size") is None:
        a["eval_global_batch_size"] = a["global_batch_size"]
    if a.get("eval_micro_batch_size") is None:
        a["eval_micro_batch_size"] = mbs


def _hybrid_layer_pattern(s: _Launch) -> None:
    """A hybrid layer pattern (or its legacy spelling, copied over) gives the layer count
    (arguments.py:722-753, hybrid_layer_allocation.py:140-142)."""
    a = s.a
    if a.get("hybrid_override_pattern") is not None and a.get("hybrid_layer_pattern") is None:
        a["hybrid_layer_pattern"] = a["hybrid_override_pattern"]
    pattern = a.get("hybrid_layer_pattern")
    if isinstance(pattern, str):
        a["num_layers"] = len(pattern.split("/")[0].replace("|", ""))  # hybrid_layer_allocation.py:140-142
    elif not s.known(pattern):
        a["num_layers"] = s.unknown


def _virtual_pipeline_size(s: _Launch) -> None:
    """The virtual pipeline size (arguments.py:820-949, with the asserts of 788-802 on a hybrid pattern beside
    another way of asking for VPP): see ``_virtual_pipeline``. It runs after the table's hybrid-pattern checks
    of arguments.py:778-808, which the 788-802 asserts interleave with upstream."""
    _virtual_pipeline(s.r, s.a, s.prov, s.known, s.integer, s.fail)
    s.derived["virtual_pipeline_model_parallel_size"] = s.r.vpp if s.r.vpp_known else s.unknown


def _interleaved_schedule(s: _Launch) -> None:
    """With a virtual pipeline, the interleaved schedule's PP sizes (arguments.py:966-975); without one,
    p2p overlap and aligned param gather off (arguments.py:976-985)."""
    r, a = s.r, s.a
    if r.vpp is not None:
        p2p = a.get("overlap_p2p_comm")
        if r.pp is not None and s.known(p2p):
            if p2p and r.pp <= 1:
                s.fail("interleaved-pp", lm.INTERLEAVED_PP_1, lm.INTERLEAVED_AT, "pipeline_model_parallel_size")
            elif not p2p and r.pp <= 2:
                s.fail("interleaved-pp", lm.INTERLEAVED_PP_2, lm.INTERLEAVED_AT, "overlap_p2p_comm", "pipeline_model_parallel_size")
    elif r.vpp_known:
        printed = lm.NO_VPP_FORCING if (r.pp or 1) > 1 else ""
        why = "no virtual pipeline: validate_args turns it off (the non-interleaved schedule cannot overlap p2p)"
        s.force("no-vpp", "overlap_p2p_comm", False, lm.NO_VPP_FORCING_AT, printed, why + f", {lm.NO_VPP_FORCING_AT}")
        s.force("no-vpp", "align_param_gather", False, lm.NO_VPP_FORCING_AT, printed,
                f"no virtual pipeline: validate_args turns it off ({lm.NO_VPP_FORCING_AT})")
    else:  # without a virtual pipeline validate_args turns both off; whether there is one is not known
        why = (f"depends on whether there is a virtual pipeline ({r.vpp_unknown_why}): without one validate_args "
               f"turns it off ({lm.NO_VPP_FORCING_AT})")
        for dest in ("overlap_p2p_comm", "align_param_gather"):
            if a.get(dest) is not False:
                s.unknown_because(dest, why)


def _dp_overlap(s: _Launch) -> None:
    """--overlap-param-gather needs the distributed optimizer (or Megatron-FSDP, or dist_muon) and
    --overlap-grad-reduce (arguments.py:990-995); Torch-FSDP2 excludes the distributed optimizer
    (arguments.py:1004) and needs CUDA_DEVICE_MAX_CONNECTIONS other than 1 (arguments.py:1014). The table's
    Torch-FSDP2 checks of arguments.py:998-1012 run after this step."""
    r, a = s.r, s.a
    max_conn = _max_connections(r, s.launch, s.unknown)
    s.derived["env:" + MAX_CONNECTIONS] = max_conn
    distopt = a.get("use_distributed_optimizer")
    if a.get("overlap_param_gather") is True:
        if distopt is False and a.get("use_megatron_fsdp") is not True and s.known(a.get("optimizer")) \
                and a.get("optimizer") != "dist_muon":
            s.fail("opg-distopt", lm.OPG_NEEDS_DISTOPT, lm.OPG_NEEDS_DISTOPT_AT, "overlap_param_gather")
        if a.get("overlap_grad_reduce") is False:
            s.fail("opg-ogr", lm.OPG_NEEDS_OGR, lm.OPG_NEEDS_OGR_AT, "overlap_param_gather")
    if a.get("use_torch_fsdp2") is True:
        if distopt is True:
            s.fail("fsdp2-distopt", lm.FSDP2_DISTOPT, lm.FSDP2_DISTOPT_AT, "use_torch_fsdp2", "use_distributed_optimizer")
        if max_conn == "1":
            s.fail("fsdp-max-conn", lm.FSDP2_MAX_CONN, lm.FSDP2_MAX_CONN_AT, "use_torch_fsdp2")


def _fsdp2_param_gather(s: _Launch) -> None:
    """With Torch-FSDP2, FP8 / FP4 parameter gather fall back to bf16 on a recent Transformer Engine
    (arguments.py:1017-1030)."""
    a = s.a
    if a.get("use_torch_fsdp2") is not True:
        return
    te = s.derived["te_version"]
    for dest, need, te_off in (("fp8_param_gather", "2.0.0", True), ("fp4_param_gather", "2.7.0.dev0", False)):
        if a.get(dest) is not True:
            continue
        newer = None if not s.known(te) else versions.at_least(te, need)
        if newer is None:
            s.unknown_because(dest, f"--use-torch-fsdp2 turns it off on Transformer Engine {'>=' if te_off else '<'} "
                              f"{need} (arguments.py:1017-1030); the Transformer Engine version is not known (--te-version)")
        elif newer is te_off:
            s.force("fsdp2-param-gather", dest, False, f"{lm.ARGS}:1018", lm.FSDP2_FP8_OFF if te_off else lm.FSDP2_FP4_OFF,
                    f"--use-torch-fsdp2 on Transformer Engine {te}: validate_args turns it off and gathers bf16 "
                    f"({lm.ARGS}:1017-1030)")


def _param_gather_with_optimizer_step(s: _Launch) -> None:
    """--overlap-param-gather-with-optimizer-step needs the distributed optimizer, --overlap-param-gather,
    a virtual pipeline and the torch checkpoint format (arguments.py:1032-1040)."""
    a, r = s.a, s.r
    if a.get("overlap_param_gather_with_optimizer_step") is not True:
        return
    dest = "overlap_param_gather_with_optimizer_step"
    if a.get("use_distributed_optimizer") is False:
        s.fail("ops", lm.OPS_DISTOPT, lm.OPS_AT, dest)
    elif a.get("overlap_param_gather") is False:
        s.fail("ops", lm.OPS_OPG, lm.OPS_AT, dest)
    elif r.vpp is None and r.vpp_known:
        s.fail("ops", lm.OPS_VPP, lm.OPS_AT, dest)
    elif s.known(a.get("ckpt_format")) and a.get("ckpt_format") != "torch":  # update_use_dist_ckpt
        s.fail("ops", lm.OPS_DIST_CKPT, lm.OPS_AT, dest, "ckpt_format")


def _fp8_param_gather(s: _Launch) -> None:
    """FP8 parameter all-gather needs the distributed optimizer or an FSDP, in training (arguments.py:1060-1062)."""
    a = s.a
    if a.get("fp8_param_gather") is True and a.get("use_distributed_optimizer") is False \
            and a.get("use_torch_fsdp2") is not True and a.get("use_megatron_fsdp") is not True and not s.r.inference:
        s.fail("fp8-param-gather", lm.FP8_PARAM_GATHER, lm.FP8_PARAM_GATHER_AT, "fp8_param_gather")


def _megatron_fsdp(s: _Launch) -> None:
    """With Megatron-FSDP (arguments.py:1104-1168): the distributed optimizer on (arguments.py:1107), MXFP8
    gradient-buffer reuse off (arguments.py:1114), CUDA_DEVICE_MAX_CONNECTIONS other than 1 (arguments.py:1143). The table's
    Megatron-FSDP checks of arguments.py:1120-1146 run after this step."""
    a, r = s.a, s.r
    if a.get("use_megatron_fsdp") is not True:
        return
    r.megatron_fsdp = True
    s.force("mfsdp-distopt", "use_distributed_optimizer", True, lm.MFSDP_FORCES_DISTOPT_AT,
            lm.MFSDP_FORCES_DISTOPT, f"--use-megatron-fsdp turns the distributed optimizer on ({lm.MFSDP_FORCES_DISTOPT_AT})")
    a["reuse_grad_buf_for_mxfp8_param_ag"] = False  # arguments.py:1114
    if r.max_connections == "1":
        s.fail("fsdp-max-conn", lm.MFSDP_MAX_CONN, lm.MFSDP_MAX_CONN_AT, "use_megatron_fsdp")


def _fsdp_manual_registration(s: _Launch) -> None:
    """Megatron-FSDP with --nccl-ub registers its buffers by hand (arguments.py:1149-1152)."""
    if s.a.get("use_megatron_fsdp") is True and s.a.get("nccl_ub") is True:
        s.a["fsdp_manual_registration"] = True


def _nan_check(s: _Launch) -> None:
    """fp16 with dynamic loss scaling checks no NaN in the loss and gradients (arguments.py:1177-1178)."""
    a = s.a
    if a.get("fp16") is True and not s.known(a.get("loss_scale")):
        a["check_for_nan_in_loss_and_grad"] = s.unknown  # off with dynamic loss scaling, which is not known
    elif a.get("fp16") is True and not a.get("loss_scale"):
        a["check_for_nan_in_loss_and_grad"] = False


def _grad_reduce_precision(s: _Launch) -> None:
    """The gradient-reduction dtype with --bf16 (arguments.py:1190-1194), after the table's main-grads check
    of arguments.py:1187: see ``_grad_reduce_dtype``."""
    _grad_reduce_dtype(s.a, s.prov, s.force, s.unknown_because, s.known, s.flag_words)


def _dataloader_type(s: _Launch) -> None:
    """The dataloader type defaults to single (arguments.py:1214-1215)."""
    if s.a.get("dataloader_type") is None:
        s.a["dataloader_type"] = "single"


def _sequence_parallel(s: _Launch) -> None:
    """Sequence parallelism off at TP = 1 (arguments.py:1393), then TP overlap needs it
    (arguments.py:1402)."""
    a, r = s.a, s.r
    if r.tp == 1:
        printed = lm.SP_OFF_AT_TP1 if a.get("sequence_parallel") is True else ""
        s.force("sp-tp1", "sequence_parallel", False, lm.SP_OFF_AT_TP1_AT, printed,
                f"TP = 1: validate_args turns sequence parallelism off ({lm.SP_OFF_AT_TP1_AT})")
    elif r.tp is None and a.get("sequence_parallel") is not False:
        s.unknown_because("sequence_parallel", f"depends on {s.flag_words('tensor_model_parallel_size')}, whose value is "
                          f"not known statically: at TP = 1 validate_args turns it off ({lm.SP_OFF_AT_TP1_AT})")
    if a.get("tp_comm_overlap") is True and a.get("sequence_parallel") is False and r.tp is not None:
        s.fail("tp-overlap-sp", lm.TP_OVERLAP_NEEDS_SP, lm.TP_OVERLAP_NEEDS_SP_AT, "tp_comm_overlap", "sequence_parallel")


def _max_connections_before_blackwell(s: _Launch) -> None:
    """With TP or CP > 1, CUDA_DEVICE_MAX_CONNECTIONS must be 1 before Blackwell, unless an FSDP or EP overlap
    asks otherwise and is warned about (arguments.py:1413-1439). ``r.max_conn_needs_one``: True asserted,
    False not, None depends on the GPU (or TP / CP are not known)."""
    a, r = s.a, s.r
    r.max_conn_needs_one = None
    tp_or_cp = None if None in (r.tp, r.cp) else (r.tp > 1 or r.cp > 1)
    if tp_or_cp:
        gen = r.target.gpu_generation
        fsdp = a.get("use_torch_fsdp2") is True or a.get("use_megatron_fsdp") is True
        ep_overlap = a.get("overlap_moe_expert_parallel_comm") is True
        if fsdp or ep_overlap:
            r.max_conn_needs_one = False
            if gen != SM100_OR_NEWER:
                impl = "Torch-FSDP2" if a.get("use_torch_fsdp2") is True else "Megatron-FSDP"
                r.launch_warnings.append(
                    lm.MAX_CONN_FSDP_WARNING.format(impl=impl) if fsdp else lm.MAX_CONN_EP_WARNING
                )
        elif gen == HOPPER_OR_OLDER:
            r.max_conn_needs_one = True
            if r.max_connections is not s.unknown and r.max_connections != "1":
                s.fail("max-conn-one", lm.MAX_CONN_ONE, lm.MAX_CONN_ONE_AT, "tensor_model_parallel_size")
        elif gen == SM100_OR_NEWER:
            r.max_conn_needs_one = False
    elif tp_or_cp is False:
        r.max_conn_needs_one = False


def _expert_weight_shards(s: _Launch) -> None:
    """The expert GTP remat degree from --expert-tensor-parallel-num-weight-shards (arguments.py:1467-1473)."""
    s.r.egtp = _remat_size(s.a.get("expert_tensor_parallel_num_weight_shards"), s.r.etp, s.known)
    s.derived["expert_gtp_weight_remat_size"] = s.r.egtp if s.r.egtp is not None else s.unknown


def _linear_bias(s: _Launch) -> None:
    """Without linear biases no bias-GeLU fusion; with them a QKV bias (arguments.py:1549-1553)."""
    if s.a.get("add_bias_linear") is False:
        s.a["bias_gelu_fusion"] = False
    elif s.a.get("add_bias_linear") is True:
        s.a["add_qkv_bias"] = True


def _no_experts(s: _Launch) -> None:
    """--num-experts 0 means none (arguments.py:1593-1595)."""
    if s.a.get("num_experts") == 0:
        s.a["num_experts"] = None


def _deterministic_mode(s: _Launch) -> None:
    """--deterministic-mode checks the settings it needs, never flips them (arguments.py:1653 ->
    determinism.py:117-145)."""
    a = s.a
    if a.get("deterministic_mode") is not True:
        return
    required = lm.DETERMINISM_REQUIRED
    if all(s.known(a.get(name)) for name in (n for n, _ in required)):
        mismatched = [f"{name}={want!r} (got {a.get(name)!r})" for name, want in required if a.get(name) != want]
        if a.get("tp_comm_overlap") is True and mismatched:
            s.fail("determinism", lm.DETERMINISM.format(mismatched=", ".join(mismatched)), lm.DETERMINISM_AT,
                   "tp_comm_overlap", "deterministic_mode")


def _emerging_optimizers(s: _Launch) -> None:
    """An optimizer other than adam / sgd uses the layer-wise distributed optimizer: the distributed
    optimizer flag turns off (arguments.py:1669-1686)."""
    a, r = s.a, s.r
    optimizer = a.get("optimizer")
    if s.known(optimizer) and optimizer not in ("sgd", "adam"):
        if optimizer == "dist_muon" or a.get("use_distributed_optimizer") is True:
            r.layer_wise_distopt = True
        if a.get("use_distributed_optimizer") is True:
            s.force("layer-wise", "use_distributed_optimizer", False, f"{lm.ARGS}:1680",
                    why=f"--optimizer {optimizer}: validate_args uses the layer-wise distributed optimizer instead "
                    f"and sets this False ({lm.ARGS}:1680-1682)")
    elif not s.known(optimizer) and a.get("use_distributed_optimizer") is True:
        s.unknown_because("use_distributed_optimizer", f"depends on {s.flag_words('optimizer')}, whose value is not known "
                          f"statically: an optimizer other than adam / sgd turns it off ({lm.ARGS}:1680-1682)")


def _freeze_all_layers(s: _Launch) -> None:
    """--freeze-all-layers turns the distributed optimizer and param-gather overlap off (arguments.py:1759-1768)."""
    if s.a.get("freeze_all_layers") is True:
        s.force("freeze", "use_distributed_optimizer", False, lm.FREEZE_AT,
                "--freeze-all-layers incompatible with use_distributed_optimizer. Disabling use_distributed_optimizer.")
        s.force("freeze", "overlap_param_gather", False, lm.FREEZE_AT,
                "--freeze-all-layers incompatible with overlap_param_gather. Disabling overlap_param_gather.")


def _delay_wgrad_compute(s: _Launch) -> None:
    """--delay-wgrad-compute needs Transformer Engine layers, and TE >= 2.8 to overlap the grad reduce with
    it (arguments.py:1822-1828; the version is the target's: rules read ``r.delay_wgrad_ogr_te``)."""
    a, r = s.a, s.r
    r.delay_wgrad_ogr_te = False
    if a.get("delay_wgrad_compute") is True:
        if s.known(a.get("transformer_impl")) and a.get("transformer_impl") != "transformer_engine":
            s.fail("delay-wgrad", lm.DELAY_WGRAD_TE_IMPL, lm.DELAY_WGRAD_TE_IMPL_AT, "delay_wgrad_compute", "transformer_impl")
        elif a.get("overlap_grad_reduce") is True:
            r.delay_wgrad_ogr_te = True


def _offloading_and_optimizer(s: _Launch) -> None:
    """Whether activations are offloaded to the CPU (arguments.py:1869-1870), and whether the run builds an
    optimizer (training.py:2031-2035), for the checks after validate_args."""
    a = s.a
    layers = a.get("cpu_offloading_num_layers")
    s.derived["cpu_offloading"] = (layers > 0) if isinstance(layers, int) else s.unknown
    skip = a.get("skip_train")
    s.derived["builds_optimizer"] = s.unknown if not s.known(skip) else (not s.r.inference and (
        not skip or (a.get("perform_rl_step") is True and a.get("no_load_optim") is not True)))


# validate_args' steps, keyed by the arguments.py line each begins at, in that order: before each step the
# table's launch checks (assertions.py) of earlier lines run against the values as they are then.
VALIDATE_ARGS = (
    (f"{lm.ARGS}:409", _use_dist_ckpt),
    (f"{lm.ARGS}:411-416", _world_size),
    (f"{lm.ARGS}:430-446", _data_parallel_size),
    (f"{lm.ARGS}:569-570", _expert_tensor_parallel),
    (f"{lm.ARGS}:600-613", _cuda_graph_impl),
    (f"{lm.ARGS}:677-696", _batch_sizes),
    (f"{lm.ARGS}:722-753", _hybrid_layer_pattern),
    (f"{lm.ARGS}:820-949", _virtual_pipeline_size),
    (f"{lm.ARGS}:966-985", _interleaved_schedule),
    (f"{lm.ARGS}:990-1014", _dp_overlap),
    (f"{lm.ARGS}:1017-1030", _fsdp2_param_gather),
    (f"{lm.ARGS}:1032-1040", _param_gather_with_optimizer_step),
    (f"{lm.ARGS}:1060-1062", _fp8_param_gather),
    (f"{lm.ARGS}:1104-1143", _megatron_fsdp),
    (f"{lm.ARGS}:1149-1152", _fsdp_manual_registration),
    (f"{lm.ARGS}:1177-1178", _nan_check),
    (f"{lm.ARGS}:1190-1194", _grad_reduce_precision),
    (f"{lm.ARGS}:1214-1215", _dataloader_type),
    (f"{lm.ARGS}:1393-1402", _sequence_parallel),
    (f"{lm.ARGS}:1413-1439", _max_connections_before_blackwell),
    (f"{lm.ARGS}:1467-1473", _expert_weight_shards),
    (f"{lm.ARGS}:1549-1553", _linear_bias),
    (f"{lm.ARGS}:1593-1595", _no_experts),
    (f"{lm.ARGS}:1653", _deterministic_mode),
    (f"{lm.ARGS}:1669-1686", _emerging_optimizers),
    (f"{lm.ARGS}:1759-1768", _freeze_all_layers),
    (f"{lm.ARGS}:1822-1828", _delay_wgrad_compute),
    (f"{lm.ARGS}:1869-1870", _offloading_and_optimizer),
)


def _checkpoint_args(a, prov, launch, unknown) -> None:
    """--use-checkpoint-args with a checkpoint to load: the checkpoint's saved arguments replace (or fill) these
    before validate_args (arguments.py:90-100, checkpointing.py:1821-1985); what it holds is not known."""
    if a.get("use_checkpoint_args") is not True or (a.get("load") is None and a.get("pretrained_checkpoint") is None):
        return
    flag = launch.args["use_checkpoint_args"]
    forced, if_none = list(lm.CHECKPOINT_ARGS_FORCED), list(lm.CHECKPOINT_ARGS_IF_NONE)
    if a.get("use_mp_args_from_checkpoint_args") is not False:
        forced += lm.CHECKPOINT_MP_ARGS_FORCED
        if_none += lm.CHECKPOINT_MP_ARGS_IF_NONE
    for dest in forced + [d for d in if_none if a.get(d) is None]:
        if dest not in a:
            continue  # a saved field that is no flag of this parser
        a[dest] = unknown
        prov[dest] = Value(None, UNKNOWN_SOURCE, f"{flag.flag} on line {flag.line}: the checkpoint's saved value, if it "
                           f"has one, replaces the launch's ({lm.CHECKPOINT_ARGS_AT})")


def _remat_size(shards, tp, known):
    """The GTP remat degree ``resolve_tensor_parallel_weight_shards`` derives (model_parallel_config.py:10-40):
    shards // TP, 1 without shards; None when not known or when it raises."""
    if shards is None:
        return 1
    if not known(shards) or not isinstance(shards, int) or tp is None or shards < tp or shards % tp:
        return None
    return shards // tp


def _dp_unknown_why(r, launch) -> str:
    """Why the data-parallel size is not known, naming the input ("" when it is known)."""
    if r.dp is not None:
        return ""
    if r.dp_error:
        return f"validate_args asserts first: {r.dp_error}"
    names = [("tensor_model_parallel_size", r.tp), ("pipeline_model_parallel_size", r.pp),
             ("context_parallel_size", r.cp), ("tensor_parallel_num_weight_shards", r.gtp)]
    missing = [launch.args[d].flag for d, v in names if v is None and d in launch.args]
    if missing:
        return f"{', '.join(missing)} not known statically"
    return "world size not given: pass --world-size, or give torchrun's sizes on the launch"


def _grad_reduce_dtype(a, prov, force, unknown_because, known, flag_words) -> None:
    """--bf16 reduces gradients in fp32 unless --grad-reduce-in-bf16 (arguments.py:1181-1194):
    accumulate_allreduce_grads_in_fp32 (ddp.grad_reduce_in_fp32, training.py:1988) as validate_args leaves it."""
    at = f"{lm.ARGS}:1190-1194"
    dest = "accumulate_allreduce_grads_in_fp32"
    bf16, bf16_reduce, main_grads, given = (a.get(d) for d in ("bf16", "grad_reduce_in_bf16", "main_grads_dtype", dest))
    if bf16 is False:
        return  # fp16 and fp32 runs keep the flag (default False): fp16 reduces in fp16, fp32 in fp32
    if not known(bf16):
        if given is True and bf16_reduce is False:
            return  # True whatever --bf16 is (or validate_args asserts on --main-grads-dtype)
        unknown_because(dest, f"depends on {flag_words('bf16')}: with bf16 validate_args reduces gradients in fp32 "
                        f"unless --grad-reduce-in-bf16 ({at})")
        return
    if not known(bf16_reduce):
        unknown_because(dest, f"depends on {flag_words('grad_reduce_in_bf16')}, not known statically ({at})")
    elif bf16_reduce is True:
        if given is True:
            force("grad-reduce-bf16", dest, False, f"{lm.ARGS}:1191",
                  why=f"--grad-reduce-in-bf16: validate_args turns it off with --bf16 ({lm.ARGS}:1190-1191)")
        else:
            prov[dest] = Value(False, DERIVED, f"--bf16 with --grad-reduce-in-bf16: gradients are reduced in bf16 "
                               f"({lm.ARGS}:1190-1191)")
    elif given is not True:
        if not known(main_grads):
            unknown_because(dest, f"depends on {flag_words('main_grads_dtype')}, not known statically ({at})")
        elif main_grads == "fp32":
            force("grad-reduce-fp32", dest, True, f"{lm.ARGS}:1192", lm.BF16_GRADS_FP32,
                  f"--bf16: validate_args sets it True and prints \"{lm.BF16_GRADS_FP32}\" ({lm.ARGS}:1192-1194)")
        else:
            prov[dest] = Value(False, DERIVED, f"--bf16 with --main-grads-dtype {main_grads}: validate_args leaves it "
                               f"False ({lm.ARGS}:1192)")


def _target_values(r, launch, derived: dict, unknown) -> None:
    """The target's facts the launch checks read: Transformer Engine and torch versions, the GPU's
    architecture, and the launch variables they name."""
    from overlap_cli.frameworks.megatron_lm.assertions import TABLE

    t = r.target
    derived["inference"] = r.inference
    derived["te_version"] = "0.0.0" if not t.transformer_engine else (t.get("te_version") or unknown)
    derived["torch_version"] = t.get("torch_version") or unknown
    cc = t.get("compute_capability")
    try:
        derived["device_arch"] = int(str(cc).split(".")[0]) if cc else unknown
    except ValueError:
        derived["device_arch"] = unknown
    if derived["device_arch"] is unknown and t.gpu_generation == SM100_OR_NEWER:
        derived["device_arch"] = 10  # a Rubin part of unstated capability: the checks only compare with 8 and 10
    for name in {n[4:] for c in TABLE for n in c.reads if n.startswith("env:")} - {MAX_CONNECTIONS}:
        derived["env:" + name] = _launch_variable(r, launch, name, unknown)


def _launch_variable(r, launch, name: str, unknown):
    """A variable as the training processes see it: the launch's export, else the shell's (with
    --env-from-shell), else unset (None); assigned without export: the caller's value (the shell's, else
    not known)."""
    env = launch.env.get(name)
    shell = r.target.shell_env
    if env is not None and env.how == "assignment":
        return shell.get(name) if shell is not None else unknown
    if env is not None:
        return env.value
    if shell is not None:
        return shell.get(name)
    return None


def _grid(r, a, integer):
    """The sizes initialize_model_parallel gets from Megatron-LM (megatron/training/initialize.py:370-394)."""
    from overlap_cli.frameworks.process_grid import Grid

    return Grid(
        framework="megatron-lm", world=r.world_size, tp=r.tp, pp=r.pp, cp=r.cp, vpp=r.vpp, vpp_known=r.vpp_known,
        ep=r.ep, etp=r.etp, gtp=r.gtp, egtp=r.egtp,
        order="tp-cp-ep-pp-dp" if a.get("use_tp_pp_dp_mapping") is True else "tp-cp-ep-dp-pp",
        distopt_instances=integer("num_distributed_optimizer_instances"),
        hybrid_cp=a.get("hybrid_context_parallel") if isinstance(a.get("hybrid_context_parallel"), bool) else None,
        where={"tp": "tensor_model_parallel_size", "pp": "pipeline_model_parallel_size",
               "ep": "expert_model_parallel_size", "etp": "expert_tensor_parallel_size",
               "distopt_instances": "num_distributed_optimizer_instances", "vpp": "pipeline_model_parallel_size",
               "hybrid_cp": "hybrid_context_parallel"},
    )


def _virtual_pipeline(r, a, prov, known, integer, fail) -> None:
    """VPP from a hybrid pattern's | segments, --pipeline-model-parallel-layout,
    --num-layers-per-virtual-pipeline-stage or --num-virtual-stages-per-pipeline-rank; 1 means none."""
    pp = r.pp
    hybrid = a.get("hybrid_layer_pattern")
    if hybrid is None:  # the legacy spelling is copied over (arguments.py:722-730)
        hybrid = a.get("hybrid_override_pattern")
    layout, nl_vps, nvs = (a.get(k) for k in (
        "pipeline_model_parallel_layout", "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"))
    inputs = {"hybrid_layer_pattern": hybrid, "pipeline_model_parallel_layout": layout,
              "num_layers_per_virtual_pipeline_stage": nl_vps, "num_virtual_stages_per_pipeline_rank": nvs,
              "pipeline_model_parallel_size": a.get("pipeline_model_parallel_size")}
    unknown = [d for d, x in inputs.items() if not known(x)]
    if unknown or pp is None:
        r.vpp, r.vpp_known = None, False
        names = [r.launch.args[d].flag for d in unknown if d in r.launch.args] or ["--pipeline-model-parallel-size"]
        _vpp_unknown(r, prov, f"{', '.join(names)} not known statically")
        return
    vpp, why = None, ""
    if hybrid:
        found = _vpp_of_hybrid_pattern(a, fail, hybrid, pp)
        if found is _ASSERTS:
            return _vpp_asserts_first(r, prov)
        vpp, why = found
    given = [x is not None for x in (nl_vps, nvs, layout)]
    if sum(given) > 1:
        fail("vpp-args", lm.VPP_EXCLUSIVE.format(nl=nl_vps, nvs=nvs, layout=layout), lm.VPP_EXCLUSIVE_AT,
             *[d for d, g in zip(("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
                                  "pipeline_model_parallel_layout"), given) if g])
        return _vpp_asserts_first(r, prov)
    vpp, why = _vpp_of_flags(r, a, integer, fail, pp, hybrid, vpp, why)
    if vpp == 1:
        vpp, why = None, why + ": 1 means no virtual pipeline (arguments.py:944)"
    r.vpp = vpp
    if not r.vpp_known:
        failed = any(x.id in ("layout", "vpp-layers") for x in r.assertions)
        _vpp_unknown(r, prov, "validate_args asserts first" if failed else
                     "--pipeline-model-parallel-layout or the layer count is not known statically")
    elif why:
        prov["virtual_pipeline_model_parallel_size"] = Value(vpp, DERIVED, why)
    else:
        prov["virtual_pipeline_model_parallel_size"] = Value(
            None, DEFAULT, "no virtual pipeline flag: validate_args leaves it None (arguments.py:948)")


_ASSERTS = object()  # what a VPP source returns when validate_args asserts on it


def _vpp_asserts_first(r, prov) -> None:
    r.vpp, r.vpp_known = None, False
    _vpp_unknown(r, prov, "validate_args asserts first")


def _vpp_of_hybrid_pattern(a, fail, hybrid, pp):
    """(VPP, why) from a hybrid pattern: the pattern is the pipeline split, with no other way of asking for VPP
    (arguments.py:788-802); its | segments (before the MTP separator /) over PP (arguments.py:820-837).
    (None, "") for one segment or as many as PP; _ASSERTS when validate_args asserts."""
    for dest, message in lm.HYBRID_WITH.items():
        if a.get(dest) is not None:
            fail("vpp-args", message, lm.HYBRID_WITH_AT, dest)
            return _ASSERTS
    segments = str(hybrid).split("/")[0].count("|") + 1
    if segments == 1 and pp > 1:
        return None, ""
    if segments % pp:
        fail("layout", lm.HYBRID_SEGMENTS.format(segments=segments, pp=pp), lm.HYBRID_SEGMENTS_AT,
             "hybrid_layer_pattern" if a.get("hybrid_layer_pattern") is not None else "hybrid_override_pattern")
        return _ASSERTS
    if segments > pp:
        return segments // pp, f"{segments} segments of --hybrid-layer-pattern / PP {pp} (arguments.py:832)"
    return None, ""


def _vpp_of_flags(r, a, integer, fail, pp, hybrid, vpp, why) -> tuple:
    """(VPP, why) from --pipeline-model-parallel-layout (arguments.py:916), --num-layers-per-virtual-pipeline-stage
    (arguments.py:925-940) or --num-virtual-stages-per-pipeline-rank (arguments.py:943), at most one of them
    given; without any, the layers must divide over PP (``vpp``, ``why``: the hybrid pattern's, kept). Sets
    ``r.vpp_known`` False where the value is not known or validate_args asserts."""
    from overlap_cli.frameworks.bridge.pipeline_layout import read_layout

    layout, nl_vps, nvs = (a.get(k) for k in (
        "pipeline_model_parallel_layout", "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"))
    num_layers = integer("num_layers") if a.get("num_layers") is not None else integer("decoder_num_layers")
    extra = int(a.get("account_for_embedding_in_pipeline_split") is True) + int(a.get("account_for_loss_in_pipeline_split") is True)
    uneven = a.get("decoder_first_pipeline_num_layers") is not None or a.get("decoder_last_pipeline_num_layers") is not None
    if layout is not None:
        stages = read_layout(layout)
        if stages is None or stages.stages is None:
            r.vpp_known = False
        elif stages.stages % pp:
            fail("layout", lm.LAYOUT_NOT_DIVISIBLE.format(stages=stages.stages, pp=pp), lm.LAYOUT_NOT_DIVISIBLE_AT,
                 "pipeline_model_parallel_layout")
            r.vpp_known = False
        else:
            vpp, why = stages.stages // pp, f"{stages.stages} stages of --pipeline-model-parallel-layout / PP {pp} (arguments.py:916)"
    elif nl_vps is not None:
        if uneven:
            fail("vpp-layers", lm.VPP_UNEVEN, lm.VPP_UNEVEN_AT, "num_layers_per_virtual_pipeline_stage")
            r.vpp_known = False
        elif num_layers is None:
            r.vpp_known = False
        elif (num_layers + extra) % pp:
            fail("vpp-layers", lm.LAYERS_NOT_DIVISIBLE_PP, lm.LAYERS_NOT_DIVISIBLE_PP_AT, "num_layers", "pipeline_model_parallel_size")
            r.vpp_known = False
        elif ((num_layers + extra) // pp) % nl_vps:
            fail("vpp-layers", lm.LAYERS_NOT_DIVISIBLE_VPP, lm.LAYERS_NOT_DIVISIBLE_VPP_AT, "num_layers_per_virtual_pipeline_stage")
            r.vpp_known = False
        else:
            per_stage = (num_layers + extra) // pp
            vpp, why = per_stage // nl_vps, (
                f"{per_stage} layers per pipeline stage / --num-layers-per-virtual-pipeline-stage {nl_vps} (arguments.py:940)")
    elif nvs is not None:
        vpp, why = nvs, "--num-virtual-stages-per-pipeline-rank (arguments.py:943)"
    elif not hybrid and not uneven and num_layers is not None and a.get("num_layers") is not None and (num_layers + extra) % pp:
        fail("vpp-layers", lm.LAYERS_NOT_DIVISIBLE_PP_PLAIN, lm.LAYERS_NOT_DIVISIBLE_PP_PLAIN_AT, "num_layers", "pipeline_model_parallel_size")
    return vpp, why


def _vpp_unknown(r, prov, why: str) -> None:
    r.vpp_unknown_why = why
    prov["virtual_pipeline_model_parallel_size"] = Value(None, UNKNOWN_SOURCE, f"not known: {why}")


def _inference(launch) -> bool:
    """An inference run, where parse_args runs without gradients (the ``not torch.is_grad_enabled()`` of
    arguments.py:1061): an inference script, or a functional test of ``MODE: inference`` (the harness
    reads it: tests/functional_tests/shell_test_utils/run_ci_test.sh:68)."""
    import re

    if launch.script and "inference" in launch.script:
        return True
    return launch.kind == "yaml" and re.search(r"^MODE[ \t]*:[ \t]*['\"]?inference\b", launch.text, re.M) is not None


def _max_connections(r, launch, unknown):
    """CUDA_DEVICE_MAX_CONNECTIONS as the training processes see it: the launch's own setting, else the
    shell's (with --env-from-shell), else unset (None). ``NAME=value`` without ``export`` stays in the
    script's shell: torchrun's processes see the caller's value, not known statically."""
    env = launch.env.get(MAX_CONNECTIONS)
    if env is not None and env.how == "assignment":
        shell = r.target.shell_env
        if shell is not None:
            r.max_connections = shell.get(MAX_CONNECTIONS)
        else:
            r.max_connections = unknown
        r.max_connections_from = f"assigned on line {env.line} but not exported"
        r.max_connections_unexported = True
    elif env is not None:
        r.max_connections = env.value
        r.max_connections_from = f"{how_set(env)} on line {env.line}"
    elif r.target.shell_env is not None and MAX_CONNECTIONS in r.target.shell_env:
        r.max_connections, r.max_connections_from = r.target.shell_env[MAX_CONNECTIONS], "exported in this shell"
    else:
        r.max_connections, r.max_connections_from = None, ""
    return r.max_connections
