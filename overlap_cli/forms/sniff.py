"""What the head of a file says about it, for folder discovery (check/discovery.py asks each file's form,
and the forms ask here): whether a YAML file looks like a Megatron-Bridge training config or an override
file without a recipe, and whether a launch script launches a training run. Every read is of the first
MiB of a regular file at most.
"""

from __future__ import annotations

import os
import re

from overlap_cli import lazyre

CONFIG_SECTIONS = ("model", "ddp", "comm_overlap", "mixed_precision", "optimizer")
YAML_SUFFIXES = (".yaml", ".yml")

# A top-level key in block style, optionally quoted: `model:` at column 0. Bridge's dumps and recipes
# are block style; a flow-style file (`{model: ...}`) is skipped with a note and can be named explicitly.
_SECTION_RE = lazyre.compile(
    r"^(?:['\"]?)(?:" + "|".join(CONFIG_SECTIONS) + r")(?:['\"]?)[ \t]*:(?:[ \t\r]|$)", re.MULTILINE
)
# An override file that names its recipe (``# overlap: recipe=NAME``, or ``recipe=`` in a target directive)
# is a run to check whatever sections it sets (config.layers merges it onto the recipe).
_RECIPE_DIRECTIVE_RE = lazyre.compile(r"^[ \t]*#[ \t]*overlap[ \t]*:[ \t]*(?:target\b[^\n]*)?\brecipe[ \t]*=", re.MULTILINE | re.IGNORECASE)
# Every top-level field of Bridge's ConfigContainer (megatron/bridge/training/config.py:962), as its
# serializer writes them: a file named explicitly with any of them is a (partial) training config.
CONTAINER_SECTIONS = CONFIG_SECTIONS + (
    "env_vars", "dist", "train", "dataset", "checkpoint", "logger", "tokenizer", "scheduler", "rng",
    "validation", "profiling", "peft", "ft", "straggler", "nvrx_straggler", "rerun_state_machine",
    "tensor_inspect", "inprocess_restart", "optimizer_config_override_provider",
)
_CONTAINER_RE = lazyre.compile(
    r"^(?:['\"]?)(?:" + "|".join(CONTAINER_SECTIONS) + r")(?:['\"]?)[ \t]*:(?:[ \t\r]|$)", re.MULTILINE
)
# Reading this much is enough to find a top-level section in any real config (Bridge dumps are ~30 KB).
_SNIFF_BYTES = 1024 * 1024

NOT_A_LAUNCH = "not a launch (no torchrun, python -m torch.distributed.run, pretrain_*.py or run_recipe.py line)"
NOT_A_CONFIG = "not a training config (no top-level " + "/".join(CONFIG_SECTIONS) + " section)"




def read_head(path: str):
    """The first MiB of ``path``, or None when it cannot be read or is not a regular file (never opened then)."""
    from overlap_cli.config.safe_read import read_head as bounded_head

    return bounded_head(path, _SNIFF_BYTES)


def looks_like_config(path: str, pattern=None) -> bool:
    """True if the file has a top-level training-config section, or cannot be read (so the check reports why)."""
    head = read_head(path)
    if head is None:
        return True
    text = head.decode("utf-8", errors="replace")
    return bool((pattern or _SECTION_RE).search(text)) or bool(_RECIPE_DIRECTIVE_RE.search(text))


# A top-level key in block style: the shape of a YAML mapping file.
_TOP_KEY_RE = lazyre.compile(r"^(?:'[^'\n]*'|\"[^\"\n]*\"|[A-Za-z_][\w.\-]*)[ \t]*:(?:[ \t\r]|$)", re.MULTILINE)


def looks_like_other_yaml(path: str) -> bool:
    """A file named explicitly is skipped as not a training config only when it is plainly some other
    YAML mapping: text, top-level block keys, none of them a ConfigContainer section. Anything else (a
    flow-style config, a list, an empty or binary file) is checked, and the check says what is wrong."""
    head = read_head(path)
    if head is None:
        return False
    if b"\0" in head:
        return False
    text = head.decode("utf-8", errors="replace")
    return bool(_TOP_KEY_RE.search(text)) and not _CONTAINER_RE.search(text)


# A template's placeholder: ``<PATH_OF_VOCAB_FILE>``, ``<some dir>``.
_PLACEHOLDER_RE = re.compile(r"<[A-Za-z][^<>\n]{0,60}>")


def script_verdict(path: str, explicit: bool = False) -> tuple:
    """("check", None) | ("skip", reason) | ("none", None): a launch script without a launch line |
    ("bridge-script", the launched script as the launch spells it): a Bridge training script of its own. A binary
    file is passed over in a walk; named explicitly, it is checked, and the reader says it is binary (exit 2):
    a script named to be checked is never skipped silently."""
    head = read_head(path)
    if head is None:
        return "check", None  # the check says why it cannot be read
    if b"\0" in head[:8192]:
        return ("check", None) if explicit else ("skip", "not a launch (a binary file)")
    text = head.decode("utf-8", "replace")
    from overlap_cli.config.shell import launch_summary

    kind, detail = launch_summary(text)
    if kind == "error":
        m = _PLACEHOLDER_RE.search(text)
        if m is not None:
            line = text.count("\n", 0, m.start()) + 1
            return "skip", (f"a template with placeholders to fill in ({m.group(0)}, line {line}): bash cannot "
                            f"run it as written ({detail})")
        return "check", None
    if kind == "none":
        return "none", None
    if detail is None:
        return "skip", ("not a Megatron training launch as far as can be told: the script its torchrun starts is not "
                        "known statically (its words are not), so it is not read as a Megatron-LM launch, whose every "
                        "value would be a default nobody wrote")
    from overlap_cli.config.entry_points import BRIDGE_SCRIPT, NOT_MEGATRON, NOT_TRAINING, classify

    what, sentence = classify(detail, beside=path)
    if what == NOT_TRAINING:
        return "skip", f"not a training run: {sentence}"
    if what == NOT_MEGATRON:
        return "skip", f"not a Megatron training launch: {sentence}"
    if what == BRIDGE_SCRIPT:  # read as launched when the script's own run is one the Python form reads
        return "bridge-script", detail
    return "check", None


def yaml_skip(path: str, target, explicit: bool = False) -> "str | None":
    """Why a YAML file is not checked, or None: a file whose top-level keys are mostly not
    ConfigContainer sections (a model card: ``title``, ``summary``, ``items`` beside a ``model:``), or an
    override file (ConfigContainer sections, no ``_target_``, so not a config Bridge can build alone, and
    presented as one: ``_says_override``) whose recipe nothing names -- in a folder and named explicitly alike
    (pre-commit names each changed file: checked against class defaults, it would report values nobody wrote)."""
    head = read_head(path)
    if head is None or b"\0" in head:
        return None
    text = head.decode("utf-8", "replace")
    keys = [m.group(0).split(":")[0].strip("'\" \t") for m in _TOP_KEY_RE.finditer(text)]
    if not keys:
        return None
    container = [k for k in keys if k in CONTAINER_SECTIONS]
    other = [k for k in keys if k not in CONTAINER_SECTIONS and not k.startswith("_") and k != "defaults"]
    if explicit and (len(head) >= _SNIFF_BYTES or _ANCHOR_RE.search(text)):
        return None  # named: a file too large to sniff or built from anchors is read, and the reader judges it
    if container and len(other) > len(container) and not (explicit and _sets_bridge_key(text)):
        shown = ", ".join(other[:4]) + (", ..." if len(other) > 4 else "")
        return (f"not a training config: its top-level keys ({shown}) are not ConfigContainer sections "
                f"(only {', '.join(container)} is)")
    if not container or "_target_" in text or _RECIPE_DIRECTIVE_RE.search(text):
        return None
    if not _says_override(path, text):
        return None  # a hand-written partial config is checked against Bridge's defaults, as always
    if target is not None and _recipe_of(target, path, text):
        return None
    leaves = _count_leaves(text)
    return (f"an override file: sets {leaves} keys of a ConfigContainer: name its recipe with "
            "`# overlap: recipe=NAME` or in pyproject ([tool.overlap] recipe, or per-file-target)")


# A key only a Megatron-Bridge config sets: a parallel size or an overlap switch.
_BRIDGE_KEY_RE = re.compile(r"[ \t]+['\"]?(?:\w+_model_parallel_size|context_parallel_size|sequence_parallel|"
                            r"tp_comm_overlap|overlap_(?:grad_reduce|param_gather|p2p_comm))['\"]?[ \t]*:")


def _sets_bridge_key(text: str) -> bool:
    """Whether a ConfigContainer section of the file (``model:``, ``ddp:``, ...) sets a parallel size or an
    overlap switch: a file named explicitly that does is checked whatever other top-level keys surround it (a
    model card that names ``context_parallel_size`` under its own ``items:`` is not)."""
    section = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] not in " \t":
            top = _TOP_KEY_RE.match(line)
            section = top is not None and top.group(0).split(":")[0].strip("'\" \t") in CONTAINER_SECTIONS
        elif section and _BRIDGE_KEY_RE.match(line):
            return True
    return False


_ANCHOR_RE = re.compile(r"(?::|-)[ \t]+[&*][A-Za-z0-9_]")
_OVERRIDE_WORD = re.compile(r"^[ \t]*#.*\boverrides?\b", re.MULTILINE | re.IGNORECASE)


def _says_override(path: str, text: str) -> bool:
    """The file presents itself as an override file for a recipe: its name says so (Bridge's
    ``*_override_example.yaml``), it sits in a ``conf/`` or ``overrides/`` folder (where Bridge's examples keep
    the files their ``--config-file`` takes), or a comment says it is one."""
    name = os.path.basename(path).lower()
    folder = os.path.basename(os.path.dirname(os.path.abspath(path))).lower()
    return "override" in name or folder in ("conf", "confs", "overrides") or bool(_OVERRIDE_WORD.search(text))


def _recipe_of(target, path: str, text: str) -> bool:
    try:
        t = target.for_file(path, text)
    except Exception:  # an invalid settings file: the check reports it
        return True
    return bool(t.get("recipe") or t.get("base"))


def _count_leaves(text: str) -> int:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return 0

    def leaves(v) -> int:
        if isinstance(v, dict):
            return sum(leaves(x) for x in v.values()) if v else 1
        return 1

    return leaves(data) if isinstance(data, dict) else 0


# pytest's default test file names (python_files = test_*.py *_test.py) and its conftest.py.
_TEST_MODULE = re.compile(r"test_\w*\.py|\w*_test\.py|conftest\.py")
# What a Python file must say to build a ConfigContainer the reader can find: the class, its from_yaml, or an
# import of megatron.bridge (a recipe call) -- frameworks.bridge.python_reader's start calls all need one.
_BRIDGE_WORDS = (b"ConfigContainer", b"from_yaml", b"megatron.bridge")
_package_dirs: dict = {}  # folder -> whether it holds __init__.py (a walk asks once per folder)


def _is_package(folder: str) -> bool:
    known = _package_dirs.get(folder)
    if known is None:
        known = _package_dirs[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
    return known


def megatron_module(path: str) -> "str | None":
    """The dotted module name when ``path`` is a module of the ``megatron`` namespace package (Megatron-Bridge's
    ``src/megatron/bridge/...``, Megatron-LM's ``megatron/core/...``): its folders hold ``__init__.py`` up to a
    folder named ``megatron`` that does not (the namespace). None otherwise."""
    folder = os.path.dirname(os.path.abspath(path))
    names = [] if os.path.basename(path) == "__init__.py" else [os.path.basename(path)[:-3]]
    if not _is_package(folder):
        return None
    while _is_package(folder):
        names.append(os.path.basename(folder))
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up
    if not names or os.path.basename(folder) != "megatron":
        return None
    return ".".join(["megatron"] + names[::-1])


def python_skip(path: str) -> "str | None":
    """Why a Python file holds no run to check, decided from its path alone (nothing is read): a test module
    (pytest collects it), a module of the megatron package (library code a run imports), or Megatron-Bridge's
    recipe runner and its helpers (a launch names the recipe it runs). None: the file is read."""
    from overlap_cli.config.entry_points import BRIDGE_RUNNER_HELPERS, BRIDGE_RUNNERS

    name = os.path.basename(path)
    if _TEST_MODULE.fullmatch(name):
        return "a test module (pytest collects test_*.py), not a training run"
    module = megatron_module(path)
    if module is not None:
        return (f"a module of the megatron package ({module}): library code a run imports, not a training run; "
                "a recipe function in it is checked by name (FILE.py::FUNCTION, or --recipe NAME)")
    if name in BRIDGE_RUNNERS or name in BRIDGE_RUNNER_HELPERS:
        return ("not a training run: Megatron-Bridge's recipe runner; the run is the recipe a launch of run_recipe.py "
                "names (check that launch script)")
    return None


def python_text_skip(path: str, head: bytes) -> "str | None":
    """Why a Python file holds no run, from its text (None: the reader lists its runs): a Megatron-LM training
    entry point (its launch's arguments say what it trains), a conversion / inference / evaluation / data-
    preparation script by its name that calls no training entry point, or a file that cannot build a
    ConfigContainer (it names neither the class, from_yaml nor megatron.bridge)."""
    from overlap_cli.config.entry_points import TRAINING, not_training_name, source_kind

    text = head.decode("utf-8", "replace")
    name = os.path.basename(path)
    kind = source_kind(text)
    if kind == TRAINING:
        return (f"not a training run by itself: {name} is a Megatron-LM training entry point; its launch's arguments "
                "say what it trains (check the script that launches it)")
    what = not_training_name(name)
    if kind is None and what is not None and not re.search(r"config|recipe", name.lower()):
        return f"not a training run: {name} is {what} script"
    if not any(word in head for word in _BRIDGE_WORDS):
        return "not a training run: builds no ConfigContainer (it uses neither megatron.bridge nor ConfigContainer)"
    return None
