"""The megatron-core releases whose Megatron-LM training code (``megatron/training``) overlap-cli mirrors
(frameworks.releases): one module per release. ``CORE.of(target)`` is the one accessor (target.core_version;
the newest when none)."""

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


def of(target):
    return CORE.of(target)
