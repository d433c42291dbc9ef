"""Every input goes through config.safe_read: a FIFO, a device, a socket or a /proc file is refused from stat
(never opened, so nothing blocks), a size limit holds, and a folder walk skips such a file with its reason.
Each case ran into a hang, a MemoryError or a silent pass before the one reader existed."""

from __future__ import annotations

import os
import socket

import pytest

from iolib import EXAMPLE_YAML, assert_one_error_line, launch_sourcing, overlap
from overlap_cli.config import safe_read
from overlap_cli.problems import InputError


def _fifo(folder, name="pipe"):
    path = folder / name
    os.mkfifo(path)
    return path


# -- the reader itself ---------------------------------------------------------------------------------

@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/null", "/proc/self/status", "/proc/self/environ", "socket"])
def test_reader_refuses_what_is_not_a_regular_file(tmp_path, special):
    if special == "fifo":
        path = str(_fifo(tmp_path))
    elif special == "socket":
        path = str(tmp_path / "sock")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
        sock.close()
    else:
        path = special
        if not os.path.exists(path):
            pytest.skip(f"{path} missing")
    with pytest.raises(InputError) as info:
        safe_read.read_bytes(path)
    assert info.value.problem.file == path
    assert "not a regular file" in info.value.problem.message
    assert safe_read.refusal(path) == info.value.problem.message
    assert safe_read.read_head(path, 100) is None  # sniffing says nothing, and opens nothing


def test_reader_size_limit_names_the_limit(tmp_path):
    path = tmp_path / "big.sh"
    path.write_bytes(b"# x\n" * 300_000)  # 1.2 MB
    with pytest.raises(InputError) as info:
        safe_read.read_bytes(str(path), limit=1024 * 1024)
    assert "limit 1 MiB" in info.value.problem.message
    assert safe_read.read_bytes(str(path)) == path.read_bytes()


def test_reader_remembers_what_it_read_through_links(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_text("model: {}\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    other = tmp_path / "other.yaml"
    other.write_text("model: {}\n")
    safe_read.read_text(str(link))
    assert safe_read.was_read(str(real)) and safe_read.was_read(str(link))
    assert not safe_read.was_read(str(other)) and not safe_read.was_read(str(tmp_path / "missing"))


def test_nul_byte_anywhere_is_binary(tmp_path):
    path = tmp_path / "late_nul.yaml"
    path.write_bytes(b"model:\n" + b"  # pad\n" * 2000 + b"  x: 1\x00\n")
    with pytest.raises(InputError) as info:
        safe_read.read_text(str(path))
    assert "NUL" in info.value.problem.message and info.value.problem.line == 2002


# -- through the CLI: the inputs the issue hung on ---------------------------------------------------------

@pytest.mark.parametrize("sourced", ["fifo", "/dev/zero", "/dev/stdin", "/proc/kmsg", "/proc/self/status"])
def test_sourced_special_file_is_not_read(tmp_path, sourced):
    """``source FIFO`` blocked forever and ``source /dev/zero`` read until MemoryError; now the sourced file is
    not read (what it sets is unknown) and the launch is still checked."""
    if sourced == "fifo":
        sourced = str(_fifo(tmp_path, "env.sh"))
    elif not os.path.exists(sourced):
        pytest.skip(f"{sourced} missing")
    script = launch_sourcing(tmp_path, sourced)
    r, w = os.pipe()  # /dev/stdin: a pipe nobody ever writes to or closes
    try:
        code, out, err = overlap("check", script, stdin=r)
    finally:
        os.close(r)
        os.close(w)
    assert code == 1, (out, err)  # the example's finding: the launch was read and checked
    assert "LM101" in out and "Traceback" not in out + err


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/proc/self/status"])
def test_settings_special_file_is_refused(tmp_path, special):
    path = _fifo(tmp_path, "settings.toml") if special == "fifo" else special
    code, out, err = overlap("check", EXAMPLE_YAML, "--settings", path)
    assert_one_error_line(code, out, err, str(path), "cannot read settings", "not a regular file")


def test_pyproject_on_the_walk_up_that_is_a_fifo_is_passed_over(tmp_path):
    _fifo(tmp_path, "pyproject.toml")
    config = tmp_path / "c.yaml"
    config.write_text(EXAMPLE_YAML.read_text())
    code, out, err = overlap("check", config)
    assert code == 1 and "TP102" in out, err


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_base_special_file_is_refused(tmp_path, special):
    path = _fifo(tmp_path, "base.yaml") if special == "fifo" else special
    code, out, err = overlap("check", "--base", path, EXAMPLE_YAML)
    assert_one_error_line(code, out, err, f"--base {path}", "not a regular file")


@pytest.mark.parametrize("name", ["pipe.yaml", "pipe.sh", "pipe.py"])
def test_named_fifo_is_refused_with_one_line(tmp_path, name):
    path = _fifo(tmp_path, name)
    code, out, err = overlap("check", path)
    line = assert_one_error_line(code, out, err, "FIFO")
    assert line.startswith(str(path))


def test_folder_walk_skips_special_files_with_the_reason(tmp_path):
    """A FIFO, a link to a device and a link to /proc/kmsg in a folder: each skipped with why, never opened
    (the link to /proc/kmsg hung the walk); the real config beside them is checked."""
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "real.yaml").write_text(EXAMPLE_YAML.read_text())
    _fifo(folder, "pipe.yaml")
    (folder / "zero.yaml").symlink_to("/dev/zero")
    (folder / "kmsg.sh").symlink_to("/proc/kmsg")
    code, out, err = overlap("check", folder)
    assert code == 1 and "real.yaml:8:3: TP102" in out, (out, err)
    for name, why in (("pipe.yaml", "FIFO"), ("zero.yaml", "device"), ("kmsg.sh", "/proc")):
        lines = [ln for ln in err.splitlines() if f"{name}: skipped: not read:" in ln]
        assert len(lines) == 1 and why in lines[0], err
