"""-o FILE and --annotate-output FILE: never a file the run reads (each of these was replaced by the report
before), never a FIFO nobody reads (the run hung), nothing written when refused; and the atomic write leaves
no temp file behind, whether the run ends by SIGTERM, SIGINT or SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from iolib import EXAMPLE_YAML, HANG_GUARD, ROOT, assert_one_error_line, launch_sourcing, overlap
from overlap_cli.fix.write import TEMP_SUFFIX, atomic_write, remove_stale_temps


def _read_inputs(tmp_path):
    """{what: (the command's words, the file it reads that an output must not replace)}."""
    env = tmp_path / "env.sh"
    env.write_text("export NCCL_DEBUG=INFO\n")
    script = launch_sourcing(tmp_path, "./env.sh")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.overlap]\ngpu = "h100"\n')
    (project / "c.yaml").write_text(EXAMPLE_YAML.read_text())
    settings = tmp_path / "overlap.toml"
    settings.write_text('[tool.overlap]\ngpu = "h100"\n')
    base = tmp_path / "base.yaml"
    base.write_text(EXAMPLE_YAML.read_text())
    override = tmp_path / "over.yaml"
    override.write_text("model:\n  sequence_parallel: true\n")
    runpy = tmp_path / "run.py"
    runpy.write_text("from megatron.bridge.training.config import ConfigContainer\n\n"
                     "def run():\n    cfg = ConfigContainer.from_yaml('base.yaml')\n    return cfg\n")
    return {
        "sourced env.sh": ((script,), env),
        "pyproject.toml": ((project / "c.yaml",), project / "pyproject.toml"),
        "--settings": ((EXAMPLE_YAML, "--settings", settings), settings),
        "--base": (("--base", base, override), base),
        "the checked file": ((EXAMPLE_YAML,), EXAMPLE_YAML),
        "from_yaml base": ((runpy,), base),
    }


@pytest.mark.parametrize("what", ["sourced env.sh", "pyproject.toml", "--settings", "--base", "from_yaml base"])
@pytest.mark.parametrize("flag", ["-o", "--annotate-output"])
def test_output_never_replaces_a_file_the_run_reads(tmp_path, what, flag):
    args, victim = _read_inputs(tmp_path)[what]
    before = victim.read_bytes()
    code, out, err = overlap("check", *args, flag, victim, cwd=tmp_path)
    assert_one_error_line(code, out, err, str(victim), "must not be an input file (the check reads it)")
    assert victim.read_bytes() == before
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def test_output_to_a_fifo_without_a_reader_is_refused(tmp_path):
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    code, out, err = overlap("check", EXAMPLE_YAML, "-o", fifo)
    assert_one_error_line(code, out, err, str(fifo), "FIFO that nothing reads")


def test_output_to_a_fifo_with_a_reader_is_written_in_place(tmp_path):
    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()  # blocks in open() until the CLI opens the FIFO for writing
    code, out, err = overlap("check", EXAMPLE_YAML, "-o", fifo, "--format", "json")
    reader.join(HANG_GUARD)
    assert code == 1, err
    assert got and b'"TP102"' in got[0]
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still the FIFO, not replaced by a file


def test_output_to_a_new_file_and_to_dev_null(tmp_path):
    report = tmp_path / "report.txt"
    code, out, err = overlap("check", EXAMPLE_YAML, "-o", report)
    assert code == 1 and out == "" and "TP102" in report.read_text(), err
    code, out, err = overlap("check", EXAMPLE_YAML, "-o", "/dev/null")
    assert code == 1 and out == "", err


# -- the atomic write under signals ------------------------------------------------------------------------

_WRITER = """
import os, signal, sys, time
from overlap_cli.fix import write
sig = int(sys.argv[2])
real_fsync = os.fsync
def fsync_then_signal(fd):
    real_fsync(fd)
    os.kill(os.getpid(), sig)
    time.sleep(5)
os.fsync = fsync_then_signal
write.atomic_write(sys.argv[1], "new text\\n" * 1000)
"""


def _write_with_signal(target, sig):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _WRITER, str(target), str(int(sig))], capture_output=True,
                          text=True, timeout=HANG_GUARD, env=env)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_a_write_removes_the_temp_file(tmp_path, sig):
    target = tmp_path / "config.yaml"
    target.write_text("old\n")
    proc = _write_with_signal(target, sig)
    assert proc.returncode != 0
    assert target.read_text() == "old\n"  # the write never happened
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"], proc.stderr


def test_stale_temp_of_a_killed_run_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "config.yaml"
    target.write_text("old\n")
    proc = _write_with_signal(target, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir() if p.name != "config.yaml"]
    assert len(left) == 1 and left[0].startswith(".config.yaml.") and left[0].endswith(TEMP_SUFFIX)
    # files that merely look alike are never touched: another file's temp, a link, a live writer's temp
    other = tmp_path / f".other.yaml.1-abcdef-AAAAAAAA{TEMP_SUFFIX}"
    other.write_text("x")
    link = tmp_path / f".config.yaml.2-abcdef-BBBBBBBB{TEMP_SUFFIX}"
    link.symlink_to(target)
    live = tmp_path / f".config.yaml.{os.getpid()}-{left[0].split('-')[1]}-CCCCCCCC{TEMP_SUFFIX}"
    live.write_text("x")
    atomic_write(str(target), "new\n")
    assert target.read_text() == "new\n"
    remaining = sorted(p.name for p in tmp_path.iterdir())
    assert remaining == sorted(["config.yaml", other.name, link.name, live.name]), remaining
    assert remove_stale_temps(str(target)) == []


def test_old_temp_of_an_unknown_writer_is_removed_after_an_hour(tmp_path):
    target = tmp_path / "config.yaml"
    target.write_text("old\n")
    old = tmp_path / f".config.yaml.k3j_x9Qa{TEMP_SUFFIX}"  # the name mkstemp gave before temps named their writer
    old.write_text("partial")
    young = tmp_path / f".config.yaml.zzzzzzzz{TEMP_SUFFIX}"
    young.write_text("partial")
    os.utime(old, (0, 0))
    assert remove_stale_temps(str(target)) == [old.name]
    assert young.exists()


def test_output_never_replaces_a_file_a_worker_process_read(tmp_path):
    """With --jobs the files are read in worker processes: what they read counts as much as the parent's."""
    for i in range(40):
        (tmp_path / f"c{i:02d}.yaml").write_text(EXAMPLE_YAML.read_text())
    (tmp_path / ".conf").mkdir()  # a hidden folder: the walk never reads it, only the launch's reader does
    env = tmp_path / ".conf" / "env.sh"
    env.write_text("export NCCL_DEBUG=INFO\n")
    launch_sourcing(tmp_path, "./.conf/env.sh", name="zz_launch.sh")  # last in the walk's order: a worker reads it
    code, out, err = overlap("check", tmp_path, "--jobs", "2", "-o", env, cwd=tmp_path)
    assert_one_error_line(code, out, err, str(env), "must not be an input file (the check reads it)")
    assert env.read_text() == "export NCCL_DEBUG=INFO\n"
