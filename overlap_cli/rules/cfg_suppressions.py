"""CFG009 — inline suppressions that suppress nothing.

The finding is produced by ``overlap_cli.check.selection.filter_findings`` (it needs every other rule's
findings first); this module registers the code so that it has a doc, can be selected and ignored, and
shows up in ``overlap rules`` / ``overlap explain``.
"""

from __future__ import annotations

from overlap_cli.rules.registry import BOTH, rule


@rule("CFG009", "unused-suppression", "info", "An `# overlap: ignore[...]` comment suppresses nothing", frameworks=BOTH)
def unused_suppression(view):
    """
    ## What it does
    Reports an inline suppression that did not hide any finding: a code listed in
    `# overlap: ignore[CODE, ...]` that is not reported on the line the comment covers, a code listed in
    `# overlap: ignore-file[CODE, ...]` that is not reported anywhere in the file, or a name in the brackets
    that is not a rule code at all.

    A suppression covers the line it ends, or — written alone on its own line — the next line that holds
    YAML. Findings point at the key they are about (see the `file:line:col` of each finding).

    ## Why it matters
    Suppressions outlive their reason. Once the config is fixed (or Megatron-Bridge changes what it does
    at launch and the rule stops firing), a stale `# overlap: ignore[TP102]` keeps telling readers that the
    file has a problem it no longer has, and it would silently hide the finding if the problem came back
    on that line for another reason. Codes that the current run does not check (deselected with
    `--select`/`--ignore` or `per-file-ignores`) are not judged. The check follows ruff's `unused-noqa`
    (RUF100).

    ## Example
    ```yaml
    model:
      tensor_model_parallel_size: 4
      sequence_parallel: true   # overlap: ignore[TP102]  <- TP102 no longer fires here
    comm_overlap:
      tp_comm_overlap: true
    ```

    ## Fix
    None offered: delete the code from the comment (or the whole comment) by hand. To keep a comment that
    is meant for another run, list `CFG009` in it: `# overlap: ignore[TP102, CFG009]`.
    """
    return ()
