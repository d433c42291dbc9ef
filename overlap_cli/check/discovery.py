"""Turn FILE/DIR arguments into the list of configs to check. Each file is asked of the form that reads it
(forms.form_of, then the form's ``discover``: check it, skip it with the reason, pass over it quietly); what
concerns the walk itself — the order, links, hidden folders, fragments sourced by another script — is here.

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
- A launch script is checked only when it launches a known Megatron training entry point (config.entry_points:
  Megatron-LM's ``pretrain_*.py`` / ``train*.py``, a script whose source calls megatron.training's or
  megatron.bridge.training's ``pretrain``, Bridge's ``run_recipe.py``); a test run (``-m pytest``, ``-m
  coverage``), another framework's trainer or an unknown script is skipped as not a Megatron training launch.
- A Python file (``*.py``) is read statically (frameworks.bridge.python_reader): each run it holds is
  checked as ``FILE::FUNCTION`` (or ``FILE`` for a script); one that holds none is skipped with the reason,
  most without being read (forms.sniff.python_skip: a test module, a module of the megatron package, Bridge's
  recipe runner), the others from their text (a Megatron-LM entry point, a conversion script, a file that builds
  no ConfigContainer). ``FILE::FUNCTION`` names one run.
- A file named explicitly gets the verdict it gets in a folder (pre-commit names every changed file): a
  script without a launch line, a conversion script, an override file without a recipe are skipped, exit 0.
- A NeMo-RL config (forms.nemo_rl, frameworks.nemo_rl.recognise: decided from its shape and its ``defaults:`` chain) is
  checked when its policy trains with Megatron and skipped, with the deciding key's ``FILE:LINE``, when it
  uses the DTensor policy.
- The same file reached twice is checked once, at its first position.
"""

from __future__ import annotations

import os
import re

from overlap_cli.config.safe_read import refusal
from overlap_cli.forms.sniff import NOT_A_LAUNCH, read_head
from overlap_cli.problems import InputProblem
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

YAML_SUFFIXES = (".yaml", ".yml")
_SNIFF_BYTES = 1024 * 1024  # a fragment's head, read to find who sources it
SKIPPED_DIRS = frozenset(("__pycache__", "node_modules", "site-packages"))


# The kinds of skipped file, each with the start of its reason (the summary counts them; skip_kind).
SKIP_KINDS = (
    ("not a training config", "not a training config"),
    ("an override file", "override file without a recipe"),
    ("not a launch", "not a launch"),
    ("a fragment sourced by", "fragment sourced by another script"),
    ("a template", "template with placeholders"),
    ("not a training run", "not a training run"),
    ("not a Megatron training launch", "not a Megatron training launch"),
    ("a test module", "test module"),
    ("a module of the megatron package", "megatron package module"),
    ("the same file as", "link to a file already listed"),
    ("not read: ", "not a regular file"),
    ("a NeMo-RL config for the DTensor", "NeMo-RL DTensor policy"),
    ("a NeMo-RL config with the Megatron backend disabled", "NeMo-RL without a policy backend"),
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
    from overlap_cli.forms.base import DiscoveryContext

    out = Discovered()
    seen: dict = {}  # real path -> the path it was first reached as
    context = DiscoveryContext(configs_only, target)

    no_launch: list = []  # launch scripts found in a folder without a launch line: fragments or not a launch

    def add(path: str, explicit: bool) -> None:
        from overlap_cli import forms

        file = forms.file_of(path)  # FILE.py::FUNCTION names one run of FILE.py
        function = path[len(file) + 2:] or None if file != path else None
        key = os.path.realpath(path if function is None else file) + ("::" + function if function else "")
        if key in seen:
            first = seen[key]
            if os.path.normpath(first) != os.path.normpath(path):  # a link to a file already listed: say so
                out.skipped.append((path, f"the same file as {first} (a link), checked once"))
            return
        seen[key] = path
        refused = None if explicit else refusal(file)
        if refused is not None:  # a FIFO, device or /proc file met in a walk: never opened, said why
            out.skipped.append((file, f"not read: {refused}"))
            return
        if function is not None or not os.path.isfile(file):
            out.files.append(path)  # one run named, or a missing file: the check says what is wrong
            return
        verdict, value = forms.form_of(path).discover(path, explicit, context)
        if verdict == "check":
            out.files.extend(value)
        elif verdict == "skip":
            out.skipped.append((file, value))
        elif verdict == "no-launch":
            no_launch.append(path)

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
                out.skipped.append((path, NOT_A_LAUNCH))
        out.skipped.sort(key=lambda item: item[0])
    return out


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
        head = read_head(script)
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

    head = read_head(path)
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
