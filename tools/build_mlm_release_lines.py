"""Build the line map of an older megatron-core release: where each upstream line the Megatron-LM mirror cites
(written as megatron-core NEWEST's ``file:line``) is in that release's source.

    python tools/build_mlm_release_lines.py OLD_TREE NEWEST_TREE

The trees are the unpacked wheels (``megatron_core-X.Y.Z``: the folder holding ``megatron/``); each one's
release is read from its ``megatron/core/package_info.py``. The cites are every ``file.py:LINE`` (and
``file.py:A-B``) in overlap_cli/frameworks/megatron_lm/*.py and overlap_cli/rules/lm*.py (a file named by its
constant, ``{ARGS}:1066``, spelled out), and every launch check's ``at``; a bare file name stands for the one file
of that name in the newest tree. Lines are mapped as tools/release_lines.py does (difflib's alignment); a
cited line the older release changed or lacks is listed under ``changed`` (what it asserts may differ there:
the check's record says so, ``assertions.Check.releases``).

Output: ``overlap_cli/frameworks/megatron_lm/releases/lines-X.Y.Z.json`` (the older release's).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "overlap_cli"
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever else is installed

from release_lines import CITE, mapped, write  # noqa: E402 (after the path)


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


def main() -> int:
    old_tree, new_tree = (Path(a) for a in sys.argv[1:3])
    old_release, new_release = release_of(old_tree), release_of(new_tree)
    files, changed = mapped(cited(new_tree), lambda path: old_tree / path, lambda path: new_tree / path)
    doc = {"release": old_release, "cites": f"megatron-core {new_release}", "files": files, "changed": changed}
    out = PACKAGE / "frameworks" / "megatron_lm" / "releases" / f"lines-{old_release}.json"
    write(out, doc)
    print(f"{out}: {sum(len(v) for v in files.values())} lines mapped, {sum(len(v) for v in changed.values())} changed",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
