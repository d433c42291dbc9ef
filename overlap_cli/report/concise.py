"""One line per finding, like ``ruff check --output-format concise``: for editors, grep and CI logs.
``[*]`` marks a finding that ``overlap fix --write`` can fix safely.

The findings are the ones ``text`` shows (``report.text.shown_findings``: warnings and errors, info only
with ``--show-info``, in the same order): one selection, two renderings, so the pre-commit hook's concise
output and a terminal's text output agree line for line."""

from __future__ import annotations

import sys
from typing import IO

from overlap_cli.report.common import finding_line, summary
from overlap_cli.report.text import error_lines, shown_findings


def render(results, out: IO[str], skipped=(), quiet: bool = False, show_info: bool = False) -> None:
    """``quiet``: the finding lines only, no summary (``-q``, as ruff's ``--quiet``)."""
    for line in error_lines(results):
        sys.stderr.write(line + "\n")  # as in text: bad input is one line on stderr
    rows = shown_findings(results, show_info)
    for file, f in rows:
        out.write(finding_line(file, f, mark_fix=True) + "\n")
    if quiet:
        return
    s = summary(results)
    if s["files"] and s["unreadable"] == s["files"]:
        return
    line = f"Found {len(rows)} finding(s) in {s['files']} file(s): {s['error']} error(s), {s['warning']} warning(s)"
    line += f", {s['info']} info" if show_info else ""
    if s["unreadable"]:
        line += f"; {s['unreadable']} file(s) could not be checked"
    if skipped:
        from overlap_cli.report.text import skipped_counts

        line += f"; {skipped_counts(skipped)}"
    if s["info"] and not show_info:
        line += f"; not shown: {s['info']} info finding(s) (--show-info)"
    out.write(line + ".\n")
    fixable = sum(1 for _, f in rows if f.fix is not None and f.fix.applicability == "safe")
    if fixable:
        out.write(f"[*] {fixable} fixable with `overlap fix --write`.\n")
