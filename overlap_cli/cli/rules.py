"""``overlap rules`` (the list of codes) and ``overlap explain CODE`` (one rule's documentation).

``overlap rules --format markdown`` also generates docs/rules.md; a test keeps that file in step.
The options are ``cli.options.RULES`` and ``EXPLAIN``; cli.app registers ``rules_command`` and
``explain_command``. The rules load inside them.
"""

from __future__ import annotations

import sys

from overlap_cli.cli.check import UsageError

REGENERATE = "python -m overlap_cli rules --format markdown > docs/rules.md"


def _family(r) -> str:
    from overlap_cli.rules import FAMILY_NAMES

    return FAMILY_NAMES.get(r.family, r.family)


def _header(r) -> str:
    return (f"{r.code} ({r.name}) — {r.title}\nseverity: {r.severity} · family: {r.family} ({_family(r)}) · fix: {r.fix}"
            f" · checks: {_inputs(r)}")


def _inputs(r) -> str:
    """Which inputs the rule checks (Rule.frameworks), in words."""
    names = {"bridge": "Megatron-Bridge configs", "megatron-lm": "Megatron-LM launches"}
    return " and ".join(names.get(f, f) for f in r.frameworks)


def rules_json() -> list:
    from overlap_cli.rules import all_rules

    return [
        {
            "code": r.code,
            "name": r.name,
            "family": r.family,
            "family_name": _family(r),
            "severity": r.severity,
            "title": r.title,
            "fix": r.fix,
            "frameworks": list(r.frameworks),
            "doc": r.doc,
        }
        for r in all_rules().values()
    ]


def _shift_headings(doc: str, by: int) -> str:
    out = []
    fenced = False
    for ln in doc.splitlines():
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        out.append("#" * by + ln if ln.startswith("#") and not fenced else ln)
    return "\n".join(out)


def rules_markdown() -> str:
    """docs/rules.md: an index table, then every rule's documentation, grouped by family."""
    from overlap_cli.rules import all_rules

    rules = list(all_rules().values())
    lines = [
        "# Rules",
        "",
        f"<!-- Generated from the rule docstrings; do not edit. Regenerate with: {REGENERATE} -->",
        "",
        "Every finding has a stable code. `overlap explain CODE` prints the same text in the terminal.",
        "Select or ignore rules with `--select` / `--ignore` / `--extend-select` (codes, prefixes such as `TP`",
        "or `DP3`, or rule names) or the same keys in `[tool.overlap]`; silence one finding with",
        "`# overlap: ignore[CODE]` on the line it points at.",
        "",
        "Fix: what `overlap fix` offers. A safe fix (applied by `overlap fix --write`) keeps every effective value",
        "Bridge would compute — `keeps` — unless (a) it removes a launch crash — `crash` — or (b) it makes an",
        "overlap the file explicitly asked for actually take effect — `overlap`. It never changes or removes a",
        "value the file sets in `env_vars`, info findings offer none, and only findings at or above",
        "`--severity-threshold` (default: warning) are fixed. `unsafe` fixes change what runs and need",
        "`--unsafe-fixes`; `none` means the rule only reports. A rule with several classes offers each in the",
        "case its page names.",
        "",
        "Megatron-LM launches (shell scripts, functional-test YAMLs) get the LM family, which says what",
        "`validate_args` prints, plus the Megatron-Core checks both frameworks share (each page's `checks:`",
        "line names its inputs); Bridge configs get the other families.",
        "",
        "| Code | Name | Severity | Fix | Title |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rules:
        title = r.title.replace("|", "\\|")
        lines.append(f"| [{r.code}](#{r.code.lower()}) | `{r.name}` | {r.severity} | {r.fix} | {title} |")
    family = None
    for r in rules:
        if r.family != family:
            family = r.family
            lines += ["", f"## {family} — {_family(r)}"]
        lines += [
            "",
            f"### {r.code}",
            "",
            f"**{r.title}** · `{r.name}` · severity: {r.severity} · fix: {r.fix} · checks: {_inputs(r)}",
            "",
            _shift_headings(r.doc, 2) if r.doc else "_No documentation._",
        ]
    return "\n".join(lines) + "\n"


def rules_command(opts) -> None:
    """List every rule: code, severity, fix availability and title."""
    if opts.format == "json":
        import json

        from overlap_cli.results import json_document

        sys.stdout.write(json.dumps(json_document(rules=rules_json()), indent=2, ensure_ascii=False) + "\n")
        return
    if opts.format == "markdown":
        sys.stdout.write(rules_markdown())
        return
    from overlap_cli.rules import all_rules

    rules = list(all_rules().values())
    width = max(len(r.name) for r in rules)
    for r in rules:
        sys.stdout.write(f"{r.code:<7} {r.severity:<8} {'fix:' + r.fix:<16} {r.name:<{width}}  {r.title}\n")
    sys.stdout.write(f"{len(rules)} rules. `overlap explain CODE` prints one rule's documentation.\n")


def find_rule(token: str):
    """The rule for a code (any case) or a rule name, or None."""
    from overlap_cli.rules import all_rules

    rules = all_rules()
    t = token.strip()
    return rules.get(t.upper()) or next((r for r in rules.values() if r.name == t.lower()), None)


def explain_command(opts) -> None:
    """Print a rule's documentation: what it checks, what Bridge does at launch, an example, the fix."""
    r = find_rule(opts.code)
    if r is None:
        from overlap_cli.check.selection import unknown_message

        raise UsageError(unknown_message(opts.code, "rule code"))
    text = _header(r) + "\n\n" + (r.doc or "No documentation.") + "\n"
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        console = Console()
        console.print(_header(r), style="bold", highlight=False)
        console.print(Markdown(r.doc or "No documentation."))
    else:
        sys.stdout.write(text)
