"""Launch-time crash prediction (EP7xx, CP8xx, PP205-208, TP106, DP308-312, MP404-407).

Cases in tests/cases/ may carry two extra header lines that tests/rules/test_cases.py ignores:

    # quote: EP701 A2A Overlap encounters hang issue      a finding of EP701 contains this text verbatim
    # order: EP701 word1 word2 ...                           EP701's messages mention these words in this order

A quote is the message the launch itself prints (Bridge / Megatron-Core source, 0.6.2 / 0.19.2), so a
crash log can be matched to the rule.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from caselib import CASES, read_header
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR


def _extra_headers(path: Path, key: str) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if body.startswith(f"{key}:"):
            code, _, text = body[len(key) + 1 :].strip().partition(" ")
            out.append((code, text.strip()))
    return out


QUOTED = [c for c in CASES if _extra_headers(c, "quote") or _extra_headers(c, "order")]


def _findings(run_cli, path: Path, *extra):
    args = read_header(path)["args"]
    code, out, _ = run_cli("check", path, *args, *extra, "--format", "json")
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return code, result["findings"]


@pytest.mark.parametrize("case", QUOTED, ids=[c.stem for c in QUOTED])
def test_findings_quote_the_launch_message(case: Path, run_cli):
    _, findings = _findings(run_cli, case)
    for code, text in _extra_headers(case, "quote"):
        messages = [f["message"] for f in findings if f["code"] == code]
        assert any(text in m for m in messages), f"{case.name}: no {code} finding quotes {text!r}; got {messages}"
    for code, words in _extra_headers(case, "order"):
        messages = [f["message"] for f in findings if f["code"] == code]
        wanted = words.split()
        assert len(messages) == len(wanted), f"{case.name}: {len(messages)} {code} findings for {len(wanted)} words"
        for word, message in zip(wanted, messages):
            assert word in message, f"{case.name}: {code} findings out of order: {word!r} not in {message!r}"


def test_done_when_vpp_torch_and_reset_trap(run_cli):
    """Issue 6 'done when': PP 4 without VPP -> VPP error; torch < 2.6 -> torch error; the reset trap."""
    case = ROOT / "tests" / "cases" / "ep701_pp_without_vpp.yaml"
    _, without_torch = _findings(run_cli, case)  # header passes --torch-version 2.5
    errors = [f["message"] for f in without_torch if f["code"] == "EP701" and f["severity"] == "error"]
    assert any("virtual_pipeline_model_parallel_size must be specified" in m for m in errors)
    assert any("torch version < 2.6.0" in m for m in errors)
    # NGC's torch 2.6.0a0 is a pre-release: Megatron-Core (packaging.Version) counts it below 2.6.0.
    code, out, _ = run_cli("check", case, "--torch-version", "2.6.0a0+ecf3bae40a", "--format", "json")
    msgs = [f["message"] for f in json.loads(out)["results"][0]["findings"] if f["code"] == "EP701"]
    assert any("torch version < 2.6.0" in m for m in msgs)
    code, out, _ = run_cli("check", case, "--torch-version", "2.6.1", "--format", "json")
    msgs = [f["message"] for f in json.loads(out)["results"][0]["findings"] if f["code"] == "EP701"]
    assert not any("torch" in m for m in msgs) and len(msgs) == 1

    trap = ROOT / "tests" / "cases" / "ep705_reset_trap.yaml"
    _, findings = _findings(run_cli, trap)
    assert [f["severity"] for f in findings if f["code"] == "EP705"] == ["error"]


def test_unknown_torch_is_info_saying_what_is_required(run_cli):
    case = ROOT / "tests" / "cases" / "ep701_pp_without_vpp.yaml"
    code, out, _ = run_cli("check", case, "--format", "json")
    torch = [f for f in json.loads(out)["results"][0]["findings"] if f["code"] == "EP701" and "torch" in f["message"]]
    assert [f["severity"] for f in torch] == ["info"]
    assert "torch >= 2.6.0" in torch[0]["message"] and "--torch-version" in torch[0]["message"]


def _fixed(run_cli, tmp_path, name: str, *flags):
    src = ROOT / "tests" / "cases" / name
    dst = tmp_path / name
    shutil.copy(src, dst)
    args = read_header(src)["args"]
    run_cli("fix", dst, "--write", *args, *flags)
    code, out, _ = run_cli("check", dst, *args, "--format", "json")
    return dst.read_text(encoding="utf-8"), json.loads(out)["results"][0]["findings"]


def test_unsafe_vpp_fix_clears_the_ep_vpp_error(run_cli, tmp_path):
    text, findings = _fixed(run_cli, tmp_path, "ep701_pp_without_vpp.yaml", "--unsafe-fixes")
    assert "virtual_pipeline_model_parallel_size: 2" in text
    assert not [f for f in findings if "virtual_pipeline_model_parallel_size must be specified" in f["message"]]


def test_cuda_graph_modules_under_impl_none_are_cleared(run_cli, tmp_path):
    """Bridge's delayed-wgrad check reads the modules before validate() clears them for impl 'none'. The case
    writes the modules itself, so clearing them is a fix the user accepts (--unsafe-fixes)."""
    text, findings = _fixed(run_cli, tmp_path, "ep706_te_too_old.yaml", "--unsafe-fixes")
    assert "cuda_graph_modules: attn" not in text
    msgs = [f["message"] for f in findings if f["code"] in ("EP706", "EP707")]
    assert not any("2.12.0" in m or "attention bias" in m for m in msgs)
    assert any("overlap_grad_reduce when usingdelay_wgrad_compute" in m for m in msgs)  # no fix for an old TE


def test_deepseek_dump_predictions(run_cli):
    """The real Bridge dump (EP overlap + delayed wgrad + MXFP8 + layout) passes every launch check that
    the file decides; what depends on the target's versions is reported as info."""
    dump = ROOT / "examples" / "bridge" / "deepseek_v3_pretrain_256gpu_b300_fp8mx_config.yaml"
    code, out, _ = run_cli("check", dump, "--world-size", "256", "--format", "json")
    findings = json.loads(out)["results"][0]["findings"]
    launch = [f for f in findings if f["code"][:2] in ("EP", "CP") or f["code"] in LAUNCH_CODES]
    assert {(f["code"], f["severity"]) for f in launch} == {("EP701", "info"), ("EP706", "info")}
    code, out, _ = run_cli(
        "check", dump, "--world-size", "256", "--torch-version", "2.6.0a0", "--te-version", "2.6", "--format", "json"
    )
    findings = json.loads(out)["results"][0]["findings"]
    errors = sorted((f["code"], f["message"][:60]) for f in findings if f["severity"] == "error")
    assert [c for c, _ in errors] == ["EP701", "EP706", "EP706"]
    code, out, _ = run_cli(
        "check", dump, "--world-size", "256", "--torch-version", "2.9", "--te-version", "2.12", "--format", "json"
    )
    findings = json.loads(out)["results"][0]["findings"]
    assert not [f for f in findings if f["code"][:2] in ("EP", "CP") or f["code"] in LAUNCH_CODES]


LAUNCH_CODES = {
    "TP106", "PP205", "PP206", "PP207", "PP208", "DP308", "DP309", "DP310", "DP311", "DP312",
    "MP404", "MP405", "MP406", "MP407",
}


# -- version ordering -----------------------------------------------------------------------------

VERSIONS = [
    "2.5", "2.5.1", "2.6.0a0", "2.6.0a0+ecf3bae40a", "2.6.0rc1", "2.6", "2.6.0", "2.6.0.post1", "2.6.1",
    "2.7.0.dev0", "2.7.0.dev0+abc", "2.7.0a1", "2.7.0", "2.7.0+cu126", "2.10", "2.12.0", "10.0",
]


def test_version_order_matches_packaging():
    packaging = pytest.importorskip("packaging.version")
    from overlap_cli.launch_profile.versions import sort_key

    for a in VERSIONS:
        for b in VERSIONS:
            va, vb = packaging.Version(a), packaging.Version(b)
            assert (sort_key(a) < sort_key(b)) == (va < vb), (a, b)
            assert (sort_key(a) == sort_key(b)) == (va == vb), (a, b)


def test_unreadable_version_is_unknown_not_a_guess():
    """The CLI refuses such a value; a rule that still meets one (e.g. from another caller) must not guess."""
    from overlap_cli.launch_profile.versions import status as version_status

    assert version_status("nightly", "2.6.0") == "unknown"
    assert version_status(None, "2.6.0") == "unknown"
    assert version_status("2.6.0a0+ecf3bae40a", "2.6.0") == "too-old"
    assert version_status("2.7.0.dev0", "2.7.0.dev0") == "ok"


# -- pipeline layout -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout, stages",
    [
        ("Ettt|(tt|)*29,m|L", 32),  # the example in Megatron-Core's docstring
        ("Et*3|t*4|t*4|t*3L", 4),
        ("E|t||tL", 4),  # an empty piece is a stage
        ([["embedding", "decoder"], ["decoder", "loss"]], 2),
    ],
)
def test_layout_stage_count(layout, stages):
    from overlap_cli.frameworks.bridge.pipeline_layout import read_layout

    assert read_layout(layout).stages == stages


def test_layout_that_would_expand_forever_is_refused():
    from overlap_cli.frameworks.bridge.pipeline_layout import read_layout

    assert read_layout("t*99999999999").stages is None
