"""The layers of overlap_cli, from the ground up; an import runs down the table or sideways, never up.

``tests/check/test_imports.py`` holds every import of the package (function-level ones included) to this
table; ``docs/architecture.md`` cites it. Each entry is a package or module prefix; the longest prefix
that names a module decides its layer."""

LAYERS = (
    # the vocabulary every stage speaks
    ("overlap_cli", "overlap_cli.problems", "overlap_cli.records", "overlap_cli.results", "overlap_cli.lazyre",
     "overlap_cli.layers"),
    # reads text, knows no framework
    ("overlap_cli.config",),
    # where the run runs: knows no recipe catalog, no checker
    ("overlap_cli.launch_profile",),
    # what each framework does with a config (the mirrored releases)
    ("overlap_cli.frameworks",),
    # findings over a framework's view
    ("overlap_cli.rules",),
    # what is done with findings: the pipeline, fixes, reports, the step-time model, the input forms
    ("overlap_cli.check", "overlap_cli.fix", "overlap_cli.report", "overlap_cli.estimate", "overlap_cli.forms"),
    # the command line
    ("overlap_cli.cli", "overlap_cli.__main__"),
)  # fmt: skip


def layer_of(module: str, layers: tuple = LAYERS):
    """The index in ``layers`` of ``module`` (a dotted name), by its longest matching prefix; None if none."""
    best, found = -1, None
    for number, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), number
    return found
