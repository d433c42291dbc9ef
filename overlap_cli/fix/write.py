"""Atomic file writes: temp file in the same folder, flush + fsync, keep the mode, os.replace.

A reader (or a crash) sees either the old content or the new one, never a mix. A symlink is followed
and its target is replaced, so the link itself survives. A device or a pipe is written to in place: a
report sent to ``/dev/stdout`` or a FIFO must not replace it with a regular file.
"""

from __future__ import annotations

import os
import stat
import tempfile


def atomic_write(path: str, text: str) -> None:
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "is a directory", path)
        # A device or a pipe (-o /dev/stdout, /dev/null, a FIFO): written to, never replaced by a file.
        with open(real, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    # The mode bits count even for root, who could write anyway: a file or folder marked read-only is
    # a "do not touch" the user can see in `ls -l`.
    if os.path.exists(real) and (not os.access(real, os.W_OK) or not mode & 0o222):
        raise PermissionError(13, "file is read-only", path)
    if not os.access(folder, os.W_OK) or not stat.S_IMODE(os.stat(folder).st_mode) & 0o222:
        raise PermissionError(13, "folder is read-only (the new file is written next to the old one)", folder)
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
