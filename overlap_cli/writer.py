"""Atomic file writes: temp file in the same folder, flush + fsync, keep the mode, os.replace.

A reader (or a crash) sees either the old content or the new one, never a mix. A symlink is followed
and its target is replaced, so the link itself survives.
"""

from __future__ import annotations

import os
import stat
import tempfile


def atomic_write(path: str, text: str) -> None:
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    if os.path.exists(real) and not os.access(real, os.W_OK):
        raise PermissionError(13, "file is read-only", path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".overlap-tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
