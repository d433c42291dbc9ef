"""Every upstream ``file:line`` a Megatron-Bridge result prints is the checked release's line
(frameworks/bridge/cites.py through the line maps tools/build_bridge_release_lines.py writes, releases/lines-X.json).

Through the CLI: a CFG010 / PP209 finding and an effective value's reason under an older release print that
release's line, and the test reads that line in the release's own source (the wheels unpacked under
``OVERLAP_RELEASE_SOURCES``, default /tmp/src; main: ../shared/upstream/Megatron-Bridge/src) and finds the
statement the check mirrors there; the same run under the newest release prints its line unchanged. A test that
needs a release's source skips, saying so, where it is not there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SOURCES = Path(os.environ.get("OVERLAP_RELEASE_SOURCES") or "/tmp/src")
MAIN_BRIDGE = ROOT.parent / "shared" / "upstream" / "Megatron-Bridge" / "src"
CASES = ROOT / "tests" / "cases"
CONFIG = "megatron/bridge/training/config.py"
TC = "megatron/core/transformer/transformer_config.py"
LAYOUT = "megatron/core/transformer/pipeline_parallel_layer_layout.py"
PROVIDER = "megatron/bridge/models/gpt_provider.py"


def _bridge():
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE


def _older() -> list:
    return [v for v in _bridge().versions() if v != _bridge().newest()]


def _tree(version: str, path: str) -> Path:
    """The folder holding ``megatron/`` that has ``path`` in Bridge ``version`` (its own core for a core file)."""
    if path.startswith("megatron/bridge/"):
        return MAIN_BRIDGE if version == "main" else SOURCES / f"megatron_bridge-{version}"
    return SOURCES / f"megatron_core-{_bridge().get(version).CORE_VERSION}"


def _need_sources(*versions) -> None:
    for version in versions:
        for path in (CONFIG, TC):
            if not (_tree(version, path) / path).is_file():
                pytest.skip(f"no source of Megatron-Bridge {version} / megatron-core "
                            f"{_bridge().get(version).CORE_VERSION} under {SOURCES} (set OVERLAP_RELEASE_SOURCES)")


def _line(version: str, path: str, line: int) -> str:
    return (_tree(version, path) / path).read_text(encoding="utf-8").splitlines()[line - 1]


def _tool():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_bridge_release_lines
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return build_bridge_release_lines


def _check(run_cli, *args) -> list:
    code, out, err = run_cli("check", *map(str, args), "--format", "json", "--show-info")
    assert code in (0, 1) or (code == 2 and out), err  # a folder may hold a file that is an input error
    return json.loads(out)["results"]


def _finding(run_cli, case: str, code: str, version: str) -> str:
    (result,) = _check(run_cli, CASES / case, "--world-size", "8", "--bridge-version", version)
    assert result["error"] is None, result["error"]
    (message,) = [f["message"] for f in result["findings"] if f["code"] == code]
    return message


def _cited(message: str, path: str) -> int:
    """The line ``message`` cites in ``path`` (its only cite of that file)."""
    from overlap_cli.frameworks.cites import CITE

    (line,) = {int(m.group(3)) for m in CITE.finditer(message) if m.group(1) == path}
    return line


# -- through the CLI: the release's line, holding the statement the check mirrors ---------------------------

# (case, code, path, what the cited line opens with in every release)
FINDINGS = [
    ("cfg010_seq_length_mismatch.yaml", "CFG010", CONFIG, "assert self.model.seq_length == data_seq_length"),
    ("cfg010_fp8_param_without_fp8.yaml", "CFG010", TC, 'raise ValueError("fp8_param must be used together with fp8 mode.")'),
    ("pp209_layout_layers.yaml", "PP209", LAYOUT, "assert self.flatten_layout.count(LayerType.decoder) == num_layers"),
    ("pp209_chunks_differ.yaml", "PP209", PROVIDER, "assert (self.num_layers // p_size) % vp_size == 0"),
]


@pytest.mark.parametrize("case, code, path, statement", FINDINGS)
def test_the_newest_release_prints_its_own_line_unchanged(run_cli, case, code, path, statement):
    newest = _bridge().newest()
    message = _finding(run_cli, case, code, newest)
    line = _cited(message, path)
    assert f"{path}:{line})" in message and " in Megatron-Bridge" not in message and " in megatron-core" not in message
    # the line the mirror is written against
    from overlap_cli.frameworks.raises import Raise
    from overlap_cli.rules import cfg_validate, pp_split

    ats = {r.at for m in (cfg_validate, pp_split) for v in vars(m).values() if isinstance(v, tuple)
           for r in v if isinstance(r, Raise)}
    assert f"{path}:{line}" in ats
    if (_tree(newest, path) / path).is_file():
        assert _line(newest, path, line).strip().startswith(statement)


@pytest.mark.parametrize("version", ["0.4.2", "0.5.1", "0.6.0", "main"])
@pytest.mark.parametrize("case, code, path, statement", FINDINGS)
def test_an_older_release_prints_the_line_of_its_own_source(run_cli, version, case, code, path, statement):
    _need_sources(version)
    message = _finding(run_cli, case, code, version)
    line = _cited(message, path)
    assert " in Megatron-Bridge" not in message and " in megatron-core" not in message
    assert _line(version, path, line).strip().startswith(statement), (version, path, line)


def test_the_releases_print_different_lines_for_one_check(run_cli):
    """0.4.2's config.py is 255 lines shorter before the sequence-length assert: a cite left in 0.6.2's terms
    would name another statement there."""
    lines = {v: _cited(_finding(run_cli, "cfg010_seq_length_mismatch.yaml", "CFG010", v), CONFIG)
             for v in ("0.4.2", "0.5.1", "0.6.2")}
    assert len(set(lines.values())) == 3, lines
    assert lines["0.6.2"] == 1505


def _reason(run_cli, version: str, key: str) -> str:
    (result,) = _check(run_cli, CASES / "cfg001_no_section.yaml", "--world-size", "8", "--bridge-version", version)
    assert result["error"] is None, result["error"]
    return result["effective"][key]["reason"]


def test_an_effective_value_s_reason_cites_the_release_s_line(run_cli):
    """env.TORCH_NCCL_HIGH_PRIORITY's reason cites the recipes' environment table: 0.6.0 and main have it (at
    their line, holding the variable); 0.4.2 and 0.5.1 have no such file, so the reason keeps 0.6.2's line and
    says whose it is."""
    key, path = "env.TORCH_NCCL_HIGH_PRIORITY", "megatron/bridge/recipes/utils/environment_utils.py"
    written = "recipes/utils/environment_utils.py"
    newest = _reason(run_cli, "0.6.2", key)
    assert f"{written}:32)" in newest
    for version in ("0.6.0", "main"):
        reason = _reason(run_cli, version, key)
        line = _cited(reason, written)
        assert " in Megatron-Bridge" not in reason
        if (_tree(version, path) / path).is_file():
            assert '"TORCH_NCCL_HIGH_PRIORITY"' in _line(version, path, line)
    for version in ("0.4.2", "0.5.1"):
        reason = _reason(run_cli, version, key)
        assert f"{written}:32 in Megatron-Bridge 0.6.2)" in reason, reason
        if (_tree(version, CONFIG) / CONFIG).is_file():
            assert not (_tree(version, path) / path).exists()


# -- the maps -------------------------------------------------------------------------------------------------


def _doc(version: str) -> dict:
    from overlap_cli.frameworks.bridge.releases import lines_file

    return json.loads(Path(lines_file(_bridge().get(version))).read_text(encoding="utf-8"))


def test_every_release_but_the_newest_has_its_line_map():
    from overlap_cli.frameworks.bridge.releases import lines_file

    assert lines_file(_bridge().get(_bridge().newest())) is None
    assert all(lines_file(_bridge().get(v)) is not None for v in _older())


@pytest.mark.parametrize("version", _older())
def test_the_line_map_is_what_the_tool_builds_from_the_sources(version):
    _need_sources(version, _bridge().newest())
    assert _tool().build(version, SOURCES) == _doc(version), "a cite changed: run python tools/build_bridge_release_lines.py"


@pytest.mark.parametrize("version", _older())
def test_each_mapped_line_is_the_same_source_line(version):
    newest = _bridge().newest()
    _need_sources(version, newest)
    doc = _doc(version)
    assert doc["release"] == version and doc["core"] == _bridge().get(version).CORE_VERSION
    for path, lines in doc["files"].items():
        for new, old in lines.items():
            assert _line(newest, path, int(new)).strip() == _line(version, path, old).strip(), (path, new, old)
    for path, lines in doc["changed"].items():  # a line the release changed or lacks has no place in the map
        assert not set(map(str, lines)) & set(doc["files"].get(path, {})), path


@pytest.mark.parametrize("version", _older())
def test_no_line_a_release_states_itself_is_one_the_map_moves(version):
    """The rules print a release's own lines (its data module's ``*_AT`` and EP tables) as they are; such a line
    must not also be a newest-release cite that release has elsewhere, or the two could not be told apart."""
    from overlap_cli.frameworks.bridge.cites import own_cites

    doc = _doc(version)
    own = own_cites(_bridge().get(version), doc["names"])
    assert own
    moved = {(p, int(n)) for p, lines in doc["files"].items() for n, o in lines.items() if int(n) != o}
    moved |= {(p, n) for p, lines in doc["changed"].items() for n in lines}
    assert own & moved == set()


def test_how_many_cites_each_release_maps():
    counts = {v: (sum(len(x) for x in _doc(v)["files"].values()), sum(len(x) for x in _doc(v)["changed"].values()))
              for v in _older()}
    assert all(mapped >= 50 for mapped, _ in counts.values()), counts
    assert counts["0.6.0"][1] == 0 and counts["main"][1] == 0  # 0.6.0 and main hold every cited line
    assert counts["0.4.2"][1] > counts["0.5.1"][1] > 0  # the older, the more lines changed


def _printed(results) -> list:
    """(text, release) of every message, fix title and effective reason of the Megatron-Bridge runs' results (a
    NeMo-RL config names a Bridge release too: its result is not a Bridge run's)."""
    from overlap_cli import forms

    out = []
    for r in results:
        release = (r.get("release") or {}).get("megatron-bridge")
        if release is None or r["error"] is not None:
            continue
        path = Path(r["file"])
        if forms.form_of(str(path), path.read_text(encoding="utf-8"), None).FRAMEWORK != "bridge":
            continue
        out += [(f["message"], release) for f in r["findings"]]
        out += [(f["fix"]["message"], release) for f in r["findings"] if f["fix"]]
        out += [(v["reason"], release) for v in (r["effective"] or {}).values()]
    return out


def test_every_upstream_line_a_newest_release_run_prints_is_in_the_maps(run_cli):
    """Each ``file:line`` of a Megatron-Bridge or megatron-core file that the cases and examples print under the
    newest release (a case may name another release) is one the tool collected, or one the release's data
    states: the maps hold where it is in every other release."""
    newest = _bridge().newest()
    _need_sources(newest)
    tool = _tool()
    paths = tool.spellings(tool.newest_trees(SOURCES)[2:])
    doc = _doc("0.4.2")
    collected = {(p, int(n)) for p, lines in doc["files"].items() for n in lines}
    collected |= {(p, n) for p, lines in doc["changed"].items() for n in lines}
    from overlap_cli.frameworks.bridge.cites import own_cites
    from overlap_cli.frameworks.cites import CITE

    own = own_cites(_bridge().get(newest), doc["names"])  # its data's lines: every release states its own
    seen = 0
    for text, release in _printed(_check(run_cli, CASES, ROOT / "examples", "--world-size", "8")):
        for m in CITE.finditer(text):
            path = tool.resolved(m.group(1), paths)
            if path is None or release != newest or (path, int(m.group(3))) in own:
                continue
            seen += 1
            assert doc["names"].get(m.group(1)) == path, m.group(0)
            assert (path, int(m.group(3))) in collected, m.group(0)
    assert seen >= 20


@pytest.mark.parametrize("version", ["0.4.2", "0.5.1"])
def test_an_older_release_prints_no_cite_the_map_does_not_account_for(run_cli, version):
    """Under an older release every upstream cite printed is the release's mapped line, a line its data states,
    or the newest release's line saying so."""
    from overlap_cli.frameworks.bridge.cites import own_cites
    from overlap_cli.frameworks.cites import CITE

    doc = _doc(version)
    own = own_cites(_bridge().get(version), doc["names"])
    theirs = {(p, o) for p, lines in doc["files"].items() for o in lines.values()}
    kinds = set()
    results = _check(run_cli, CASES, ROOT / "examples", "--world-size", "8", "--bridge-version", version)
    for text, release in _printed(results):
        assert release == version
        for m in CITE.finditer(text):
            path = doc["names"].get(m.group(1))
            if path is None:
                continue
            line, after = int(m.group(3)), text[m.end():]
            if after.startswith((" in Megatron-Bridge 0.6.2", " in megatron-core 0.19.2")):
                kinds.add("newest's")
            elif (path, line) in own:
                kinds.add("own")
            else:
                assert (path, line) in theirs, (m.group(0), text)
                kinds.add("mapped")
    assert kinds == {"newest's", "own", "mapped"}


def test_the_run_s_own_file_is_not_read_as_an_upstream_file():
    from overlap_cli.frameworks.bridge.cites import rewrite

    release = _bridge().get("0.4.2")
    co = _doc("0.4.2")["files"]["megatron/bridge/training/comm_overlap.py"]
    assert rewrite("(comm_overlap.py:522)", release) == f"(comm_overlap.py:{co['522']})" != "(comm_overlap.py:522)"
    assert rewrite("you wrote it at comm_overlap.py:522", release, {"comm_overlap.py"}) == "you wrote it at comm_overlap.py:522"
    assert rewrite("(base.py:336-536)", release) == "(base.py:336-536)"  # Transformer Engine's, not mapped


def test_the_newest_release_reads_no_line_map(run_cli):
    """A run of the newest release leaves its result as the rules wrote it: the rewriting module is never
    imported (start-up of ``overlap check``)."""
    import subprocess

    code = ("import sys; from overlap_cli.cli.fast import main; sys.argv=['overlap','check',sys.argv[1]]\n"
            "try: main()\nexcept SystemExit: pass\n"
            "print('CITES', 'overlap_cli.frameworks.bridge.cites' in sys.modules, 'overlap_cli.frameworks.cites' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(CASES / "cfg010_seq_length_mismatch.yaml")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert "CITES False False" in proc.stdout, proc.stdout + proc.stderr


def test_a_fix_title_is_rewritten_and_the_rules_own_records_are_not_touched():
    """The rewriting works on copies: a finding or fix a rule keeps (a table's record, another run's result)
    still reads in the newest release's terms, so nothing is rewritten twice."""
    from overlap_cli.forms.base import Answer
    from overlap_cli.frameworks.bridge.cites import finish
    from overlap_cli.results import Edit, Finding, Fix, Value

    co = _doc("0.4.2")["files"]["megatron/bridge/training/comm_overlap.py"]
    fix = Fix("unsafe", "as comm_overlap.py:522 asks", (Edit("set", "model.x", 1),))
    finding = Finding("EP706", "error", "asserts (comm_overlap.py:527)", "model.x", fix=fix)
    value = Value(True, "default", "see comm_overlap.py:522")
    answer = Answer(None, {"model.x": value}, [finding], None)
    finish(answer, _bridge().get("0.4.2"))
    (out,) = answer.findings
    assert out.message == f"asserts (comm_overlap.py:{co['527']})" and out.fix.message == f"as comm_overlap.py:{co['522']} asks"
    assert out.fix.edits == fix.edits and out.key == "model.x"
    assert answer.effective["model.x"].reason == f"see comm_overlap.py:{co['522']}" != value.reason
    assert (finding.message, fix.message, value.reason) == ("asserts (comm_overlap.py:527)", "as comm_overlap.py:522 asks",
                                                            "see comm_overlap.py:522")
    newest = Answer(None, {"model.x": value}, [finding], None)
    finish(newest, _bridge().get(_bridge().newest()))
    assert newest.findings[0] is finding and newest.effective["model.x"] is value


@pytest.mark.parametrize("version", ["0.4.2", "0.5.1", "0.6.0", "0.6.2", "main"])
def test_a_python_runs_refusal_cites_the_releases_line(run_cli, tmp_path, version):
    # The reader refuses ConfigContainer(1) as Python does (the dataclass is kw_only): the cited line is the
    # decorator in that release's config.py, whichever line it is on.
    _need_sources(version)
    path = tmp_path / "run.py"
    path.write_text("from megatron.bridge.training.config import ConfigContainer\ncfg = ConfigContainer(1)\n")
    code, out, err = run_cli("check", path, "--bridge-version", version)
    assert code == 2 and "ConfigContainer takes keyword arguments only" in err
    line = _cited(err, CONFIG)
    assert _line(version, CONFIG, line).strip() == "@dataclass(kw_only=True)"
    assert _line(version, CONFIG, line + 1).startswith("class ConfigContainer")
