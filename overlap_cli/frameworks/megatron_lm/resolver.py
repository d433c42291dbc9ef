"""Resolve a Megatron-LM launch into the settings Megatron-LM hands to Megatron-Core — a pure function.

Mirrors, in order, what happens to the parsed flags (megatron-core 0.19.2's ``megatron/training``):

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
    from overlap_cli.frameworks.megatron_lm import assertions
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN, defaults

    def known(x) -> bool:
        return x is not UNKNOWN

    a = dict(defaults())
    prov: dict = {}  # dest -> Value
    for dest, arg in launch.args.items():
        a[dest] = arg.value
        where = arg.reason or f"{arg.flag} on line {arg.line}" + ("" if arg.origin == "launch line" else f" (through {arg.origin})")
        if known(arg.value):
            prov[dest] = Value(arg.value, USER, where)
        else:
            prov[dest] = Value(None, UNKNOWN_SOURCE, f"{where}: its value is not known statically")

    _checkpoint_args(a, prov, launch, UNKNOWN)
    r = LMResolved(launch=launch, cfg=LaunchConfig(launch), target=target)
    # Unquoted unknown expansions ($EXTRA_ARGS from outside): any flag may be among their words.
    r.inference = _inference(launch)
    r.open_words = [t.what or "an unknown expansion" for t in launch.tokens if getattr(t, "multi", False)]
    asserts, forcings = r.assertions, r.forcings

    def fail(id_: str, message: str, at: str, *dests: str) -> None:
        asserts.append(Assertion(id_, message, at, dests))

    def fail_check(c, message: str) -> None:
        asserts.append(Assertion(c.id, message, c.at, c.flags, c.who, c.bare))

    def force(id_: str, dest: str, new, at: str, printed: str = "", why: str = "") -> None:
        old = a.get(dest)
        if old is new or old == new and type(old) is type(new):
            return
        forcings.append(Forcing(id_, dest, old, new, at, printed))
        a[dest] = new
        source = FORCED_OFF if new is False or new is None else DERIVED
        prov[dest] = Value(new, source, why or f"validate_args sets it ({at})")

    def unknown_because(dest: str, why: str) -> None:
        """validate_args would change ``dest`` depending on a value not known statically."""
        a[dest] = UNKNOWN
        prov[dest] = Value(None, UNKNOWN_SOURCE, why)

    def integer(dest: str):
        v = a.get(dest)
        return v if known(v) and isinstance(v, int) and not isinstance(v, bool) else None

    def flag_words(dest: str) -> str:
        arg = launch.args.get(dest)
        return f"{arg.flag} (line {arg.line})" if arg is not None else dest

    # The derived values the launch checks read (assertions.py); UNKNOWN where not known.
    derived: dict = {}
    runner = assertions.Runner(lambda: {**a, **derived}, fail_check)
    _target_values(r, launch, derived, UNKNOWN)

    # -- update_use_dist_ckpt (arguments.py:409 -> training/utils/common_utils.py:556) --------------
    ckpt = a.get("ckpt_format")
    derived["use_dist_ckpt"] = (ckpt != "torch") if known(ckpt) else UNKNOWN

    # -- world size, the GTP weight shards, the data-parallel size (arguments.py:144, 411-446) ------
    ws = launch.world_size if isinstance(launch.world_size, int) and not isinstance(launch.world_size, bool) else None
    from overlap_cli.launch_profile.profile import for_run, launch_sizes_apply

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
    r.tp, r.pp, r.cp = integer("tensor_model_parallel_size"), integer("pipeline_model_parallel_size"), integer("context_parallel_size")
    r.ep = integer("expert_model_parallel_size")
    r.gtp = _remat_size(a.get("tensor_parallel_num_weight_shards"), r.tp, known)
    derived["world_size"] = ws if ws is not None else UNKNOWN
    derived["gtp_weight_remat_size"] = r.gtp if r.gtp is not None else UNKNOWN
    runner.until(420)
    if ws is not None and None not in (r.tp, r.pp, r.cp, r.gtp):
        size = r.tp * r.pp * r.cp * r.gtp
        if ws % size:
            r.dp_error = lm.WORLD_NOT_DIVISIBLE.format(ws=ws, size=size)
            fail("world", r.dp_error, lm.WORLD_NOT_DIVISIBLE_AT, "tensor_model_parallel_size")
        else:
            r.dp = ws // size
    a["world_size"], a["data_parallel_size"] = ws, r.dp
    derived["data_parallel_size"] = r.dp if r.dp is not None else UNKNOWN
    r.dp_unknown_why = _dp_unknown_why(r, launch)

    # -- expert tensor parallelism defaults to TP (arguments.py:569-570) -------------------------------
    runner.until(569)
    if a.get("expert_tensor_parallel_size") is None:
        a["expert_tensor_parallel_size"] = r.tp if r.tp is not None else UNKNOWN
    r.etp = integer("expert_tensor_parallel_size")
    # --enable-cuda-graph / --external-cuda-graph name an implementation (arguments.py:600-613)
    if a.get("enable_cuda_graph") is True:
        a["cuda_graph_impl"] = "local"
    elif a.get("external_cuda_graph") is True:
        a["cuda_graph_impl"] = "transformer_engine"

    # -- the batch sizes (arguments.py:677-696) -------------------------------------------------------
    runner.until(685)
    mbs = a.get("micro_batch_size")
    if a.get("global_batch_size") is None:
        a["global_batch_size"] = mbs * r.dp if isinstance(mbs, int) and r.dp is not None else UNKNOWN
    if a.get("eval_global_batch_size") is None:
        a["eval_global_batch_size"] = a["global_batch_size"]
    if a.get("eval_micro_batch_size") is None:
        a["eval_micro_batch_size"] = mbs

    # -- a hybrid layer pattern gives the layer count (arguments.py:722-753) ---------------------------
    if a.get("hybrid_override_pattern") is not None and a.get("hybrid_layer_pattern") is None:
        a["hybrid_layer_pattern"] = a["hybrid_override_pattern"]
    pattern = a.get("hybrid_layer_pattern")
    if isinstance(pattern, str):
        a["num_layers"] = len(pattern.split("/")[0].replace("|", ""))  # hybrid_layer_allocation.py:140-142
    elif not known(pattern):
        a["num_layers"] = UNKNOWN

    # -- the virtual pipeline (arguments.py:761-949) ------------------------------------------------
    runner.until(850)
    _virtual_pipeline(r, a, prov, known, integer, fail)
    derived["virtual_pipeline_model_parallel_size"] = r.vpp if r.vpp_known else UNKNOWN

    # -- the interleaved schedule, or p2p overlap and aligned param gather off (arguments.py:966-985)
    runner.until(966)
    if r.vpp is not None:
        p2p = a.get("overlap_p2p_comm")
        if r.pp is not None and known(p2p):
            if p2p and r.pp <= 1:
                fail("interleaved-pp", lm.INTERLEAVED_PP_1, lm.INTERLEAVED_AT, "pipeline_model_parallel_size")
            elif not p2p and r.pp <= 2:
                fail("interleaved-pp", lm.INTERLEAVED_PP_2, lm.INTERLEAVED_AT, "overlap_p2p_comm", "pipeline_model_parallel_size")
    elif r.vpp_known:
        printed = lm.NO_VPP_FORCING if (r.pp or 1) > 1 else ""
        why = "no virtual pipeline: validate_args turns it off (the non-interleaved schedule cannot overlap p2p)"
        force("no-vpp", "overlap_p2p_comm", False, lm.NO_VPP_FORCING_AT, printed, why + f", {lm.NO_VPP_FORCING_AT}")
        force("no-vpp", "align_param_gather", False, lm.NO_VPP_FORCING_AT, printed,
              f"no virtual pipeline: validate_args turns it off ({lm.NO_VPP_FORCING_AT})")
    else:  # without a virtual pipeline validate_args turns both off; whether there is one is not known
        why = (f"depends on whether there is a virtual pipeline ({r.vpp_unknown_why}): without one validate_args "
               f"turns it off ({lm.NO_VPP_FORCING_AT})")
        for dest in ("overlap_p2p_comm", "align_param_gather"):
            if a.get(dest) is not False:
                unknown_because(dest, why)

    # -- DP overlap, Torch-FSDP2, the optimizer-step overlap (arguments.py:990-1040) ----------------
    max_conn = _max_connections(r, launch, UNKNOWN)
    derived["env:" + MAX_CONNECTIONS] = max_conn
    distopt = a.get("use_distributed_optimizer")
    if a.get("overlap_param_gather") is True:
        if distopt is False and a.get("use_megatron_fsdp") is not True and known(a.get("optimizer")) \
                and a.get("optimizer") != "dist_muon":
            fail("opg-distopt", lm.OPG_NEEDS_DISTOPT, lm.OPG_NEEDS_DISTOPT_AT, "overlap_param_gather")
        if a.get("overlap_grad_reduce") is False:
            fail("opg-ogr", lm.OPG_NEEDS_OGR, lm.OPG_NEEDS_OGR_AT, "overlap_param_gather")
    if a.get("use_torch_fsdp2") is True:
        if distopt is True:
            fail("fsdp2-distopt", lm.FSDP2_DISTOPT, lm.FSDP2_DISTOPT_AT, "use_torch_fsdp2", "use_distributed_optimizer")
        if max_conn == "1":
            fail("fsdp-max-conn", lm.FSDP2_MAX_CONN, lm.FSDP2_MAX_CONN_AT, "use_torch_fsdp2")
        # arguments.py:1017-1030: FP8 / FP4 parameter gather fall back to bf16 on a recent Transformer Engine
        runner.until(1017)
        te = derived["te_version"]
        for dest, need, te_off in (("fp8_param_gather", "2.0.0", True), ("fp4_param_gather", "2.7.0.dev0", False)):
            if a.get(dest) is not True:
                continue
            newer = None if not known(te) else versions.at_least(te, need)
            if newer is None:
                unknown_because(dest, f"--use-torch-fsdp2 turns it off on Transformer Engine {'>=' if te_off else '<'} "
                                f"{need} (arguments.py:1017-1030); the Transformer Engine version is not known (--te-version)")
            elif newer is te_off:
                force("fsdp2-param-gather", dest, False, f"{lm.ARGS}:1018", lm.FSDP2_FP8_OFF if te_off else lm.FSDP2_FP4_OFF,
                      f"--use-torch-fsdp2 on Transformer Engine {te}: validate_args turns it off and gathers bf16 "
                      f"({lm.ARGS}:1017-1030)")
    if a.get("overlap_param_gather_with_optimizer_step") is True:
        dest = "overlap_param_gather_with_optimizer_step"
        if distopt is False:
            fail("ops", lm.OPS_DISTOPT, lm.OPS_AT, dest)
        elif a.get("overlap_param_gather") is False:
            fail("ops", lm.OPS_OPG, lm.OPS_AT, dest)
        elif r.vpp is None and r.vpp_known:
            fail("ops", lm.OPS_VPP, lm.OPS_AT, dest)
        elif known(a.get("ckpt_format")) and a.get("ckpt_format") != "torch":  # update_use_dist_ckpt
            fail("ops", lm.OPS_DIST_CKPT, lm.OPS_AT, dest, "ckpt_format")

    # -- FP8 parameter all-gather (arguments.py:1060-1062) -------------------------------------------
    if a.get("fp8_param_gather") is True and distopt is False and a.get("use_torch_fsdp2") is not True \
            and a.get("use_megatron_fsdp") is not True and not r.inference:
        fail("fp8-param-gather", lm.FP8_PARAM_GATHER, lm.FP8_PARAM_GATHER_AT, "fp8_param_gather")

    # -- Megatron-FSDP (arguments.py:1100-1168) -----------------------------------------------------
    runner.until(1104)
    if a.get("use_megatron_fsdp") is True:
        r.megatron_fsdp = True
        force("mfsdp-distopt", "use_distributed_optimizer", True, lm.MFSDP_FORCES_DISTOPT_AT,
              lm.MFSDP_FORCES_DISTOPT, f"--use-megatron-fsdp turns the distributed optimizer on ({lm.MFSDP_FORCES_DISTOPT_AT})")
        a["reuse_grad_buf_for_mxfp8_param_ag"] = False  # arguments.py:1114
        if max_conn == "1":
            fail("fsdp-max-conn", lm.MFSDP_MAX_CONN, lm.MFSDP_MAX_CONN_AT, "use_megatron_fsdp")
        if a.get("nccl_ub") is True:
            runner.until(1150)
            a["fsdp_manual_registration"] = True  # arguments.py:1149-1152

    # -- the parameter dtype, and the gradient-reduction dtype with --bf16 (arguments.py:1170-1194) ---
    runner.until(1176)
    if a.get("fp16") is True and not known(a.get("loss_scale")):
        a["check_for_nan_in_loss_and_grad"] = UNKNOWN  # off with dynamic loss scaling, which is not known
    elif a.get("fp16") is True and not a.get("loss_scale"):
        a["check_for_nan_in_loss_and_grad"] = False  # dynamic loss scaling (arguments.py:1177-1178)
    runner.until(1190)
    _grad_reduce_dtype(a, prov, force, unknown_because, known, flag_words)

    # -- sequence parallelism at TP = 1, then TP overlap (arguments.py:1393-1402) -------------------
    runner.until(1215)
    if a.get("dataloader_type") is None:
        a["dataloader_type"] = "single"  # arguments.py:1214-1215
    runner.until(1393)
    if r.tp == 1:
        printed = lm.SP_OFF_AT_TP1 if a.get("sequence_parallel") is True else ""
        force("sp-tp1", "sequence_parallel", False, lm.SP_OFF_AT_TP1_AT, printed,
              f"TP = 1: validate_args turns sequence parallelism off ({lm.SP_OFF_AT_TP1_AT})")
    elif r.tp is None and a.get("sequence_parallel") is not False:
        unknown_because("sequence_parallel", f"depends on {flag_words('tensor_model_parallel_size')}, whose value is "
                        f"not known statically: at TP = 1 validate_args turns it off ({lm.SP_OFF_AT_TP1_AT})")
    if a.get("tp_comm_overlap") is True and a.get("sequence_parallel") is False and r.tp is not None:
        fail("tp-overlap-sp", lm.TP_OVERLAP_NEEDS_SP, lm.TP_OVERLAP_NEEDS_SP_AT, "tp_comm_overlap", "sequence_parallel")

    # -- CUDA_DEVICE_MAX_CONNECTIONS before Blackwell (arguments.py:1413-1439) ----------------------
    r.max_conn_needs_one = None  # True: asserted; False: not; None: depends on the GPU (or TP/CP unknown)
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
            if max_conn is not UNKNOWN and max_conn != "1":
                fail("max-conn-one", lm.MAX_CONN_ONE, lm.MAX_CONN_ONE_AT, "tensor_model_parallel_size")
        elif gen == SM100_OR_NEWER:
            r.max_conn_needs_one = False
    elif tp_or_cp is False:
        r.max_conn_needs_one = False

    # -- the expert GTP shards (arguments.py:1467-1473), bias and experts (arguments.py:1549-1595) ----
    r.egtp = _remat_size(a.get("expert_tensor_parallel_num_weight_shards"), r.etp, known)
    derived["expert_gtp_weight_remat_size"] = r.egtp if r.egtp is not None else UNKNOWN
    runner.until(1550)
    if a.get("add_bias_linear") is False:
        a["bias_gelu_fusion"] = False
    elif a.get("add_bias_linear") is True:
        a["add_qkv_bias"] = True
    runner.until(1593)
    if a.get("num_experts") == 0:
        a["num_experts"] = None

    # -- --deterministic-mode (arguments.py:1653 -> determinism.py:117-145): checks, never flips ---------
    if a.get("deterministic_mode") is True:
        required = lm.DETERMINISM_REQUIRED
        if all(known(a.get(name)) for name in (n for n, _ in required)):
            mismatched = [f"{name}={want!r} (got {a.get(name)!r})" for name, want in required if a.get(name) != want]
            if a.get("tp_comm_overlap") is True and mismatched:
                fail("determinism", lm.DETERMINISM.format(mismatched=", ".join(mismatched)), lm.DETERMINISM_AT,
                     "tp_comm_overlap", "deterministic_mode")

    # -- emerging optimizers (arguments.py:1669-1686): not adam / sgd -> the layer-wise distributed optimizer
    runner.until(1673)
    optimizer = a.get("optimizer")
    if known(optimizer) and optimizer not in ("sgd", "adam"):
        if optimizer == "dist_muon" or a.get("use_distributed_optimizer") is True:
            r.layer_wise_distopt = True
        if a.get("use_distributed_optimizer") is True:
            force("layer-wise", "use_distributed_optimizer", False, f"{lm.ARGS}:1680",
                  why=f"--optimizer {optimizer}: validate_args uses the layer-wise distributed optimizer instead "
                  f"and sets this False ({lm.ARGS}:1680-1682)")
    elif not known(optimizer) and a.get("use_distributed_optimizer") is True:
        unknown_because("use_distributed_optimizer", f"depends on {flag_words('optimizer')}, whose value is not known "
                        f"statically: an optimizer other than adam / sgd turns it off ({lm.ARGS}:1680-1682)")

    # -- --freeze-all-layers (arguments.py:1759-1768) -----------------------------------------------
    runner.until(1760)
    if a.get("freeze_all_layers") is True:
        force("freeze", "use_distributed_optimizer", False, lm.FREEZE_AT,
              "--freeze-all-layers incompatible with use_distributed_optimizer. Disabling use_distributed_optimizer.")
        force("freeze", "overlap_param_gather", False, lm.FREEZE_AT,
              "--freeze-all-layers incompatible with overlap_param_gather. Disabling overlap_param_gather.")

    # -- --delay-wgrad-compute (arguments.py:1822-1828): Transformer Engine layers, and TE >= 2.8 to
    # overlap the grad reduce with it (the version is the target's: rules read r.delay_wgrad_ogr_te)
    r.delay_wgrad_ogr_te = False
    if a.get("delay_wgrad_compute") is True:
        if known(a.get("transformer_impl")) and a.get("transformer_impl") != "transformer_engine":
            fail("delay-wgrad", lm.DELAY_WGRAD_TE_IMPL, lm.DELAY_WGRAD_TE_IMPL_AT, "delay_wgrad_compute", "transformer_impl")
        elif a.get("overlap_grad_reduce") is True:
            r.delay_wgrad_ogr_te = True
    runner.until(1869)
    layers = a.get("cpu_offloading_num_layers")
    derived["cpu_offloading"] = (layers > 0) if isinstance(layers, int) else UNKNOWN  # arguments.py:1869-1870
    skip = a.get("skip_train")
    derived["builds_optimizer"] = UNKNOWN if not known(skip) else (not r.inference and (
        not skip or (a.get("perform_rl_step") is True and a.get("no_load_optim") is not True)))  # training.py:2031-2035

    build_configs(r, a, prov, known, UNKNOWN, fail)
    runner.after_validate()
    # -- initialize: TP overlap's userbuffers come from Transformer Engine (initialize.py:157-198) ------
    if a.get("tp_comm_overlap") is True and target.transformer_engine is False:
        fail("tp-overlap-te", lm.TP_OVERLAP_NEEDS_TE, lm.TP_OVERLAP_NEEDS_TE_AT, "tp_comm_overlap")
    r.args = a
    r.model_at_setup = r.final["model"]
    r.grid = _grid(r, a, integer)
    return r


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
    from overlap_cli.frameworks.bridge.pipeline_layout import read_layout

    pp = r.pp
    hybrid = a.get("hybrid_layer_pattern")
    if hybrid is None:  # the legacy spelling is copied over (arguments.py:722-730)
        hybrid = a.get("hybrid_override_pattern")
    layout, nl_vps, nvs = (a.get(k) for k in (
        "pipeline_model_parallel_layout", "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank"))
    vpp, why = None, ""
    inputs = {"hybrid_layer_pattern": hybrid, "pipeline_model_parallel_layout": layout,
              "num_layers_per_virtual_pipeline_stage": nl_vps, "num_virtual_stages_per_pipeline_rank": nvs,
              "pipeline_model_parallel_size": a.get("pipeline_model_parallel_size")}
    unknown = [d for d, x in inputs.items() if not known(x)]
    if unknown or pp is None:
        r.vpp, r.vpp_known = None, False
        names = [r.launch.args[d].flag for d in unknown if d in r.launch.args] or ["--pipeline-model-parallel-size"]
        _vpp_unknown(r, prov, f"{', '.join(names)} not known statically")
        return
    if hybrid:
        # arguments.py:788-802: the pattern is the pipeline split; no other way of asking for VPP with it.
        for dest, message in lm.HYBRID_WITH.items():
            if a.get(dest) is not None:
                fail("vpp-args", message, lm.HYBRID_WITH_AT, dest)
                r.vpp, r.vpp_known = None, False
                _vpp_unknown(r, prov, "validate_args asserts first")
                return
        # arguments.py:820-837: | segments of the main pattern (before the MTP separator /).
        segments = str(hybrid).split("/")[0].count("|") + 1
        if not (segments == 1 and pp > 1):
            if segments % pp:
                fail("layout", lm.HYBRID_SEGMENTS.format(segments=segments, pp=pp), lm.HYBRID_SEGMENTS_AT,
                     "hybrid_layer_pattern" if a.get("hybrid_layer_pattern") is not None else "hybrid_override_pattern")
                r.vpp, r.vpp_known = None, False
                _vpp_unknown(r, prov, "validate_args asserts first")
                return
            if segments > pp:
                vpp, why = segments // pp, f"{segments} segments of --hybrid-layer-pattern / PP {pp} (arguments.py:832)"
    given = [x is not None for x in (nl_vps, nvs, layout)]
    if sum(given) > 1:
        fail("vpp-args", lm.VPP_EXCLUSIVE.format(nl=nl_vps, nvs=nvs, layout=layout), lm.VPP_EXCLUSIVE_AT,
             *[d for d, g in zip(("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
                                  "pipeline_model_parallel_layout"), given) if g])
        r.vpp, r.vpp_known = None, False
        _vpp_unknown(r, prov, "validate_args asserts first")
        return
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
