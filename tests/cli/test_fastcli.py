"""The typer-free entry point (overlap_cli/cli/fast.py) against the Typer app, as real processes.

Every case runs ``overlap ARGS`` twice from the same folder with the same environment: once through
cli.fast.main (the console script) and once through cli.app.main (the Typer app alone). Output and exit code
must be identical, byte for byte, whichever of the two paths cli.fast took. Further tests pin down which
path it takes: the fast one must never import typer (nor rich when stdout is not a terminal).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
TUNED = "examples/llama3_70b_tuned.yaml"  # info findings only: exit 0
WARNS = "examples/tp_overlap_without_sp.yaml"  # warnings: exit 1
MOE = "examples/moe_ep_overlap.yaml"
DUMP = "examples/bridge/llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"

# Both runners set argv[0] to "overlap", so typer's usage lines name the same program.
FAST = "import sys; sys.argv[0] = 'overlap'; from overlap_cli.cli.fast import main; main()"
TYPER = "import sys; sys.argv[0] = 'overlap'; from overlap_cli.cli.app import main; main()"
# Reports which modules a fast-path run imported (printed to stderr after the check's own output).
PROBE = (
    "import sys, atexit; sys.argv[0] = 'overlap'\n"
    "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n'))\n"
    "from overlap_cli.cli.fast import main; main()\n"
)


def environment(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR")}
    env.update({"COLUMNS": "100", "PYTHONPATH": str(ROOT)}, **extra)
    return env


def run(code: str, args, cwd=ROOT, env=None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env or environment(), capture_output=True, text=True, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


def both(args, cwd=ROOT, env=None):
    """(fast, typer) results; the two processes run side by side."""
    with ThreadPoolExecutor(2) as pool:
        fast = pool.submit(run, FAST, args, cwd, env)
        typer = pool.submit(run, TYPER, args, cwd, env)
        return fast.result(), typer.result()


CHECK_CASES = [
    # formats
    [TUNED],
    ["--format", "json", TUNED],
    ["-f", "concise", WARNS],
    ["--format=sarif", WARNS],
    ["-fgithub", WARNS],
    ["--format", "auto", WARNS],
    ["--format", "text", "examples"],
    # the target
    ["--world-size", "64", TUNED],
    ["--world-size=16", TUNED, "--gpu", "h100"],
    ["--nodes", "2", "--gpus-per-node", "8", TUNED],
    ["--nodes", "2", TUNED],  # a usage error of cli.check
    ["--world-size", "8", "--nodes", "1", "--gpus-per-node", "8", TUNED],
    ["--te", TUNED],
    ["--no-te", "--format", "concise", TUNED],
    ["--te", "--no-te", "-f", "concise", TUNED],  # the last flag wins
    ["--gpu", "B200", "-f", "json", TUNED],
    ["--gpu", "xyz", TUNED],
    ["--gpu", "a100", "--gpu", "h200", "-f", "concise", TUNED],  # the last value wins
    ["--gpu=", TUNED],
    ["--te-version", "2.7", "--torch-version=2.6", "-f", "json", MOE],
    ["--te-version", "abc!", TUNED],
    ["--env-from-shell", "-f", "json", TUNED],
    ["--detect", "-f", "json", TUNED],
    ["--settings", "pyproject.toml", "-f", "concise", TUNED],
    ["--settings", "missing.toml", TUNED],
    ["--bridge-version", "v0.6.2", "-f", "json", TUNED],
    ["--core-version=0.19.2", "examples"],
    ["--bridge-version", "0.0.1", TUNED],  # a release without data: one usage line
    ["--bridge-version", "0.6.x", TUNED],
    # selection and exit code
    ["--select", "TP,PP", "--select", "DP301", WARNS],
    ["--ignore=TP101", "-f", "concise", WARNS],
    ["--extend-select", "CFG", "--select", "UB", TUNED],
    ["--select", "NOPE", TUNED],
    ["--select=", "-f", "concise", WARNS],
    ["--severity-threshold", "error", WARNS],
    ["--severity-threshold=warning", WARNS],
    ["--exit-zero", WARNS],
    ["--exit-zero", "--severity-threshold", "error", "examples/invalid_parallel_size.yaml"],
    # files, folders, overrides
    [TUNED, WARNS, "-f", "concise"],
    ["examples", "-f", "concise"],
    ["--configs-only", "examples", "-f", "concise"],
    ["--jobs", "2", "examples", "examples/bridge", "-f", "json"],
    ["-j0", "examples", "-f", "concise"],
    ["-j", "1", DUMP, "-f", "concise"],
    [TUNED, "model.tensor_model_parallel_size=8", "+train.micro_batch_size=2", "~model.sequence_parallel", "-f", "json"],
    [TUNED, "model..broken=1"],
    ["missing.yaml"],
    ["examples/bridge/README.md"],
    ["./" + TUNED],  # how a file whose name starts with "-" is written
    ["--world-size", "8", TUNED, "model.context_parallel_size=2", "--", "--tp", "4"],  # script words: not a script
    ["--gpu", "--", TUNED],  # "--" as an option's value ends no options
    [TUNED, "--world-size", "8", "-f", "concise"],  # options after the files
    ["-", "-f", "concise"],  # "-" is a file name (missing here)
    # annotate
    ["--annotate", TUNED],
    ["--annotate", TUNED, "--world-size", "64", "ddp.overlap_grad_reduce=false"],
    ["--annotate", "-o", TUNED, TUNED],  # -o onto the input file
    ["--annotate", "-o", "out.yaml", TUNED, WARNS],
    ["-o", TUNED, TUNED],  # the report onto the input file
    ["--annotate-output", TUNED, TUNED],
    ["--annotate", "--format", "json", TUNED],
    ["--annotate", "--annotate-output", "out.yaml", TUNED],
    # what the text report shows
    ["--show-info", WARNS],
    ["--show-effective", "--world-size", "64", WARNS],
    ["--show-info", "--show-effective", "examples"],
    ["-q", "examples"],
    ["--quiet", "--show-info", WARNS],
    ["-q", "-f", "concise", "examples"],
    ["--statistics", "examples"],
    ["--statistics", "--show-info", "-q", "examples"],
    ["--statistics", "-f", "json", "examples"],
    ["--statistics", "-f", "sarif", WARNS],
    ["--output-format", "concise", WARNS],
    ["--output-format=json", "-f", "concise", WARNS],  # the last of the two synonyms wins
    ["-qfconcise", WARNS],  # bundled short flags: typer's
    # typer's own errors (the fast path hands these over)
    [],
    ["--help"],
    ["--world-size", "0", TUNED],
    ["--world-size", "abc", TUNED],
    ["--world-size", "+8", "-f", "concise", TUNED],  # typer accepts it; cli.fast leaves it to typer
    ["--world-size", "08", "-f", "concise", TUNED],
    ["--jobs", "-1", TUNED],
    ["--jobs", "2.0", "-f", "concise", TUNED],
    ["--format", "xml", TUNED],
    ["--format", "JSON", TUNED],
    ["--severity-threshold", "info", TUNED],
    ["--gpu"],
    [TUNED, "--gpu"],
    ["--gpu", "--format", TUNED],
    ["--bogus", TUNED],
    ["-x", TUNED],
    ["-h"],
    ["--te=true", TUNED],
    ["-f=json", TUNED],
    ["--world-size"],
    ["--wrld-size", "8", TUNED],
    ["--show-info=yes", TUNED],
]


@pytest.mark.parametrize("args", CHECK_CASES, ids=lambda a: " ".join(a) or "(no args)")
def test_check_same_as_typer(args):
    fast, typer = both(["check", *args])
    assert fast == typer


def test_annotate_output_file_same_as_typer(tmp_path):
    """-o writes a file: run the two one after the other into the same path, compare messages and file."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    args = ["check", "--annotate", "-o", "out.yaml", TUNED, "--world-size", "64"]
    fast = run(FAST, args, cwd=tmp_path)
    fast_text = (tmp_path / "out.yaml").read_text()
    (tmp_path / "out.yaml").unlink()
    typer = run(TYPER, args, cwd=tmp_path)
    assert fast == typer
    assert fast_text == (tmp_path / "out.yaml").read_text()
    assert fast[0] == 0 and "annotated config written to out.yaml" in fast[2]


@pytest.mark.parametrize("fmt", ["text", "json", "concise"])
def test_output_file_same_as_typer(tmp_path, fmt):
    """-o/--output-file writes the report: the same file from both paths, nothing on stdout."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    args = ["check", "-o", "report.out", "--format", fmt, WARNS, "--world-size", "64"]
    fast = run(FAST, args, cwd=tmp_path)
    fast_text = (tmp_path / "report.out").read_text()
    (tmp_path / "report.out").unlink()
    typer = run(TYPER, args, cwd=tmp_path)
    assert fast == typer
    assert fast_text == (tmp_path / "report.out").read_text()
    assert fast[0] == 1 and fast[1] == ""
    assert "TP102" in fast_text


def test_github_actions_auto_format_same_as_typer():
    env = environment(GITHUB_ACTIONS="true")
    fast, typer = both(["check", "--format", "auto", WARNS], env=env)
    assert fast == typer
    assert fast[1].startswith("::")


def test_pyproject_settings_same_as_typer(tmp_path):
    """[tool.overlap] found by walking up from the config, with and without a selection table."""
    (tmp_path / "pyproject.toml").write_text('[tool.overlap]\ngpu = "b200"\nworld_size = 32\nignore = ["TP101"]\n')
    config = tmp_path / "run.yaml"
    config.write_text((ROOT / WARNS).read_text())
    fast, typer = both(["check", "-f", "json", str(config)], cwd=tmp_path)
    assert fast == typer
    assert '"gpu": "b200"' in fast[1]
    (tmp_path / "pyproject.toml").write_text("[tool.overlap]\nworld_size = 0\n")
    fast, typer = both(["check", str(config)], cwd=tmp_path)
    assert fast == typer
    assert fast[0] == 2


DIFF_CASES = [
    [TUNED, WARNS],
    [TUNED, TUNED],
    ["--format", "json", TUNED, WARNS, "--world-size", "64"],
    [TUNED, "--world-size", "64", "--vs-world-size=128", "-f", "json"],
    [TUNED, "--world-size", "64", "--vs-nodes", "16", "--vs-gpus-per-node", "8"],
    [WARNS, "--gpu", "h100", "--vs-gpu", "b200", "--vs-no-te"],
    [TUNED, "--vs-te-version", "2.7", "--vs-torch-version", "2.6"],
    [TUNED],  # one file, no --vs- flag: a usage error of cli.diff
    [TUNED, "examples/invalid_parallel_size.yaml"],
    [TUNED, "--vs-world-size", "0"],  # typer's range error
    [TUNED, "--vs-bogus", "1"],
    ["--help"],
    [],
]


@pytest.mark.parametrize("args", DIFF_CASES, ids=lambda a: " ".join(a) or "(no args)")
def test_diff_same_as_typer(args):
    fast, typer = both(["diff", *args])
    assert fast == typer


@pytest.mark.parametrize("args", [["--version"], ["rules"], ["fix", "--diff", WARNS], ["presets", "list"], ["explain", "TP101"], ["check"]])
def test_other_commands_go_to_typer(args):
    fast, typer = both(args)
    assert fast == typer


# -- which path ran -------------------------------------------------------------------------------


def modules_of(args, cwd=ROOT) -> set:
    code, _, err = run(PROBE, args, cwd=cwd)
    line = [ln for ln in err.splitlines() if ln.startswith("MODULES ")][-1]
    return set(line.split()[1:])


@pytest.mark.parametrize("args", [
    ["check", TUNED],
    ["check", "-f", "json", "--world-size", "64", "--gpu", "h100", TUNED, WARNS],
    ["check", "--annotate", TUNED],
    ["check", "missing.yaml"],
    ["check", "--gpu", "xyz", TUNED],
    ["diff", TUNED, WARNS, "--world-size", "64", "-f", "json"],
])
def test_fast_path_never_imports_typer_or_rich(args):
    modules = modules_of(args)
    assert "overlap_cli.cli.check" in modules
    assert not {m for m in modules if m.split(".")[0] in ("typer", "click", "rich", "pydantic")}
    assert "overlap_cli.cli.app" not in modules


@pytest.mark.parametrize("args", [["check", "--help"], ["check", "--world-size", "0", TUNED], ["rules"]])
def test_typer_path_is_taken_when_in_doubt(args):
    assert "typer" in modules_of(args)


def test_fast_path_skips_heavy_modules_on_a_plain_check():
    """A plain check imports little beyond PyYAML: no TOML parser without [tool.overlap] on the walk up, no
    OmegaConf or ruamel, no dataclasses/inspect (records.py), typing, pathlib or json, and no preset file
    parser (TE userbuffers checks) when the config holds no userbuffers mapping."""
    modules = modules_of(["check", TUNED])
    heavy = ("tomllib", "omegaconf", "ruamel", "inspect", "dataclasses", "typing", "pathlib", "json", "difflib",
             "importlib.metadata", "overlap_cli.frameworks.bridge.te_userbuffers", "overlap_cli.cli.app")
    assert not {m for m in modules if m in heavy or m.startswith(tuple(h + "." for h in heavy))}


@pytest.mark.parametrize("text", [
    '[tool.overlap]\ngpu = "h100"\n',
    '[tool . "overlap"]\nworld_size = 8\n',
    "[tool.overlap.per-file-ignores]\n'a.yaml' = ['TP101']\n",
    'tool.overlap.gpu = "b200"\n',
    '[tool]\noverlap = { gpu = "h100" }\n',
    '[tool]\noverlap.gpu = "h100"\n',
    'tool = { overlap = { gpu = "h100" } }\n',
    '"tool"."overlap" = { gpu = "h100" }\n',
    "[project]\nname = 'x'\n[\"tool\".'overlap']\ngpu = 'h100'\n",
    '[tool."\\u006fverlap"]\ngpu = "h100"\n',  # an escape spells the name: always parsed
])
def test_settings_scan_never_misses_a_tool_overlap_table(text):
    import tomllib

    from overlap_cli.launch_profile.settings import might_hold_tool_overlap

    assert isinstance(tomllib.loads(text)["tool"]["overlap"], dict)
    assert might_hold_tool_overlap(text.encode())


@pytest.mark.parametrize("text", [
    '[project]\nname = "overlap-cli"\n[project.scripts]\noverlap = "overlap_cli.cli.fast:main"\n',
    "[tool.ruff]\nline-length = 100\n",
    "[tool.hatch.build]\ninclude = ['overlap_cli']\n",
])
def test_settings_scan_skips_other_tools_tables(text):
    from overlap_cli.launch_profile.settings import might_hold_tool_overlap

    assert not might_hold_tool_overlap(text.encode())


def test_skipped_pyproject_is_walked_past(tmp_path):
    """A pyproject.toml that cannot hold [tool.overlap] is not parsed, and the walk goes on to the parent's."""
    (tmp_path / "pyproject.toml").write_text('[tool.overlap]\ngpu = "b200"\n')
    sub = tmp_path / "project"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "overlap-demo"\n')
    config = sub / "run.yaml"
    config.write_text((ROOT / TUNED).read_text())
    code, out, err = run(FAST, ["check", "-f", "json", str(config)], cwd=sub)
    assert code in (0, 1), err
    assert '"gpu": "b200"' in out and str(tmp_path / "pyproject.toml") in out
    assert "tomllib" in modules_of(["check", str(config)], cwd=sub)  # the parent's table was read


# -- the option table ---------------------------------------------------------------------------


def typer_commands() -> dict:
    """Command path -> (click command, rows of cli.options it was built from)."""
    import typer.main

    from overlap_cli.cli import options
    from overlap_cli.cli.app import app

    group = typer.main.get_command(app)
    presets = group.commands["presets"]
    return {
        "check": (group.commands["check"], options.CHECK),
        "fix": (group.commands["fix"], options.FIX),
        "env": (group.commands["env"], options.ENV),
        "diff": (group.commands["diff"], options.DIFF),
        "rules": (group.commands["rules"], options.RULES),
        "explain": (group.commands["explain"], options.EXPLAIN),
        "presets list": (presets.commands["list"], options.PRESETS_LIST),
        "presets show": (presets.commands["show"], options.PRESETS_SHOW),
        "presets suggest": (presets.commands["suggest"], options.PRESETS_SUGGEST),
    }


@pytest.mark.parametrize("path", list(typer_commands()))
def test_typer_commands_are_the_option_table(path):
    """Each Typer command has exactly the parameters of its rows, in their order, under their names, with
    their help texts and defaults -- and the fast path answers to every name `check` has."""
    from overlap_cli.cli import fast, options

    command, rows = typer_commands()[path]
    params = [p for p in command.params if p.name != "help"]
    assert [p.name for p in params] == [r.dest for r in rows]
    for p, r in zip(params, rows):
        assert p.help == r.help
        if r.positional:
            assert p.param_type_name == "argument" and p.metavar == r.metavar
            continue
        spelt = [*p.opts, *p.secondary_opts]
        assert set(spelt) == set(r.spellings())
        default = getattr(p.default, "value", p.default)
        assert default == (None if r.kind == options.MULTIPLE else r.default)
    if path in ("check", "diff"):
        names = {o for p in params if p.param_type_name == "option" for o in (*p.opts, *p.secondary_opts)}
        assert set(fast.CHECK_SPELLINGS if path == "check" else fast.DIFF_SPELLINGS) == names


def test_target_flags_are_declared_once():
    """check, fix, env and presets suggest share the TARGET rows themselves, not copies of them."""
    from overlap_cli.cli import options

    for rows in (options.CHECK, options.FIX, options.ENV, options.PRESETS_SUGGEST, options.DIFF):
        shared = [r for r in rows if r.dest in {t.dest for t in options.TARGET}]
        assert shared == list(options.TARGET) and all(a is b for a, b in zip(shared, options.TARGET))


def typer_options(argv):
    """The Options record Typer's parser gives for ``check ARGV`` (None when it refuses the line)."""
    from overlap_cli.cli import app as typer_app
    from overlap_cli.cli import options

    command, rows = typer_commands()["check"]
    try:
        ctx = command.make_context("check", list(argv))
    except Exception:
        return None
    return options.Options(rows, {r.dest: typer_app.plain_value(r, ctx.params[r.dest]) for r in rows})


@pytest.mark.parametrize("args", CHECK_CASES, ids=lambda a: " ".join(a) or "(no args)")
def test_fast_parser_reads_what_typer_reads(args):
    """Wherever the fast path takes a command line, Typer's parser builds the same Options record from it."""
    from overlap_cli.cli import fast

    try:
        parsed = fast.parse_check(args)
    except fast.Unsure:
        pytest.skip("the fast path hands this command line to Typer: no record of its own to compare")
    assert parsed == typer_options(args)


# -- how a run ends: the same on both paths ------------------------------------------------------


@pytest.mark.parametrize("code", [FAST, TYPER])
@pytest.mark.parametrize("args", [["check", WARNS, "--show-effective"], ["env", TUNED]])
def test_closed_pipe_ends_quietly_with_exit_1(code, args):
    """The reader is gone before the report is written (`overlap check ... | head`): exit 1, nothing on
    stderr, on the fast path and the Typer path alike."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert (proc.wait(timeout=120), err) == (1, b"")


@pytest.mark.parametrize("code", [FAST, TYPER])
def test_ctrl_c_prints_interrupted_on_both_paths(code, tmp_path):
    import signal
    import time

    text = (ROOT / TUNED).read_text()
    for i in range(6000):
        (tmp_path / f"c{i}.yaml").write_text(text)
    for _attempt in range(3):
        # Ctrl-C reaches a process whose SIGINT is not ignored; a background job of a non-interactive shell
        # (``bash -c "... &"``) starts with it ignored and Python then installs no handler: start as a
        # terminal's foreground process would.
        proc = subprocess.Popen([sys.executable, "-c", code, "check", "-q", str(tmp_path)], cwd=ROOT, env=environment(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # The signal must arrive inside the check, not during interpreter start-up: wait until the process holds
        # a file of the folder open (discovery's scandir or a read), which a loaded machine may take seconds to
        # reach. Each file is open only briefly: on a loaded machine the polling can miss them all and the
        # check end first -- then the signal was never sent inside it, and the run is tried again.
        fds, deadline = Path(f"/proc/{proc.pid}/fd"), time.monotonic() + 60
        inside = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if any(os.readlink(fd).startswith(str(tmp_path)) for fd in fds.iterdir()):
                    inside = True
                    break
            except OSError:  # an fd closed between listing and reading it
                pass
            time.sleep(0.002)
        if not inside:
            proc.wait(timeout=120)
            proc.stderr.close()
            continue
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        assert (proc.wait(timeout=120), err) == (130, "overlap: interrupted\n")
        return
    pytest.fail("three runs ended before a file of the folder was seen open: the signal never reached the check")
