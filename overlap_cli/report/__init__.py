"""Writers of check results: this module picks the writer of a format and imports it when asked for it.
The result objects (results.FileResult) know nothing about them; what several writers share
(counts, findings per code) is ``common``.

Formats: ``text`` (warnings and errors first; info and the effective settings on request; rich on a
terminal), ``concise`` (one line per finding), ``json`` (the stable contract), ``sarif`` (SARIF 2.1.0 for code-scanning UIs), ``github``
(workflow commands that GitHub Actions turns into annotations). ``auto`` is ``github`` when running under
GitHub Actions and ``text`` otherwise.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import IO

FORMATS = ("text", "concise", "json", "sarif", "github")


def resolve_format(name: str) -> str:
    if name == "auto":
        # GitHub sets GITHUB_ACTIONS=true in every step of a workflow run.
        return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    return name


def write(
    results, fmt: str, out: IO[str], skipped=(), tty: bool = False, *, show_info: bool = False,
    show_effective: bool = False, quiet: bool = False, statistics: bool = False,
) -> None:
    """Write ``results`` in format ``fmt`` (already resolved from ``auto``) to ``out``.

    ``show_info``, ``show_effective`` and ``quiet`` shape the human formats only (text and concise, which
    show the same findings; quiet also drops concise's summary): json, sarif and github always carry everything. ``statistics``
    replaces the findings by counts per code (text or json; check_cmd refuses the other formats)."""
    if statistics:
        from overlap_cli.report import statistics as statistics_report

        if fmt == "json":
            out.write(statistics_report.render_json(results, skipped) + "\n")
        else:
            statistics_report.render_text(results, out, skipped, show_info=show_info, quiet=quiet)
    elif fmt == "json":
        from overlap_cli.report.json import render

        out.write(render(results, skipped) + "\n")
    elif fmt == "sarif":
        from overlap_cli.report.sarif import render

        out.write(render(results, skipped) + "\n")
    elif fmt == "github":
        from overlap_cli.report.github import render

        render(results, out)
    elif fmt == "concise":
        from overlap_cli.report.concise import render

        render(results, out, skipped, quiet=quiet, show_info=show_info)
    elif tty:
        from overlap_cli.report.text import render_rich

        render_rich(results, skipped, show_info=show_info, show_effective=show_effective, quiet=quiet)
    else:
        from overlap_cli.report.text import render_plain

        render_plain(results, out, skipped, show_info=show_info, show_effective=show_effective, quiet=quiet)
