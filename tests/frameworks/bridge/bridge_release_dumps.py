"""Write recipes of the installed Megatron-Bridge release as Bridge itself writes them, for the per-release
differential test: ``python bridge_release_dumps.py OUT_DIR MODULE:FUNCTION...`` run with the Python of an
environment holding that release (the tool never imports Bridge). Each recipe function is called with no
arguments and its ConfigContainer written with ``to_yaml`` (the serializer of every ``run_config.yaml``), as
the 0.6.2 corpus (../shared/reference/bridge_recipes) was made. Prints ``{function: null | error}`` as JSON
after MARKER.

``megatron.bridge.recipes``'s ``__init__`` imports every recipe family, the diffusion ones among them, which
need packages these environments lack (diffusers); the recipe modules named are imported on their own, the
package's ``__init__`` left unrun. Recipes that read a model's config from the Hugging Face Hub fail at once
(HF_HUB_OFFLINE): the test uses the ones whose providers are written out.
"""

import importlib
import importlib.util
import json
import logging
import sys
import types
import warnings

MARKER = "@@bridge-release-dumps@@"


def main(out_dir: str, names: list) -> dict:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a recipe that reads a Hugging Face config fails at once
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    # From 0.6.0 the recipes' dataset helpers import training/state.py, which imports torch's TensorBoard
    # writer at module level (state.py:29); tensorboard is not installed here and no recipe writes a log: a
    # placeholder module stands in for the writer's, nothing else.
    if importlib.util.find_spec("tensorboard") is None:
        writer = types.ModuleType("torch.utils.tensorboard.writer")
        writer.SummaryWriter = type("SummaryWriter", (), {})
        board = types.ModuleType("torch.utils.tensorboard")
        board.SummaryWriter, board.writer = writer.SummaryWriter, writer
        sys.modules.setdefault("torch.utils.tensorboard", board)
        sys.modules.setdefault("torch.utils.tensorboard.writer", writer)
    spec = importlib.util.find_spec("megatron.bridge.recipes")
    package = types.ModuleType("megatron.bridge.recipes")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["megatron.bridge.recipes"] = package
    results = {}
    for name in names:
        module, function = name.split(":")
        try:
            cfg = getattr(importlib.import_module(module), function)()
            cfg.to_yaml(f"{out_dir}/{function}.yaml")
            results[function] = None
        except Exception as exc:  # a recipe this release cannot build on CPU: the test leaves it out
            results[function] = f"{type(exc).__name__}: {exc}"[:300]
    return results


if __name__ == "__main__":
    out = main(sys.argv[1], sys.argv[2:])
    print(MARKER)
    print(json.dumps(out))
