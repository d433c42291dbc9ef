"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff.

    ::error file=configs/a.yaml,line=8,col=3,title=TP102::message

error -> ``::error``, warning -> ``::warning``, info -> ``::notice``. Values are escaped as the runner
expects (``%``, CR and LF everywhere; ``:`` and ``,`` inside properties as well: GitHub's documented escaping,
which the runner undoes). Any other character a terminal would act on or that is not text (an escape
sequence in a file name, a byte that is not UTF-8) is written as its backslash escape (problems.printable):
the runner's log would show it raw, and a name could forge a workflow command of its own.
"""

from __future__ import annotations

from typing import IO

from overlap_cli.problems import printable
from overlap_cli.report.common import summary, with_origin

_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A"}


def _data(text: str) -> str:
    if text.isprintable():
        return text.replace("%", "%25")
    return "".join(_ESCAPES.get(c) or (c if c.isprintable() else printable(c)) for c in text)


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, line, col, title: str, message: str) -> str:
    props = [f"file={_prop(file)}"]
    if line is not None:
        props.append(f"line={line}")
        if col is not None:
            props.append(f"col={col}")
    props.append(f"title={_prop(title)}")
    return f"::{_COMMAND[level]} {','.join(props)}::{_data(message)}"


def render(results, out: IO[str]) -> None:
    for r in results:
        if r.error is not None:
            e = r.error
            out.write(annotation("error", r.file, e.line, e.column, "overlap: cannot check", e.describe()) + "\n")
            continue
        for f in r.findings:
            out.write(annotation(f.severity, r.file, f.line or 1, f.column or 1, f.code, with_origin(f)) + "\n")
    s = summary(results)
    out.write(
        f"{s['files']} file(s): {s['error']} error(s), {s['warning']} warning(s), {s['info']} info"
        + (f", {s['unreadable']} could not be checked" if s["unreadable"] else "")
        + "\n"
    )
