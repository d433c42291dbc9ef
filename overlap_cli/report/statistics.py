"""``overlap check --statistics``: how often each code was reported, instead of the findings themselves.

Mirrors ``ruff check --statistics``: one line per code, most frequent first (ties in code order), as
``count<TAB>code<TAB>[*] title`` where ``[*]`` marks a code with at least one safe fix (``[ ]`` the others,
and no mark column when nothing is fixable). The text form counts what the text report would show (info
only with --show-info) and names what it left out; the JSON form counts everything.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

from overlap_cli.report.common import summary


def statistics(results, show_info: bool = True) -> list:
    """[{code, name, title, count, fixable, severities: {severity: count}}], most frequent first."""
    from overlap_cli.rules import all_rules, code_sort_key

    rules = all_rules()
    by_code: dict = {}
    for r in results:
        if r.error is not None:
            continue
        for f in r.findings:
            if f.severity == "info" and not show_info:
                continue
            rule = rules.get(f.code)
            row = by_code.setdefault(f.code, {
                "code": f.code, "name": rule.name if rule else "", "title": rule.title if rule else "",
                "count": 0, "fixable": False, "severities": {},
            })  # fmt: skip
            row["count"] += 1
            row["severities"][f.severity] = row["severities"].get(f.severity, 0) + 1
            row["fixable"] = row["fixable"] or (f.fix is not None and f.fix.applicability == "safe")
    rows = sorted(by_code.values(), key=lambda row: code_sort_key(row["code"]))
    rows.sort(key=lambda row: -row["count"])  # stable: equal counts stay in code order
    return rows


def render_text(results, out: IO[str], skipped=(), *, show_info=False, quiet=False) -> None:
    import sys

    from overlap_cli.report.text import error_lines, hidden_line, summary_line

    for line in error_lines(results):
        sys.stderr.write(line + "\n")
    rows = statistics(results, show_info)
    if rows:
        count_width = max(len(str(row["count"])) for row in rows)
        code_width = max(len(row["code"]) for row in rows)
        any_fixable = any(row["fixable"] for row in rows)
        for row in rows:
            mark = ("[*] " if row["fixable"] else "[ ] ") if any_fixable else ""
            out.write(f"{row['count']:>{count_width}}\t{row['code']:<{code_width}}\t{mark}{row['title']}\n")
    if quiet:
        return
    s = summary(results)
    if s["files"] and s["unreadable"] == s["files"]:
        return
    out.write(summary_line(s, skipped) + "\n")
    hidden = hidden_line(s, show_info, True, 0)
    if hidden:
        out.write(hidden + "\n")


def render_json(results, skipped=()) -> str:
    import json

    from overlap_cli.results import json_document

    doc = json_document(statistics=statistics(results, True), summary=summary(results))
    if skipped:
        doc["skipped"] = [{"file": path, "reason": reason} for path, reason in skipped]
    return json.dumps(doc, indent=2, ensure_ascii=False)
