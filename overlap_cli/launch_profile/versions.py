"""Version strings of the target's Transformer Engine and PyTorch, compared the way Megatron-Core does.

Megatron-Core's ``is_te_min_version`` / ``is_torch_min_version`` (megatron/core/utils.py:326 and 345 in
megatron-core 0.19.2) compare ``packaging.version.Version`` objects. That ordering matters for the builds
people actually run: NGC containers ship torch as ``2.6.0a0+ecf3bae`` — a pre-release, so *below* 2.6.0 —
and Transformer Engine nightlies as ``2.7.0.dev0``. This module orders versions the same way (PEP 440:
release, pre-release, post-release, dev-release, local label) without depending on ``packaging``.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

# Compiled on first use (re caches it): most checks never compare a version, and compiling costs ~0.5 ms.
_PEP440 = (
    r"""^\s*v?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?
    (?:[-_.]?(?P<post>post|rev|r)[-_.]?(?P<post_n>\d*))?
    (?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d*))?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$"""
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def sort_key(text: str) -> Optional[tuple]:
    """A tuple that orders like ``packaging.version.Version(text)``; None when ``text`` is not a version."""
    m = re.match(_PEP440, str(text), re.IGNORECASE | re.VERBOSE)
    if not m:
        return None
    release = [int(p) for p in m.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.7 == 2.7.0
        release.pop()
    if m.group("pre"):
        pre = (0, _PRE_RANK[m.group("pre").lower()], int(m.group("pre_n") or 0))
    elif m.group("dev") and not m.group("post"):
        pre = (-1,)  # 2.7.0.dev0 sorts before 2.7.0a0
    else:
        pre = (1,)
    post = (0, int(m.group("post_n") or 0)) if m.group("post") else (-1,)
    dev = (0, int(m.group("dev_n") or 0)) if m.group("dev") else (1,)
    local: tuple = ()
    if m.group("local"):
        local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", m.group("local")))
    return (tuple(release), pre, post, dev, local)


def is_version(text: Optional[str]) -> bool:
    return text is not None and sort_key(text) is not None


def at_least(have: Optional[str], need: str) -> Optional[bool]:
    """``have >= need`` as Megatron-Core decides it; None when ``have`` is unknown or unreadable."""
    if have is None:
        return None
    a, b = sort_key(have), sort_key(need)
    if a is None or b is None:
        return None
    return a >= b


def status(have: Optional[str], need: str) -> str:
    """"ok" | "too-old" | "unknown" (not given, or not a version this tool can read)."""
    ok = at_least(have, need)
    if ok is None:
        return "unknown"
    return "ok" if ok else "too-old"
