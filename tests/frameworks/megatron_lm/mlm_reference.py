"""Run a launch the way Megatron-LM (megatron-core 0.19.2) would start it, up to the configs it trains with,
for the differential test. Run with the Python of an environment that has megatron-core 0.19.2 installed
(the tool never imports it): ``python mlm_reference.py < cases.json`` (the results follow the line ``MARKER``).

Each case: ``{"launch": {"program": "torchrun" | "python" | "python3", "argv": [...], "env": {...}},
"arch": 9 | 10, "te_version": "2.12"}`` — what the launcher was handed (mlm_shim.py records it from bash).
The steps, each one's exception being the launch's failure (``stage``: which step raised):

1. ``torchrun``: torch's own parser (``torch.distributed.run.get_args_parser``) reads its options; the
   training processes get ``WORLD_SIZE`` = ``--nproc-per-node`` x ``--nnodes`` and ``RANK`` (rank 0 is
   modelled). ``python pretrain_gpt.py`` started directly (``srun`` tasks) gets no WORLD_SIZE from anyone:
   ``parse_args`` then reads 1 (megatron/training/arguments.py:143-144).
2. ``parse_args`` (argparse: an exit is ``stage: argparse``) and ``validate_args``.
3. the configs training.py builds: ``core_transformer_config_from_args`` (the model provider),
   ``get_megatron_ddp_config`` with ``resolve_ddp_bucket_size`` as ``get_model`` calls it
   (training.py:1847-1856; not for Torch-FSDP2), ``get_megatron_optimizer_config``.

No GPU is touched: ``get_device_arch_version`` answers the case's architecture, Transformer Engine's
version is the case's (``megatron.core.utils._te_version``), and the data-parallel x context-parallel
group size is handed to ``resolve_ddp_bucket_size`` directly (``get_pg_size``). With ``--ddp-num-buckets``
the bucket size is the rank's parameter count // num_buckets, which needs the built model: that value is
reported as ``{"unavailable": why}``.

Each result: ``{"error": message or null, "stage": ..., "where": the raising megatron file:line,
"values": {"model.<field>": ..., "ddp.<field>": ..., "optimizer.<field>": ...}, "env": {the training
processes' environment}, "world_size", "data_parallel_size"}``.
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
import warnings

warnings.filterwarnings("ignore")
import megatron.core.utils as core_utils  # noqa: E402
import megatron.training.arguments as A  # noqa: E402
import megatron.training.training as T  # noqa: E402
import torch  # noqa: E402
import torch.distributed.run as torchrun  # noqa: E402
from megatron.training.argument_utils import core_transformer_config_from_args  # noqa: E402
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


def _pretend_fused_adam() -> None:
    """The target has Transformer Engine: --use-precision-aware-optimizer looks for its FusedAdam and the
    arguments it takes (megatron/core/optimizer/optimizer_config.py:438-467). Installed after every import,
    so nothing else sees a Transformer Engine module."""
    import types

    class FusedAdam:
        def __init__(self, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None,
                     use_decoupled_grad=False):
            pass

    te, te_pt, te_opt = (types.ModuleType(n) for n in (
        "transformer_engine", "transformer_engine.pytorch", "transformer_engine.pytorch.optimizers"))
    te_opt.FusedAdam, te_pt.optimizers, te.pytorch = FusedAdam, te_opt, te_pt
    for m in (te, te_pt, te_opt):
        sys.modules.setdefault(m.__name__, m)


_pretend_fused_adam()


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


def run(case: dict) -> dict:
    saved = dict(os.environ)
    result = {"error": None, "stage": None, "kind": None, "values": None, "env": None, "world_size": None,
              "data_parallel_size": None}
    try:
        argv, env = training_command(case["launch"])
        result["env"] = {k: v for k, v in env.items()}
        os.environ.clear()
        os.environ.update(env)
        A.get_device_arch_version = lambda: case["arch"]
        torch.cuda.get_device_capability = lambda *a, **k: (case["arch"], 0)  # --moe-grouped-gemm (arguments.py:1339)
        core_utils._te_version = Version(case.get("te_version", "2.12"))
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
                stage = "core_transformer_config_from_args"
                model = core_transformer_config_from_args(args)
                stage = "get_megatron_ddp_config"
                ddp = T.get_megatron_ddp_config(args)
                bucket = ddp.bucket_size
                if not getattr(args, "use_torch_fsdp2", False):
                    if ddp.num_buckets is not None and ddp.overlap_grad_reduce:
                        bucket = {"unavailable": "the rank's parameter count // --ddp-num-buckets (training.py:1560)"}
                    else:
                        T.get_pg_size = lambda group: group
                        bucket = T.resolve_ddp_bucket_size(
                            ddp, args.data_parallel_size * args.context_parallel_size, ddp.overlap_grad_reduce, 0)
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
    return result


if __name__ == "__main__":
    cases = json.load(sys.stdin)
    results = [run(c) for c in cases]
    # Megatron's loggers write to stdout too: the results follow a marker line.
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(results) + "\n")
