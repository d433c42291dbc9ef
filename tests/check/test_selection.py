"""Choosing rules (--select/--ignore/--extend-select, [tool.overlap]) and inline suppressions."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"

# TP102 on line 4 (sequence_parallel), DP301 on line 6 (ddp), PP202 on line 12 (overlap_p2p_comm).
CONFIG = """\
model:
  tensor_model_parallel_size: 2
  pipeline_model_parallel_size: 2
  sequence_parallel: false{sp}
ddp:
  use_distributed_optimizer: true
optimizer:
  use_distributed_optimizer: true
mixed_precision: bf16_mixed
comm_overlap:
  tp_comm_overlap: true
  overlap_p2p_comm: true{p2p}
"""


def write(tmp_path: Path, sp: str = "", p2p: str = "", header: str = "", name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + CONFIG.format(sp=sp, p2p=p2p), encoding="utf-8")
    return path


def findings(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    assert out, err
    doc = json.loads(out)
    return code, [(f["code"], f["line"]) for r in doc["results"] for f in r["findings"]], doc


def codes(run_cli, *args):
    return {c for c, _ in findings(run_cli, *args)[1]}


def test_baseline(run_cli, tmp_path):
    code, found, _ = findings(run_cli, write(tmp_path))
    assert ("TP102", 4) in found and ("PP202", 12) in found and "DP301" in {c for c, _ in found}
    assert code == 1


# -- selection from the command line ---------------------------------------------------------------


def test_select_by_code_and_family(run_cli, tmp_path):
    path = write(tmp_path)
    assert codes(run_cli, path, "--select", "TP102") == {"TP102"}
    got = codes(run_cli, path, "--select", "PP")
    assert got and all(c.startswith("PP") for c in got) and "PP202" in got
    assert codes(run_cli, path, "--select", "TP,PP202") == {"TP102", "PP202"}
    assert codes(run_cli, path, "--select", "TP", "--select", "PP202") == {"TP102", "PP202"}
    assert codes(run_cli, path, "--select", "tp-overlap-off-sequence-parallel") == {"TP102"}


def test_prefix_with_digits(run_cli, tmp_path):
    path = write(tmp_path)
    assert codes(run_cli, path, "--select", "PP20") >= {"PP202"}
    assert "TP102" not in codes(run_cli, path, "--select", "PP20")


def test_ignore_and_specificity(run_cli, tmp_path):
    path = write(tmp_path)
    without_tp = codes(run_cli, path, "--ignore", "TP")
    assert "TP102" not in without_tp and "PP202" in without_tp
    # The more specific selector wins, whichever flag it came with.
    assert codes(run_cli, path, "--select", "TP102", "--ignore", "TP") == {"TP102"}
    assert codes(run_cli, path, "--select", "ALL", "--ignore", "PP202") >= {"TP102"}
    assert "PP202" not in codes(run_cli, path, "--select", "ALL", "--ignore", "PP202")
    # Same specificity: ignore wins.
    assert codes(run_cli, path, "--select", "TP102", "--ignore", "TP102") == set()


def test_extend_select_adds_to_select(run_cli, tmp_path):
    path = write(tmp_path)
    assert codes(run_cli, path, "--select", "TP102", "--extend-select", "PP202") == {"TP102", "PP202"}


def test_ignored_findings_do_not_fail_the_run(run_cli, tmp_path):
    path = write(tmp_path)
    code, found, _ = findings(run_cli, path, "--ignore", "TP102,PP202,ENV")
    assert code == 0, found


def test_unknown_selector_is_a_usage_error(run_cli, tmp_path):
    path = write(tmp_path)
    for bad, near in (("TP1O2", "TP102"), ("XX", None), ("T", None)):
        code, out, err = run_cli("check", path, "--select", bad)
        assert code == 2 and f"'{bad}'" in err and "Traceback" not in err
        if near:
            assert near in err


# -- exit code -------------------------------------------------------------------------------------


def test_severity_threshold_and_exit_zero(run_cli, tmp_path):
    warning_only = write(tmp_path, name="w.yaml")
    warning_only.write_text(warning_only.read_text().replace("overlap_p2p_comm: true", "overlap_p2p_comm: false"))
    code, found, _ = findings(run_cli, warning_only)
    assert code == 1 and "TP102" in {c for c, _ in found} and "PP202" not in {c for c, _ in found}
    assert findings(run_cli, warning_only, "--severity-threshold", "error")[0] == 0
    assert findings(run_cli, write(tmp_path), "--severity-threshold", "error")[0] == 1  # PP202 is an error
    assert findings(run_cli, write(tmp_path), "--exit-zero")[0] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [1, 2\n")
    assert findings(run_cli, bad, "--exit-zero")[0] == 2  # input errors are not findings


# -- [tool.overlap] --------------------------------------------------------------------------------


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.overlap]\n" + textwrap.dedent(table), encoding="utf-8")
    return tmp_path


def test_settings_select_and_ignore(run_cli, tmp_path):
    project(tmp_path, 'ignore = ["TP102"]\n')
    path = write(tmp_path, name="configs/a.yaml")
    got = codes(run_cli, path)
    assert "TP102" not in got and "PP202" in got
    # The command line is the later layer: it can turn back on what the file turned off.
    assert "TP102" in codes(run_cli, path, "--extend-select", "TP102")
    assert codes(run_cli, path, "--select", "TP102") == {"TP102"}


def test_settings_select_replaced_by_cli_select(run_cli, tmp_path):
    project(tmp_path, 'select = ["PP"]\nextend-select = ["TP102"]\n')
    path = write(tmp_path)
    got = codes(run_cli, path)
    assert "TP102" in got and "PP202" in got and not any(c.startswith("DP") for c in got)
    assert codes(run_cli, path, "--select", "DP301") == {"DP301"}


def test_per_file_ignores(run_cli, tmp_path):
    project(tmp_path, '[tool.overlap.per-file-ignores]\n"legacy/*.yaml" = ["TP"]\n"c.yaml" = ["PP202"]\n')
    legacy = write(tmp_path, name="legacy/old.yaml")
    current = write(tmp_path, name="current/new.yaml")
    plain = write(tmp_path, name="other/c.yaml")  # bare file name pattern matches in any folder
    assert "TP102" not in codes(run_cli, legacy) and "PP202" in codes(run_cli, legacy)
    assert {"TP102", "PP202"} <= codes(run_cli, current)
    assert "PP202" not in codes(run_cli, plain) and "TP102" in codes(run_cli, plain)


@pytest.mark.parametrize(
    "table, words",
    [
        ('select = ["TP1O2"]\n', ["tool.overlap.select", "TP102"]),
        ("ignore = 3\n", ["tool.overlap.ignore", "list"]),
        ('[tool.overlap.per-file-ignores]\n"*.yaml" = ["NOPE1"]\n', ["per-file-ignores", "NOPE1"]),
    ],
)
def test_bad_settings_one_line_exit_2(run_cli, tmp_path, table, words):
    project(tmp_path, table)
    path = write(tmp_path)
    code, out, err = run_cli("check", path)
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "pyproject.toml" in lines[0] and all(w in lines[0] for w in words)


# -- inline suppressions ---------------------------------------------------------------------------


def test_trailing_suppression_silences_exactly_that_finding(run_cli, tmp_path):
    path = write(tmp_path, sp="  # overlap: ignore[TP102]")
    code, found, _ = findings(run_cli, path)
    got = {c for c, _ in found}
    assert "TP102" not in got and "CFG009" not in got
    assert "PP202" in got and "DP301" in got  # everything else still reported


def test_suppression_of_another_code_on_the_line_hides_nothing(run_cli, tmp_path):
    path = write(tmp_path, sp="  # overlap: ignore[PP202]")
    _, found, _ = findings(run_cli, path)
    assert ("TP102", 4) in found and ("PP202", 12) in found
    assert ("CFG009", 4) in found  # PP202 is not reported on line 4: the comment is unused


def test_own_line_suppression_covers_the_next_yaml_line(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    text = CONFIG.format(sp="", p2p="").replace(
        "  overlap_p2p_comm: true", "  # overlap: ignore[PP202] the schedule is patched in our fork\n\n  overlap_p2p_comm: true"
    )
    path.write_text(text)
    got = codes(run_cli, path)
    assert "PP202" not in got and "TP102" in got and "CFG009" not in got


def test_several_codes_and_names(run_cli, tmp_path):
    path = write(tmp_path, sp="  # overlap: ignore[TP102, PP202]")
    _, found, _ = findings(run_cli, path)
    assert ("TP102", 4) not in found
    assert ("CFG009", 4) in found  # PP202 listed on the wrong line
    path = write(tmp_path, sp="  # overlap: ignore[tp-overlap-off-sequence-parallel]")
    got = codes(run_cli, path)
    assert "TP102" not in got and "CFG009" not in got


def test_ignore_file(run_cli, tmp_path):
    path = write(tmp_path, header="# overlap: ignore-file\n")
    code, found, _ = findings(run_cli, path)
    assert found == [] and code == 0
    path = write(tmp_path, header="# recipe copied from upstream\n# overlap: ignore-file[PP202, TP103]\n")
    _, found, _ = findings(run_cli, path)
    got = {c for c, _ in found}
    assert "PP202" not in got and "TP102" in got
    assert ("CFG009", 2) in found  # TP103 is not reported anywhere in the file


def test_unknown_code_in_suppression_is_reported(run_cli, tmp_path):
    path = write(tmp_path, sp="  # overlap: ignore[TP1O2]")
    code, out, err = run_cli("check", path, "--format", "json")
    doc = json.loads(out)
    cfg009 = [f for f in doc["results"][0]["findings"] if f["code"] == "CFG009"]
    assert len(cfg009) == 1 and "TP1O2" in cfg009[0]["message"] and "TP102" in cfg009[0]["message"]
    assert cfg009[0]["severity"] == "info"


def test_unused_suppression_not_judged_for_unselected_rules(run_cli, tmp_path):
    path = write(tmp_path, sp="  # overlap: ignore[PP202]")
    assert "CFG009" not in codes(run_cli, path, "--ignore", "PP")
    assert "CFG009" not in codes(run_cli, path, "--ignore", "CFG009")
    path = write(tmp_path, sp="  # overlap: ignore[PP202, CFG009]")
    assert "CFG009" not in codes(run_cli, path)


def test_directive_inside_a_string_is_not_a_comment(run_cli, tmp_path):
    path = write(tmp_path)
    path.write_text(path.read_text().replace("sequence_parallel: false", 'sequence_parallel: false\n  name: "x # overlap: ignore[TP102]"'))
    got = codes(run_cli, path)
    assert "TP102" in got and "CFG009" not in got


def test_filter_findings_is_usable_without_the_cli(tmp_path):
    """The fixer calls the same function: selection applies to whatever produced the findings."""
    from overlap_cli.results import Finding
    from overlap_cli.check.selection import cli_selection, filter_findings

    path = write(tmp_path, sp="  # overlap: ignore[TP102]")
    raw = [Finding("TP102", "warning", "m", None, 4, 3), Finding("PP202", "error", "m", None, 12, 3), Finding("DP301", "info", "m", None, 6, 1)]
    kept = filter_findings(raw, str(path), path.read_text(), cli_selection(ignore=["DP"]))
    assert [f.code for f in kept] == ["PP202"]
