"""The megatron-core releases whose Megatron-LM training code (``megatron/training``) overlap-cli mirrors
(frameworks.releases): one module per release. ``CORE.of(target)`` is the one accessor: the release
target.core_version names; without one, the core the named Bridge release pins (a Bridge release is
installed with its core); without either, the newest."""

from __future__ import annotations

from overlap_cli.frameworks.releases import Releases


def _v0_17_1():
    from overlap_cli.frameworks.megatron_lm.releases import v0_17_1

    return v0_17_1


def _v0_18_2():
    from overlap_cli.frameworks.megatron_lm.releases import v0_18_2

    return v0_18_2


def _v0_19_2():
    from overlap_cli.frameworks.megatron_lm.releases import v0_19_2

    return v0_19_2


CORE = Releases("megatron-core", "core_version", {"v0_17_1": _v0_17_1, "v0_18_2": _v0_18_2, "v0_19_2": _v0_19_2})


def version_of(target):
    """The megatron-core release a Megatron-LM launch of ``target`` is checked against, None for the newest."""
    core = getattr(target, "core_version", None) if target is not None else None
    bridge = getattr(target, "bridge_version", None) if target is not None else None
    if core is None and bridge is not None:
        from overlap_cli.frameworks.bridge.releases import BRIDGE

        return BRIDGE.get(bridge, target).CORE_VERSION
    return core


def of(target):
    version = version_of(target)
    if version is not None and version != getattr(target, "core_version", None):
        # the core the named Bridge release pins: held by the Bridge table, so a missing one is ours to say
        if not CORE.holds(version):
            from overlap_cli.frameworks.releases import stated_problem
            from overlap_cli.problems import InputError

            raise InputError(stated_problem(target, "bridge_version", (
                f"Megatron-Bridge {target.bridge_version} pins megatron-core {version}, whose Megatron-LM "
                f"arguments overlap-cli holds no data for (it mirrors {', '.join(CORE.versions())})")))
    return CORE.get(version, target)
