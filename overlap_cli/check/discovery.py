"""Turn FILE/DIR arguments into the list of configs to check.

- A directory is walked for ``*.yaml`` / ``*.yml`` and Megatron-LM launch scripts (``*.sh``, ``*.bash``,
  ``*.slurm``, ``*.sbatch``: only those with a launch line, the others passed over quietly; see
  ``frameworks.detect``); hidden folders (``.git``, ``.venv``, ...) and caches
  are not entered, symlinked folders are not followed (no loops), and the order is sorted, so the output
  is the same on every machine and with any ``--jobs``.
- A YAML file found in a folder is checked only if it looks like a training config: a top-level
  ``model``, ``ddp``, ``comm_overlap``, ``mixed_precision`` or ``optimizer`` key. Anything else
  (CI workflows, compose files, Helm charts) is skipped with a note. A file named on the command line is
  skipped with the same note only when it is plainly another YAML mapping (top-level block keys, none a
  section of Bridge's ConfigContainer); an ``env_vars``-only override file, a flow-style config
  (``{model: ...}``, which the sniff cannot read), a list, an empty or binary file are checked, and the
  check reports what is wrong — unless ``configs_only`` is set (the pre-commit hook sets it: pre-commit passes every staged YAML file
  by name), which skips those too.
- A Python file (``*.py``) is read statically (frameworks.bridge.python_reader): each run it holds is
  checked as ``FILE::FUNCTION`` (or ``FILE`` for a script); one that builds no ConfigContainer is passed
  over in a folder and, named explicitly, skipped with a line saying so (and how to check the recipe it
  names). ``FILE::FUNCTION`` names one run.
- The same file reached twice is checked once, at its first position.
"""

from __future__ import annotations

import os
import re

from overlap_cli import lazyre
from overlap_cli.problems import InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

CONFIG_SECTIONS = ("model", "ddp", "comm_overlap", "mixed_precision", "optimizer")
YAML_SUFFIXES = (".yaml", ".yml")
SKIPPED_DIRS = frozenset(("__pycache__", "node_modules", "site-packages"))

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


@dataclass
class Discovered:
    files: list = field(default_factory=list)  # paths to check, in output order
    skipped: list = field(default_factory=list)  # (path, reason)
    problems: list = field(default_factory=list)  # model.InputProblem: a folder without any YAML (exit 2)


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


def _looks_like_other_yaml(path: str) -> bool:
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


def _walk(folder: str):
    from overlap_cli.frameworks.detect import SHELL_SUFFIXES

    suffixes = YAML_SUFFIXES + SHELL_SUFFIXES + (".py",)  # launch scripts (frameworks.detect), Python runs
    for dirpath, dirnames, filenames in os.walk(folder, onerror=None):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            if name.lower().endswith(suffixes) and not name.startswith("."):
                yield os.path.normpath(os.path.join(dirpath, name))


def discover(args, configs_only: bool = False) -> Discovered:
    out = Discovered()
    seen: set = set()

    def add_python(path: str, explicit: bool) -> None:
        from overlap_cli.frameworks.bridge.python_load import list_runs, not_a_run_problem, split_spec

        file, function = split_spec(path)
        if function is not None or not os.path.isfile(file):
            out.files.append(path)  # one run named, or a missing file: the check says what is wrong
            return
        try:
            with open(file, "rb") as fh:
                text = fh.read(_SNIFF_BYTES * 4).decode("utf-8", errors="replace")
        except OSError:
            out.files.append(path)
            return
        runs = list_runs(file, text)
        if runs:
            out.files.extend(runs)
        elif explicit:
            problem = not_a_run_problem(file, text)
            out.skipped.append((file, problem.message if problem else "builds no ConfigContainer"))

    def add(path: str, explicit: bool) -> None:
        if path.lower().endswith(".py") or ".py::" in path.lower():
            key = os.path.realpath(path)
            if key not in seen:
                seen.add(key)
                add_python(path, explicit)
            return
        key = os.path.realpath(path)
        if key in seen:
            return
        seen.add(key)
        if os.path.isfile(path):
            from overlap_cli.frameworks.detect import MEGATRON_LM, discoverable, framework_of

            if explicit and framework_of(path) == MEGATRON_LM:
                out.files.append(path)  # named: checked, and a script without a launch line says so
                return
            # found in a folder: a launch script without a launch line is passed over quietly
            verdict = None if explicit else discoverable(path)
            if verdict is not None:
                if verdict:
                    out.files.append(path)
                return
        if os.path.isfile(path) and not looks_like_config(path):
            # Named explicitly, a file with any ConfigContainer section (an env_vars-only override file)
            # or in flow style (`{model: ...}`, which the sniff cannot read) is still checked. Anything
            # else (a CI workflow) is noted and skipped, as in a folder.
            if not explicit or configs_only or _looks_like_other_yaml(path):
                out.skipped.append((path, NOT_A_CONFIG))
                return
        out.files.append(path)

    for arg in args:
        if os.path.isdir(arg):
            found = False
            for path in _walk(arg):
                found = True
                add(path, explicit=False)
            if not found:  # most likely a wrong path: say so rather than pass silently
                out.problems.append(InputProblem(arg, "is a directory with no *.yaml, *.yml or launch-script files (hidden folders are not searched)"))
        else:
            add(arg, explicit=True)  # a missing or unreadable file is reported by the check itself
    return out
