"""SARIF 2.1.0 (OASIS), the format GitHub code scanning and other review UIs import.

One run; ``tool.driver.rules`` lists every rule (id, name, short description = title, full description =
the first paragraph of "What it does", help = the whole rule doc in Markdown), each result points at its
rule by ``ruleId``/``ruleIndex``. Files inside the working directory are given as relative URIs against
``%SRCROOT%`` (GitHub resolves those against the checkout); files outside it as absolute ``file:`` URIs.
Columns count code points (``columnKind``), which is what the YAML parser reports.
A file that could not be checked becomes a tool execution notification, and the invocation is marked
unsuccessful, mirroring exit code 2.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

from overlap_cli import __version__
from overlap_cli.report.common import with_origin

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _first_paragraph(doc: str, fallback: str) -> str:
    lines = doc.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip().lower() == "## what it does") + 1
    except StopIteration:
        return fallback
    para = []
    for ln in lines[start:]:
        if ln.strip().startswith("#") or (not ln.strip() and para):
            break
        if ln.strip():
            para.append(ln.strip())
    return " ".join(para) or fallback


def _plain(doc: str) -> str:
    """The doc without Markdown heading marks, for viewers that show ``help.text``."""
    return "\n".join(ln.lstrip("#").strip() if ln.startswith("#") else ln for ln in doc.splitlines())


def rule_descriptor(r) -> dict:
    from overlap_cli.rules import FAMILY_NAMES

    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": _first_paragraph(r.doc, r.title)},
        "help": {"text": _plain(r.doc) or r.title, "markdown": r.doc or r.title},
        "defaultConfiguration": {"level": _LEVEL[r.severity]},
        "properties": {"tags": [FAMILY_NAMES.get(r.family, r.family)], "fix": r.fix},
    }


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def artifact_location(path: str) -> dict:
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    try:
        rel = os.path.relpath(absolute, cwd)
    except ValueError:
        rel = None
    # The name's bytes, percent-encoded (RFC 3986): a name that is not UTF-8 (os.fsdecode's surrogate escapes)
    # is the URI of the very bytes on disk, as a code-scanning UI resolves it, never an encoding error.
    if rel is None or rel.startswith(".."):
        return {"uri": "file://" + quote(os.fsencode(absolute.replace(os.sep, "/")))}
    return {"uri": quote(os.fsencode(rel.replace(os.sep, "/"))), "uriBaseId": "%SRCROOT%"}


def _region(line, col) -> dict:
    return {"startLine": line or 1, "startColumn": col or 1}


def document(results, skipped=()) -> dict:
    from overlap_cli.rules import all_rules

    rules = list(all_rules().values())
    index = {r.code: i for i, r in enumerate(rules)}
    sarif_results = []
    notifications = []
    for r in results:
        where = artifact_location(r.file)
        if r.error is not None:
            e = r.error
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": e.describe()},
                    "locations": [{"physicalLocation": {"artifactLocation": where, "region": _region(e.line, e.column)}}],
                }
            )
            continue
        for f in r.findings:
            res = {
                "ruleId": f.code,
                "level": _LEVEL[f.severity],
                "message": {"text": with_origin(f)},
                "locations": [{"physicalLocation": {"artifactLocation": where, "region": _region(f.line, f.column)}}],
                "properties": {"severity": f.severity},
            }
            if f.code in index:
                res["ruleIndex"] = index[f.code]
            if f.key:
                res["properties"]["key"] = f.key
            if f.fix is not None:
                res["properties"]["fix"] = f.fix.to_json()
            sarif_results.append(res)
    for path, reason in skipped:
        notifications.append(
            {"level": "note", "message": {"text": f"skipped: {reason}"}, "locations": [{"physicalLocation": {"artifactLocation": artifact_location(path)}}]}
        )
    invocation = {"executionSuccessful": all(r.error is None for r in results)}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run = {
        "tool": {"driver": {"name": "overlap-cli", "version": __version__, "semanticVersion": __version__, "rules": [rule_descriptor(r) for r in rules]}},
        "invocations": [invocation],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": sarif_results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(results, skipped=()) -> str:
    text = json.dumps(document(results, skipped), indent=2, ensure_ascii=False)
    # A message naming a file that is not UTF-8 holds a lone surrogate, which no UTF-8 stream can write: its
    # JSON escape (\udcXX) says the same and is valid JSON.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if not text.isascii() else text
