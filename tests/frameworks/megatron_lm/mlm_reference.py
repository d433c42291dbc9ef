"""Run Megatron-LM's real launch checks on launches, for the differential tests: ``parse_args`` +
``validate_args``, then in the order ``pretrain`` reaches them the microbatch calculator
(``set_global_variables``), ``_initialize_distributed`` (its GTP check and its ``initialize_model_parallel`` call), ``core_transformer_config_from_args``, ``get_megatron_ddp_config`` + ``resolve_ddp_bucket_size``
and ``get_megatron_optimizer_config`` (when the run builds an optimizer). Run with the Python of an
environment that has megatron-core 0.19.2 installed (the tool never imports it):
``python mlm_reference.py < cases.json`` (the results follow the line ``MARKER``).

Each case: {"argv": [...], "world_size": N, "arch": 9 | 10, "env": {NAME: value}, optional "te" (a
Transformer Engine version to model: megatron.core.utils' cached version, and a FusedAdam with the
precision-aware arguments; none: the environment's, absent) and "torch" (a torch version to model)}.
Each result: {"error": first failure message or null, "values": {...}}.

No GPU is touched: the device queries answer the case's architecture; the DDP bucket size is computed by
the real ``resolve_ddp_bucket_size`` with the data-parallel x context-parallel group size given directly
(``get_pg_size``); ``initialize_model_parallel`` runs its size checks for the case's world size with the
process-group calls (``torch.distributed.new_group`` and friends) made inert, so what it raises is its
own arithmetic on the sizes.
"""

import contextlib
import io
import json
import os
import sys
import types
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import megatron.core.parallel_state as mpu  # noqa: E402
import megatron.core.utils as core_utils  # noqa: E402
import megatron.core.tensor_parallel.gtp_api as gtp_api  # noqa: E402
import megatron.training.arguments as A  # noqa: E402
import megatron.training.global_vars as global_vars  # noqa: E402
import megatron.training.initialize as initialize  # noqa: E402
import megatron.training.training as T  # noqa: E402
from megatron.core.num_microbatches_calculator import _build_num_microbatches_calculator  # noqa: E402
from megatron.training.argument_utils import core_transformer_config_from_args  # noqa: E402
from packaging.version import Version  # noqa: E402

MARKER = "@@mlm-reference-results@@"
KEYS = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "virtual_pipeline_model_parallel_size", "sequence_parallel", "tp_comm_overlap", "overlap_p2p_comm",
    "align_param_gather", "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
    "data_parallel_size", "global_batch_size", "accumulate_allreduce_grads_in_fp32", "fp8_param_gather",
    "expert_tensor_parallel_size",
)
# The DistributedDataParallelConfig fields the effective table shows (ddp.*).
DDP_FIELDS = ("use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather", "align_param_gather",
              "grad_reduce_in_fp32", "fp8_param_gather")


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
    gtp_api.HAVE_GTP = bool(version)  # GTP's Transformer Engine symbols import (gtp_api.py:13-38)
    for name in [m for m in sys.modules if m == "transformer_engine" or m.startswith("transformer_engine.")]:
        if getattr(sys.modules[name], "_overlap_reference_stub", False):
            del sys.modules[name]
    if not version:
        return

    class FusedAdam:  # the precision-aware arguments OptimizerConfig looks for (optimizer_config.py:447-461)
        def __init__(self, params, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None,
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


def run(case: dict) -> dict:
    saved = dict(os.environ)
    saved_torch_version = core_utils.get_torch_version
    try:
        os.environ["WORLD_SIZE"], os.environ["RANK"] = str(case["world_size"]), "0"
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
        os.environ.update(case.get("env", {}))
        A.get_device_arch_version = lambda: case["arch"]
        torch.cuda.get_device_capability = lambda *a, **k: (case["arch"], 0)
        _model_te(case.get("te"))
        if case.get("torch"):
            core_utils.get_torch_version = lambda: Version(case["torch"])
        _inert_process_groups(case["world_size"])
        sys.argv = ["pretrain_gpt.py", *case["argv"]]
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            args = A.parse_args()
            A.validate_args(args)
            values = {k: getattr(args, k) for k in KEYS}
            _build_num_microbatches_calculator(  # set_global_variables (global_vars.py:127-135)
                0, args.global_batch_size, args.micro_batch_size,
                args.data_parallel_size * args.gtp_weight_remat_size, args.decrease_batch_size_if_needed,
                args.step_batch_size_schedule, args.seq_length)
            _initialize_distributed(args)
            config = core_transformer_config_from_args(args)
            values["batch_p2p_comm"] = config.batch_p2p_comm
            # setup_model_and_optimizer (training.py:2030-2035): the DDP and optimizer configs
            builds = (not args.skip_train) or (args.perform_rl_step and not args.no_load_optim)
            values["bucket_size"], values["ddp"] = None, None
            if builds:
                ddp = T.get_megatron_ddp_config(args)
                values["ddp"] = {f: getattr(ddp, f) for f in DDP_FIELDS}
                if not args.use_torch_fsdp2:
                    T.get_pg_size = lambda group: group
                    values["bucket_size"] = T.resolve_ddp_bucket_size(
                        ddp, args.data_parallel_size * args.context_parallel_size, ddp.overlap_grad_reduce, 10**9)
                T.get_megatron_optimizer_config(args)
        return {"error": None, "values": values}
    except (AssertionError, ValueError, RuntimeError) as exc:
        return {"error": str(exc), "values": None, "type": type(exc).__name__}
    except SystemExit as exc:  # argparse rejected the command line
        return {"error": f"argparse exit {exc.code}", "values": None}
    finally:
        os.environ.clear()
        os.environ.update(saved)
        core_utils.get_torch_version = saved_torch_version
        _model_te(None)


if __name__ == "__main__":
    cases = json.load(sys.stdin)
    results = [run(c) for c in cases]
    # Megatron's loggers write to stdout too: the results follow a marker line.
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(results) + "\n")
