"""Run a command with its stdout on a pseudo-terminal of a given width (what a user's terminal looks like to
rich and to ``sys.stdout.isatty()``). POSIX only; callers skip where ``pty`` is missing."""

from __future__ import annotations

import os
import re
import subprocess

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_tty(args, columns: int = 80, cwd=None, env=None, timeout: float = 120) -> tuple[int, str, str]:
    """(exit code, stdout as the terminal shows it without colour codes, stderr)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = dict(os.environ if env is None else env)
    env.update(COLUMNS=str(columns), TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    err = proc.stderr.read()
    proc.wait(timeout)
    proc.stderr.close()
    os.close(master)
    out = _ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")
    return proc.returncode, out, err.decode("utf-8", "replace")
