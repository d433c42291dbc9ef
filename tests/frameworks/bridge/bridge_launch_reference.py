"""Run by the differential tests in an environment with megatron-bridge 0.6.2 (and the hydra-core it
declares) installed: for each case, how far Bridge's own code gets with it -- the whole of
``runtime_config_update`` (training/config.py:1853-1888), ``validate()`` included -- and the overlap
settings it computed.

A case is ``{"base", "files", "dotlists", "world_size", "gpu", "mode"}``:
- ``mode: "file"``: the base YAML is the config, as a user launches a saved dump or a checkpoint's
  ``run_config.yaml``: ``ConfigContainer.from_yaml`` instantiates every section from it;
- ``mode: "recipe"``: the base is a recipe dump standing for the recipe function run on the target
  (the recipe functions want Hugging Face downloads): loaded the same way, then each field the dumping
  machine decided is put back the way the recipe builds it on a machine with Transformer Engine -- a field
  whose dataclass declares a ``default_factory`` (``gradient_accumulation_fusion``, gpt_provider.py:205) is
  re-evaluated with Transformer Engine importable, a ``partial`` layer spec built with
  ``use_transformer_engine=HAVE_TE`` gets true, and attributes the recipe assigns after construction
  (ddp's ``reuse_grad_buf_for_mxfp8_param_ag``) are assigned after construction, so ``__post_init__``
  does not see them;
then ``process_config_with_overrides`` lays the override files and dotlists on it (omegaconf_utils.py:
105-160, Hydra struct mode), ``runtime_config_update`` runs, and Bridge's ``_initialize_distributed`` builds
the process grid (bridge_reference's inert torch.distributed).

The machine has no GPU and no Transformer Engine; the target is answered as a recent TE (2.12) on the
case's GPU: bridge_reference's TE pretence, Megatron-Core's ``_te_version``, the fused kernels whose
absence ``TransformerConfig.__post_init__`` checks, and ``torch.cuda.get_device_properties`` for the GPU.

Reads a JSON list of cases on stdin; prints a marker line and one JSON list of results:
``{"error": "Type: message", "stage": "load" | "overrides" | "update" | "init", "where": "file.py:line"}`` where Bridge
raises, else ``{"values": {key: value}}``.
"""

import contextlib
import dataclasses
import io
import json
import os
import sys
import tempfile
import traceback
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bridge_reference  # noqa: E402

GPUS = {"h100": (9, "NVIDIA H100 80GB HBM3"), "b200": (10, "NVIDIA B200"), "b300": (10, "NVIDIA B300"),
        "gb200": (10, "NVIDIA GB200"), "gb300": (10, "NVIDIA GB300")}
_GPU = {"name": "h100"}


def _pretend_target() -> None:
    import torch
    from packaging.version import Version

    bridge_reference._pretend_transformer_engine()
    import megatron.core.utils as mcore_utils
    from megatron.bridge.training import mixed_precision
    from megatron.core.models.common.embeddings import rope_utils
    from megatron.core.transformer.moe import moe_utils

    mcore_utils._te_version = Version("2.12.0")
    mixed_precision.is_te_min_version = lambda *args, **kwargs: True
    kernel = lambda *args, **kwargs: None  # noqa: E731 -- present, never called by config code
    if rope_utils.fused_apply_rotary_pos_emb is None:
        rope_utils.fused_apply_rotary_pos_emb = kernel
    for name in ("fused_permute", "fused_permute_with_probs", "fused_sort_chunks_by_index",
                 "fused_sort_chunks_by_index_with_probs", "fused_unpermute"):
        if getattr(moe_utils, name, None) is None:
            setattr(moe_utils, name, kernel)
    torch.cuda.get_device_properties = lambda *args, **kwargs: types.SimpleNamespace(
        major=GPUS[_GPU["name"]][0], minor=0, name=GPUS[_GPU["name"]][1])


def _as_built(path: str):
    """The ConfigContainer the recipe function builds on a TE target, from its dump (see the module doc)."""
    from omegaconf import OmegaConf

    from megatron.bridge.training import config as bconfig

    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    ddp = raw.get("ddp") or {}
    assigned_after = {}
    if ddp.get("reuse_grad_buf_for_mxfp8_param_ag") is True:
        assigned_after["reuse_grad_buf_for_mxfp8_param_ag"] = True
        ddp["reuse_grad_buf_for_mxfp8_param_ag"] = False
    spec = (raw.get("model") or {}).get("transformer_layer_spec")
    if isinstance(spec, dict) and spec.get("_partial_") and spec.get("use_transformer_engine") is False:
        spec["use_transformer_engine"] = True  # partial(..., use_transformer_engine=HAVE_TE)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(OmegaConf.to_yaml(OmegaConf.create(raw)))
    try:
        cfg = bconfig.ConfigContainer.from_yaml(fh.name)
    finally:
        os.unlink(fh.name)
    for name, value in assigned_after.items():
        setattr(cfg.ddp, name, value)
    # A default_factory field holding what the dumping machine computed: evaluated again on the target.
    for f in dataclasses.fields(type(cfg.model)):
        factory = f.default_factory
        if factory is not dataclasses.MISSING and getattr(factory, "__name__", "") == "can_enable_gradient_accumulation_fusion":
            if getattr(cfg.model, f.name) is False:
                setattr(cfg.model, f.name, True)  # transformer_engine.pytorch imports on the target
    return cfg


def run(case: dict) -> dict:
    from megatron.bridge.training import config as bconfig
    from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides

    saved = dict(os.environ)
    os.environ["WORLD_SIZE"] = str(case["world_size"])
    _GPU["name"] = case.get("gpu") or "h100"
    stage = "load"
    try:
        if case.get("mode") == "recipe":
            cfg = _as_built(case["base"])
        else:
            cfg = bconfig.ConfigContainer.from_yaml(case["base"])
        stage = "overrides"
        files = case.get("files") or []
        if files or case.get("dotlists"):
            for i, f in enumerate(files or [None]):
                cfg = process_config_with_overrides(cfg, f, case["dotlists"] if i == len(files or [None]) - 1 else None)
        stage = "update"
        bconfig.runtime_config_update(cfg)
        stage = "init"
        bridge_reference._initialize_distributed(cfg, case["world_size"])
    except Exception as exc:  # what the launch would die of
        frames = traceback.extract_tb(exc.__traceback__)
        frame = next((t for t in reversed(frames) if "megatron" in t.filename or "hydra" in t.filename), frames[-1])
        message = str(exc)
        if exc.__cause__ is not None and stage == "overrides":
            message += f" <- {type(exc.__cause__).__name__}: {exc.__cause__}"
        return {"error": f"{type(exc).__name__}: {message}", "stage": stage,
                "where": f"{os.path.basename(frame.filename)}:{frame.lineno}"}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    values = bridge_reference._values(cfg)  # every field of model / ddp / optimizer, as the launch holds them
    values["data_parallel_size"] = cfg.data_parallel_size
    return {"values": values}


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.CRITICAL)
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _pretend_target()
        results = [run(c) for c in cases]
    sys.stdout.write("@@bridge-launch-results@@\n" + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
