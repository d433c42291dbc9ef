"""What a launch runs: a Megatron-LM training run, a Megatron-Bridge recipe run, a Bridge training script of its
own, no training at all, or no Megatron training (a test run, another framework's trainer, an unknown script).

A launch line names the Python file (``torchrun ... FILE.py``, ``python FILE.py``) or module (``torchrun -m
MODULE``) it starts. Only a known Megatron training entry point is read as a launch:

- ``run_recipe.py`` is Megatron-Bridge's recipe runner (``scripts/training/run_recipe.py``; its helpers
  ``recipe_runner.py`` / ``recipe_metadata.py`` beside it): the run is the recipe it names, the convenience
  flags and the trailing ``KEY=VALUE`` overrides (``frameworks.bridge.run_recipe`` reads its argument parser);
- a script whose source, found statically beside the launch (``launched_source``: the launch script's folder
  and the folders above it, read as text, never imported), calls Megatron-LM's training entry point
  (``pretrain(`` of ``megatron.training``: Megatron-LM's ``pretrain_gpt.py``, ``train_rl.py``,
  ``examples/multimodal/train.py``) is a Megatron-LM training launch; one that calls Megatron-Bridge's
  (``pretrain(`` / ``finetune(`` / ``pretrain_megatron_mimo(`` of ``megatron.bridge.training``) is a Bridge
  training script whose own argument parser reads the launch's words;
- a source not found: Megatron-LM's entry-point names (``pretrain_*.py``, ``train*.py``, ``finetune*.py``)
  are read as a Megatron-LM training launch;
- a checkpoint conversion, export, inference, text-generation, serving, evaluation or data-preparation entry
  point (by its name, when its source shows no training call) is not a training run;
- anything else — ``-m pytest``, ``-m coverage run -m pytest``, another framework's trainer
  (``-m verl.trainer.fsdp_sft_trainer``), a script or module that calls no Megatron training entry point — is
  not a Megatron training launch.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

TRAINING, BRIDGE_RECIPE, NOT_TRAINING = "training", "bridge-recipe", "not-training"
BRIDGE_SCRIPT, NOT_MEGATRON = "bridge-script", "not-megatron"

# The Bridge recipe runner (Megatron-Bridge scripts/training/run_recipe.py).
BRIDGE_RUNNERS = frozenset(("run_recipe.py",))
# Its helper modules (scripts/training/recipe_runner.py, recipe_metadata.py: run_recipe.py:106 imports them).
BRIDGE_RUNNER_HELPERS = frozenset(("recipe_runner.py", "recipe_metadata.py"))

# Words of an entry point's file name that say it trains (checked first: ``finetune_convert.py`` trains).
_TRAINS = re.compile(r"(?:^|_)(?:pretrain|train|training|finetune|sft|peft|distill|distillation)(?:_|\.py$)")
# Megatron-LM's own entry-point names, read as a training launch when their source is not at hand.
_MEGATRON_NAMES = re.compile(r"(?:pretrain|train|finetune)\w*\.py")
# Words that say it does not: what each kind is, for the sentence.
_NOT_TRAINING = (
    (re.compile(r"convert|conversion|roundtrip|import_|export|combine_state|checkpoint_inspector|ckpt_"), "a checkpoint conversion / export"),
    (re.compile(r"generat|inference|infer_|_infer|server|serve|text_gen|chat|openai"), "an inference / text-generation"),
    (re.compile(r"eval|mmlu|verify|compare|parity|validate|benchmark_inference"), "an evaluation / verification"),
    (re.compile(r"quantiz|prune|ptq"), "a quantization / pruning"),
    (re.compile(r"preprocess|prepare|synthesize|build_|pack_|shard|tokeniz|download"), "a data-preparation"),
)
# Modules that run tests, and the top-level packages of other training frameworks: never a Megatron launch.
_TEST_RUNNERS = frozenset(("pytest", "coverage", "unittest", "nose2", "py.test"))
_OTHER_FRAMEWORKS = frozenset((
    "verl", "nemo_rl", "trl", "deepspeed", "accelerate", "transformers", "lightning", "pytorch_lightning",
    "torchtitan", "openrlhf", "axolotl", "llamafactory", "nemo", "composer", "fairseq", "colossalai",
))
# A call of Megatron-LM's training entry point (megatron/training/training.py ``pretrain``), and of
# Megatron-Bridge's (megatron/bridge/training/pretrain.py ``pretrain``, finetune.py ``finetune``,
# pretrain_megatron_mimo.py ``pretrain_megatron_mimo``).
_CALLS_TRAINING = re.compile(r"\b(?:pretrain|finetune)\w*\s*\(")
_MLM_TRAINING = re.compile(r"\bmegatron\.training\b")
_BRIDGE_TRAINING = re.compile(r"\bmegatron\.bridge\.training\b")
_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_SOURCE_BYTES = 1024 * 1024  # an entry point's source is far smaller
_UP = 6  # folders above the launch script searched for the launched file (a repository's depth)


def classify(script: Optional[str], beside: Optional[str] = None) -> tuple:
    """(kind, sentence) for what a launch starts: ``script`` is the launched file as the launch line spells it
    (its known tail: ``examples/multimodal/train.py``, ``/pretrain_gpt.py`` after an unknown folder) or the
    module ``-m`` runs (None: not known statically, read as a Megatron-LM training launch). ``beside``: the
    launch script's path, from which the launched file's source is looked up (None: by name only).
    ``sentence`` says what the entry point is, for a skip line."""
    if script is None:
        return TRAINING, ""
    name = script.rsplit("/", 1)[-1]
    if name in BRIDGE_RUNNERS:
        return BRIDGE_RECIPE, "Megatron-Bridge's recipe runner"
    module = not name.endswith(".py")
    if module and not _MODULE.fullmatch(script):
        return TRAINING, ""  # not a file or module name: what runs is not known statically, as for None
    if module and script.split(".")[0] in _TEST_RUNNERS:
        return NOT_MEGATRON, f"-m {script} is a test run"
    if module and script.split(".")[0] in _OTHER_FRAMEWORKS:
        return NOT_MEGATRON, f"-m {script} is {script.split('.')[0]}'s trainer"
    found = launched_source(beside, script) if beside is not None else None
    shown = f"-m {script}" if module else name
    if found is not None:
        path, text = found
        by_source = _by_source(text)
        if by_source is not None:
            return by_source, ""
        kind = _by_name(name if not module else script.rsplit(".", 1)[-1] + ".py")
        if kind is not None:
            return NOT_TRAINING, f"{shown} is {kind} entry point, not a training run"
        return NOT_MEGATRON, (f"{shown} ({_short(path, beside)}) calls no Megatron training entry point (pretrain() of "
                              "megatron.training or megatron.bridge.training)")
    base = script.rsplit(".", 1)[-1] + ".py" if module else name
    if _MEGATRON_NAMES.fullmatch(base):
        return TRAINING, ""
    kind = _by_name(base)
    if kind is not None:
        return NOT_TRAINING, f"{shown} is {kind} entry point, not a training run"
    return NOT_MEGATRON, (f"{shown} is not a known Megatron training entry point (pretrain_*.py, train*.py, Bridge's "
                          "run_recipe.py) and its source is not found beside the script")


def _by_name(name: str) -> Optional[str]:
    """What a not-training entry point is, by its file name (None: the name does not say)."""
    low = name.lower()
    if _TRAINS.search(low):
        return None
    for pattern, what in _NOT_TRAINING:
        if pattern.search(low):
            return what
    return None


def _by_source(text: str) -> Optional[str]:
    """TRAINING / BRIDGE_SCRIPT when the source calls a Megatron training entry point, else None."""
    if not _CALLS_TRAINING.search(text):
        return None
    if _BRIDGE_TRAINING.search(text):
        return BRIDGE_SCRIPT
    if _MLM_TRAINING.search(text):
        return TRAINING
    return None


def source_kind(text: str) -> Optional[str]:
    """For a Python file read on its own: TRAINING when it calls Megatron-LM's training entry point (it is
    Megatron-LM's entry point: its launch's arguments say what it trains), BRIDGE_SCRIPT when it calls
    Megatron-Bridge's, None otherwise."""
    return _by_source(text)


def not_training_name(name: str) -> Optional[str]:
    """What a file named ``name`` is when its name says it is no training entry point (a conversion, inference,
    evaluation, quantization or data-preparation script), else None."""
    return _by_name(name)


def _short(path: str, beside: Optional[str]) -> str:
    try:
        return os.path.relpath(path, os.path.dirname(os.path.abspath(beside))) if beside else path
    except ValueError:
        return path


def launched_source(beside: str, script: str) -> Optional[tuple]:
    """(path, text) of the launched file when it is found statically: the launch line's known path (or the
    module's, ``a.b.c`` -> ``a/b/c.py``), and each shorter tail of it, under the launch script's folder and up
    to ``_UP`` folders above it (the repository a launch is run from). None when not found."""
    if script.endswith(".py"):
        parts = [p for p in script.split("/") if p not in ("", ".")]
    else:
        if not _MODULE.fullmatch(script):
            return None
        parts = script.split(".")
        parts[-1] += ".py"
    if not parts:
        return None
    folder = os.path.dirname(os.path.abspath(beside))
    folders = []
    for _ in range(_UP + 1):
        folders.append(folder)
        up = os.path.dirname(folder)
        if up == folder:
            break
        folder = up
    for k in range(len(parts)):
        tail = os.path.join(*parts[k:])
        for f in folders:
            candidate = os.path.normpath(os.path.join(f, tail))
            if os.path.isfile(candidate):
                from overlap_cli.config.safe_read import read_head

                head = read_head(candidate, _SOURCE_BYTES)
                return None if head is None else (candidate, head.decode("utf-8", "replace"))
    return None
