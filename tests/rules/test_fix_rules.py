"""Each rule's fix, applied for real to the rule cases of tests/cases/, with the expected output as data.

Beside a case NAME.yaml (see tests/rules/test_cases.py for its header):
    NAME.fixed.yaml          the exact output of `overlap fix --write` (header `args:` + `fix-args:`);
                             no such file: the fix leaves the case byte for byte as it is
    NAME.unsafe.fixed.yaml   the same with --unsafe-fixes, when that differs from the safe output; when
                             only it changes the case, the safe dry run exits 0 and names what
                             --unsafe-fixes would add
and in the case's header:
    # fix-args: --select TP101            extra arguments of both fix runs (e.g. one rule's fix alone)
    # fixed-absent: TP101                 codes `overlap check` (header args) no longer reports on NAME.fixed.yaml
    # fixed-no-fix: PP201                 codes reported there, if at all, with no fix left to offer
    # fixed-effective: key=value@source   effective values of NAME.fixed.yaml (as `effective:`)
    # unsafe-fixed-absent: / unsafe-fixed-effective:   the same for NAME.unsafe.fixed.yaml
Every fixed output is a fixed point: fixing it again changes nothing. Regenerate the files after a
deliberate change of a rule's fix (then read the diff):
    python tests/rules/test_fix_rules.py --regenerate
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, when run as a script
from caselib import CASES, CASES_DIR, FIXED_SUFFIX, fixed_path, parse_expected, read_header
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
EXAMPLES = ROOT / "examples"

MISSING = object()


def get(data, dotted: str):
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def run_fix(run_cli, tmp_path, src: Path, *args):
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    code, out, err = run_cli("fix", dst, "--write", *args)
    return code, dst, out + err


def effective(run_cli, path: Path, *args) -> tuple[dict, list]:
    """(effective values, codes reported). PP201 always reports the p2p choice (info); it counts only
    while it still offers its fix."""
    _, out, _ = run_cli("check", path, "--format", "json", *args)
    result = json.loads(out)["results"][0]
    codes = [f["code"] for f in result["findings"] if f["code"] != "PP201" or f["fix"]]
    return {k: v["value"] for k, v in result["effective"].items()}, codes


def _expected(case: Path, unsafe: bool) -> bytes:
    """What `overlap fix --write` must leave in a copy of ``case``."""
    path = fixed_path(case, unsafe)
    if path.exists():
        return path.read_bytes()
    return _expected(case, False) if unsafe else case.read_bytes()


def _check_fixed(run_cli, path: Path, args: list, absent: list, no_fix: list, effective_tokens: list, what: str):
    _, out, _ = run_cli("check", path, "--format", "json", *args)
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    codes = [f["code"] for f in result["findings"]]
    for code in absent:
        assert code not in codes, f"{what}: {code} still reported after the fix: {codes}"
    for f in result["findings"]:
        assert f["code"] not in no_fix or f["fix"] is None, f"{what}: {f['code']} still offers a fix: {f['fix']}"
    for token in effective_tokens:
        key, value, source = parse_expected(token)
        got = result["effective"][key]
        assert got["value"] == value, f"{what}: {key} = {got['value']!r} after the fix, expected {value!r}"
        if source:
            assert got["source"] == source, f"{what}: {key} source {got['source']} after the fix, expected {source}"


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_fix_output_is_the_fixed_file(case, unsafe, run_cli, tmp_path):
    h = read_header(case)
    flags = [*h["fix-args"], *(["--unsafe-fixes"] if unsafe else []), *h["args"]]
    fixed = fixed_path(case, unsafe)
    name = fixed.relative_to(ROOT) if fixed.exists() else f"{case.name} (unchanged)"
    _, dst, output = run_fix(run_cli, tmp_path, case, *flags)
    got = dst.read_bytes()
    assert got == _expected(case, unsafe), f"fix output differs from {name} (see the module doc)\n{output}"
    if unsafe and fixed.exists():
        assert got != _expected(case, False), f"{fixed.name} is the same as the safe output: delete it"
    run_cli("fix", dst, "--write", *flags)
    assert dst.read_bytes() == got, f"{case.name}: a second fix --write changed {name}"

    prefix = "unsafe-fixed" if unsafe else "fixed"
    absent, no_fix, effective_tokens = (h[f"{prefix}-{key}"] for key in ("absent", "no-fix", "effective"))
    if absent or no_fix or effective_tokens:
        assert fixed.exists(), f"{case.name}: header has {prefix}-* lines but there is no {fixed.name}"
        _check_fixed(run_cli, dst, h["args"], absent, no_fix, effective_tokens, str(name))

    if not unsafe and got == case.read_bytes() and _expected(case, True) != got:
        # Only --unsafe-fixes changes the case: the dry run applies nothing (exit 0) and says what it holds back.
        code, out, _ = run_cli("fix", case, *flags)
        assert re.search(r"\d+ more with --unsafe-fixes: ", out) and code == 0, out
        selected = h["fix-args"][h["fix-args"].index("--select") + 1] if "--select" in h["fix-args"] else None
        if selected and selected.isalnum():
            assert f"1 more with --unsafe-fixes: {selected}" in out, out


def test_every_fixed_file_belongs_to_a_case():
    names = {fixed_path(c, u) for c in CASES for u in (False, True)}
    orphans = [p.name for p in sorted(CASES_DIR.glob(f"*{FIXED_SUFFIX}")) if p not in names]
    assert not orphans, orphans


def test_cfg005_keeps_the_request_in_comm_overlap(run_cli, tmp_path):
    """ddp says false, comm_overlap asks for true: the dead ddp value goes, the request stays. Both are the
    user's words, so removing their ddp value is theirs to accept (--unsafe-fixes), and the fix says which."""
    (tmp_path / "src").mkdir()
    src = tmp_path / "src" / "config.yaml"
    src.write_text(
        "model: {tensor_model_parallel_size: 1}\nddp:\n  use_distributed_optimizer: true\n  overlap_grad_reduce: false\n"
        "comm_overlap:\n  tp_comm_overlap: false\n  overlap_grad_reduce: true\n"
    )
    _, out, _ = run_cli("check", src, "--select", "CFG005", "--world-size", "8", "--format", "json")
    fix = json.loads(out)["results"][0]["findings"][0]["fix"]
    assert fix["applicability"] == "unsafe" and fix["edits"] == [{"op": "remove", "key": "ddp.overlap_grad_reduce"}]
    assert fix["message"].endswith(f"you wrote ddp.overlap_grad_reduce: false at {src}:4)"), fix["message"]
    _, dst, output = run_fix(run_cli, tmp_path, src, "--select", "CFG005", "--world-size", "8", "--unsafe-fixes")
    data = yaml.safe_load(dst.read_text())
    assert get(data, "ddp.overlap_grad_reduce") is MISSING
    assert data["comm_overlap"]["overlap_grad_reduce"] is True
    after, codes = effective(run_cli, dst, "--world-size", "8")
    assert after["ddp.overlap_grad_reduce"] is True and "CFG005" not in codes


def test_mixed_precision_move_spells_out_the_recipe(run_cli, tmp_path):
    """MP401 turns `bf16_mixed` into a mapping; every other effective value stays as the recipe had it."""
    src = EXAMPLES / "mixed_precision_overwrite.yaml"
    before, _ = effective(run_cli, src)
    _, dst, _ = run_fix(run_cli, tmp_path, src, "--select", "MP401", "--unsafe-fixes")
    mp = yaml.safe_load(dst.read_text())["mixed_precision"]
    assert mp["_target_"] == "megatron.bridge.training.mixed_precision.MixedPrecisionConfig"
    assert mp["bf16"] is True and mp["grad_reduce_in_fp32"] is False
    after, codes = effective(run_cli, dst)
    assert after.pop("ddp.grad_reduce_in_fp32") is False and before.pop("ddp.grad_reduce_in_fp32") is True
    assert after == before and "MP401" not in codes and "MP403" not in codes


def test_pp202_then_pp201_with_unsafe_makes_p2p_overlap_work(run_cli, tmp_path):
    """The safe fix drops the crashing override; with --unsafe-fixes the next round adds the VPP, and
    Bridge then turns p2p overlap on by itself — the user's request works in the end."""
    src = EXAMPLES / "pp_without_vpp.yaml"
    _, dst, output = run_fix(run_cli, tmp_path, src, "--select", "PP", "--unsafe-fixes", "--severity-threshold", "info")
    after, codes = effective(run_cli, dst)
    assert after["model.overlap_p2p_comm"] is True and after["model.virtual_pipeline_model_parallel_size"] == 2
    assert "PP202" not in codes


def _tp102_fix(run_cli, path) -> dict:
    _, out, _ = run_cli("check", path, "--format", "json")
    return next(f["fix"] for f in json.loads(out)["results"][0]["findings"] if f["code"] == "TP102")


def test_fix_object_in_check_json(run_cli):
    """The fix object of check's JSON: its applicability, message and edits. sequence_parallel: false in a
    section Bridge serialised (``_target_``) is Bridge's value: turning it on is safe. Written by hand, it is
    the user's: the same edit is offered as unsafe, naming their line."""
    fix = _tp102_fix(run_cli, ROOT / "tests" / "data" / "tp102_dumped_model.yaml")
    assert fix["applicability"] == "safe" and fix["message"] == "set model.sequence_parallel: true (TP overlap needs sequence parallelism)"
    assert fix["edits"] == [{"op": "set", "key": "model.sequence_parallel", "value": True}]

    example = EXAMPLES / "tp_overlap_without_sp.yaml"
    fix = _tp102_fix(run_cli, example)
    assert fix["applicability"] == "unsafe" and "sequence parallelism" in fix["message"]
    assert fix["message"].endswith(f"(unsafe here: you wrote model.sequence_parallel: false at {example}:8)"), fix["message"]
    assert fix["edits"] == [{"op": "set", "key": "model.sequence_parallel", "value": True}]


# ----------------------------------------------------------------------------------------------


def regenerate() -> None:
    """Rewrite every case's NAME.fixed.yaml / NAME.unsafe.fixed.yaml from the current rules."""
    import tempfile

    from typer.testing import CliRunner

    from overlap_cli.cli.app import app

    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            h = read_header(case)
            outputs = []
            for unsafe in (False, True):
                dst = Path(tmp) / case.name
                shutil.copyfile(case, dst)
                flags = [*h["fix-args"], *(["--unsafe-fixes"] if unsafe else []), *h["args"]]
                CliRunner().invoke(app, ["fix", str(dst), "--write", *flags], catch_exceptions=False)
                outputs.append(dst.read_bytes())
            for unsafe, text, base in ((False, outputs[0], case.read_bytes()), (True, outputs[1], outputs[0])):
                path = fixed_path(case, unsafe)
                if text != base:
                    path.write_bytes(text)
                    print(f"wrote {path.relative_to(ROOT)}")
                elif path.exists():
                    path.unlink()
                    print(f"removed {path.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        sys.path.insert(0, str(ROOT))
        regenerate()
    else:
        print(__doc__)
