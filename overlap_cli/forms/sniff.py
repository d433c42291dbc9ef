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

NOT_A_CONFIG = "not a training config (no top-level " + "/".join(CONFIG_SECTIONS) + " section)"




def read_head(path: str):
    """The first MiB of ``path``, or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES)
    except OSError:
        return None


def looks_like_config(path: str, pattern=None) -> bool:
    """True if the file has a top-level training-config section, or cannot be read (so the check reports why)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return True
    text = head.decode("utf-8", errors="replace")
    return bool((pattern or _SECTION_RE).search(text)) or bool(_RECIPE_DIRECTIVE_RE.search(text))


# A top-level key in block style: the shape of a YAML mapping file.
_TOP_KEY_RE = lazyre.compile(r"^(?:'[^'\n]*'|\"[^\"\n]*\"|[A-Za-z_][\w.\-]*)[ \t]*:(?:[ \t\r]|$)", re.MULTILINE)


def looks_like_other_yaml(path: str) -> bool:
    """A file named explicitly is skipped as not a training config only when it is plainly some other
    YAML mapping: text, top-level block keys, none of them a ConfigContainer section. Anything else (a
    flow-style config, a list, an empty or binary file) is checked, and the check says what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    if b"\0" in head:
        return False
    text = head.decode("utf-8", errors="replace")
    return bool(_TOP_KEY_RE.search(text)) and not _CONTAINER_RE.search(text)


# A template's placeholder: ``<PATH_OF_VOCAB_FILE>``, ``<some dir>``.
_PLACEHOLDER_RE = re.compile(r"<[A-Za-z][^<>\n]{0,60}>")


def script_verdict(path: str) -> tuple:
    """("check", None) | ("skip", reason) | ("none", None): a launch script without a launch line."""
    head = read_head(path)
    if head is None:
        return "check", None  # the check says why it cannot be read
    if b"\0" in head[:8192]:
        return "skip", "not a launch (a binary file)"
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
    from overlap_cli.config.entry_points import NOT_TRAINING, classify

    what, sentence = classify(detail)
    if what == NOT_TRAINING:
        return "skip", f"not a training run: {sentence}"
    bridge_script = _bridge_python(path, detail)
    if bridge_script is not None:
        return "skip", (f"a Megatron-Bridge training script in Python ({bridge_script}): the launch's words are that "
                        "script's own arguments, not Megatron-LM's; not read from the launch")
    return "check", None


def _bridge_python(script: str, launched) -> "str | None":
    """The launched ``.py`` when it sits beside the script (or one folder up) and imports megatron.bridge: a
    Bridge training script of its own, whose arguments Megatron-LM's parser does not describe."""
    if not launched or not launched.endswith(".py") or re.fullmatch(r"pretrain_\w*\.py", launched):
        return None
    here = os.path.dirname(os.path.abspath(script))
    for folder in (here, os.path.dirname(here)):
        head = read_head(os.path.join(folder, launched))
        if head is not None:
            return launched if b"megatron.bridge" in head[:65536] else None
    return None


def yaml_skip(path: str, target, explicit: bool = False) -> "str | None":
    """Why a YAML file is not checked, or None: a file whose top-level keys are mostly not
    ConfigContainer sections (a model card: ``title``, ``summary``, ``items`` beside a ``model:``), or an
    override file (ConfigContainer sections, no ``_target_``, so not a config Bridge can build alone, and
    presented as one: ``_says_override``) whose recipe nothing names."""
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
    if container and len(other) > len(container):
        shown = ", ".join(other[:4]) + (", ..." if len(other) > 4 else "")
        return (f"not a training config: its top-level keys ({shown}) are not ConfigContainer sections "
                f"(only {', '.join(container)} is)")
    if explicit or not container or "_target_" in text or _RECIPE_DIRECTIVE_RE.search(text):
        return None  # named explicitly, an override file is checked (and the check says what it lacks)
    if not _says_override(path, text):
        return None  # a hand-written partial config is checked against Bridge's defaults, as always
    if target is not None and _recipe_of(target, path, text):
        return None
    leaves = _count_leaves(text)
    return (f"an override file: sets {leaves} keys of a ConfigContainer: name its recipe with "
            "`# overlap: recipe=NAME` or in pyproject ([tool.overlap] recipe, or per-file-target)")


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
