"""Every input's bytes, read one way: small regular files only, never blocking, never unbounded.

A pre-commit hook is handed whatever paths a repository holds, and a user may point the tool at
anything. So a FIFO, a socket, a device or a ``/proc`` / ``/sys`` pseudo-file is refused from ``stat``
without being opened (opening a FIFO for reading blocks until a writer appears; ``/dev/zero`` never
ends; ``/proc/kmsg`` blocks in ``read``), the read stops at the size limit whatever the file claims,
and a file that changes while it is read is read again or reported rather than checked half-written.

Every file opened here is remembered (``was_read``): an output file (``-o``, ``--annotate-output``)
must never replace a file the run read — the checked file, a sourced ``env.sh``, a ``from_yaml`` base,
the settings TOML.

- ``read_text`` / ``read_bytes``: a whole input, or an ``InputError`` naming the file (exit 2);
- ``read_head``: the first bytes of a regular file for sniffing, or None (never an error);
- ``refusal``: why a path is not read at all, from ``stat`` alone (a folder walk skips it with that reason).
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Iterable, Optional

from overlap_cli.problems import InputError, InputProblem

# A training config is tens of kilobytes; Bridge's full dumps are ~30 KB. Anything this big is not one.
MAX_FILE_BYTES = 8 * 1024 * 1024
# How often a file that changes under us is read again before it is reported.
READ_ATTEMPTS = 3
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# Kernel pseudo-filesystems: their files are "regular" with size 0, and reading one may block (/proc/kmsg)
# or never end.
_PSEUDO_ROOTS = ("/proc", "/sys")

_read: set = set()  # (st_dev, st_ino) of every file opened for reading in this process
_pseudo_devices: Optional[frozenset] = None


def read_text(path: str, limit: int = MAX_FILE_BYTES) -> str:
    """The file's text, refusing anything that is not a small regular UTF-8 text file (a leading BOM is
    dropped). Whatever the form (YAML, a launch script, Python, TOML), a NUL byte means binary."""
    raw = read_bytes(path, limit)
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise _fail(path, "binary file (contains a NUL byte), expected text", line=line)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _fail(path, f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x})", line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes: a regular file of at most ``limit`` bytes that stayed the same while read
    (READ_ATTEMPTS reads), else an ``InputError`` naming the file. Never opens what ``stat`` says is not
    a regular file; the open itself is non-blocking and the descriptor is checked again, so a path swapped
    for a FIFO between the two calls cannot hang the run."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except PermissionError:
        raise _fail(path, "permission denied") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise _fail(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    why = _refused(path, st, limit)
    if why is not None:
        raise _fail(path, why)
    for _attempt in range(READ_ATTEMPTS):
        raw, stable = _read_bounded(path, limit)
        if stable:
            return raw
    raise _fail(path, "file changed while being read; check it again once it is written")


def read_head(path: str, size: int) -> Optional[bytes]:
    """The first ``size`` bytes of a regular file, or None for anything else or an unreadable file (the
    reader of the check then says what is wrong). For sniffing: never an error, never blocking."""
    try:
        if refusal(path) is not None:
            return None
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for a FIFO between the two calls
            return None
        _read.add((st.st_dev, st.st_ino))
        chunks, total = [], 0
        while total < size:
            chunk = os.read(fd, min(1 << 20, size - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def refusal(path: str, limit: Optional[int] = None) -> Optional[str]:
    """Why ``path`` is not read, from ``stat`` alone (nothing is opened), or None: it is a regular file
    (within ``limit`` bytes when given) or does not exist (the reader reports that)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return _refused(path, st, limit)


def was_read(path: str) -> bool:
    """Whether ``path`` names (through any link) a file this run opened for reading."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) in _read


def files_read() -> frozenset:
    """The files this process read, as (device, inode): a worker process hands them to the parent."""
    return frozenset(_read)


def note_read(keys: Iterable) -> None:
    """Files another process of this run read (``files_read`` of a worker)."""
    _read.update(keys)


def _fail(path: str, msg: str, line: Optional[int] = None) -> InputError:
    return InputError(InputProblem(path, msg, line=line))


def _refused(path: str, st: os.stat_result, limit: Optional[int]) -> Optional[str]:
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, expected a file"
    if stat.S_ISFIFO(st.st_mode):
        return "is a FIFO (named pipe), not a regular file; refusing to read it (reading it would wait for a writer)"
    if stat.S_ISSOCK(st.st_mode):
        return "is a socket, not a regular file; refusing to read it"
    if not stat.S_ISREG(st.st_mode):
        return "is a device, not a regular file; refusing to read it"
    if _is_pseudo(path, st):
        return "is a /proc or /sys pseudo-file, not a regular file; refusing to read it (its size is unknown and reading it may block)"
    if limit is not None and st.st_size > limit:
        return _too_big(st.st_size, limit)
    return None


def _too_big(size: int, limit: int) -> str:
    return (f"file is {size / 1048576:.1f} MiB; an input the check reads is far smaller "
            f"(limit {limit / 1048576:g} MiB)")


def _is_pseudo(path: str, st: os.stat_result) -> bool:
    global _pseudo_devices
    if _pseudo_devices is None:
        devices = set()
        try:
            root = os.stat("/").st_dev
            for folder in _PSEUDO_ROOTS:
                dev = os.stat(folder).st_dev
                if dev != root:  # mounted (a /proc folder on the root file system is an ordinary folder)
                    devices.add(dev)
        except OSError:
            pass
        _pseudo_devices = frozenset(devices)
    if st.st_dev in _pseudo_devices:
        return True
    # A file system mounted inside one (/proc/sys/fs/binfmt_misc, /sys/fs/cgroup) has a device of its own.
    return bool(_pseudo_devices) and os.path.abspath(path).startswith(tuple(root + "/" for root in _PSEUDO_ROOTS))


def _read_bounded(path: str, limit: int) -> tuple:
    """(bytes, whether the file stayed the same while read). Never reads past ``limit``."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise _fail(path, "file not found (it disappeared while being read)") from None
    except PermissionError:
        raise _fail(path, "permission denied") from None
    except OSError as exc:
        raise _fail(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        before = os.fstat(fd)
        why = _refused(path, before, limit)
        if why is not None:
            raise _fail(path, why)
        _read.add((before.st_dev, before.st_ino))
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        after = os.fstat(fd)
    except OSError as exc:
        raise _fail(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise _fail(path, f"file grew past the size limit ({limit / 1048576:g} MiB) while being read")
    raw = b"".join(chunks)
    same_file = before.st_mtime_ns == after.st_mtime_ns and before.st_ino == after.st_ino
    stable = same_file and before.st_size == after.st_size and len(raw) == after.st_size
    return raw, stable
