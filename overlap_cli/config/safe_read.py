"""Read a config file's bytes safely: small regular UTF-8 files only, never blocking, never unbounded.

A pre-commit hook is handed whatever paths a repository holds, and a user may point the tool at
anything. So a FIFO or a device is refused from ``stat`` without being opened, the read stops at the
size limit whatever the file claims, and a file that changes while it is read is read again or
reported rather than checked half-written.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem

# A training config is tens of kilobytes; Bridge's full dumps are ~30 KB. Anything this big is not one.
MAX_FILE_BYTES = 8 * 1024 * 1024


def read_text(path: str) -> str:
    """The file's text, refusing anything that is not a small regular UTF-8 file.

    A FIFO or device is refused from ``stat`` alone, never opened (opening a FIFO for reading blocks
    until a writer appears; ``/dev/zero`` never ends). The open itself is non-blocking and the
    descriptor is checked again, so a path swapped for a FIFO between the two calls cannot hang us.
    A file whose size or modification time moves while we read it is read again (READ_ATTEMPTS in all); if it keeps
    moving it is reported, because a half-written config checks as a config nobody wrote.
    """

    def fail(msg: str, line: Optional[int] = None) -> InputError:
        return InputError(InputProblem(path, msg, line=line))

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise fail("file not found") from None
    except PermissionError:
        raise fail("permission denied") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    _refuse_special(st, fail)
    for _attempt in range(READ_ATTEMPTS):
        raw, stable = _read_bounded(path, fail)
        if stable:
            break
    else:
        raise fail("file changed while being read; check it again once it is written")
    if b"\x00" in raw[:8192]:
        raise fail("binary file (contains NUL bytes), expected YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise fail(f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x})", line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# How often a file that changes under us is read again before it is reported.
READ_ATTEMPTS = 3


def _refuse_special(st: os.stat_result, fail) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise fail("is a directory, expected a YAML file")
    if not stat.S_ISREG(st.st_mode):
        raise fail("not a regular file (FIFO, socket or device); refusing to read it")
    if st.st_size > MAX_FILE_BYTES:
        raise fail(
            f"file is {st.st_size / 1048576:.1f} MiB; a training config is far smaller "
            f"(limit {MAX_FILE_BYTES // 1048576} MiB)"
        )


def _read_bounded(path: str, fail) -> tuple[bytes, bool]:
    """(bytes, whether the file stayed the same while read). Never reads past the size limit."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise fail("file not found (it disappeared while being read)") from None
    except PermissionError:
        raise fail("permission denied") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    try:
        before = os.fstat(fd)
        _refuse_special(before, fail)
        chunks, total = [], 0
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        after = os.fstat(fd)
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > MAX_FILE_BYTES:
        raise fail("file grew past the size limit while being read")
    raw = b"".join(chunks)
    same_file = before.st_mtime_ns == after.st_mtime_ns and before.st_ino == after.st_ino
    # Pseudo-files (/proc) report size 0 whatever they hold; only a moving size or time counts there.
    stable = same_file and before.st_size == after.st_size and (len(raw) == after.st_size or after.st_size == 0)
    return raw, stable
