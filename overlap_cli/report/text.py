"""Human output, built to be read in five seconds: the findings that need action first, the rest on request.

Layout (rich on a terminal, plain text when piped or written with ``-o``):

1. findings grouped by severity, errors first, then warnings (files in argument order, lines in order
   within a file); info findings only with ``--show-info`` -- they restate what Bridge does by default;
2. with ``--show-effective``, the effective overlap settings of each file with provenance (JSON and
   ``--annotate`` always carry them);
3. notes, each printed once however many files it applies to;
4. one summary line, and one line naming what was left out and the flag that shows it.

``quiet`` keeps only part 1 (warnings and errors; info too if asked for). On a terminal every column of the
table wraps instead of being cut, so a key such as ``model.pipeline_model_parallel_size`` is always whole.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import IO

from overlap_cli.problems import printable
from overlap_cli.report.common import effective_value, finding_line, location, summary

SEVERITY_ORDER = ("error", "warning", "info")


def shown_findings(results, show_info: bool) -> list:
    """[(file, finding)] in display order: by severity (errors first), then file order, then line."""
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    rows = []
    for index, r in enumerate(results):
        if r.error is not None:
            continue
        for f in r.findings:
            if f.severity == "info" and not show_info:
                continue
            rows.append(((rank[f.severity], index, f.line or 0, f.column or 0, f.code), r.file, f))
    rows.sort(key=lambda row: row[0])
    return [(file, f) for _, file, f in rows]


def error_lines(results) -> list:
    """The one line of each file that could not be checked, each distinct line once: a problem placed in a
    settings file or on the command line (a release [tool.overlap] names that overlap-cli holds no data
    for) is one problem however many files it stops."""
    out: list = []
    for r in results:
        if r.error is not None and r.error.one_line() not in out:
            out.append(r.error.one_line())
    return out


def merged_notes(results) -> list:
    """Each distinct note once: bare when it holds for every checked file (or there is only one), with the
    file when one of several, with the count and a first file when some of several."""
    checked = [r for r in results if r.error is None]
    files_of: dict = {}
    sized = [r for r in checked if any(_launch_size(n) for n in r.notes)]
    for r in checked:
        for note in r.notes:
            if len(sized) > 1 and _launch_size(note):
                continue  # one folder-level note below instead of one per file
            files_of.setdefault(note, [])
            if r.file not in files_of[note]:
                files_of[note].append(r.file)
    out = []
    for note, files in files_of.items():
        if len(checked) <= 1 or len(files) == len(checked):
            out.append(note)
        elif len(files) == 1:
            out.append(f"{printable(files[0])}: {note}")
        else:
            out.append(f"{note} ({len(files)} files, e.g. {printable(files[0])})")
    if len(sized) > 1:
        out.append(f"{len(sized)} launch(es) run on the world size of their own torchrun / srun sizes; "
                   "--world-size or --nodes/--gpus-per-node checks them at another scale")
    return out


def _launch_size(note) -> bool:
    """Whether a note says the world size is the launch's own sizes (check.engine.world_size_notes)."""
    return getattr(note, "kind", None) == "launch-world-size"


def skipped_counts(skipped) -> str:
    """``12 skipped (5 not a launch, 4 not a training run, ...)``: each kind of skip counted."""
    from overlap_cli.check.discovery import skip_kind

    counts: dict = {}
    for _path, reason in skipped:
        kind = skip_kind(reason)
        counts[kind] = counts.get(kind, 0) + 1
    kinds = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"{len(skipped)} skipped (" + ", ".join(f"{n} {k}" for k, n in kinds) + ")"


def summary_line(s: dict, skipped) -> str:
    return (
        f"{s['files']} file(s): {s['error']} error(s), {s['warning']} warning(s), {s['info']} info"
        + (f", {s['unreadable']} could not be checked" if s["unreadable"] else "")
        + (f", {skipped_counts(skipped)}" if skipped else "")
    )


def hidden_line(s: dict, show_info: bool, show_effective: bool, checked: int) -> str:
    """What the default output leaves out, and the flag that shows it ('' when nothing is left out)."""
    parts = []
    if s["info"] and not show_info:
        parts.append(f"{s['info']} info finding(s) (--show-info)")
    if checked and not show_effective:
        parts.append("the effective settings (--show-effective)")
    return ("Not shown: " + ", ".join(parts) + ".") if parts else ""


def _table_title(r) -> str:
    t = r.target
    dp = t.get("data_parallel_size")
    return (
        f"{printable(r.file)}: effective overlap settings (world size {t.get('world_size') or 'unknown'}, "
        f"DP {dp if dp is not None else 'unknown'}, Transformer Engine "
        f"{'present' if t.get('transformer_engine') else 'absent'})"
    )


def render_plain(results, out: IO[str], skipped=(), *, show_info=False, show_effective=False, quiet=False) -> None:
    import sys

    for line in error_lines(results):  # one line on stderr: the file could not be checked (exit 2)
        sys.stderr.write(f"{line}\n")
    rows = shown_findings(results, show_info)
    for file, f in rows:
        out.write(finding_line(file, f) + "\n")
    if quiet:
        return
    s = summary(results)
    if s["unreadable"] == s["files"]:
        return  # nothing was checked: the error line(s) on stderr say everything
    if show_effective:
        for r in results:
            if r.error is not None or not r.effective:
                continue
            out.write(f"\n{_table_title(r)}\n")
            width = max(len(k) for k in r.effective)
            for key, v in r.effective.items():
                out.write(f"  {key:<{width}}  {effective_value(v):<12} {v.source:<15} {v.reason}\n")
    notes = merged_notes(results)
    if rows or show_effective or notes:
        out.write("\n")
    for note in notes:
        out.write(f"note: {note}\n")
    out.write(summary_line(s, skipped) + "\n")
    hidden = hidden_line(s, show_info, show_effective, s["files"] - s["unreadable"])
    if hidden:
        out.write(hidden + "\n")


_VALUE_WIDTH, _SOURCE_WIDTH, _MIN_WHY = 24, 15, 30  # terminal columns of the effective table
_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_SRC_STYLE = {"forced-off": "bold red", "bridge-auto": "green", "mixed-precision": "magenta", "unknown": "dim", "user": "bold", "default": "dim"}


def render_rich(results, skipped=(), *, show_info=False, show_effective=False, quiet=False, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    for line in error_lines(results):
        err.print(Text(line, style="bold red"), soft_wrap=True)
    rows = shown_findings(results, show_info)
    for file, f in rows:
        t = Text()
        t.append(f"{location(file, f)}: ", style="bold")  # the parts of report.common.finding_line, styled
        t.append(f"{f.code} ", style="bold " + _SEV_STYLE[f.severity].split()[-1])
        t.append(f"{f.severity}: ", style=_SEV_STYLE[f.severity])
        t.append(f.message)
        if f.fix is not None:
            t.append(f"  [{f.fix.applicability} fix]", style="dim")
        console.print(t, overflow="fold")
    if quiet:
        return
    s = summary(results)
    if s["unreadable"] == s["files"]:
        return
    if show_effective:
        for r in results:
            if r.error is not None or not r.effective:
                continue
            console.print()
            console.print(Text(_table_title(r), style="italic"), overflow="fold")
            key_width = max(len(k) for k in r.effective)
            if console.width >= key_width + _VALUE_WIDTH + _SOURCE_WIDTH + _MIN_WHY + 6:
                table = Table(show_edge=False, pad_edge=False, box=None)
                # Keys whole on one line; the other cells wrap (overflow="fold"), never cut with an ellipsis.
                table.add_column("setting", no_wrap=True, min_width=key_width)
                table.add_column("effective", overflow="fold", max_width=_VALUE_WIDTH)
                table.add_column("source", no_wrap=True, min_width=_SOURCE_WIDTH)
                table.add_column("why", overflow="fold", ratio=1)
                for key, v in r.effective.items():
                    table.add_row(key, effective_value(v), Text(v.source, style=_SRC_STYLE.get(v.source, "")), v.reason)
                console.print(table)
            else:  # too narrow for four columns: one setting per line, its reason wrapped below it
                from rich.padding import Padding

                for key, v in r.effective.items():
                    head = Text(key, style="bold")
                    head.append(f" = {effective_value(v)} ")
                    head.append(f"({v.source})", style=_SRC_STYLE.get(v.source, ""))
                    console.print(head, overflow="fold")
                    console.print(Padding(Text(v.reason, style="dim"), (0, 0, 0, 4)), overflow="fold")
    notes = merged_notes(results)
    if rows or show_effective or notes:
        console.print()
    for note in notes:
        console.print(Text(f"note: {note}", style="dim"), overflow="fold")
    line = Text()
    line.append(f"{s['files']} file(s): ")
    line.append(f"{s['error']} error(s)", style="bold red" if s["error"] else "")
    line.append(", ")
    line.append(f"{s['warning']} warning(s)", style="yellow" if s["warning"] else "")
    line.append(f", {s['info']} info")
    if s["unreadable"]:
        line.append(f", {s['unreadable']} could not be checked", style="bold red")
    if skipped:
        line.append(f", {skipped_counts(skipped)}")
    console.print(line, overflow="fold")
    hidden = hidden_line(s, show_info, show_effective, s["files"] - s["unreadable"])
    if hidden:
        console.print(Text(hidden, style="dim"), overflow="fold")
