"""Human output: one line per finding (``file:line:col CODE severity message``), then a compact table of
the effective overlap settings with provenance. rich on a terminal, plain text when piped."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import IO

from . import by_code, summary

_SHOWN_SOURCES_ORDER = ("user", "default", "bridge-auto", "forced-off", "mixed-precision", "unknown")


def _value(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        preset = v.get("preset") if "preset" in v else None
        return f"preset {preset}" if preset else "{...}"
    if isinstance(v, str):
        return v
    import json  # floats and lists only: most reports never need it

    return json.dumps(v)


def finding_line(file: str, f) -> str:
    line = f.line if f.line is not None else 1
    col = f.column if f.column is not None else 1
    return f"{file}:{line}:{col} {f.code} {f.severity} {f.message}"


def _summary_line(s: dict, skipped) -> str:
    return (
        f"{s['files']} file(s): {s['error']} error(s), {s['warning']} warning(s), {s['info']} info"
        + (f", {s['unreadable']} could not be checked" if s["unreadable"] else "")
        + (f", {len(skipped)} skipped (not training configs)" if skipped else "")
    )


def _titles() -> dict:
    from ..rules import all_rules

    return {code: r.title for code, r in all_rules().items()}


def render_plain(results, out: IO[str], show_effective: bool = True, skipped=()) -> None:
    import sys

    for r in results:
        if r.error is not None:
            # one line on stderr: the file could not be checked (exit 2)
            sys.stderr.write(f"{r.error.one_line()}\n")
            continue
        for f in r.findings:
            out.write(finding_line(r.file, f) + "\n")
        if show_effective and r.effective:
            t = r.target
            dp = t.get("data_parallel_size")
            out.write(
                f"\n{r.file}: effective overlap settings (world size {t.get('world_size') or 'unknown'}, "
                f"DP {dp if dp is not None else 'unknown'}, Transformer Engine "
                f"{'present' if t.get('transformer_engine') else 'absent'})\n"
            )
            width = max(len(k) for k in r.effective)
            for key, v in r.effective.items():
                out.write(f"  {key:<{width}}  {_value(v.value):<12} {v.source:<15} {v.reason}\n")
            for note in r.notes:
                out.write(f"  note: {note}\n")
            out.write("\n")
    s = summary(results)
    if s["unreadable"] == s["files"]:
        return  # nothing was checked: the error line(s) above say everything
    out.write(_summary_line(s, skipped) + "\n")
    rows = by_code(results)
    if len(results) > 1 and rows:
        # Many files: the per-code totals say which problem is systematic (e.g. a recipe copied everywhere).
        titles = _titles()
        for code, severity, n in rows:
            out.write(f"  {n:>5}  {code:<7} {severity:<8} {titles.get(code, '')}\n")


_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_SRC_STYLE = {"forced-off": "bold red", "bridge-auto": "green", "mixed-precision": "magenta", "unknown": "dim", "user": "bold", "default": "dim"}


def render_rich(results, show_effective: bool = True, skipped=()) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    for r in results:
        if r.error is not None:
            console.print(Text(r.error.one_line(), style="bold red"))
            continue
        for f in r.findings:
            t = Text()
            t.append(f"{r.file}:{f.line or 1}:{f.column or 1} ", style="bold")
            t.append(f"{f.code} ", style="bold " + _SEV_STYLE[f.severity].split()[-1])
            t.append(f"{f.severity} ", style=_SEV_STYLE[f.severity])
            t.append(f.message)
            if f.fix is not None:
                t.append(f"  [{f.fix.applicability} fix]", style="dim")
            console.print(t)
        if show_effective and r.effective:
            dp = r.target.get("data_parallel_size")
            table = Table(
                title=f"{r.file} — world size {r.target.get('world_size') or 'unknown'}, DP {dp if dp is not None else 'unknown'}",
                title_justify="left",
                show_edge=False,
                pad_edge=False,
            )
            table.add_column("setting")
            table.add_column("effective")
            table.add_column("source")
            table.add_column("why", overflow="fold")
            for key, v in r.effective.items():
                table.add_row(key, _value(v.value), Text(v.source, style=_SRC_STYLE.get(v.source, "")), v.reason)
            console.print(table)
            for note in r.notes:
                console.print(Text(f"note: {note}", style="dim"))
            console.print()
    s = summary(results)
    console.print(
        f"{s['files']} file(s): [bold red]{s['error']} error(s)[/], [yellow]{s['warning']} warning(s)[/], "
        f"[cyan]{s['info']} info[/]" + (f", [bold red]{s['unreadable']} could not be checked[/]" if s["unreadable"] else "")
        + (f", {len(skipped)} skipped (not training configs)" if skipped else "")
    )
    rows = by_code(results)
    if len(results) > 1 and rows:
        titles = _titles()
        table = Table(show_edge=False, pad_edge=False, box=None)
        table.add_column("count", justify="right")
        table.add_column("code")
        table.add_column("severity")
        table.add_column("rule", overflow="fold")
        for code, severity, n in rows:
            table.add_row(str(n), code, Text(severity, style=_SEV_STYLE[severity]), titles.get(code, ""))
        console.print(table)
