"""Atomic file writes: temp file in the same folder, flush + fsync, keep the mode, os.replace.

A reader (or a crash) sees either the old content or the new one, never a mix. A symlink is followed
and its target is replaced, so the link itself survives. A character device or a FIFO is written to in
place (a report sent to ``/dev/stdout`` or a pipe must not replace it with a regular file), a FIFO only
when a reader holds it open: opening one for writing would otherwise wait for a reader forever.

The temp file is ``.NAME.PID-HOST-XXXXXXXX.overlap-tmp``: SIGTERM, SIGINT or SIGHUP during the write
removes it before the process ends, and one left by a run that was killed outright (SIGKILL, a power cut)
is recognised by its name — this file's, written by a process of this host that is gone, or an hour old —
and removed by the next write of the same file.
"""

from __future__ import annotations

import os
import stat

TEMP_SUFFIX = ".overlap-tmp"
STALE_AFTER_S = 3600  # a temp file of another host (or an unknown writer) this old is a dead run's
_NAME_CHARS = 150  # of the target's name in a temp name (a file name is at most 255 bytes)


def atomic_write(path: str, text: str) -> None:
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        fd = open_special(real, st, path)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    # The mode bits count even for root, who could write anyway: a file or folder marked read-only is
    # a "do not touch" the user can see in `ls -l`.
    if os.path.exists(real) and (not os.access(real, os.W_OK) or not mode & 0o222):
        raise PermissionError(13, "file is read-only", path)
    if not os.access(folder, os.W_OK) or not stat.S_IMODE(os.stat(folder).st_mode) & 0o222:
        raise PermissionError(13, "folder is read-only (the new file is written next to the old one)", folder)
    remove_stale_temps(real)
    with _signals_end_the_write():
        _replace(real, folder, text, mode)
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _replace(real: str, folder: str, text: str, mode: int) -> None:
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(os.path.basename(real)), suffix=TEMP_SUFFIX, dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:  # also SystemExit from a signal (_signals_end_the_write) and KeyboardInterrupt
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def open_special(real: str, st, shown: str) -> int:
    """A descriptor open for writing on a FIFO with a reader or a character device; OSError for anything
    else (a FIFO nobody reads, a socket, a block device, a folder), naming ``shown``."""
    import errno

    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", shown)
    if stat.S_ISFIFO(st.st_mode):
        try:
            fd = os.open(real, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise OSError(errno.ENXIO, "a FIFO that nothing reads; refusing to wait for a reader", shown) from None
            raise
        os.set_blocking(fd, True)
        return fd
    if stat.S_ISCHR(st.st_mode):
        return os.open(real, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    raise OSError(errno.EINVAL, "not a regular file, a FIFO or a terminal/character device", shown)


def _temp_prefix(name: str) -> str:
    return f".{name[:_NAME_CHARS]}.{os.getpid()}-{_host_tag()}-"


def _host_tag() -> str:
    import socket
    import zlib

    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')) & 0xFFFFFF:06x}"


def remove_stale_temps(real: str) -> list:
    """Remove this file's temp files left by runs that no longer exist; returns their names. Only a regular
    file (not a link) owned by this user, named exactly as ``_temp_prefix`` names this file's, is removed:
    one whose writer on this host is gone (its PID is not running), or any such file an hour old (another
    host's, or one written before temp names carried their writer)."""
    import re
    import time

    folder, name = os.path.split(real)
    pattern = re.compile(re.escape(f".{name[:_NAME_CHARS]}.") + r"(?:(\d+)-([0-9a-f]{6})-)?[A-Za-z0-9_]{8}"
                         + re.escape(TEMP_SUFFIX))
    removed = []
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return removed
    now, host = time.time(), None
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None:
            continue
        full = os.path.join(folder, entry)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            continue
        host = host or _host_tag()
        dead = m.group(1) is not None and m.group(2) == host and not _running(int(m.group(1)))
        if dead or now - st.st_mtime > STALE_AFTER_S:
            try:
                os.unlink(full)
                removed.append(entry)
            except OSError:
                pass
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


class _signals_end_the_write:
    """While a temp file exists: SIGTERM and SIGHUP end the process as SystemExit (128 + the signal, the
    shell's code) instead of killing it where it stands, so ``_replace`` removes the temp file on the way
    out; SIGINT already arrives as KeyboardInterrupt. Only the main thread can set handlers; elsewhere the
    handlers stay as they are."""

    def __enter__(self):
        import signal
        import threading

        self.old = {}
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, None):
                self.old[sig] = signal.signal(sig, _end)
        return self

    def __exit__(self, *exc):
        import signal

        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


def _end(signum, _frame):
    raise SystemExit(128 + signum)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
