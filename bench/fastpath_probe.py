"""What `overlap check FILE...` would cost without typer: a measuring probe, not a shipped entry point.

It makes the same calls as ``cli.check`` for the plain case (no options): target profile from
[tool.overlap], rule selection, discovery, checking, the text report, the exit code. bench.py times it
next to the real command; tests/test_bench_inputs.py asserts both print the same thing. The gap between
the two is what typer costs at start-up (its import, and pydantic validators built for every option
of ``check`` at each invocation).
"""

from __future__ import annotations

import os
import sys


def main(files: list[str]) -> int:
    from overlap_cli.model import SEVERITY_RANK
    from overlap_cli.report import resolve_format, write
    from overlap_cli.runner import check_files, gather
    from overlap_cli.selection import cli_selection
    from overlap_cli.settings import find_settings
    from overlap_cli.target import profile

    flags = dict.fromkeys(("world_size", "nodes", "gpus_per_node", "transformer_engine", "gpu", "te_version", "torch_version", "env_from_shell"))
    target = profile(flags, find_settings(files[0], None), None, dict(os.environ), None)
    files, skipped, problems = gather(files, False)
    results = problems + check_files(files, target, [], cli_selection(None, None, None, None), 1)
    write(results, resolve_format("text"), sys.stdout, skipped, tty=sys.stdout.isatty())
    if any(r.error is not None for r in results):
        return 2
    warning = SEVERITY_RANK["warning"]
    return 1 if any(SEVERITY_RANK[f.severity] >= warning for r in results for f in r.findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
