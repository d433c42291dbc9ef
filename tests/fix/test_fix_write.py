"""`overlap fix --write` writes atomically: a temporary file in the same folder, fsynced, the original mode
kept, then os.replace. A symlink's target is written; read-only files and folders are refused (exit 2)
and left intact; a writer killed mid-way leaves the old or the new content, never a mix."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
# TP overlap requested over a model section Bridge serialised (``_target_``): its sequence_parallel: false is
# Bridge's value, not the user's, so turning it on is a safe fix (TP102) and `fix --write` writes the file.
CONFIG = (ROOT / "tests" / "data" / "tp102_dumped_model.yaml").read_text(encoding="utf-8")


def copy_example(tmp_path: Path, name: str = "config.yaml") -> Path:
    dst = tmp_path / name
    dst.write_text(CONFIG, encoding="utf-8")
    return dst


def test_mode_is_kept(run_cli, tmp_path):
    path = copy_example(tmp_path)
    os.chmod(path, 0o640)
    code, out, err = run_cli("fix", path, "--write")
    assert code == 0, out + err
    assert path.read_bytes() != CONFIG.encode()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".overlap-tmp")]


def test_symlink_target_is_written_and_link_kept(run_cli, tmp_path):
    real = copy_example(tmp_path, "real.yaml")
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "config.yaml"
    link.symlink_to(real)
    code, out, err = run_cli("fix", link, "--write")
    assert code == 0, out + err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "sequence_parallel: true" in real.read_text()
    assert not list((tmp_path / "links").iterdir())[1:]  # nothing but the link in the link's folder


def test_read_only_file_is_refused_and_intact(run_cli, tmp_path):
    path = copy_example(tmp_path)
    os.chmod(path, 0o444)
    code, out, err = run_cli("fix", path, "--write")
    assert code == 2
    assert "cannot write" in err and "read-only" in err
    assert path.read_bytes() == CONFIG.encode()


def test_read_only_folder_is_refused_and_intact(run_cli, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = copy_example(folder)
    os.chmod(folder, 0o555)
    try:
        code, out, err = run_cli("fix", path, "--write")
        assert code == 2
        assert "read-only" in err
        assert path.read_bytes() == CONFIG.encode()
        assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"]
    finally:
        os.chmod(folder, 0o755)


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from overlap_cli.fix.write import atomic_write
    path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
    texts = [open(old).read(), open(new).read()]
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write(path, texts[i % 2])
        i += 1
    """
)


def test_killed_writer_leaves_old_or_new_never_a_mix(tmp_path):
    """SIGKILL a process that keeps rewriting a ~4 MB file; after each kill the file is one whole version."""
    old = "# old\n" + "a: " + "x" * (4 << 20) + "\n"
    new = "# new\n" + "b: " + "y" * (4 << 20) + "\n"
    (tmp_path / "old.txt").write_text(old)
    (tmp_path / "new.txt").write_text(new)
    target = tmp_path / "config.yaml"
    target.write_text(old)
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    seen = set()
    for attempt in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(target), str(tmp_path / "old.txt"), str(tmp_path / "new.txt")],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.037 * attempt)  # land at different points of the write loop
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        content = target.read_text()
        assert content in (old, new), f"torn file after kill #{attempt}: {len(content)} bytes"
        seen.add(content[:5])
    # Both versions turn up across the kills, so the kills did land inside the rewrite loop.
    assert seen == {"# old", "# new"}
    # Temporary files of killed writers may remain (nothing can clean up after SIGKILL); never the target.
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".overlap-tmp")]
    assert all(p.name.startswith(".config.yaml.") for p in leftovers)


def test_killed_fix_leaves_the_config_old_or_fixed(tmp_path):
    """The same through the real command: kill `overlap fix --write` at some point; the config is whole."""
    reference = copy_example(tmp_path, "reference.yaml")
    subprocess.run([sys.executable, "-m", "overlap_cli", "fix", str(reference), "--write"], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)
    fixed_text = reference.read_text()
    assert fixed_text != CONFIG and "sequence_parallel: true" in fixed_text
    for delay in (0.05, 0.2, 0.4, 0.8):
        path = copy_example(tmp_path, f"c{int(delay * 100)}.yaml")
        proc = subprocess.Popen([sys.executable, "-m", "overlap_cli", "fix", str(path), "--write"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert path.read_text() in (CONFIG, fixed_text)


@pytest.mark.skipif(shutil.which("overlap") is None and not Path(sys.executable).with_name("overlap").exists(),
                    reason="the console script is not installed")
def test_installed_command_fixes_a_copy(tmp_path):
    """Once through the installed `overlap` console script, in a real process."""
    exe = shutil.which("overlap") or str(Path(sys.executable).with_name("overlap"))
    path = copy_example(tmp_path)
    diff = subprocess.run([exe, "fix", str(path), "--diff"], capture_output=True, text=True, timeout=120)
    assert diff.returncode == 1, diff.stderr
    assert f"--- {path}" in diff.stdout and "+  sequence_parallel: true" in diff.stdout
    assert path.read_bytes() == CONFIG.encode()  # --diff writes nothing
    done = subprocess.run([exe, "fix", str(path), "--write"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    again = subprocess.run([exe, "fix", str(path), "--diff"], capture_output=True, text=True, timeout=120)
    assert (again.returncode, again.stdout) == (0, "")
    check = subprocess.run([exe, "check", str(path), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert '"applicability": "safe"' not in check.stdout


def test_report_to_a_pipe_writes_through_and_keeps_the_pipe(tmp_path):
    """`-o FIFO` (or /dev/stdout, /dev/null) must write into it: replacing a device or a pipe with a
    regular file is what a temp-file-and-rename write would do, and as root it would succeed."""
    import stat
    import threading

    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "overlap_cli", "check", str(ROOT / "examples" / "pp_without_vpp.yaml"),
         "--world-size", "64", "--format", "json", "-o", str(fifo)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    reader.join(timeout=30)
    assert p.returncode == 1, p.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and '"version": 1' in got[0]
    p = subprocess.run(
        [sys.executable, "-m", "overlap_cli", "check", str(ROOT / "examples" / "pp_without_vpp.yaml"), "-o", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
