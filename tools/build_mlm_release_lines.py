"""Build the line map of an older megatron-core release: where each upstream line the Megatron-LM mirror cites
(written as megatron-core NEWEST's ``file:line``) is in that release's source.

    python tools/build_mlm_release_lines.py OLD_TREE NEWEST_TREE

The trees are the unpacked wheels (``megatron_core-X.Y.Z``: the folder holding ``megatron/``); each one's
release is read from its ``megatron/core/package_info.py``. The cites are every ``file.py:LINE`` (and
``file.py:A-B``) in overlap_cli/frameworks/megatron_lm/*.py and overlap_cli/rules/lm*.py (a file named by its
constant, ``{ARGS}:1066``, spelled out), and every launch check's ``at``; a bare file name stands for the one file
of that name in the newest tree. A line is mapped where difflib's alignment of
the two files (``SequenceMatcher`` over the lines, whitespace stripped) keeps it unchanged; a cited line
that was changed or does not exist in the older release is listed under ``changed`` (what it asserts may
differ there: the check's record says so, ``assertions.Check.releases``).

Output: ``overlap_cli/frameworks/megatron_lm/releases/lines-X.Y.Z.json`` (the older release's).
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "overlap_cli"
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever else is installed
CITE = re.compile(r"(?<![\w/.])((?:megatron/)?[\w/]*?(\w+\.py)):(\d+)(?:-(\d+))?")


def release_of(tree: Path) -> str:
    text = (tree / "megatron" / "core" / "package_info.py").read_text()
    return ".".join(re.search(rf"^{k}\s*=\s*(\d+)", text, re.MULTILINE).group(1) for k in ("MAJOR", "MINOR", "PATCH"))


def cited(newest: Path) -> dict:
    """path in the tree -> the cited line numbers."""
    by_name: dict = {}
    for p in (newest / "megatron").rglob("*.py"):
        by_name.setdefault(p.name, []).append(p.relative_to(newest).as_posix())
    from overlap_cli.frameworks.megatron_lm.assertions import TABLE

    files = sorted((PACKAGE / "frameworks" / "megatron_lm").glob("*.py")) + sorted((PACKAGE / "rules").glob("lm*.py"))
    texts = [_paths_spelled_out(f.read_text(encoding="utf-8")) for f in files]
    texts.append("\n".join(c.at for c in TABLE))  # the checks' places, some of them built in loops
    out: dict = {}
    for text in texts:
        for m in CITE.finditer(text):
            path, name, first, last = m.group(1), m.group(2), int(m.group(3)), m.group(4)
            if not path.startswith("megatron/"):
                candidates = by_name.get(name, [])
                if len(candidates) != 1:
                    continue
                path = candidates[0]
            if not (newest / path).is_file():
                continue
            out.setdefault(path, set()).update({first} | ({int(last)} if last else set()))
    return out


def _paths_spelled_out(text: str) -> str:
    """``{ARGS}:1066`` / ``{lm.ARGS}:1680`` (an f-string naming a file by its constant in facts.py or
    assertions.py) as ``megatron/training/arguments.py:1066``."""
    from overlap_cli.frameworks.megatron_lm import assertions, facts

    for module, prefixes in ((facts, ("", "lm.")), (assertions, ("",))):
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and value.startswith("megatron/") and value.endswith(".py"):
                for prefix in prefixes:
                    text = text.replace("{" + prefix + name + "}", value)
    return text


def line_map(old: list, new: list) -> dict:
    """new line number (1-based) -> old line number, for the lines difflib keeps unchanged."""
    matcher = difflib.SequenceMatcher(None, [s.strip() for s in old], [s.strip() for s in new], autojunk=False)
    out = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(j2 - j1):
                out[j1 + k + 1] = i1 + k + 1
    return out


def main() -> int:
    old_tree, new_tree = (Path(a) for a in sys.argv[1:3])
    old_release, new_release = release_of(old_tree), release_of(new_tree)
    files, changed = {}, {}
    for path, lines in sorted(cited(new_tree).items()):
        old_file = old_tree / path
        if not old_file.is_file():
            changed[path] = sorted(lines)
            continue
        mapping = line_map(old_file.read_text().splitlines(), (new_tree / path).read_text().splitlines())
        files[path] = {str(n): mapping[n] for n in sorted(lines) if n in mapping}
        missing = sorted(n for n in lines if n not in mapping)
        if missing:
            changed[path] = missing
    doc = {"release": old_release, "cites": f"megatron-core {new_release}", "files": files, "changed": changed}
    out = PACKAGE / "frameworks" / "megatron_lm" / "releases" / f"lines-{old_release}.json"
    out.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")
    print(f"{out}: {sum(len(v) for v in files.values())} lines mapped, {sum(len(v) for v in changed.values())} changed",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
