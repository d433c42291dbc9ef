"""The config Megatron-Bridge hands Hydra before a dotlist applies, as config.overrides needs it (StructShape).

``parse_hydra_overrides`` (megatron/bridge/training/utils/omegaconf_utils.py:163-186) applies the dotlist to
``create_omegaconf_dict_config`` of the whole ConfigContainer (omegaconf_utils.py:195-290): every field of
its dataclasses, a file leaving it out or not, null ones included. config.overrides knows Hydra; this module
says what Bridge's config holds."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any

from overlap_cli.config.overrides import StructShape
from overlap_cli.frameworks.bridge.schema import ALWAYS_PRESENT_SECTIONS, OPTIONAL_SECTIONS, known_field


def field_default(release, section: str, name: str) -> Any:
    """The class default of Bridge's config field ``section.name`` in ``release`` (a field known_field knows)."""
    if section == "comm_overlap":
        return release.COMM_OVERLAP_FIELDS.get(name)
    if section == "mixed_precision":
        return release.MP_DEFAULTS.get(name)
    defaults = release.SECTION_DEFAULTS[section]
    if name in defaults:
        return defaults[name]
    if section == "model" and name in release.LAUNCH_MODEL_DEFAULTS:
        return release.LAUNCH_MODEL_DEFAULTS[name]
    return release.OTHER_FIELD_DEFAULTS[(section, name)]


def dataclass_fields(release, target: Any) -> frozenset:
    """The fields of the dataclass ``target`` names, in the catalog of ``release`` (a releases module): the
    fields that release's own classes have."""
    from overlap_cli.frameworks.bridge.recipes import config_fields

    return config_fields(release.BRIDGE_VERSION, target)


def dropped(release, path: tuple) -> bool:
    """Whether ``release`` drops the key at ``path`` when it loads a file (frameworks/bridge/release_fields.py):
    a field it lacks, or anything under ``env_vars`` before the release that has it."""
    if path[:1] == ("env_vars",):
        return not release.HAS_ENV_VARS
    return tuple(path[:2]) in release.ABSENT_FIELDS


_SHAPES: dict = {}


def shape_of(release) -> StructShape:
    """The shape of the ConfigContainer of ``release`` (a frameworks.bridge.releases module): its fields
    and their class defaults, one per release."""
    import functools

    shape = _SHAPES.get(release.BRIDGE_VERSION)
    if shape is None:
        shape = _SHAPES[release.BRIDGE_VERSION] = StructShape(
            always_present=frozenset(ALWAYS_PRESENT_SECTIONS),
            optional=frozenset(OPTIONAL_SECTIONS),
            known_field=functools.partial(known_field, release),
            field_default=functools.partial(field_default, release),
            dataclass_fields=functools.partial(dataclass_fields, release),
            dropped=functools.partial(dropped, release),
        )
    return shape


def bridge_config(target) -> StructShape:
    """The shape of the ConfigContainer of the Megatron-Bridge release ``target`` names."""
    from overlap_cli.frameworks.bridge import releases

    return shape_of(releases.of(target))
