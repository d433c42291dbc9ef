"""The Megatron-Bridge releases overlap-cli mirrors (frameworks.releases): one module per release holds the
facts of that release the code reads (defaults, the keys ``effective`` reports, the catalog it was written
from). ``BRIDGE.of(target)`` is the one accessor; a test fails when such a fact is written elsewhere."""

from __future__ import annotations

from overlap_cli.frameworks.releases import Releases


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


def of(target):
    """The release data of the Megatron-Bridge release ``target`` names (target.bridge_version; the newest
    when none). A ``core_version`` other than the one that release pins is an input error: Bridge runs on
    the megatron-core it was released with, and the tool holds no other pairing."""
    release = BRIDGE.of(target)
    core = getattr(target, "core_version", None) if target is not None else None
    if core is not None and core != release.CORE_VERSION:
        from overlap_cli.problems import InputError, InputProblem

        raise InputError(InputProblem(
            "<target>", f"core_version {core}: Megatron-Bridge {release.BRIDGE_VERSION} is mirrored with megatron-core "
            f"{release.CORE_VERSION}; overlap-cli holds no data for that release with megatron-core {core}",
            key="core_version"))
    return release


def default_note(target):
    """A sentence naming the release checked against when the target named none, else None."""
    if target is not None and (target.bridge_version is not None or target.core_version is not None):
        return None
    release = BRIDGE.get()
    return (f"checked against Megatron-Bridge {release.BRIDGE_VERSION} / megatron-core {release.CORE_VERSION}, the "
            "newest release overlap-cli mirrors (set bridge_version to choose)")
