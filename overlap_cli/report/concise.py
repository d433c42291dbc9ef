"""One line per finding, like ``ruff check --output-format concise``: for editors, grep and CI logs.
``[*]`` marks a finding that ``overlap fix --write`` can fix safely."""

from __future__ import annotations

import sys
from typing import IO

from overlap_cli.report.common import finding_line, summary


def render(results, out: IO[str], skipped=(), quiet: bool = False) -> None:
    """``quiet``: warning and error lines only, no summary (``-q``, as ruff's ``--quiet``)."""
    fixable = 0
    for r in results:
        if r.error is not None:
            sys.stderr.write(r.error.one_line() + "\n")  # as in text: bad input is one line on stderr
            continue
        for f in r.findings:
            if quiet and f.severity == "info":
                continue
            out.write(finding_line(r.file, f, mark_fix=True) + "\n")
            fixable += f.fix is not None and f.fix.applicability == "safe"
    if quiet:
        return
    s = summary(results)
    if s["files"] and s["unreadable"] == s["files"]:
        return
    total = s["error"] + s["warning"] + s["info"]
    line = (
        f"Found {total} finding(s) in {s['files']} file(s): {s['error']} error(s), {s['warning']} warning(s), "
        f"{s['info']} info"
    )
    if s["unreadable"]:
        line += f"; {s['unreadable']} file(s) could not be checked"
    if skipped:
        from overlap_cli.report.text import skipped_counts

        line += f"; {skipped_counts(skipped)}"
    out.write(line + ".\n")
    if fixable:
        out.write(f"[*] {fixable} fixable with `overlap fix --write`.\n")
