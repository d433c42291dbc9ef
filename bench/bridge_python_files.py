"""Megatron-Bridge's own Python files through ``overlap check``, one file at a time as a new user would name
them: how many are read (each run it holds checked without an input error), skipped (exit 0, a line saying
why), refused (exit 2) -- and why, grouped.

    git -C MIRROR archive HEAD src/megatron/bridge/recipes src/megatron/bridge/perf_recipes examples scripts tutorials | tar -x -C /tmp/mb
    python bench/bridge_python_files.py /tmp/mb          # the overlap-cli importable here
    PYTHONPATH=/path/to/other/checkout python bench/bridge_python_files.py /tmp/mb   # another version

Prints one JSON document (counts and the reasons, most frequent first)."""

from __future__ import annotations

import collections
import io
import json
import re
import sys
import types
from pathlib import Path


def run(*args) -> tuple:
    from overlap_cli.cli.fast import main

    saved = sys.argv, sys.stdout, sys.stderr, sys.modules["__main__"]
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["overlap", *map(str, args)]
    sys.stdout, sys.stderr = out, err
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # a traceback: counted as such
        code, err = 3, io.StringIO(f"traceback: {type(exc).__name__}: {exc}")
    finally:
        sys.argv, sys.stdout, sys.stderr, sys.modules["__main__"] = saved
    return code, out.getvalue(), err.getvalue()


def _why(text: str) -> str:
    line = next((l for l in text.splitlines() if l.strip()), "")
    line = re.sub(r"^\S+?(:\d+)*(:)?\s", "", line)  # drop the file:line:col
    line = re.sub(r"'[^']*'", "'…'", line)
    return line[:90]


def main() -> None:
    root = Path(sys.argv[1])
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    counts = collections.Counter()
    reasons = {"skipped": collections.Counter(), "refused": collections.Counter(), "runs_with_error": collections.Counter()}
    runs = 0
    for path in files:
        code, out, err = run("check", path, "--format", "json")
        try:
            results = json.loads(out)["results"] if out.strip() else []
        except ValueError:
            results = []
        errors = [r for r in results if r.get("error")]
        if code == 3:
            counts["traceback"] += 1
        elif results and not errors:
            counts["read"] += 1
            runs += len(results)
        elif results and len(errors) < len(results):
            counts["read (some runs refused)"] += 1
            runs += len(results) - len(errors)
            for r in errors:
                reasons["runs_with_error"][_why(r["error"]["message"])] += 1
        elif code == 2 or errors:
            counts["refused"] += 1
            reasons["refused"][_why(errors[0]["error"]["message"] if errors else err)] += 1
        else:
            counts["skipped"] += 1
            reasons["skipped"][_why(err.replace(f"note: {path}: skipped: ", ""))] += 1
    doc = {"files": len(files), "counts": dict(counts), "runs_read": runs,
           "reasons": {k: v.most_common(8) for k, v in reasons.items()}}
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
