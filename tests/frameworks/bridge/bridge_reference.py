"""Run a Megatron-Bridge 0.6.2 configuration the way its training entry points start one, up to the settings
it trains with, for the differential tests. Run with the Python of an environment that has megatron-bridge
installed (the tool never imports it): ``python bridge_reference.py < cases.json`` (results after MARKER).

Each case: ``{"mode": "file" | "base" | "recipe" | "script", "config": PATH, "files": [PATH...], "dotlists": [...],
"world_size": N, "gpu": {"major": 9, "name": "NVIDIA H100 80GB HBM3"}}``. The steps (``stage`` names the
one that raised):

1. ``load``: ``ConfigContainer.from_yaml(config)``. In ``recipe`` mode ``config`` is the recipe's dump and
   the recipe is modelled as built ON THE TARGET, which has Transformer Engine: the dump was written on a
   CPU machine without it, where the providers' ``gradient_accumulation_fusion`` default factory
   (``fusions.can_enable_gradient_accumulation_fusion``, models/gpt_provider.py:205, models/hybrid/
   hybrid_provider.py:148) said false and the layer-spec partials got ``use_transformer_engine=False``; so
   that key is dropped from the model before loading (the factory, answering as on the target, gives true)
   and the spec's flag is set true. In ``file`` / ``base`` mode the file's values are the run's values.
2. ``overrides``: ``process_config_with_overrides`` (training/utils/omegaconf_utils.py:105) for each
   override file in turn, the dotlists with the last one — as Bridge's entry points merge a
   ``--config-file`` and the command line's overrides.
3. ``runtime_config_update``'s steps (training/config.py:1853-1888), each its own stage:
   ``apply_environment_variables`` (from 0.6.0; the installed release's own steps: before 0.6.0 there is none,
   main clears EP overlap for Energon packing before comm_overlap), ``mixed_precision`` (resolve, finalize,
   setup), ``set_data_parallel_size``
   (WORLD_SIZE), ``comm_overlap`` (finalize, setup), and all of ``validate()`` (training/config.py:1136),
   which runs on this CPU machine given the answers below;
4. ``initialize_distributed``: Bridge's ``_initialize_distributed`` (training/initialize.py:693-840, called
   by ``torch_dist_init`` with the GPTModelConfig's ``transformer``, initialize.py:194-197) — its expert-TP
   default and its ``parallel_state.initialize_model_parallel`` call, or the HyperCommGrid path — with
   ``torch.distributed`` made inert (already "initialized" at the case's world size, one device, groups
   that only know their size): what it raises is its own arithmetic on the sizes;
5. ``model_build``: the layer-split checks of building the model (``_model_build``);
6. ``first_step``: the pipeline schedule's own config checks on its first call (``_first_step``).

Transformer Engine is answered as a recent one (2.12) would: ``HAVE_TE`` flags, its version, FusedAdam's
signature, and the presence of the fused kernels Megatron-Core's config checks look for (rope, MoE
permutation). The GPU is the case's (``torch.cuda.get_device_properties`` / ``get_device_capability``).
The process environment is clean but for WORLD_SIZE / RANK, so ``env_vars`` land as Bridge sets them
(``os.environ.setdefault``).

Each result: ``{"error": "Type: message" or null, "stage", "where" (the raising megatron file:line),
"values": {"model.<field>": ..., "ddp.<field>": ..., "optimizer.<field>": ...}, "env": {os.environ after
the update}, "data_parallel_size"}`` — ``values`` holds every field of the real model (provider, or
GPTModelConfig with its ``transformer``'s fields, as its attribute proxy reads them), DDP and optimizer
configs, so every key the tool prints has a counterpart.

A ``script`` case (mode ``script``) is a run written in Python: the script is executed (runpy) in place of
step 1 and its module-level ``cfg`` taken where the module ends; the other steps follow as for a file. With
``"main": true`` it is run as ``python SCRIPT WORDS...`` would run it (``__name__ == "__main__"``, ``sys.argv``
from ``"argv"``, ``"environ"`` added to the environment) and the config is the one it hands to ``pretrain``.
"""

import contextlib
import dataclasses
import enum
import io
import json
import os
import sys
import tempfile
import types
import warnings

MARKER = "@@bridge-reference-results@@"
TE_VERSION = "2.12.0"


def plain(value):
    """A config value as JSON: dtypes and enums by name, tuples as lists, dataclasses as dicts."""
    import torch

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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return repr(value)


class Failure(Exception):
    def __init__(self, stage, exc):
        super().__init__(str(exc))
        self.stage, self.message, self.where = stage, f"{type(exc).__name__}: {exc}", raised_at(exc)


def raised_at(exc) -> str:
    """The innermost megatron frame of the exception's traceback, as ``package/path.py:LINE``."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/megatron/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename.split('site-packages/', 1)[-1]}:{f.lineno}"


def _model_build(cfg) -> None:
    """The layer-split checks of the model build, run for real: a GPT provider's ``provide()`` (its model-chunk
    assert, models/gpt_provider.py:250-254, comes before anything needs a process group: that AssertionError is
    the launch's, anything later -- no process groups here -- means it passed), then Megatron-Core's
    ``get_num_layers_to_build`` for each pipeline rank (transformer/transformer_block.py:159-171, a function of
    the config and the rank) for a GPT model without a layout (a layout's checks ran at validate)."""
    from megatron.bridge.models.gpt_provider import GPTModelProvider
    from megatron.core.transformer.transformer_block import get_num_layers_to_build

    model = cfg.model
    if isinstance(model, GPTModelProvider):
        try:
            model.provide()
        except AssertionError as exc:
            if "number of model chunks" in str(exc):
                raise
        except Exception:  # past the split check: the stand-ins run out
            pass
    elif type(model).__name__ != "GPTModelConfig":
        return
    config = getattr(model, "transformer", model)
    if config.pipeline_model_parallel_layout is not None:
        return
    for rank in range(config.pipeline_model_parallel_size or 1):
        get_num_layers_to_build(config, vp_stage=0 if config.virtual_pipeline_model_parallel_size else None, pp_rank=rank)


def _first_step(cfg) -> None:
    """The checks the pipeline schedule makes on its first call, run for real: the schedule training picks
    (``get_forward_backward_func``: interleaved with a virtual pipeline, else non-interleaved, for PP > 1)
    is called on a stand-in model chunk carrying the run's config; its own config checks
    (pipeline_parallel/schedules.py:1059-1060, 2154-2157) come before anything needs a process group, so
    a ValueError from them is the launch's, and anything later (no process groups here) means they passed."""
    import torch
    from megatron.core.pipeline_parallel import schedules

    config = getattr(cfg.model, "transformer", cfg.model)
    if (config.pipeline_model_parallel_size or 1) <= 1:
        return
    chunk = torch.nn.Module()
    chunk.config, chunk.model_type = config, None
    group = types.SimpleNamespace(size=lambda: 1, rank=lambda: 0)
    kwargs = dict(forward_step_func=None, num_microbatches=1, seq_length=1, micro_batch_size=1, forward_only=False)
    try:
        if config.virtual_pipeline_model_parallel_size is not None:
            schedules.forward_backward_pipelining_with_interleaving(
                model=[chunk], data_iterator=[None], p2p_communicator=types.SimpleNamespace(config=config),
                pg_collection=types.SimpleNamespace(tp=group, cp=group, pp=group), **kwargs)
        else:
            schedules.forward_backward_pipelining_without_interleaving(model=[chunk], data_iterator=[None], **kwargs)
    except ValueError as exc:
        if "overlap_p2p_comm" in str(exc) or "overlapping p2p" in str(exc):
            raise
    except Exception:  # past the config checks: the stand-ins run out
        pass


class _Group:
    """A process group that only knows its size."""

    def __init__(self, size):
        self._size = size

    def size(self):
        return self._size

    def rank(self):
        return 0


def _initialize_distributed(cfg, world_size: int) -> None:
    import torch
    import torch.distributed as dist
    import megatron.core.parallel_state as mpu
    from megatron.bridge.training import initialize

    saved = {n: getattr(dist, n) for n in ("is_initialized", "get_world_size", "get_rank", "new_group",
                                           "new_subgroups_by_enumeration")}
    saved_cuda = (torch.cuda.device_count, torch.cuda.synchronize, mpu.get_nccl_options)
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda *a, **k: world_size
    dist.get_rank = lambda *a, **k: 0
    dist.new_group = lambda ranks=None, *a, **k: _Group(len(ranks) if ranks is not None else world_size)
    dist.new_subgroups_by_enumeration = lambda ranks, *a, **k: (_Group(len(ranks[0])), [_Group(len(r)) for r in ranks])
    torch.cuda.device_count = lambda: 1
    torch.cuda.synchronize = lambda *a, **k: None
    mpu.get_nccl_options = lambda *a, **k: None  # NCCL's options object does not exist in CPU torch
    model = getattr(cfg.model, "transformer", None)
    model = model if dataclasses.is_dataclass(model) else cfg.model
    mpu.destroy_model_parallel()
    try:
        initialize._initialize_distributed(model, cfg.dist, cfg.ddp.num_distributed_optimizer_instances, None, None)
    finally:
        mpu.destroy_model_parallel()
        for n, f in saved.items():
            setattr(dist, n, f)
        torch.cuda.device_count, torch.cuda.synchronize, mpu.get_nccl_options = saved_cuda


def _recipe_on_target(dump: str) -> str:
    """The recipe's dump as the recipe function would build it on a machine with Transformer Engine."""
    import yaml

    with open(dump) as f:
        tree = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    model = tree.get("model") or {}
    model.pop("gradient_accumulation_fusion", None)
    spec = model.get("transformer_layer_spec")
    if isinstance(spec, dict) and "use_transformer_engine" in spec:
        spec["use_transformer_engine"] = True
    fd, path = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        yaml.dump(tree, f, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    return path


_LOADED: dict = {}


def _load(case: dict, bconfig):
    """``from_yaml`` of the case's config. A recipe or a base dump is loaded once and each run works on a
    deep copy (from_yaml is deterministic; OmegaConf makes it cost a second a file); a file run loads its
    own file."""
    import copy

    if case["mode"] == "script" and case.get("main"):
        return _run_main(case)
    if case["mode"] == "script":  # a run written in Python: executed, its ``cfg`` where the module ends
        import runpy

        return runpy.run_path(case["config"], run_name="bridge_reference_script")["cfg"]
    if case["mode"] == "file":
        return bconfig.ConfigContainer.from_yaml(case["config"])
    key = (case["mode"], case["config"])
    if key not in _LOADED:
        path = _recipe_on_target(case["config"]) if case["mode"] == "recipe" else case["config"]
        try:
            _LOADED[key] = bconfig.ConfigContainer.from_yaml(path)
        except Exception as exc:
            _LOADED[key] = exc
        finally:
            if path != case["config"]:
                os.unlink(path)
    loaded = _LOADED[key]
    if isinstance(loaded, Exception):
        raise loaded
    return copy.deepcopy(loaded)


_LAUNCHED: list = []


def _stand_in_launches() -> None:
    """``pretrain`` / ``finetune`` (and ``gpt_step.forward_step``) as a script imports them: the config they
    are handed is the run's (kept, in order); training itself is not started. The real modules need
    packages a CPU environment lacks (nvidia_resiliency_ext, tensorboard)."""
    for module, names in (("megatron.bridge.training.pretrain", ("pretrain",)),
                          ("megatron.bridge.training.finetune", ("finetune",)),
                          ("megatron.bridge.training.gpt_step", ("forward_step",))):
        stand_in = types.ModuleType(module)
        for name in names:
            def launch(config=None, forward_step_func=None, *args, **kwargs):
                _LAUNCHED.append(config)
            setattr(stand_in, name, launch)
        sys.modules[module] = stand_in


def _run_main(case: dict):
    """A script run as ``python SCRIPT WORDS...`` (``__name__ == "__main__"``, ``sys.argv``, the case's
    environment, its own folder as the working directory): the config it first hands to pretrain/finetune,
    else its module-level ``cfg``."""
    import runpy

    _stand_in_launches()
    _LAUNCHED.clear()
    saved_argv, saved_cwd, saved_path = sys.argv, os.getcwd(), list(sys.path)
    folder = os.path.dirname(os.path.abspath(case["config"]))
    before = set(sys.modules)
    sys.argv = [case["config"]] + list(case.get("argv", []))
    os.environ.update(case.get("environ", {}))
    os.chdir(folder)
    sys.path.insert(0, folder)  # as ``python SCRIPT`` does: the script's own modules beside it import
    try:
        names = runpy.run_path(case["config"], run_name="__main__")
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        for name in set(sys.modules) - before:  # the next case's modules of the same name are its own
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(folder + os.sep):
                del sys.modules[name]
    if _LAUNCHED:
        return _LAUNCHED[0]
    return names["cfg"]


def _names(obj) -> list:
    """The dataclass fields of a config and the attributes set on it later (comm_overlap's setup writes
    ``tp_comm_overlap_cfg`` onto a model class that does not declare it, training/comm_overlap.py:620-632)."""
    names = [f.name for f in dataclasses.fields(obj)]
    return names + [n for n in vars(obj) if n not in names and not n.startswith("_")]


def _values(cfg) -> dict:
    values = {}
    model = cfg.model
    names = _names(model)
    inner = getattr(model, "transformer", None) if "transformer" in names else None
    if inner is not None and dataclasses.is_dataclass(inner):
        names = [n for n in names if n != "transformer"] + _names(inner)
    for name in names:
        values[f"model.{name}"] = plain(getattr(model, name, None))
    # read only when tp_comm_overlap is on (training/initialize.py:346); a model class without the field
    # that comm_overlap never wrote has none: the launch hands Transformer Engine no config
    values.setdefault("model.tp_comm_overlap_cfg", None)
    for section in ("ddp", "optimizer"):
        obj = getattr(cfg, section)
        for name in _names(obj):
            values[f"{section}.{name}"] = plain(getattr(obj, name, None))
    return values


def run(case: dict) -> dict:
    from megatron.bridge.training import config as bconfig
    from megatron.bridge.training.mixed_precision import get_mixed_precision_config
    from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides

    _pretend_gpu(case["gpu"])
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({"WORLD_SIZE": str(case["world_size"]), "RANK": "0", "PATH": saved.get("PATH", "")})
    result = {"error": None, "stage": None, "values": None, "env": None, "data_parallel_size": None}
    stage = "load"
    try:
        try:
            cfg = _load(case, bconfig)
            stage = "overrides"
            files = case["files"] or [None]
            if case["files"] or case["dotlists"]:
                for i, f in enumerate(files):
                    cfg = process_config_with_overrides(cfg, f, case["dotlists"] if i == len(files) - 1 else None)
            stage = "apply_environment_variables"
            if hasattr(bconfig, "apply_environment_variables"):  # from 0.6.0 (config.py:1832 in 0.6.2)
                bconfig.apply_environment_variables(cfg)
            stage = "mixed_precision"
            if cfg.mixed_precision is not None:
                if isinstance(cfg.mixed_precision, str):
                    cfg.mixed_precision = get_mixed_precision_config(cfg.mixed_precision)
                cfg.mixed_precision.finalize()
                cfg.mixed_precision.setup(cfg.model, cfg.optimizer, cfg.ddp)
            stage = "set_data_parallel_size"
            cfg.set_data_parallel_size()
            stage = "comm_overlap"
            if hasattr(cfg, "_disable_native_energon_packing_moe_overlap"):  # main: config.py:2024
                cfg._disable_native_energon_packing_moe_overlap()
            if cfg.comm_overlap is not None:
                cfg.comm_overlap.finalize()
                cfg.comm_overlap.setup(cfg.model, cfg.optimizer, cfg.ddp)
            stage = "validate"
            cfg.validate()
            stage = "initialize_distributed"
            _initialize_distributed(cfg, case["world_size"])
            stage = "model_build"
            _model_build(cfg)
            stage = "first_step"
            _first_step(cfg)
        except BaseException as exc:  # what the launch would die of (SystemExit / KeyboardInterrupt included)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise Failure(stage, exc) from None
        result["values"] = _values(cfg)
        result["data_parallel_size"] = cfg.data_parallel_size
        result["env"] = {k: v for k, v in os.environ.items() if k not in ("PATH", "WORLD_SIZE", "RANK")}
    except Failure as exc:
        result["error"], result["stage"], result["where"] = exc.message, exc.stage, exc.where
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return result


def _pretend_gpu(gpu: dict) -> None:
    import torch

    props = types.SimpleNamespace(major=gpu["major"], minor=0, name=gpu["name"], multi_processor_count=132,
                                  total_memory=80 * 2**30)
    torch.cuda.get_device_properties = lambda *a, **k: props
    torch.cuda.get_device_capability = lambda *a, **k: (gpu["major"], 0)
    torch.cuda.get_device_name = lambda *a, **k: gpu["name"]


def _pretend_transformer_engine() -> None:
    """What Bridge's and Megatron-Core's config code asks of Transformer Engine, answered as a recent TE
    would: HAVE_TE and is_te_min_version (training/comm_overlap.py:29-34, 449, 522-546), the version
    Megatron-Core reads (megatron/core/utils.py:295 get_te_version), FusedAdam's signature (the
    precision-aware optimizer, megatron/core/optimizer/optimizer_config.py:438-467), the fused rope and MoE
    permutation kernels whose presence TransformerConfig checks (transformer_config.py:2179-2186, 2651-2667).
    With ``transformer_engine.pytorch`` importable, the providers' gradient-accumulation-fusion default
    factory (utils/fusions.py:34) answers true, as on the target. Installed after the imports."""
    from packaging.version import Version

    import megatron.core.utils as core_utils
    from megatron.bridge.training import comm_overlap
    from megatron.core.models.common.embeddings import rope_utils
    from megatron.core.optimizer import optimizer_config
    from megatron.core.transformer.moe import moe_utils

    core_utils._te_version = Version(TE_VERSION)
    comm_overlap.HAVE_TE = True
    comm_overlap.is_te_min_version = optimizer_config.is_te_min_version = lambda *args, **kwargs: True

    def kernel(*args, **kwargs):  # present, never called by config code
        raise RuntimeError("a Transformer Engine kernel stand-in was called")

    for name in ("fused_apply_rotary_pos_emb", "fused_apply_rotary_pos_emb_thd"):
        setattr(rope_utils, name, kernel)
    for name in ("fused_permute", "fused_permute_with_probs", "fused_sort_chunks_by_index",
                 "fused_sort_chunks_by_index_with_probs", "fused_unpermute"):
        setattr(moe_utils, name, kernel)

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
    try:  # process_config_with_overrides needs Hydra (megatron-bridge 0.6.2 requires hydra-core>=1.3.4,<1.4)
        import hydra  # noqa: F401
    except ImportError:
        sys.exit("hydra-core is not installed in this environment (megatron-bridge 0.6.2 requires hydra-core>=1.3.4,<1.4 "
                 "and antlr4-python3-runtime==4.9.*); Bridge's override path cannot run")
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        from megatron.bridge.training import comm_overlap  # noqa: F401
        from megatron.bridge.models.gpt_provider import GPTModelProvider  # noqa: F401

        _pretend_transformer_engine()
        results = [run(c) for c in cases]
    sys.stdout.write(MARKER + "\n" + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
