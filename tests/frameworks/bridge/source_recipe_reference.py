"""Run with an environment's Python that has megatron-bridge (any release): calls every recipe named on stdin (JSON
[catalog key, ...]: a function of ``megatron.bridge.recipes``, or ``perf__NAME`` for the performance recipe
named like one) and prints {key: dump | {"error": ...}} as JSON.

The recipes the catalog reads from source are those that ask Hugging Face for their model's config
(``AutoBridge.from_hf_pretrained(...).to_megatron_provider(...)``), which an offline machine cannot answer.
Here that call returns a plain ``GPTModelProvider()`` instead: everything the recipe then writes is Bridge's
own doing, and what the model itself would hold is what the catalog leaves unknown. The output folders
Bridge puts under ``os.getcwd()`` (recipes/common.py) are built with "." there, as the catalog's are.
Nothing else is replaced; a recipe that needs more (a local file, the model's vocabulary) is an error. A dump
built with the stand-in says so (``"__hf_stand_in__": true``)."""

import importlib
import importlib.util
import json
import logging
import os
import signal
import sys
import tempfile
import types
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
logging.disable(logging.CRITICAL)
warnings.filterwarnings("ignore")

# The training state imports TensorBoard's writer at module level; this environment need not have it.
for name in ("torch.utils.tensorboard", "torch.utils.tensorboard.writer"):
    if importlib.util.find_spec("tensorboard") is None:
        stand_in = types.ModuleType(name)
        stand_in.SummaryWriter = object
        sys.modules[name] = stand_in

import yaml  # noqa: E402
from megatron.bridge.models.conversion import auto_bridge  # noqa: E402
from megatron.bridge.models.gpt_provider import GPTModelProvider  # noqa: E402


STOOD_IN = []  # the recipes of this run that asked Hugging Face: their model is the stand-in's


class _NoHub:
    def to_megatron_provider(self, *args, **kwargs):
        STOOD_IN.append(True)
        return GPTModelProvider()


auto_bridge.AutoBridge.from_hf_pretrained = classmethod(lambda cls, *a, **k: _NoHub())

# The packages' __init__ import every family (one missing optional dependency hides all): empty stand-ins,
# so that each recipe module imports only what it needs.
for package in ("megatron.bridge.recipes", "megatron.bridge.perf_recipes"):
    spec = importlib.util.find_spec(package)
    if spec is None:
        continue  # perf_recipes exists from 0.6 on
    root = types.ModuleType(package)
    root.__path__ = list(spec.submodule_search_locations)
    sys.modules[package] = root


def _timeout(*_):
    raise TimeoutError("took over 60 s")


def _defining_modules() -> dict:
    """function name -> the modules defining it (read with ast, nothing imported)."""
    import ast
    from pathlib import Path

    out: dict = {}
    for package in ("megatron.bridge.recipes", "megatron.bridge.perf_recipes"):
        if package not in sys.modules:
            continue
        base = Path(sys.modules[package].__path__[0])
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("").parts
            module = ".".join((package, *rel[:-1]) if rel[-1] == "__init__" else (package, *rel))
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.FunctionDef):
                    out.setdefault(node.name, []).append(module)
    return out


def main() -> None:
    out = {}
    defining = _defining_modules()
    for key in json.load(sys.stdin):
        function = key[len("perf__"):] if key.startswith("perf__") else key
        package = "megatron.bridge.perf_recipes." if key.startswith("perf__") else "megatron.bridge.recipes."
        modules = [m for m in defining.get(function, []) if m.startswith(package)] or defining.get(function, [])
        if not modules:
            out[key] = {"error": "no module defines it"}
            continue
        module = modules[0]
        real_getcwd = os.getcwd
        STOOD_IN.clear()
        signal.signal(signal.SIGALRM, _timeout)
        signal.alarm(60)
        try:
            fn = getattr(importlib.import_module(module), function)
            os.getcwd = lambda: "."
            cfg = fn()
            os.getcwd = real_getcwd
            with tempfile.NamedTemporaryFile("r", suffix=".yaml") as fh:
                cfg.to_yaml(fh.name)
                out[key] = yaml.safe_load(open(fh.name, encoding="utf-8"))
            if STOOD_IN:  # said beside the dump: a catalog entry built with the real model config differs there
                out[key]["__hf_stand_in__"] = True
        except BaseException as exc:  # noqa: BLE001 -- every failure is reported, none stops the others
            out[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        finally:
            os.getcwd = real_getcwd
            signal.alarm(0)
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
