"""What a launch runs: a training run of Megatron-LM, a Megatron-Bridge recipe run, or no training at all.

A launch line names the Python file it starts (``torchrun ... FILE.py``, ``python FILE.py``); the file's
name says what kind of run it is:

- ``run_recipe.py`` is Megatron-Bridge's recipe runner (``scripts/training/run_recipe.py``): the run is the
  recipe it names, the convenience flags and the trailing ``KEY=VALUE`` overrides (``frameworks.bridge.
  run_recipe`` reads its argument parser);
- a checkpoint conversion, export, inference, text-generation, serving, evaluation or data-preparation
  entry point (Bridge's ``examples/conversion/*.py``, ``hf_to_megatron_generate_*.py``, Megatron-LM's
  ``tools/run_text_generation_server.py``, ``examples/inference/*``, ModelOpt's ``convert`` / ``export``
  / ``quantize`` scripts) is not a training run: no training rule applies to it;
- anything else (``pretrain_*.py``, ``train.py``, ``finetune*.py``) is read as a Megatron-LM training launch.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

TRAINING, BRIDGE_RECIPE, NOT_TRAINING = "training", "bridge-recipe", "not-training"

# The Bridge recipe runner (Megatron-Bridge scripts/training/run_recipe.py).
BRIDGE_RUNNERS = frozenset(("run_recipe.py",))

# Words of an entry point's file name that say it trains (checked first: ``finetune_convert.py`` trains).
_TRAINS = re.compile(r"(?:^|_)(?:pretrain|train|training|finetune|sft|peft|distill|distillation)(?:_|\.py$)")
# Words that say it does not: what each kind is, for the sentence.
_NOT_TRAINING = (
    (re.compile(r"convert|conversion|roundtrip|import_|export|combine_state|checkpoint_inspector|ckpt_"), "a checkpoint conversion / export"),
    (re.compile(r"generat|inference|infer_|_infer|server|serve|text_gen|chat|openai"), "an inference / text-generation"),
    (re.compile(r"eval|mmlu|verify|compare|parity|validate|benchmark_inference"), "an evaluation / verification"),
    (re.compile(r"quantiz|prune|ptq"), "a quantization / pruning"),
    (re.compile(r"preprocess|prepare|synthesize|build_|pack_|shard|tokeniz|download"), "a data-preparation"),
)


def classify(script: Optional[str]) -> tuple:
    """(kind, sentence) for the training script's file name ``script`` (None: not known statically, read as
    a training launch, as before). ``sentence`` says what the entry point is, for a skip line."""
    if script is None:
        return TRAINING, ""
    name = script.rsplit("/", 1)[-1].lower()
    if name in BRIDGE_RUNNERS:
        return BRIDGE_RECIPE, "Megatron-Bridge's recipe runner"
    if _TRAINS.search(name):
        return TRAINING, ""
    for pattern, what in _NOT_TRAINING:
        if pattern.search(name):
            return NOT_TRAINING, f"{name} is {what} entry point, not a training run"
    return TRAINING, ""
