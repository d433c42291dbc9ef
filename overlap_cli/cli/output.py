"""Where ``overlap check`` writes besides stdout: ``-o FILE`` and ``--annotate-output FILE``.

Every output is judged before the first byte is written, once the run has read all it reads: it must not
name a file the run read (the checked file, a sourced ``env.sh``, a ``from_yaml`` or ``--base`` base, the
``--settings`` TOML, a ``pyproject.toml`` on the way up: ``config.safe_read.was_read``), and a FIFO is
written only when a reader holds it open (its descriptor is opened then and kept, so the reader does not
see an end of file between the test and the write). A regular file is replaced atomically
(``fix.write.atomic_write``). Any refusal is one ``overlap: error:`` line (``OutputError``), exit 2, and nothing written.
"""

from __future__ import annotations

import os
import stat



class OutputError(Exception):
    """Why an output is refused or could not be written: the command's one ``overlap: error:`` line."""


class Output:
    """One output file, judged; ``write`` puts the text there."""

    def __init__(self, path: str):
        from overlap_cli.config.safe_read import was_read
        from overlap_cli.fix.write import open_special

        self.path, self.fd = path, None
        if was_read(path):
            raise OutputError(f"{path}: an output file must not be an input file (the check reads it); nothing was written")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise OutputError(f"{path}: cannot write: {getattr(exc, 'strerror', None) or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            try:
                self.fd = open_special(os.path.realpath(path), st, path)
            except OSError as exc:
                raise OutputError(f"{path}: cannot write: {exc.strerror or exc}; nothing was written") from None

    def write(self, text: str) -> None:
        from overlap_cli.fix.write import atomic_write

        try:
            if self.fd is None:
                atomic_write(self.path, text)
                return
            fd, self.fd = self.fd, None
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            raise OutputError(f"{self.path}: cannot write: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def judge_outputs(*paths) -> dict:
    """{path: Output} for the paths given (None: not asked for); the first refusal is an OutputError, and the
    outputs already opened are closed again."""
    outputs: dict = {}
    try:
        for path in paths:
            if path is not None and path not in outputs:
                outputs[path] = Output(path)
    except BaseException:
        for out in outputs.values():
            out.close()
        raise
    return outputs
