"""Run by test_process_grid_differential.py in an environment with megatron-bridge 0.6.2 installed: for each case
(a recipe dump, ``section.field=value`` overrides, a world size) the ConfigContainer Bridge builds
(``ConfigContainer.from_yaml``, the overrides set on its dataclasses), then Bridge's ``_initialize_distributed`` (megatron/bridge/training/
initialize.py:693-840) — its expert-TP default and its ``parallel_state.initialize_model_parallel`` call, or the
HyperCommGrid path with ``dist.use_decentralized_pg`` — with ``torch.distributed`` made inert: already
"initialized" at the case's world size, one device, groups that only know their size. What it raises is its own
arithmetic on the sizes.

Reads a JSON list of cases on stdin; prints a marker line and one JSON list of results: ``{"error": message}``
where it raises, else ``{"error": null, "expert_tensor_parallel_size": N}``.
"""

import contextlib
import io
import json
import os
import sys
import warnings

import yaml


class _Group:
    def __init__(self, size):
        self._size = size

    def size(self):
        return self._size

    def rank(self):
        return 0


def _inert(world_size: int) -> None:
    import torch
    import torch.distributed as dist
    import megatron.core.parallel_state as mpu

    dist.is_initialized = lambda: True
    dist.get_world_size = lambda *a, **k: world_size
    dist.get_rank = lambda *a, **k: 0
    dist.new_group = lambda ranks=None, *a, **k: _Group(len(ranks) if ranks is not None else world_size)
    dist.new_subgroups_by_enumeration = lambda ranks, *a, **k: (_Group(len(ranks[0])), [_Group(len(r)) for r in ranks])
    torch.cuda.device_count = lambda: 1
    torch.cuda.synchronize = lambda *a, **k: None
    mpu.get_nccl_options = lambda *a, **k: None


def run(case: dict) -> dict:
    import megatron.core.parallel_state as mpu
    from megatron.bridge.training import config as bconfig
    from megatron.bridge.training import initialize

    saved = dict(os.environ)
    os.environ.update({"WORLD_SIZE": str(case["world_size"]), "RANK": "0", "LOCAL_RANK": "0"})
    try:
        cfg = bconfig.ConfigContainer.from_yaml(case["base"])
        for item in case["dotlists"]:  # plain "section.field=value" overrides (YAML values), set on the dataclasses
            key, _, text = item.partition("=")
            section, field = key.split(".")
            setattr(getattr(cfg, section), field, yaml.safe_load(text))
        _inert(case["world_size"])
        mpu.destroy_model_parallel()
        initialize._initialize_distributed(cfg.model, cfg.dist, cfg.ddp.num_distributed_optimizer_instances, None, None)
        return {"error": None, "expert_tensor_parallel_size": cfg.model.expert_tensor_parallel_size}
    except (AssertionError, RuntimeError, ValueError) as exc:
        return {"error": str(exc)}
    finally:
        mpu.destroy_model_parallel()
        os.environ.clear()
        os.environ.update(saved)


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.CRITICAL)
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(io.StringIO()):
        results = [run(c) for c in cases]
    sys.stdout.write("@@bridge-grid-results@@\n" + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
