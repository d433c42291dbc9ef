"""The Megatron-Bridge releases overlap-cli mirrors (frameworks.releases): one module per release holds the
facts of that release the code reads (defaults, the keys ``effective`` reports, the catalog it was written
from). ``BRIDGE.of(target)`` is the one accessor; a test fails when such a fact is written elsewhere.

Each release module names the megatron-core release it is mirrored with (``CORE_VERSION``: the core its
container pins). The target picks a release by ``bridge_version``; ``core_version`` alone picks the newest
numbered Bridge release that pins that core; both must be a pair some release is."""

from __future__ import annotations

from overlap_cli.frameworks.releases import Releases, is_release, stated_problem


# One function per release, each importing its module only when that release is chosen (an explicit import
# the import-graph test can see).
def _v0_4_2():
    from overlap_cli.frameworks.bridge.releases import v0_4_2

    return v0_4_2


def _v0_5_1():
    from overlap_cli.frameworks.bridge.releases import v0_5_1

    return v0_5_1


def _v0_6_0():
    from overlap_cli.frameworks.bridge.releases import v0_6_0

    return v0_6_0


def _v0_6_2():
    from overlap_cli.frameworks.bridge.releases import v0_6_2

    return v0_6_2


def _main():
    from overlap_cli.frameworks.bridge.releases import main

    return main


BRIDGE = Releases("Megatron-Bridge", "bridge_version",
                  {"v0_4_2": _v0_4_2, "v0_5_1": _v0_5_1, "v0_6_0": _v0_6_0, "v0_6_2": _v0_6_2, "main": _main})


def lines_file(release):
    """The line map of ``release`` (tools/build_bridge_release_lines.py): where each upstream line the mirror
    cites, a line of the newest release or of its megatron-core, is in that release's source; None for a release
    without one (every release held but the newest has one: tests/frameworks/bridge/test_release_cites.py)."""
    import os

    path = os.path.join(os.path.dirname(__file__), f"lines-{release.BRIDGE_VERSION}.json")
    return path if os.path.isfile(path) else None


def pinning(core: str):
    """The newest numbered Bridge release mirrored with megatron-core ``core``, or None. A branch snapshot
    (``main``) is chosen only by name, as in ``Releases.newest``."""
    found = None
    for version in BRIDGE.versions():
        if is_release(version) and BRIDGE.get(version).CORE_VERSION == core:
            found = version
    return found


def pins() -> str:
    """``0.6.2 -> megatron-core 0.19.2, ...``: each release held with the core it pins (for messages)."""
    return ", ".join(f"{v} -> {BRIDGE.get(v).CORE_VERSION}" for v in BRIDGE.versions())


def of(target):
    """The release data of the Megatron-Bridge release ``target`` names (target.bridge_version), else of the
    newest release that pins its core_version, else of the newest release. A core_version other than the
    one the named release pins is an input error: Bridge runs on the megatron-core it was released with,
    and the tool holds no other pairing."""
    from overlap_cli.problems import InputError

    bridge = getattr(target, "bridge_version", None) if target is not None else None
    core = getattr(target, "core_version", None) if target is not None else None
    if bridge is None and core is not None:
        chosen = pinning(core)
        if chosen is None:
            raise InputError(stated_problem(target, "core_version", (
                f"no Megatron-Bridge release overlap-cli mirrors is mirrored with megatron-core {core} ({pins()})")))
        return BRIDGE.get(chosen)
    release = BRIDGE.get(bridge, target)
    if core is not None and core != release.CORE_VERSION:
        raise InputError(stated_problem(target, "core_version", (
            f"Megatron-Bridge {release.BRIDGE_VERSION} is mirrored with megatron-core {release.CORE_VERSION}; "
            f"overlap-cli holds no data for it with megatron-core {core} ({pins()})")))
    return release

