"""Which release a run is checked against, and where that choice came from.

A Megatron-Bridge run (a Bridge config, recipe, Python run or launch; a NeMo-RL config, which builds
Bridge's classes) is checked against a Bridge release and the megatron-core it pins
(frameworks.bridge.releases.of); a Megatron-LM launch against a megatron-core release alone
(frameworks.megatron_lm.releases.of). The target names them (bridge_version / core_version: flag >
directive > per-file-target > [tool.overlap] > --detect); one named alone decides the other (the core a
Bridge release pins; the newest Bridge release that pins a core); nothing named is the newest numbered
release, said in a note on every result so that no answer passes for a release the user did not choose."""

from __future__ import annotations

from overlap_cli.frameworks.bridge import releases as bridge_releases
from overlap_cli.frameworks.megatron_lm import releases as core_releases
from overlap_cli.problems import InputError

MEGATRON_LM = "megatron-lm"  # frameworks.detect's name; every other framework runs Bridge's classes
BRIDGE, CORE = "megatron-bridge", "megatron-core"  # the package names, keys of the JSON ``release``
# Sources of a release beyond the target's own (flag, directive, per-file-target, pyproject, detected).
PINNED, DEFAULT = "pinned", "default"
DEFAULT_NOTE, RELEASE_NOTE = "release-default", "release"  # results.Note kinds


def _source(target, key: str, other: str) -> str:
    """Where the release of ``key`` came from: the target's source when it names it, ``pinned`` when it
    follows from the ``other`` release the target names, else ``default``."""
    if getattr(target, key, None) is not None:
        return target.source(key)
    return PINNED if getattr(target, other, None) is not None else DEFAULT


def checked_against(target, framework: str) -> dict:
    """The JSON ``release`` of a result: {"megatron-bridge": ..., "megatron-core": ..., "sources": {...}} for
    a Bridge run, megatron-core alone for a Megatron-LM launch. Raises InputError (placed where the target
    names the release) for a release or a pair the tool holds no data for."""
    if framework == MEGATRON_LM:
        core = core_releases.of(target)
        return {CORE: core.CORE_VERSION, "sources": {CORE: _source(target, "core_version", "bridge_version")}}
    release = bridge_releases.of(target)
    return {
        BRIDGE: release.BRIDGE_VERSION,
        CORE: release.CORE_VERSION,
        "sources": {BRIDGE: _source(target, "bridge_version", "core_version"),
                    CORE: _source(target, "core_version", "bridge_version")},
    }


def notes(target, framework: str, release: dict) -> list:
    """The notes of the release ``release`` (checked_against's answer): the default one when the target
    named no release, one saying how a release named alone chose the other, or one naming what --detect
    read; nothing when the user named the release."""
    from overlap_cli.results import Note

    sources = release["sources"]
    if framework == MEGATRON_LM:
        src = sources[CORE]
        if src == DEFAULT:
            return [Note(f"checked against megatron-core {release[CORE]}'s Megatron-LM arguments, the newest release "
                         "overlap-cli mirrors: name the release the launch uses with --core-version, core_version in "
                         "[tool.overlap], or --detect", DEFAULT_NOTE)]
        if src == PINNED:
            return [Note(f"checked against megatron-core {release[CORE]}'s Megatron-LM arguments, the core Megatron-Bridge "
                         f"{target.bridge_version} pins ({target.source_label('bridge_version')})", RELEASE_NOTE)]
        if src == "detected":
            return [Note(f"checked against megatron-core {release[CORE]}, installed here (--detect)", RELEASE_NOTE)]
        return []
    pair = f"Megatron-Bridge {release[BRIDGE]} / megatron-core {release[CORE]}"
    if sources[BRIDGE] == DEFAULT:
        return [Note(f"checked against {pair}, the newest release overlap-cli mirrors: name the release the run uses "
                     "with --bridge-version, bridge_version in [tool.overlap], or --detect", DEFAULT_NOTE)]
    if sources[BRIDGE] == PINNED:
        return [Note(f"checked against {pair}, the newest Bridge release mirrored with that core "
                     f"(core_version from {target.source_label('core_version')})", RELEASE_NOTE)]
    if sources[BRIDGE] == "detected":
        return [Note(f"checked against {pair}, installed here (--detect)", RELEASE_NOTE)]
    return []


def validate(target, framework=None) -> None:
    """Raise InputError when no file of the run could be checked against the release the target names: for
    ``framework`` when given, else when neither a Bridge run nor a Megatron-LM launch could be (a folder of
    both: a core only Megatron-LM's table holds is still good for the launches). The error of a Bridge run
    is the one raised."""
    kinds = [framework] if framework else ["bridge", MEGATRON_LM]
    first = None
    for kind in kinds:
        try:
            checked_against(target, kind)
            return
        except InputError as exc:
            first = first or exc
    raise first
