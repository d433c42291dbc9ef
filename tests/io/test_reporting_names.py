"""Reporting never breaks on a strange name or a strange stream: a file name that is not UTF-8 in SARIF
(an internal UnicodeEncodeError before), escape codes in a file name (printed raw, so a name could recolour
or clear the terminal), a closed stdout (an internal AttributeError), a reader that goes away, and Python
warnings from the modules the check uses (printed with their source paths)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from iolib import EXAMPLE_LAUNCH, EXAMPLE_YAML, ROOT, overlap
from overlap_cli.problems import InputProblem, printable
from overlap_cli.report.sarif import artifact_location


def _copy_as(folder, raw_name: bytes):
    path = os.path.join(os.fsencode(str(folder)), raw_name)
    with open(path, "wb") as fh:
        fh.write(EXAMPLE_YAML.read_bytes())
    return os.fsdecode(path)


def test_printable_escapes_what_a_terminal_would_act_on():
    assert printable("configs/a b.yaml") == "configs/a b.yaml"
    assert printable("x\x1b[31m.yaml") == "x\\x1b[31m.yaml"
    assert printable("a\nb\rc.yaml") == "a\\nb\\rc.yaml"
    assert printable(os.fsdecode(b"bad\xff.yaml")) == "bad\\xff.yaml"
    assert InputProblem("x\x1b[2J.yaml", "boom", line=3).one_line() == "x\\x1b[2J.yaml:3: boom"


def test_sarif_uri_of_a_name_that_is_not_utf8_is_its_bytes_percent_encoded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert artifact_location(os.fsdecode(b"sub/bad\xff name.yaml")) == {"uri": "sub/bad%FF%20name.yaml", "uriBaseId": "%SRCROOT%"}
    outside = artifact_location(os.fsdecode(b"/elsewhere/\xfe.yaml"))
    assert outside == {"uri": "file:///elsewhere/%FE.yaml"}


@pytest.mark.parametrize("fmt", ["sarif", "json", "text", "concise", "github"])
@pytest.mark.parametrize("encoding", ["", "utf-8"])  # the locale's surrogateescape, and strict UTF-8
def test_report_on_a_name_that_is_not_utf8(tmp_path, fmt, encoding):
    path = _copy_as(tmp_path, b"bad\xff.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if encoding:
        env["PYTHONIOENCODING"] = encoding
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", path, "--format", fmt], capture_output=True,
                          timeout=60, env=env, cwd=tmp_path)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1 and "Traceback" not in err and "internal error" not in err, err
    out = proc.stdout.decode("utf-8", "strict")  # every format is UTF-8 text
    if fmt == "github":  # the byte as its backslash escape: no workflow command carries bytes that are not text
        assert "file=" + path.replace(os.fsdecode(b"\xff"), "\\xff") + ",line=8,col=3,title=TP102::" in out
    if fmt == "sarif":
        uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(out)["runs"][0]["results"] for loc in r["locations"]}
        assert uris == {"bad%FF.yaml"}
    elif fmt == "json":
        assert json.loads(out)["results"][0]["findings"][0]["code"] == "TP102"
    assert "TP102" in out


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_escape_codes_in_a_file_name_are_printed_escaped(tmp_path, fmt):
    path = _copy_as(tmp_path, b"x\x1b]0;pwned\x07\x1b[2J.yaml")
    broken = tmp_path / "y\x1b[31m.yaml"
    broken.write_text("model: [\n")
    code, out, err = overlap("check", path, broken, "--format", fmt)
    assert code == 2
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "x\\x1b]0;pwned\\x07\\x1b[2J.yaml:8:3: TP102" in out
    assert [ln for ln in err.splitlines() if ln.startswith(str(tmp_path / "y\\x1b[31m.yaml:"))], err


def test_github_annotations_escape_what_the_runner_would_act_on(tmp_path):
    """GitHub's workflow commands: ``%``, CR and LF escaped everywhere and ``:`` / ``,`` in properties (the
    runner undoes these); an escape sequence, a bell or a name that is not UTF-8 as its backslash escape."""
    path = _copy_as(tmp_path, b"x\x1b]0;pwned\x07,a:b%.yaml")
    broken = tmp_path / "y\x1b[31m\nz.yaml"
    broken.write_text("model: [\n")
    code, out, err = overlap("check", path, broken, "--format", "github")
    assert code == 2
    assert "\x1b" not in out + err and "\x07" not in out + err
    lines = out.splitlines()
    assert all(ln.startswith("::") or ln[:1].isdigit() for ln in lines), lines  # no name forged a line
    named = str(tmp_path).replace(":", "%3A").replace(",", "%2C")
    assert f"::warning file={named}/x\\x1b]0;pwned\\x07%2Ca%3Ab%25.yaml,line=8,col=3,title=TP102::" in out
    assert f"::error file={named}/y\\x1b[31m%0Az.yaml,line=2,col=1,title=overlap%3A cannot check::" in out


def test_closed_stdout_is_no_internal_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for redirect in (">&-", ">&- 2>&-"):
        cmd = f'"{sys.executable}" -m overlap_cli check "{EXAMPLE_YAML}" {redirect}; echo "rc=$?" > "{tmp_path / "rc"}"'
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60, env=env)
        assert (tmp_path / "rc").read_text().strip() == "rc=1"
        assert proc.stderr == b"" and proc.stdout == b""


@pytest.mark.parametrize("fmt", ["text", "sarif", "json"])
def test_reader_that_reads_nothing(fmt):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = f'"{sys.executable}" -m overlap_cli check "{EXAMPLE_YAML}" --format {fmt} | head -c 0; echo "rc=${{PIPESTATUS[0]}}"'
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60, env=env)
    assert proc.stdout.strip() == "rc=1" and proc.stderr == "", proc.stderr


def test_python_warnings_do_not_leak(tmp_path):
    """A glob that Python's re reads as a possible nested set warned on stderr, with this package's paths."""
    script = tmp_path / "launch.sh"
    script.write_text('A=x\nif [[ "$A" == [[a]* ]]; then B=2; fi\ncase "$A" in [[x]) B=1;; esac\n'
                      + EXAMPLE_LAUNCH.read_text())
    code, out, err = overlap("check", script)
    assert code == 1 and "LM101" in out
    assert "Warning" not in err and "overlap_cli/" not in err, err
