"""Run a launch the way Megatron-LM would start it, up to the configs it trains with, for the differential
tests. Run with the Python of an environment that has megatron-core installed — 0.19.2, 0.18.2 or 0.17.1: the
release installed is the one answering (the tool never imports it): ``python mlm_reference.py < cases.json`` (the results follow the line ``MARKER``).

A case is either ``{"launch": {"program": "torchrun" | "python" | "python3", "argv": [...], "env": {...}},
"arch": 9 | 10, "te": "2.12"}`` — what the launcher was handed (mlm_shim.py records it from bash) — or the
short form ``{"argv": [training script arguments], "world_size": N, "arch": ..., "env": {...}}`` (lmref.py:
one training process of a ``WORLD_SIZE``-rank launch). Optional ``"te"``: a Transformer Engine version to
model (megatron.core.utils' cached version, GTP's symbols and a FusedAdam taking the precision-aware
arguments); without it Transformer Engine is absent. Optional ``"torch"``: a torch version to model.
The steps, each one's exception being the launch's failure (``stage``: which step raised), in the order
``pretrain`` reaches them:

1. ``torchrun``: torch's own parser (``torch.distributed.run.get_args_parser``) reads its options; the
   training processes get ``WORLD_SIZE`` = ``--nproc-per-node`` x ``--nnodes`` and ``RANK`` (rank 0 is
   modelled). ``python pretrain_gpt.py`` started directly (``srun`` tasks) gets no WORLD_SIZE from anyone:
   ``parse_args`` then reads 1 (megatron/training/arguments.py:143-144).
2. ``parse_args`` (argparse: an exit is ``stage: argparse``) and ``validate_args``.
3. the microbatch calculator (``set_global_variables``, global_vars.py:127-135) and
   ``_initialize_distributed`` (initialize.py:265-394: its GTP check and its ``initialize_model_parallel``
   call, with the process-group calls made inert, so what it raises is its own arithmetic on the sizes).
4. the configs training.py builds: ``core_transformer_config_from_args`` (the model provider),
   ``get_megatron_ddp_config`` with ``resolve_ddp_bucket_size`` as ``get_model`` calls it
   (training.py:1847-1856; not for Torch-FSDP2), ``get_megatron_optimizer_config``.

Where a release builds these elsewhere, the reference follows it: megatron-core 0.17.1 has no
``get_megatron_ddp_config`` (get_model builds the DDP config and its bucket inline, training.py:1436-1477) and no
generalized TP (no ``gtp_api``); 0.18.2 computes the bucket inline in get_model (training.py:1764-1779).

No GPU is touched: ``get_device_arch_version`` answers the case's architecture, and the data-parallel x
context-parallel group size is handed to ``resolve_ddp_bucket_size`` directly (``get_pg_size``). With
``--ddp-num-buckets`` the bucket size is the rank's parameter count // num_buckets, which needs the built
model: that value is reported as ``{"unavailable": why}``.

Each result: ``{"error": message or null, "stage": ..., "kind": the exception's type, "where": the raising
megatron file:line, "values": {"model.<field>": ..., "ddp.<field>": ..., "optimizer.<field>": ...}, "env":
{the training processes' environment}, "world_size", "data_parallel_size"}``.
``values`` holds every field of the three real config objects (so every key the tool prints has its real
counterpart without a list), plus ``model.tp_comm_overlap_cfg``: the TransformerConfig has no such field;
Megatron-LM reads ``args.tp_comm_overlap_cfg`` when it sets up the userbuffers (initialize.py:204).
"""

import contextlib
import dataclasses
import enum
import io
import json
import os
import sys
import types
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import torch.distributed.run as torchrun  # noqa: E402
import megatron.core.parallel_state as mpu  # noqa: E402
import megatron.core.utils as core_utils  # noqa: E402
try:  # generalized TP: megatron-core 0.19 and later
    import megatron.core.tensor_parallel.gtp_api as gtp_api  # noqa: E402
except ImportError:
    gtp_api = None
import megatron.training.arguments as A  # noqa: E402
import megatron.training.global_vars as global_vars  # noqa: E402
import megatron.training.initialize as initialize  # noqa: E402
import megatron.training.training as T  # noqa: E402
from megatron.core.num_microbatches_calculator import _build_num_microbatches_calculator  # noqa: E402
try:
    from megatron.training.argument_utils import core_transformer_config_from_args  # noqa: E402
except ImportError:  # megatron-core 0.17.1: arguments.py:1649
    from megatron.training.arguments import core_transformer_config_from_args  # noqa: E402
from packaging.version import Version  # noqa: E402

MARKER = "@@mlm-reference-results@@"


def _cache_help_texts() -> None:
    """parse_args builds its parser afresh on every call, reading the help text of each dataclass field
    from the source (argument_utils.py:233 ``_get_field_docstrings``: inspect + ast, ~0.5 s a launch).
    Help texts are the same every time: read them once per class. Nothing argparse decides changes."""
    from megatron.training.argument_utils import ArgumentGroupFactory

    read, cache = ArgumentGroupFactory._get_field_docstrings, {}

    def cached(self, cls):
        if cls not in cache:
            cache[cls] = read(self, cls)
        return dict(cache[cls])

    ArgumentGroupFactory._get_field_docstrings = cached


_cache_help_texts()


class _Group:
    """A process group that only knows its size."""

    def __init__(self, size: int):
        self._size = size

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return 0


def _inert_process_groups(world_size: int) -> None:
    dist = torch.distributed
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda *a, **k: world_size
    dist.get_rank = lambda *a, **k: 0
    dist.new_group = lambda ranks=None, *a, **k: _Group(len(ranks) if ranks is not None else world_size)
    torch.cuda.synchronize = lambda *a, **k: None
    mpu.get_nccl_options = lambda *a, **k: None  # NCCL's options object does not exist in CPU torch


def _model_te(version):
    """Model a Transformer Engine install of ``version`` (None: the environment's own, absent here)."""
    core_utils._te_version = Version(version) if version else None
    if gtp_api is not None:
        gtp_api.HAVE_GTP = bool(version)  # GTP's Transformer Engine symbols import (gtp_api.py:13-38)
    for name in [m for m in sys.modules if m == "transformer_engine" or m.startswith("transformer_engine.")]:
        if getattr(sys.modules[name], "_overlap_reference_stub", False):
            del sys.modules[name]
    if not version:
        return

    class FusedAdam:  # the precision-aware arguments OptimizerConfig looks for (optimizer_config.py:447-461)
        def __init__(self, params=None, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None,
                     use_decoupled_grad=False):
            pass

    for name in ("transformer_engine", "transformer_engine.pytorch", "transformer_engine.pytorch.optimizers"):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod._overlap_reference_stub = True
            sys.modules[name] = mod
    sys.modules["transformer_engine.pytorch.optimizers"].FusedAdam = FusedAdam


def _initialize_distributed(args) -> None:
    """megatron/training/initialize.py:265-394 with torch.distributed already "initialized" and one device: its
    GTP check and its initialize_model_parallel call, as the launch makes them."""
    global_vars.set_args(args)
    torch.cuda.device_count = lambda: 1
    mpu.destroy_model_parallel()
    try:
        initialize._initialize_distributed(None, None, None)
    finally:
        mpu.destroy_model_parallel()
        global_vars._GLOBAL_ARGS = None


class Failure(Exception):
    def __init__(self, stage, message, kind="", where=""):
        super().__init__(message)
        self.stage, self.message, self.kind, self.where = stage, message, kind, where


def raised_at(exc) -> str:
    """The innermost megatron frame of the exception's traceback, as ``package/path.py:LINE``."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/megatron/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename.split('site-packages/', 1)[-1]}:{f.lineno}"


def plain(value):
    """A config value as JSON: dtypes and enums by name, tuples as lists, anything else as text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return repr(value)


def training_command(launch: dict) -> tuple:
    """(training script argv, the training process's environment) from the launcher's words."""
    env = dict(launch["env"])
    argv = list(launch["argv"])
    program = launch["program"]
    if program in ("python", "python3"):
        i = 0
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 2 if argv[i] in ("-W", "-X") else 1
        if i < len(argv) and argv[i] == "-m":
            if argv[i + 1] not in ("torch.distributed.run", "torch.distributed.launch"):
                raise Failure("launcher", f"python -m {argv[i + 1]}: not a launcher")
            program, argv = "torchrun", argv[i + 2:]
        else:  # the script itself: one process, WORLD_SIZE as the environment has it
            return argv[i:], env
    if program != "torchrun":
        raise Failure("launcher", f"unknown launcher {program}")
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = torchrun.get_args_parser().parse_args(argv)
    except SystemExit:
        raise Failure("torchrun", err.getvalue().strip().splitlines()[-1]) from None
    low, high = torchrun.parse_min_max_nnodes(args.nnodes)
    if low != high:
        raise Failure("torchrun", f"elastic --nnodes {args.nnodes}")
    nproc = int(args.nproc_per_node)
    env.update(WORLD_SIZE=str(nproc * high), RANK="0", LOCAL_RANK="0", LOCAL_WORLD_SIZE=str(nproc))
    return [args.training_script, *args.training_script_args], env


def _launch(case: dict) -> dict:
    """The launcher's words of a case (the short form: one training process of a WORLD_SIZE-rank launch)."""
    if "launch" in case:
        return case["launch"]
    env = {"WORLD_SIZE": str(case["world_size"]), "RANK": "0", **case.get("env", {})}
    return {"program": "python", "argv": ["pretrain_gpt.py", *case["argv"]], "env": env}


def _microbatches(args) -> None:
    """The microbatch calculator set_global_variables builds (global_vars.py:124-135), by the parameters of the
    installed release's ``_build_num_microbatches_calculator`` (0.17.1 takes the ramp-up, 0.18 the step schedule)."""
    import inspect

    given = {"rank": 0, "rampup_batch_size": getattr(args, "rampup_batch_size", None),
             "global_batch_size": args.global_batch_size, "micro_batch_size": args.micro_batch_size,
             # 0.19: the full DP x gtp_remat degree (args.data_parallel_size is the gtp_remat-excluded replicate)
             "data_parallel_size": args.data_parallel_size * getattr(args, "gtp_weight_remat_size", 1),
             "decrease_batch_size_if_needed": args.decrease_batch_size_if_needed,
             "step_batch_size_schedule": getattr(args, "step_batch_size_schedule", None),
             "seq_length": args.seq_length}
    wanted = inspect.signature(_build_num_microbatches_calculator).parameters
    _build_num_microbatches_calculator(**{name: given[name] for name in wanted})


_NUM_BUCKETS = {"unavailable": "the rank's parameter count // --ddp-num-buckets (get_model)"}


def _ddp_config(args) -> tuple:
    """(the DDP config get_model hands DDP, its bucket size) as the installed release builds them."""
    if hasattr(T, "get_megatron_ddp_config"):
        ddp = T.get_megatron_ddp_config(args)
    else:  # megatron-core 0.17.1: get_model builds it inline (training.py:1434-1464)
        ddp = _ddp_config_in_get_model(args)
    if getattr(args, "use_torch_fsdp2", False):
        return ddp, ddp.bucket_size
    if hasattr(T, "resolve_ddp_bucket_size"):  # 0.19
        if ddp.num_buckets is not None and ddp.overlap_grad_reduce:
            return ddp, _NUM_BUCKETS
        T.get_pg_size = lambda group: group
        return ddp, T.resolve_ddp_bucket_size(ddp, args.data_parallel_size * args.context_parallel_size,
                                              ddp.overlap_grad_reduce, 0)
    # 0.17.1 training.py:1445-1477, 0.18.2 training.py:1764-1779: the bucket set inline
    if not ddp.overlap_grad_reduce:
        return ddp, None
    if args.ddp_num_buckets is not None:
        return ddp, _NUM_BUCKETS
    bucket = ddp.bucket_size
    return ddp, bucket if bucket is not None else max(40000000, 1000000 * args.data_parallel_size * args.context_parallel_size)


def _ddp_config_in_get_model(args):
    """megatron-core 0.17.1 get_model's DDP config (training.py:1434-1464), its asserts included; the bucket of
    --ddp-num-buckets, which needs the model's parameter count, is left to ``_ddp_config``."""
    from megatron.core.distributed import DistributedDataParallelConfig, TorchFullyShardedDataParallelConfig

    if getattr(args, "use_torch_fsdp2", False):
        return TorchFullyShardedDataParallelConfig(
            reshard_after_forward=getattr(args, "torch_fsdp2_reshard_after_forward", True))
    kwargs = {f.name: getattr(args, f.name) for f in dataclasses.fields(DistributedDataParallelConfig) if hasattr(args, f.name)}
    kwargs["grad_reduce_in_fp32"] = args.accumulate_allreduce_grads_in_fp32
    kwargs["check_for_nan_in_grad"] = args.check_for_nan_in_loss_and_grad
    kwargs["check_for_large_grads"] = args.check_for_large_grads
    if args.ddp_num_buckets is not None:
        assert args.ddp_bucket_size is None, "Cannot specify both --ddp-num-buckets and --ddp-bucket-size"
        assert args.ddp_num_buckets > 0, "--ddp-num-buckets must be greater than 0"
        kwargs["bucket_size"] = None
    else:
        kwargs["bucket_size"] = args.ddp_bucket_size
    kwargs["pad_buckets_for_high_nccl_busbw"] = args.ddp_pad_buckets_for_high_nccl_busbw
    kwargs["reduce_scatter_with_fp32_accumulation"] = args.ddp_reduce_scatter_with_fp32_accumulation
    kwargs["param_name_patterns_for_fp32_local_accumulation"] = tuple(args.ddp_param_name_patterns_for_fp32_local_accumulation)
    kwargs["average_in_collective"] = args.ddp_average_in_collective
    kwargs["megatron_fsdp_main_params_dtype"] = args.megatron_fsdp_main_params_dtype
    kwargs["megatron_fsdp_main_grads_dtype"] = args.megatron_fsdp_main_grads_dtype
    kwargs["megatron_fsdp_grad_comm_dtype"] = args.megatron_fsdp_grad_comm_dtype
    return DistributedDataParallelConfig(**kwargs)


def run(case: dict) -> dict:
    saved = dict(os.environ)
    saved_torch_version = core_utils.get_torch_version
    result = {"error": None, "stage": None, "kind": None, "values": None, "env": None, "world_size": None,
              "data_parallel_size": None}
    try:
        argv, env = training_command(_launch(case))
        result["env"] = {k: v for k, v in env.items()}
        os.environ.clear()
        os.environ.update(env)
        A.get_device_arch_version = lambda: case["arch"]
        torch.cuda.get_device_capability = lambda *a, **k: (case["arch"], 0)  # --moe-grouped-gemm (arguments.py:1339)
        _model_te(case.get("te"))
        if case.get("torch"):
            core_utils.get_torch_version = lambda: Version(case["torch"])
        _inert_process_groups(int(env.get("WORLD_SIZE", "1")))
        sys.argv = argv
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            try:
                args = A.parse_args()
            except SystemExit:
                lines = [ln for ln in sink.getvalue().splitlines() if ln.strip()]
                raise Failure("argparse", lines[-1] if lines else "argparse exit") from None
            result["world_size"] = args.world_size
            stage = "validate_args"
            try:
                A.validate_args(args)
                result["data_parallel_size"] = args.data_parallel_size
                stage = "set_global_variables"
                _microbatches(args)
                stage = "_initialize_distributed"
                _initialize_distributed(args)
                stage = "core_transformer_config_from_args"
                model = core_transformer_config_from_args(args)
                stage = "get_megatron_ddp_config"
                ddp, bucket = _ddp_config(args)
                stage = "get_megatron_optimizer_config"
                optimizer, _ = T.get_megatron_optimizer_config(args)
            except Exception as exc:  # what the launch dies of, at this step
                raise Failure(stage, str(exc), type(exc).__name__, raised_at(exc)) from None
        values = {}
        for section, obj in (("model", model), ("ddp", ddp), ("optimizer", optimizer)):
            for f in dataclasses.fields(obj):
                values[f"{section}.{f.name}"] = plain(getattr(obj, f.name, None))
        values["ddp.bucket_size"] = bucket if isinstance(bucket, dict) else plain(bucket)
        values["model.tp_comm_overlap_cfg"] = args.tp_comm_overlap_cfg  # initialize.py:204
        result["values"] = values
    except Failure as exc:
        result["error"], result["stage"], result["kind"], result["where"] = exc.message, exc.stage, exc.kind, exc.where
    finally:
        os.environ.clear()
        os.environ.update(saved)
        core_utils.get_torch_version = saved_torch_version
        _model_te(None)
    return result


if __name__ == "__main__":
    cases = json.load(sys.stdin)
    results = [run(c) for c in cases]
    # Megatron's loggers write to stdout too: the results follow a marker line.
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(results) + "\n")
