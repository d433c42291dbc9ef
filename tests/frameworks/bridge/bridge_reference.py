"""Run by test_layers_differential.py in an environment with megatron-bridge 0.6.2 installed: for each case
(a recipe dump, override files, dotlists, a world size), the ConfigContainer Bridge's entry points build and
launch, and its overlap settings after the runtime update.

The ConfigContainer comes from the dump through ``ConfigContainer.from_yaml`` (the recipe functions want
Hugging Face downloads); ``process_config_with_overrides`` (training/utils/omegaconf_utils.py:105-160) lays
the override files and dotlists on it; then the steps of ``runtime_config_update`` (training/config.py:
1853-1888): environment variables, mixed precision resolution and setup, ``set_data_parallel_size`` with
WORLD_SIZE, ``comm_overlap.finalize`` / ``setup``, and of ``validate`` the ``ddp`` / ``optimizer`` finalize calls and
the distributed-optimizer sync (its model checks need Transformer Engine and are left out). This machine has no GPU and no
Transformer Engine: ``comm_overlap`` is told TE is present and recent (the target overlap-cli assumes).

A case with ``script`` is a Python run instead: the script is executed (runpy) and its module-level ``cfg``
taken where the module ends.

Reads a JSON list of cases on stdin; prints a marker line and one JSON list of results: ``{"error": "Type:
message"}`` where Bridge raises, else ``{"values": {key: value}}``.
"""

import contextlib
import io
import json
import os
import sys
import warnings

FIELDS = {
    "model": ["tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
              "context_parallel_size", "sequence_parallel", "tp_comm_overlap", "overlap_p2p_comm", "batch_p2p_comm",
              "defer_embedding_wgrad_compute", "wgrad_deferral_limit", "overlap_moe_expert_parallel_comm",
              "delay_wgrad_compute"],
    "ddp": ["use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather", "align_param_gather",
            "bucket_size", "grad_reduce_in_fp32", "fp8_param_gather"],
    "optimizer": ["overlap_param_gather", "overlap_param_gather_with_optimizer_step"],
}


def run(case: dict) -> dict:
    from megatron.bridge.training import config as bconfig
    from megatron.bridge.training.mixed_precision import get_mixed_precision_config
    from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides

    saved = dict(os.environ)
    os.environ["WORLD_SIZE"] = str(case["world_size"])
    try:
        if case.get("script"):  # a run written in Python: executed, its ``cfg`` at the end of the module
            import runpy

            cfg = runpy.run_path(case["script"], run_name="bridge_reference_script")["cfg"]
        else:
            cfg = bconfig.ConfigContainer.from_yaml(case["base"])
            files = case["files"] or [None]
            for i, f in enumerate(files):  # Bridge's entry points take one --config-file; several merge in turn
                cfg = process_config_with_overrides(cfg, f, case["dotlists"] if i == len(files) - 1 else None)
        bconfig.apply_environment_variables(cfg)
        if cfg.mixed_precision is not None:
            if isinstance(cfg.mixed_precision, str):
                cfg.mixed_precision = get_mixed_precision_config(cfg.mixed_precision)
            cfg.mixed_precision.finalize()
            cfg.mixed_precision.setup(cfg.model, cfg.optimizer, cfg.ddp)
        cfg.set_data_parallel_size()
        if cfg.comm_overlap is not None:
            cfg.comm_overlap.finalize()
            cfg.comm_overlap.setup(cfg.model, cfg.optimizer, cfg.ddp)
        for section in (cfg.ddp, cfg.optimizer):  # as validate() calls them (training/config.py:1253-1256)
            if hasattr(section, "finalize"):
                section.finalize()
        bconfig._validate_and_sync_distributed_optimizer_settings(cfg)  # validate(), training/config.py:1365
    except Exception as exc:  # what the launch would die of
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    values = {f"{section}.{name}": getattr(getattr(cfg, section), name, None)
              for section, names in FIELDS.items() for name in names}
    values["data_parallel_size"] = cfg.data_parallel_size
    return {"values": values}


def _pretend_transformer_engine() -> None:
    """What Bridge's config code asks of Transformer Engine, answered as a recent TE would: comm_overlap's
    HAVE_TE / is_te_min_version (training/comm_overlap.py:29-34, 449, 522-546) and the FusedAdam signature
    the precision-aware optimizer checks (megatron/core/optimizer/optimizer_config.py:438-467). Installed
    after the imports, so nothing else sees a TE module."""
    import types

    from megatron.bridge.training import comm_overlap
    from megatron.core.optimizer import optimizer_config

    comm_overlap.HAVE_TE = True
    comm_overlap.is_te_min_version = optimizer_config.is_te_min_version = lambda *args, **kwargs: True

    class FusedAdam:
        def __init__(self, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None, use_decoupled_grad=False):
            pass

    te, te_pt, te_opt = (types.ModuleType(n) for n in ("transformer_engine", "transformer_engine.pytorch",
                                                       "transformer_engine.pytorch.optimizers"))
    te_opt.FusedAdam, te_pt.optimizers, te.pytorch = FusedAdam, te_opt, te_pt
    sys.modules.update({m.__name__: m for m in (te, te_pt, te_opt)})


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.CRITICAL)
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(io.StringIO()):
        from megatron.bridge.training import comm_overlap

        _pretend_transformer_engine()
        results = [run(c) for c in cases]
    sys.stdout.write("@@bridge-reference-results@@\n" + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
