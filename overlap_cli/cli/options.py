"""Every command's arguments and options, declared once, read by both parsers.

A command is a tuple of ``Param`` rows. ``cli.fast`` parses ``overlap check`` from ``CHECK`` without
importing typer (a pre-commit hook starts it on every commit, and typer's import and per-option validators
cost ~100 ms of each start); ``cli.app.command`` turns each row into a ``typer.Option``/``typer.Argument``
and gives the command a ``__signature__`` made of them, which is what Typer reads (``inspect.signature``
honours ``__signature__``), so Typer stays the framework for help, errors and every other command. Both
parsers hand the command body the same ``Options`` record: one attribute per row, the row's default
when the option is absent, choices as plain strings.

Why rows of data rather than a Typer signature the fast path inspects: the fast path must not import typer
(nor ``inspect`` and ``typing``) to learn the options, so the declarations have to be plain data; and
why not argparse for both: typer's help screens and click's error texts are the documented interface.

A new flag is one row in its command's tuple (a target flag: one row in ``TARGET``, which ``check``,
``fix``, ``env`` and ``presets suggest`` share). The order of a tuple is the order of ``--help``.
"""

from __future__ import annotations

# Kinds of option: the value a row takes on the command line, and the Python value it gives.
INT = "int"  # a whole number >= ``minimum``; absent: ``default``
TEXT = "text"  # a string; absent: ``default``
CHOICE = "choice"  # one of ``choices`` (case-sensitive, as typer's); absent: ``default``
FLAG = "flag"  # ``--name`` alone: True; absent: False
SWITCH = "switch"  # ``--name/--no-name``: True / False; absent: None
MULTIPLE = "multiple"  # a string, repeatable: the list of them; absent: None
ARGUMENTS = "arguments"  # positional: one or more strings (the list)
ARGUMENT = "argument"  # positional: exactly one string


class Param:
    """One row: where the value goes (``dest``), how it is spelt, what it takes, its help line."""

    __slots__ = ("dest", "names", "kind", "default", "help", "metavar", "choices", "minimum", "required")

    def __init__(self, dest, *names, kind, help, default=None, metavar=None, choices=(), minimum=None, required=True):
        self.dest, self.names, self.kind, self.help = dest, names, kind, help
        self.metavar, self.choices, self.minimum = metavar, tuple(choices), minimum
        self.required = required  # positional rows: may be left out (the command then needs --recipe/--base)
        self.default = False if kind == FLAG else default

    @property
    def positional(self) -> bool:
        return self.kind in (ARGUMENTS, ARGUMENT)

    def spellings(self) -> dict:
        """Each name this row answers to -> the value a flag sets (None for an option that takes one)."""
        if self.kind == SWITCH:
            on, off = self.names[0].split("/")
            return {on: True, off: False}
        return {n: (True if self.kind == FLAG else None) for n in self.names}


class Options:
    """The parsed command line of one command: an attribute per row of its table."""

    def __init__(self, table, given: dict):
        unknown = set(given) - {p.dest for p in table}
        if unknown:
            raise TypeError(f"no such option: {', '.join(sorted(unknown))}")
        for p in table:
            setattr(self, p.dest, given.get(p.dest, p.default))

    def __repr__(self) -> str:
        return f"Options({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Options) and vars(self) == vars(other)


def options(table, **given) -> Options:
    """An ``Options`` record of ``table`` with these values and the defaults for the rest."""
    return Options(table, given)


def _choices(*names):
    return {"kind": CHOICE, "choices": names, "default": names[0]}


# ---------------------------------------------------------------------------------------------
# The launch target: shared by check, fix, env and presets suggest
# ---------------------------------------------------------------------------------------------

TARGET = (
    Param("recipe", "--recipe", kind=TEXT, metavar="NAME", help="Start from this Megatron-Bridge recipe (e.g. llama3_70b_pretrain_64gpu_h100_bf16_config; _config optional): the files given are override files merged onto it in order, then the dotlists, as Bridge's entry points do."),
    Param("base", "--base", kind=TEXT, metavar="FILE", help="Start from this full config dump (e.g. a checkpoint's run_config.yaml) instead of a recipe."),
    Param("world_size", "--world-size", kind=INT, minimum=1, help="Total GPUs of the launch (data-parallel size = world / (TP*PP*CP))."),
    Param("nodes", "--nodes", kind=INT, minimum=1, help="Number of nodes (with --gpus-per-node)."),
    Param("gpus_per_node", "--gpus-per-node", kind=INT, minimum=1, help="GPUs per node (with --nodes)."),
    Param("te", "--te/--no-te", kind=SWITCH, help="Whether Transformer Engine is present on the target (default: present)."),
    Param("gpu", "--gpu", kind=TEXT, help="Target GPU: a100|h100|h200|b200|b300|gb200|gb300|vr200|r100."),
    Param("te_version", "--te-version", kind=TEXT, help="Transformer Engine version on the target, e.g. 2.7."),
    Param("torch_version", "--torch-version", kind=TEXT, help="PyTorch version on the target, e.g. 2.6."),
    Param("bridge_version", "--bridge-version", kind=TEXT, metavar="RELEASE", help="Megatron-Bridge release the run uses: a numbered release overlap-cli mirrors (v prefix optional) or main (default: the newest numbered release, named in a note). Also picks the megatron-core it pins."),
    Param("core_version", "--core-version", kind=TEXT, metavar="RELEASE", help="megatron-core release (default: the one the Bridge release pins). Megatron-LM launches are checked against it; alone, Bridge runs take the newest Bridge release that pins it."),
    Param("settings", "--settings", kind=TEXT, metavar="PATH", help="Read [tool.overlap] from this TOML file instead of the nearest pyproject.toml."),
    Param("detect", "--detect", kind=FLAG, help="Read this machine: Transformer Engine, torch, Megatron-Bridge and megatron-core versions (package metadata, nothing imported), GPU model and count (through torch, if installed)."),
    Param("env_from_shell", "--env-from-shell", kind=FLAG, help="Launch variables exported in this shell override env_vars (Bridge applies env_vars with setdefault); a launch script reads them as its environment (${VAR}, ${VAR:-default})."),
    Param("set_vars", "--set", kind=MULTIPLE, metavar="VAR=VALUE", help="A launch script's environment variable, as the caller would export it: feeds ${VAR} and ${VAR:-default} (repeatable)."),
)

# The flags that say where one side of ``overlap diff`` runs, and their ``--vs-`` twins for the other side
# (--vs-world-size, --vs-te/--vs-no-te, ...): a new target flag in this list is one name, its twin follows.
PER_SIDE = ("recipe", "base", "world_size", "nodes", "gpus_per_node", "te", "gpu", "te_version", "torch_version",
            "bridge_version", "core_version")


def _vs(row: Param) -> Param:
    names = tuple("/".join("--vs-" + n[2:] for n in spelt.split("/")) for spelt in row.names)
    return Param("vs_" + row.dest, *names, kind=row.kind, minimum=row.minimum, metavar=row.metavar,
                 help=f"{row.names[0]} of the NEW side (unset: the same as the OLD side's).")


VS_TARGET = tuple(_vs(p) for p in TARGET if p.dest in PER_SIDE)

# Which framework an input is written for (frameworks.detect): check, fix, env and diff take it.
FRAMEWORK = (
    Param("framework", "--framework", kind=CHOICE, choices=("auto", "bridge", "megatron-lm"), default="auto",
          help="Framework of the inputs: auto (launch scripts *.sh/*.bash/*.slurm/*.sbatch and YAML with MODEL_ARGS are Megatron-LM, other YAML Megatron-Bridge), bridge, megatron-lm."),
)

REPORT_FORMATS = ("text", "concise", "json", "sarif", "github", "auto")  # auto: github under GitHub Actions
SCRIPT_WORDS = " After --, the words of the one Python script named: its command line (sys.argv[1:]) as a launch passes it, read by its argparse (a file whose name starts with - is written ./-NAME)."
_CONFIG_AND_OVERRIDES = Param("args", kind=ARGUMENTS, metavar="CONFIG [OVERRIDES...] [-- WORDS...]", required=False, help="One config file (with --recipe/--base: override files, merged in order), then Hydra-style overrides." + SCRIPT_WORDS)

# ---------------------------------------------------------------------------------------------
# overlap check
# ---------------------------------------------------------------------------------------------

CHECK = (
    Param("args", kind=ARGUMENTS, metavar="FILE... [OVERRIDES...] [-- WORDS...]", required=False, help="Config files (with --recipe/--base: override files, merged in order), then Hydra-style overrides (key=value, +key=value, ++key=value, ~key)." + SCRIPT_WORDS),
    *TARGET,
    *FRAMEWORK,
    Param("format", "--format", "--output-format", "-f", **_choices(*REPORT_FORMATS), help="Output format (auto: github under GitHub Actions, else text)."),
    Param("select", "--select", kind=MULTIPLE, help="Only these rules: codes, prefixes (TP, DP3), rule names or ALL; comma-separated or repeated."),
    Param("ignore", "--ignore", kind=MULTIPLE, help="Rules not to report (codes, prefixes, names)."),
    Param("extend_select", "--extend-select", kind=MULTIPLE, help="Rules to add to the selection."),
    Param("severity_threshold", "--severity-threshold", **_choices("warning", "error"), help="Lowest severity that makes the exit code 1."),
    Param("exit_zero", "--exit-zero", kind=FLAG, help="Exit 0 even when findings are reported (input errors still exit 2)."),
    Param("jobs", "--jobs", "-j", kind=INT, minimum=0, default=1, help="Check files in N worker processes (0: one per CPU). Output order does not change."),
    Param("configs_only", "--configs-only", kind=FLAG, help="Skip files without a model/ddp/comm_overlap/mixed_precision/optimizer section even when named (pre-commit)."),
    Param("annotate", "--annotate", kind=FLAG, help="Print the config back with effective values and provenance comments (instead of the report)."),
    Param("output_file", "-o", "--output-file", "--output", kind=TEXT, metavar="FILE", help="Write the report (with --annotate: the annotated config) to FILE instead of stdout; atomic, never over an input."),
    Param("annotate_output", "--annotate-output", kind=TEXT, metavar="FILE", help="Also write the annotated config of the one input file to FILE; the report is printed as usual."),
    Param("show_info", "--show-info", kind=FLAG, help="Text and concise: also list info findings (they restate what Bridge does by default)."),
    Param("show_effective", "--show-effective", kind=FLAG, help="Text: also print each file's effective overlap settings with provenance (always in JSON and --annotate)."),
    Param("quiet", "-q", "--quiet", kind=FLAG, help="Print only warnings and errors: no summary, notes or hints."),
    Param("statistics", "--statistics", kind=FLAG, help="Count findings per code instead of listing them (text or json)."),
)

# ---------------------------------------------------------------------------------------------
# overlap fix
# ---------------------------------------------------------------------------------------------

FIX = (
    Param("args", kind=ARGUMENTS, metavar="FILE... [-- WORDS...]", help="Config files to fix (with --recipe/--base: the override files of one run, merged in order; the last one is edited)." + SCRIPT_WORDS),
    Param("write", "--write", kind=FLAG, help="Apply the fixes in place (atomic write)."),
    Param("diff", "--diff", kind=FLAG, help="Print a unified diff of what would change; write nothing."),
    Param("unsafe_fixes", "--unsafe-fixes", kind=FLAG, help="Also apply fixes that change training behaviour, memory or checkpoint format."),
    Param("no_comments", "--no-comments", kind=FLAG, help="Do not add `# overlap: CODE reason` comments to edited keys."),
    *TARGET,
    *FRAMEWORK,
    Param("select", "--select", kind=MULTIPLE, help="Only fix findings of these rules (codes, prefixes, names or ALL)."),
    Param("ignore", "--ignore", kind=MULTIPLE, help="Do not fix findings of these rules."),
    Param("extend_select", "--extend-select", kind=MULTIPLE, help="Rules to add to the selection."),
    Param("configs_only", "--configs-only", kind=FLAG, help="Skip files without a model/ddp/comm_overlap/mixed_precision/optimizer section (pre-commit)."),
    Param("severity_threshold", "--severity-threshold", kind=CHOICE, choices=("info", "warning", "error"), default="warning",
          help="Fix only findings of this severity or worse (the bar `overlap check` fails on, so the fix hook never edits a file the check hook passes)."),
)

# ---------------------------------------------------------------------------------------------
# overlap env
# ---------------------------------------------------------------------------------------------

ENV = (
    _CONFIG_AND_OVERRIDES,
    Param("format", "--format", "-f", **_choices("shell", "dotenv", "json"), help="shell: export lines with reasons; dotenv: NAME=VALUE; json."),
    *TARGET,
    *FRAMEWORK,
)

# ---------------------------------------------------------------------------------------------
# overlap diff
# ---------------------------------------------------------------------------------------------

DIFF = (
    Param("args", kind=ARGUMENTS, metavar="OLD [NEW]", required=False, help="Two config files, or one file compared under two targets (--vs-* flags); with --recipe/--base (and --vs-recipe/--vs-base) the override file of each side, or none."),
    *TARGET,
    *FRAMEWORK,
    *VS_TARGET,
    Param("show_provenance", "--show-provenance", kind=FLAG, help="Also list settings with the same value and another provenance (they then count as a difference)."),
    Param("show_info", "--show-info", kind=FLAG, help="Also list info findings that appear, disappear or change (they then count as a difference)."),
    Param("format", "--format", "-f", **_choices("text", "json"), help="Output format."),
)

# ---------------------------------------------------------------------------------------------
# overlap estimate | tune
# ---------------------------------------------------------------------------------------------

ESTIMATE = (
    Param("args", kind=ARGUMENTS, metavar="CONFIG... [OVERRIDES...] [-- WORDS...]", required=False, help="Config files (with --recipe/--base: override files merged in order into one run), then Hydra-style overrides applied to each." + SCRIPT_WORDS),
    *TARGET,
    Param("format", "--format", "-f", **_choices("text", "json"), help="Output format."),
)

TUNE = (
    _CONFIG_AND_OVERRIDES,
    *TARGET,
    Param("allow_reshard", "--allow-reshard", kind=FLAG, help="Also vary TP/PP/VPP/CP and the micro-batch size (the model and global batch stay fixed)."),
    Param("top", "--top", kind=INT, minimum=1, default=5, help="How many candidates to print."),
    Param("write", "--write", kind=FLAG, help="Apply the best candidate to the config file (atomic; changes training behaviour)."),
    Param("format", "--format", "-f", **_choices("text", "json"), help="Output format."),
)

# ---------------------------------------------------------------------------------------------
# overlap presets list | show | suggest
# ---------------------------------------------------------------------------------------------

PRESETS_LIST = (
    Param("gpu", "--gpu", kind=TEXT, help="Only presets for this GPU (h100|b200, or a target GPU: h200 uses h100 presets, b300/gb200/gb300 b200)."),
    Param("precision", "--precision", kind=TEXT, help="Only presets of this precision: bf16|fp8."),
    Param("format", "--format", "-f", **_choices(*REPORT_FORMATS), help="Output format."),
)

PRESETS_SHOW = (
    Param("name", kind=ARGUMENT, metavar="NAME", help="Preset name, e.g. userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192."),
    Param("format", "--format", "-f", **_choices("yaml", "json"), help="Output format."),
)

PRESETS_SUGGEST = (
    _CONFIG_AND_OVERRIDES,
    *TARGET,
    Param("show_all", "--all", kind=FLAG, help="Rank all presets (default: the best five)."),
    Param("format", "--format", "-f", **_choices(*REPORT_FORMATS), help="Output format."),
)

# ---------------------------------------------------------------------------------------------
# overlap rules | explain
# ---------------------------------------------------------------------------------------------

_RECIPES_RELEASE = Param("bridge_version", "--bridge-version", kind=TEXT, metavar="RELEASE",
                         help="The Megatron-Bridge release whose recipes to read (default: the newest the tool mirrors).")

RECIPES_LIST = (
    _RECIPES_RELEASE,
    Param("gpu", "--gpu", kind=TEXT, help="Only recipes tuned for this GPU (h100|b200|b300|gb200|gb300|vr200|r100)."),
    Param("format", "--format", "-f", **_choices("text", "json"), help="Output format."),
)

RECIPES_SHOW = (
    Param("name", kind=ARGUMENT, metavar="NAME", help="Bridge's recipe function name, e.g. llama3_70b_pretrain_64gpu_h100_bf16_config (the _config may be left out)."),
    Param("te", "--te/--no-te", kind=SWITCH, help="Print the recipe as Bridge builds it on a target with (default) or without Transformer Engine."),
    Param("as_dumped", "--as-dumped", kind=FLAG, help="Print Bridge's own dump unchanged (written on a machine without Transformer Engine, before the runtime update)."),
    _RECIPES_RELEASE,
)

RULES = (Param("format", "--format", "-f", **_choices("text", "json", "markdown"), help="text, json or markdown (docs/rules.md)."),)

EXPLAIN = (Param("code", kind=ARGUMENT, metavar="CODE", help="A rule code (TP102) or rule name."),)
