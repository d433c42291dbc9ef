"""The rule cases of tests/cases/: each a config whose header comments say what to expect (see
tests/rules/test_cases.py for the header keys), and beside it the expected output of `overlap fix` on it
(`NAME.fixed.yaml`, `NAME.unsafe.fixed.yaml`; see tests/rules/test_fix_rules.py). Shared by the tests
that run the cases."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from conftest import ROOT

CASES_DIR = ROOT / "tests" / "cases"
FIXED_SUFFIX = ".fixed.yaml"
# Megatron-LM launches: shell scripts and functional-test YAMLs, with the same headers (NAME.fixed.sh beside
# a NAME.sh).
LM_CASES_DIR = CASES_DIR / "megatron_lm"
# The cases themselves; the expected fix outputs beside them are no cases (their header is the case's).
CASES = sorted(p for p in CASES_DIR.glob("*.yaml") if not p.name.endswith(FIXED_SUFFIX))
CASES += sorted(p for p in LM_CASES_DIR.glob("*") if p.suffix in (".sh", ".yaml") and ".fixed." not in p.name)

_LISTS = ("expect", "absent", "effective")
_LISTS += tuple(f"{form}-{key}" for form in ("fixed", "unsafe-fixed") for key in ("absent", "no-fix", "effective"))
# Header keys other readers take: `quote:` and `order:` (tests/rules/test_launch_checks.py), and the
# tool's own inline directive `# overlap: recipe=...` that some cases carry in their header.
_OTHER_KEYS = ("quote", "order", "overlap")
HEADER_KEYS = ("args", "fix-args", "exit", *_LISTS, *_OTHER_KEYS)
# A header line `# word: ...` names a key; prose (`# TP overlap with TP=1: ...`) has spaces before its colon.
_KEY_LINE = re.compile(r"#\s*([A-Za-z][\w-]*)\s*:")


class HeaderError(ValueError):
    """A case header names a key no test reads (a typo would otherwise silently check nothing)."""


def read_header(path: Path) -> dict:
    """The header of a case: the comment lines it starts with. A line `# key: value` whose key is one
    word must name a key of HEADER_KEYS (HeaderError naming the file, line and key otherwise); other
    comment lines are prose."""
    header: dict = {"args": [], "fix-args": [], "exit": None, **{key: [] for key in _LISTS}}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("#"):
            break
        word = _KEY_LINE.match(line)
        if word and word.group(1) not in HEADER_KEYS:
            raise HeaderError(
                f"{path}:{number}: unknown case header key {word.group(1)!r} (known: {', '.join(HEADER_KEYS)})"
            )
        body = line[1:].strip()
        key, sep, value = body.partition(":")
        if not sep or key not in header:
            continue
        if key in ("args", "fix-args"):
            header[key] += shlex.split(value)
        elif key == "exit":
            header["exit"] = int(value)
        else:
            header[key] += value.split()
    return header


def fixed_path(case: Path, unsafe: bool) -> Path:
    """Where the expected `overlap fix` output of ``case`` lives (with --unsafe-fixes or without)."""
    return case.with_name(case.stem + (".unsafe" if unsafe else "") + ".fixed" + case.suffix)


def fix_case(case: Path, unsafe: bool, args: list | None = None):
    """`fix_file` (overlap_cli.fix.loop) on ``case`` with the target flags, selection and threshold of its
    header's `args:` and `fix-args:` (what NAME.fixed.yaml beside it was made with; ``args`` instead of
    the header's for a file that is no case)."""
    from overlap_cli.check.selection import cli_selection
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.fast import parse_check
    from overlap_cli.fix.loop import fix_file

    if args is None:
        header = read_header(case)
        args = header["args"] + header["fix-args"]
    argv = list(args)
    threshold = "warning"
    if "--severity-threshold" in argv:  # fix also takes `info`, which check's options do not
        at = argv.index("--severity-threshold")
        threshold = argv[at + 1]
        del argv[at : at + 2]
    opts = parse_check([str(case), *argv])
    target = target_from_options(opts, str(case))
    selection = cli_selection(opts.select, opts.ignore, opts.extend_select, opts.settings)
    return fix_file(str(case), target, unsafe=unsafe, selection=selection, threshold=threshold)


def parse_expected(token: str):
    key, _, rest = token.partition("=")
    value, _, source = rest.partition("@")
    return key, json.loads(value), source or None
