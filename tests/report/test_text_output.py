"""`overlap check`'s human output and output options, through the real CLI.

Default text: errors, then warnings; info only with --show-info; the effective table only with
--show-effective; -q keeps only the finding lines; --statistics counts per code (ruff's form);
-o/--output-file writes the report; --annotate-output writes the annotated config beside it;
--output-format is --format. Also: usage errors are one line for every command, and every JSON
document carries the version envelope.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"
PP = EXAMPLES / "pp_without_vpp.yaml"  # an error, info findings
TP = EXAMPLES / "tp_overlap_without_sp.yaml"  # a warning, info findings
FINDING = re.compile(r"^\S+:\d+:\d+: [A-Z]+\d+ (error|warning|info): ")  # report.common.finding_line


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def json_doc(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    return json.loads(out)


def finding_lines(text: str) -> list:
    return [line for line in text.splitlines() if FINDING.match(line)]


def test_default_lists_errors_then_warnings_and_hides_info(run_cli):
    args = ("examples", "--world-size", "64")
    doc = json_doc(run_cli, *args)
    code, out, _ = run_cli("check", *args)
    lines = finding_lines(out)
    severities = [FINDING.match(line).group(1) for line in lines]
    assert severities == sorted(severities, key=("error", "warning").index)  # errors first
    s = doc["summary"]
    assert severities.count("error") == s["error"] and severities.count("warning") == s["warning"] > 0
    assert "info" not in severities and s["info"] > 0
    assert f"Not shown: {s['info']} info finding(s) (--show-info), the effective settings (--show-effective)." in out
    assert "effective overlap settings" not in out
    assert code == 2  # examples/ holds an invalid file: the exit code is unchanged by what is shown


def test_show_info_lists_every_finding(run_cli):
    doc = json_doc(run_cli, TP, PP)
    _, out, _ = run_cli("check", TP, PP, "--show-info")
    lines = finding_lines(out)
    assert len(lines) == sum(len(r["findings"]) for r in doc["results"])
    sev = [FINDING.match(line).group(1) for line in lines]
    assert sev == sorted(sev, key=("error", "warning", "info").index)
    assert "--show-info)" not in out


def test_show_effective_prints_every_effective_value(run_cli):
    doc = json_doc(run_cli, PP, "--world-size", "64")
    _, out, _ = run_cli("check", PP, "--world-size", "64", "--show-effective")
    assert "examples/pp_without_vpp.yaml: effective overlap settings (world size 64, DP 8" in out
    for key, v in doc["results"][0]["effective"].items():
        assert re.search(rf"^  {re.escape(key)} +\S", out, re.M), key
    assert "Not shown: 6 info finding(s) (--show-info)." in out


def test_quiet_prints_only_warning_and_error_lines(run_cli):
    code, out, err = run_cli("check", "examples", "-q")
    lines = out.splitlines()
    assert lines and all(FINDING.match(line) for line in lines)
    assert not [line for line in lines if " info:" in line.split(":", 3)[-1][:20]]
    assert "note:" not in out and "file(s)" not in out
    assert code == 2 and "invalid_parallel_size.yaml:4:3" in err  # input errors still say so
    _, concise, _ = run_cli("check", "examples", "-q", "--format", "concise")
    assert len(concise.splitlines()) == len(lines) and "Found" not in concise


def test_notes_are_printed_once_for_many_files(run_cli):
    _, out, _ = run_cli("check", "examples")
    assert out.count("note: world size not given") == 1


def _statistics(text):
    rows = [line.split("\t") for line in text.splitlines() if "\t" in line]
    return [(int(n), code.strip(), title) for n, code, title in rows]


def test_statistics_like_ruff(run_cli):
    doc = json_doc(run_cli, "examples")
    code, out, _ = run_cli("check", "examples", "--statistics", "--show-info")
    rows = _statistics(out)
    assert {c: n for n, c, _ in rows} == doc["summary"]["by_code"]
    assert [n for n, _, _ in rows] == sorted((n for n, _, _ in rows), reverse=True)  # most frequent first
    from overlap_cli.rules import all_rules

    for _, c, title in rows:
        assert title[4:] == all_rules()[c].title and title[:4] in ("[*] ", "[ ] ")
    assert not finding_lines(out) and code == 2
    # Without --show-info: warnings and errors only, and a line saying what was left out.
    _, out, _ = run_cli("check", "examples", "--statistics")
    shown = {c for _, c, _ in _statistics(out)}
    want = {f["code"] for r in doc["results"] for f in r["findings"] if f["severity"] != "info"}
    assert shown == want
    assert f"Not shown: {doc['summary']['info']} info finding(s) (--show-info)." in out


def test_statistics_json(run_cli):
    doc = json_doc(run_cli, "examples")
    _, out, _ = run_cli("check", "examples", "--statistics", "--format", "json")
    stats = json.loads(out)
    assert stats["version"] == 1 and stats["summary"]["info"] == doc["summary"]["info"]
    assert {r["code"]: r["count"] for r in stats["statistics"]} == doc["summary"]["by_code"]
    assert all(sum(r["severities"].values()) == r["count"] for r in stats["statistics"])


def test_statistics_refuses_sarif(run_cli):
    code, out, err = run_cli("check", TP, "--statistics", "--format", "sarif")
    assert code == 2 and out == "" and err == "overlap: error: --statistics prints text or json, not sarif\n"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "concise"])
def test_output_file_holds_the_report(run_cli, tmp_path, fmt):
    _, printed, _ = run_cli("check", TP, PP, "--format", fmt)
    dest = tmp_path / f"report.{fmt}"
    code, out, err = run_cli("check", TP, PP, "--format", fmt, "-o", dest)
    assert code == 1 and out == "" and err == ""
    assert dest.read_text() == printed
    if fmt in ("json", "sarif"):
        json.loads(dest.read_text())
    assert [p.name for p in tmp_path.iterdir()] == [dest.name]  # no temporary file left behind


def test_output_file_never_overwrites_an_input(run_cli, tmp_path):
    src = tmp_path / "cfgs" / "c.yaml"
    src.parent.mkdir()
    src.write_bytes(TP.read_bytes())
    for args in (["-o", src], ["--output-file", src], ["--output", src], ["--annotate-output", src]):
        code, out, err = run_cli("check", src.parent, *args)  # a file found in a folder counts too
        assert code == 2 and "must not be an input file" in err
        assert src.read_bytes() == TP.read_bytes()


def test_output_format_is_format(run_cli):
    assert run_cli("check", TP, "--output-format", "concise") == run_cli("check", TP, "--format", "concise")


def test_annotate_output_writes_the_config_beside_the_report(run_cli, tmp_path):
    dest = tmp_path / "annotated.yaml"
    code, out, err = run_cli("check", TP, "--world-size", "16", "--annotate-output", dest, "--format", "json")
    assert code == 1
    assert json.loads(out)["results"][0]["findings"]  # the report, as usual
    annotated = dest.read_text()
    assert "# overlap: effective false (forced-off" in annotated and yaml.safe_load(annotated)["model"]
    assert err == f"annotated config written to {dest}\n"


@pytest.mark.parametrize("args, words", [
    (["--annotate", "--format", "json"], "--annotate prints the config back, not a report: it takes no --format json"),
    (["--annotate", "--format", "sarif"], "it takes no --format sarif"),
    (["--annotate", "--statistics"], "--annotate and --statistics exclude each other"),
    (["--annotate", "--annotate-output", "x.yaml"], "not both"),
])
def test_annotate_combinations_that_mean_nothing(run_cli, args, words):
    code, out, err = run_cli("check", TP, *args)
    assert code == 2 and out == "" and err.startswith("overlap: error: ") and words in err
    assert len(err.splitlines()) == 1
    assert not (ROOT / "x.yaml").exists()


# -- usage errors from the parser: one line with a suggestion, for every command ------------------


@pytest.mark.parametrize("args, line", [
    (["check", "--wrld-size", "8", "x.yaml"], "no such option --wrld-size (did you mean --world-size?)"),
    (["check", "--format", "JSON", "x.yaml"], "invalid value for --format: 'JSON' (did you mean json?)"),
    (["check", "--format", "xml", "x.yaml"], "invalid value for --format: 'xml' (choose from text, concise, json, sarif, github, auto)"),
    (["check"], "no config file given (give FILE..., or --recipe NAME / --base FILE to check a recipe or dump itself)"),
    (["check", "x.yaml", "--gpu"], "option --gpu requires a value (see `overlap check --help`)"),
    (["check", "--te=yes", "x.yaml"], "option --te takes no value (give --te alone)"),
    (["fix", "--unsafe-fix", "x.yaml"], "no such option --unsafe-fix (did you mean --unsafe-fixes?)"),
    (["fix", "--diff", "--bogus", "x.yaml"], "no such option --bogus (see `overlap fix --help`)"),
    (["env", "x.yaml", "--format", "yaml"], "invalid value for --format: 'yaml' (choose from shell, dotenv, json)"),
    (["env"], "no config file given (give FILE..., or --recipe NAME / --base FILE to check a recipe or dump itself)"),
    (["presets", "show"], "missing argument NAME (see `overlap presets show --help`)"),
    (["presets", "lst"], "no such command 'lst' (did you mean list?)"),
    (["presets", "list", "--gpu"], "option --gpu requires a value (see `overlap presets list --help`)"),
    (["rules", "--format", "md"], "invalid value for --format: 'md' (choose from text, json, markdown)"),
    (["rules", "extra"], "unexpected extra argument extra (see `overlap rules --help`)"),
    (["explain"], "missing argument CODE (see `overlap explain --help`)"),
    (["chek", "x.yaml"], "no such command 'chek' (did you mean check?)"),
    (["--verison"], "no such option --verison (did you mean --version?)"),
])
def test_parser_usage_errors_are_one_line(run_cli, args, line):
    code, out, err = run_cli(*args)
    assert (code, out, err) == (2, "", f"overlap: error: {line}\n")


def test_usage_error_one_line_through_the_console_script():
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", "--wrld-size", "8", str(TP)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "overlap: error: no such option --wrld-size (did you mean --world-size?)\n"


def test_help_is_still_help(run_cli):
    code, out, _ = run_cli("check", "--help")
    assert code == 0 and "--show-info" in out and "--output-file" in out
    code, out, err = run_cli()
    assert "Usage: overlap" in out + err and "Commands" in out + err


# -- every JSON document carries the version envelope --------------------------------------------


@pytest.mark.parametrize("args", [
    ["check", str(TP), "--format", "json"],
    ["check", str(TP), "--format", "json", "--statistics"],
    ["env", str(TP), "--format", "json"],
    ["rules", "--format", "json"],
    ["presets", "list", "--format", "json"],
    ["presets", "show", "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192", "--format", "json"],
    ["presets", "suggest", str(EXAMPLES / "llama3_70b_tuned.yaml"), "--gpu", "h100", "--format", "json"],
])
def test_every_json_document_has_the_version(run_cli, args):
    _, out, _ = run_cli(*args)
    doc = json.loads(out)
    assert isinstance(doc, dict) and next(iter(doc)) == "version" and doc["version"] == 1


# -- a terminal: nothing is cut ------------------------------------------------------------------


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_terminal_output_wraps_never_cuts(columns):
    pytest.importorskip("pty")
    from ttyrun import run_tty

    from overlap_cli.cli.app import app  # noqa: F401  (the import the subprocess makes, for a clear error here)

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code, out, err = run_tty([sys.executable, "-m", "overlap_cli", "check", str(PP), "--world-size", "64",
                              "--show-effective", "--show-info"], columns, cwd=ROOT, env=env)  # fmt: skip
    assert code == 1, err
    assert "…" not in out and "..." not in out.replace("{...}", "")
    lines = out.splitlines()
    assert all(len(line.rstrip()) <= columns for line in lines)
    flat = " ".join(out.split())
    for key in ("model.pipeline_model_parallel_size", "optimizer.overlap_param_gather_with_optimizer_step",
                "env.NVTE_FWD_LAYERNORM_SM_MARGIN"):  # fmt: skip
        assert key in flat  # whole: keys sit on one line at every width
    assert "Megatron-Core raises 'Non-interleaved pipeline parallelism does not support overlapping p2p communication'" in flat


def test_a_value_the_run_leaves_unknown_reads_unknown_not_null(run_cli, tmp_path):
    """The effective table, --annotate and diff write an unknown value as ``unknown``: the ``null`` the view holds
    there is no one's, and ``null`` reads as a value the file wrote."""
    script = tmp_path / "train.py"
    script.write_text("import os\nfrom megatron.bridge.recipes.llama import llama3_8b_pretrain_config\n"
                      "cfg = llama3_8b_pretrain_config()\ncfg.model.tensor_model_parallel_size = int(os.environ['TP'])\n")
    code, out, err = run_cli("check", str(script), "--world-size", "8", "--show-effective")
    [row] = [line.split() for line in out.splitlines() if line.strip().startswith("model.tensor_model_parallel_size ")]
    assert row[1:3] == ["unknown", "unknown"], row
    code, out, err = run_cli("check", str(script), "--world-size", "8", "--annotate")
    assert "# overlap: model.tensor_model_parallel_size = unknown (unknown: " in out
    known = tmp_path / "known.py"
    known.write_text(script.read_text().replace("int(os.environ['TP'])", "4"))
    code, out, err = run_cli("diff", str(known), str(script), "--world-size", "8")
    lines = out.splitlines()
    at = lines.index("  model.tensor_model_parallel_size")
    assert lines[at + 1].startswith("    - 4  [user: ") and lines[at + 2].startswith("    + unknown  [unknown: ")
