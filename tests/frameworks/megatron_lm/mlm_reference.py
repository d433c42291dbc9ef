"""Run Megatron-LM's real ``parse_args`` + ``validate_args`` (and the DDP / transformer config construction)
on launches, for the differential test. Run with the Python of an environment that has megatron-core
0.19.2 installed (the tool never imports it): ``python mlm_reference.py < cases.json`` (the results follow the line ``MARKER``).

Each case: {"argv": [...], "world_size": N, "arch": 9 | 10, "env": {NAME: value}}. Each result:
{"error": first assertion message or null, "values": {...}}. No GPU is touched: the one device query
``validate_args`` makes (``get_device_arch_version``) answers the case's architecture, and the DDP
bucket size is computed by the real ``resolve_ddp_bucket_size`` with the data-parallel x context-parallel
group size given directly (``get_pg_size``), as the process group would report it.
"""

import contextlib
import io
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import megatron.training.arguments as A  # noqa: E402
import megatron.training.training as T  # noqa: E402
from megatron.training.argument_utils import core_transformer_config_from_args  # noqa: E402

MARKER = "@@mlm-reference-results@@"
KEYS = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "virtual_pipeline_model_parallel_size", "sequence_parallel", "tp_comm_overlap", "overlap_p2p_comm",
    "align_param_gather", "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
    "data_parallel_size", "global_batch_size",
)


def run(case: dict) -> dict:
    saved = dict(os.environ)
    try:
        os.environ["WORLD_SIZE"], os.environ["RANK"] = str(case["world_size"]), "0"
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
        os.environ.update(case.get("env", {}))
        A.get_device_arch_version = lambda: case["arch"]
        sys.argv = ["pretrain_gpt.py", *case["argv"]]
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            args = A.parse_args()
            A.validate_args(args)
            values = {k: getattr(args, k) for k in KEYS}
            ddp = T.get_megatron_ddp_config(args)
            T.get_pg_size = lambda group: group
            values["bucket_size"] = T.resolve_ddp_bucket_size(
                ddp, args.data_parallel_size * args.context_parallel_size, ddp.overlap_grad_reduce, 10**9)
            config = core_transformer_config_from_args(args)
            values["batch_p2p_comm"] = config.batch_p2p_comm
        return {"error": None, "values": values}
    except (AssertionError, ValueError) as exc:
        return {"error": str(exc), "values": None}
    except SystemExit as exc:  # argparse rejected the command line
        return {"error": f"argparse exit {exc.code}", "values": None}
    finally:
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    cases = json.load(sys.stdin)
    results = [run(c) for c in cases]
    # Megatron's loggers write to stdout too: the results follow a marker line.
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(results) + "\n")
