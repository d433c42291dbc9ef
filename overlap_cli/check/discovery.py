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


# The kinds of skipped file, each with the start of its reason (the summary counts them; skip_kind).
SKIP_KINDS = (
    ("not a training config", "not a training config"),
    ("an override file", "override file without a recipe"),
    ("not a launch", "not a launch"),
    ("a fragment sourced by", "fragment sourced by another script"),
    ("a template", "template with placeholders"),
    ("not a training run", "not a training run"),
    ("the same file as", "link to a file already listed"),
    ("a Megatron-Bridge training script in Python", "Bridge Python training script"),
)


def skip_kind(reason: str) -> str:
    for start, kind in SKIP_KINDS:
        if reason.startswith(start):
            return kind
    return "skipped"


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


def discover(args, configs_only: bool = False, target=None) -> Discovered:
    """``target``: the command's target, to find an override file's recipe in [tool.overlap]."""
    out = Discovered()
    seen: dict = {}  # real path -> the path it was first reached as

    no_launch: list = []  # launch scripts found in a folder without a launch line: fragments or not a launch

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
                seen[key] = path
                add_python(path, explicit)
            return
        key = os.path.realpath(path)
        if key in seen:
            first = seen[key]
            if os.path.normpath(first) != os.path.normpath(path):  # a link to a file already listed: say so
                out.skipped.append((path, f"the same file as {first} (a link), checked once"))
            return
        seen[key] = path
        if os.path.isfile(path):
            from overlap_cli.frameworks.detect import MEGATRON_LM, discoverable, framework_of, is_shell_name

            if is_shell_name(path) or (explicit and framework_of(path) == MEGATRON_LM):
                verdict, reason = _script_verdict(path)
                if verdict == "skip":
                    out.skipped.append((path, reason))
                elif verdict == "none" and not explicit:
                    no_launch.append(path)
                else:  # named: checked, and a script without a launch line says so
                    out.files.append(path)
                return
            verdict = None if explicit else discoverable(path)  # a functional-test YAML
            if verdict is not None:
                if verdict:
                    out.files.append(path)
                return
            if path.lower().endswith(YAML_SUFFIXES) and not configs_only:
                reason = _yaml_skip(path, target, explicit)
                if reason is not None:
                    out.skipped.append((path, reason))
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
    if no_launch:
        sourced = _sourced_by(no_launch, [f for f in out.files] + [p for p, _ in out.skipped] + no_launch)
        for path in no_launch:
            by = sourced.get(os.path.normpath(path))
            if by is not None:
                src, line, read = by
                if src in no_launch:
                    then = f"neither is {src}, so it is not checked"
                elif read and _parses(path):
                    then = "read where that script is checked"
                else:
                    then = "what it sets is unknown where that script is checked"
                out.skipped.append((path, f"a fragment sourced by {src} (line {line}), not a launch itself; {then}"))
            else:
                out.skipped.append((path, "not a launch (no torchrun, python -m torch.distributed.run, "
                                          "pretrain_*.py or run_recipe.py line)"))
        out.skipped.sort(key=lambda item: item[0])
    return out


# A template's placeholder: ``<PATH_OF_VOCAB_FILE>``, ``<some dir>``.
_PLACEHOLDER_RE = re.compile(r"<[A-Za-z][^<>\n]{0,60}>")


def _script_verdict(path: str) -> tuple:
    """("check", None) | ("skip", reason) | ("none", None): a launch script without a launch line."""
    head = _read_head(path)
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
        head = _read_head(os.path.join(folder, launched))
        if head is not None:
            return launched if b"megatron.bridge" in head[:65536] else None
    return None


def _read_head(path: str):
    try:
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES)
    except OSError:
        return None


_SOURCE_RE = re.compile(r"^[ \t]*(?:source|\.)[ \t]+(['\"]?)((?:`[^`\n]*`|[^\s;'\"|&`])+)\1", re.MULTILINE)


def _sourced_by(fragments: list, scripts: list) -> dict:
    """{fragment path: (the script that sources it, line)} for the fragments a script of the walk sources by a
    literal path: relative to the script's folder, or below a directory variable (``${SCRIPT_DIR}/conf/x.sh``:
    the path's literal tail, resolved from the script's folder)."""
    wanted = {os.path.normpath(f) for f in fragments}
    out: dict = {}
    for script in scripts:
        if not script.lower().endswith((".sh", ".bash", ".slurm", ".sbatch")):
            continue
        head = _read_head(script)
        if not head or b"source" not in head and b". " not in head:
            continue
        text = head.decode("utf-8", "replace")
        here = os.path.dirname(script)
        for m in _SOURCE_RE.finditer(text):
            arg = m.group(2)
            tail = re.split(r"\$\{[^}]*\}|\$\([^)]*\)|`[^`]*`|\$\w+", arg)[-1]
            if not tail or not tail.endswith((".sh", ".bash")):
                continue
            literal = tail == arg
            candidates = [os.path.normpath(os.path.join(here, tail.lstrip("/")))]
            if literal and os.path.isabs(arg):
                candidates = [os.path.normpath(arg)]
            for c in candidates:
                if c in wanted and c != os.path.normpath(script) and c not in out:
                    out[c] = (script, text.count("\n", 0, m.start()) + 1, literal or _known_folder(arg[:-len(tail)], text))
    return out


def _parses(path: str) -> bool:
    """Whether bash can parse the file (the reader reads a sourced file only then)."""
    from overlap_cli.config.shell_parse import parse_script
    from overlap_cli.problems import InputError

    head = _read_head(path)
    try:
        parse_script(path, (head or b"").decode("utf-8", "replace"))
    except (InputError, RecursionError):
        return False
    return head is not None and len(head) < _SNIFF_BYTES


def _known_folder(head: str, text: str) -> bool:
    """Whether the reader knows the folder before a sourced path's literal tail (config.shell.sourced_path):
    the script's folder by ``$(dirname "$0")`` and its kin, the working directory, or a variable the script
    sets to one of those."""
    from overlap_cli.config.shell import CWD_WORDS, DIR_OF

    def norm(what: str) -> str:
        return re.sub(r"\s+", " ", what.replace('"', "").replace("'", "").replace("${", "$").replace("}", "")).strip()

    if norm(head) in {norm(c) for c in CWD_WORDS} or DIR_OF.match(norm(head)):
        return True
    var = re.fullmatch(r"\$\{?(\w+)\}?", head)
    if var is None:
        return False
    values = re.findall(r"^[ \t]*(?:export[ \t]+)?" + var.group(1) + r"=(.*)$", text, re.MULTILINE)
    return len(values) == 1 and bool(DIR_OF.match(norm(values[0].split(" #")[0])))


def _yaml_skip(path: str, target, explicit: bool = False) -> "str | None":
    """Why a YAML file is not checked, or None: a file whose top-level keys are mostly not
    ConfigContainer sections (a model card: ``title``, ``summary``, ``items`` beside a ``model:``), or an
    override file (ConfigContainer sections, no ``_target_``, so not a config Bridge can build alone, and
    presented as one: ``_says_override``) whose recipe nothing names."""
    head = _read_head(path)
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
