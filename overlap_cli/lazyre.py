"""Regular expressions compiled on their first use, for patterns defined at module level.

``re.compile`` parses and compiles a pattern on the spot (0.1-1 ms each here); the check path's modules
define a few dozen, and a single check uses a handful: which ones depends on the file (a launch script,
exponent floats, a ``# overlap:`` comment). ``lazyre.compile(...)`` has the same arguments and answers
the same methods (``search``, ``match``, ``finditer``, ``sub``, ``pattern``, ...); the first call compiles,
and each method is then kept on the object, so later calls cost what the compiled pattern's do. It is not
an ``re.Pattern``: hand it to code that calls its methods, not to ``re.sub(pattern, ...)`` and the like.
"""

from __future__ import annotations

import re


class Pattern:
    def __init__(self, pattern, flags: int = 0):
        self._source = (pattern, flags)

    def __getattr__(self, name: str):  # only for names not set yet: the compiled pattern's
        if name.startswith("_"):  # dunders probed by copy/pickle, and _source before __init__: not the pattern's
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(*self._source)
        value = getattr(compiled, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"lazyre.compile({self._source[0]!r}, {self._source[1]!r})"


def compile(pattern, flags: int = 0) -> Pattern:  # noqa: A001 - the name re gives it
    return Pattern(pattern, flags)
