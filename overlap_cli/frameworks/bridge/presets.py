"""Megatron-Bridge TP-overlap ("userbuffers") presets: data access and comparison.

The preset values live in YAML files (one per preset) in the repository's top-level
``presets/`` folder; an installed wheel carries the same files as ``overlap_cli/_presets``.
Each file holds the ten per-GEMM settings with every dataclass field written out.
A ``PipelineOverlapCfg`` entry that leaves ``fp8_buf`` at its upstream default carries
``fp8_buf: false`` plus ``fp8_buf_defaulted: true``: upstream the default is the
one-element tuple ``(False,)`` -- truthy -- and Bridge's YAML dump writes it as ``[false]``.

Forms used in this module:

* *normalized* form (``normalize_mapping``, ``Preset.normalized``): ``{gemm: None | {...}}``
  for the ten GEMMs, no ``_target_`` keys, every dataclass default filled in,
  ``fp8_buf`` a bool, and ``fp8_buf_defaulted: True`` added only to entries whose
  ``fp8_buf`` is the ``(False,)`` default. This is the shape of the preset files.
* *serialized* form (``serialized_form``): what Bridge's ``to_yaml()`` writes for the
  preset under ``comm_overlap.tp_comm_overlap_cfg`` (``_target_`` keys, ``[False]``).
* *TE* form (``te_dict``): the dict Bridge hands to Transformer Engine.

Kept import-light on purpose (pre-commit start-up time): PyYAML, pathlib and difflib are only
imported inside the functions that need them, and a preset's file is read only when its values are
needed (ranking by fit reads the names alone).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Optional

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

__all__ = [
    "GEMM_NAMES",
    "OVERLAP_CLASSES",
    "TARGET_MODULE",
    "LAYER_TARGET",
    "MappingFormatError",
    "PresetName",
    "Preset",
    "parse_preset_name",
    "format_preset_name",
    "presets_dir",
    "load_presets",
    "preset_names",
    "get_preset",
    "serialized_form",
    "normalize_mapping",
    "fp8_buf_effective",
    "match_presets",
    "duplicate_groups",
    "te_dict",
    "closest_names",
    "REQUIRED",
    "class_for_target",
]

#: The ten GEMMs a TransformerLayerTPOverlapCfg configures, in the dataclass field order.
GEMM_NAMES: tuple[str, ...] = (
    "qkv_dgrad",
    "qkv_wgrad",
    "fc1_dgrad",
    "fc1_wgrad",
    "qkv_fprop",
    "proj_dgrad",
    "fc1_fprop",
    "fc2_dgrad",
    "proj_fprop",
    "fc2_fprop",
)

TARGET_MODULE = "megatron.bridge.training.comm_overlap"
LAYER_TARGET = f"{TARGET_MODULE}.TransformerLayerTPOverlapCfg"

# Marker for "no default: the constructor requires this argument".
_REQUIRED = object()
# The upstream default of PipelineOverlapCfg.fp8_buf.
_FP8_BUF_TUPLE_DEFAULT = (False,)

#: Per-GEMM overlap dataclasses of megatron-bridge 0.6.2
#: (src/megatron/bridge/training/comm_overlap.py): field name -> default, in field order.
#: ``_REQUIRED`` marks a field without a default.
OVERLAP_CLASSES: dict[str, dict[str, Any]] = {
    "PipelineOverlapCfg": {
        "num_sm": _REQUIRED,
        "cga_size": _REQUIRED,
        "num_splits": _REQUIRED,
        "set_sm_margin": _REQUIRED,
        "fp8_buf": _FP8_BUF_TUPLE_DEFAULT,
        "atomic_gemm": False,
        "method": "pipeline",
    },
    "RingExchangeOverlapCfg": {
        "aggregate": False,
        "method": "ring_exchange",
        "num_sm": 1,
        "cga_size": 1,
        "set_sm_margin": False,
        "fp8_buf": False,
        "atomic_gemm": False,
    },
    "BulkOverlapCfg": {
        "num_sm": _REQUIRED,
        "cga_size": _REQUIRED,
        "set_sm_margin": _REQUIRED,
        "method": "bulk",
    },
}

# Which dataclass Bridge uses for each method value.
_CLASS_FOR_METHOD = {spec["method"]: cls for cls, spec in OVERLAP_CLASSES.items()}

#: Public name of the "no default" marker in ``OVERLAP_CLASSES``.
REQUIRED = _REQUIRED


def class_for_target(target: Any) -> Optional[str]:
    """The per-GEMM dataclass a ``_target_`` string names (by class name), or None."""
    if not isinstance(target, str):
        return None
    cls = target.rsplit(".", 1)[-1]
    return cls if cls in OVERLAP_CLASSES else None

_PRECISIONS = ("bf16", "fp8")
_GPUS = ("h100", "b200")
_NAME_PATTERN = "userbuffers_{precision}_{gpu}_h{hidden}_tp{TP}[_cp{CP}]_mbs{MBS}_seqlen{SEQ}[_lora]"


class MappingFormatError(ValueError):
    """A tp_comm_overlap_cfg mapping cannot be read as a TransformerLayerTPOverlapCfg."""


# --------------------------------------------------------------------------- names


@dataclass(frozen=True, kw_only=True)
class PresetName:
    """The training shape a preset name says it was tuned for (keyword-only constructor)."""

    precision: str  # "bf16" | "fp8"
    gpu: str  # "h100" | "b200"
    hidden_size: int
    tp: int
    cp: int = 1
    micro_batch_size: int
    seq_length: int
    lora: bool = False

    @property
    def name(self) -> str:
        return format_preset_name(self)


def _positive_int(token: str, prefix: str) -> Optional[int]:
    """``int`` of ``token`` minus ``prefix`` if it is a canonical positive decimal, else None."""
    if not token.startswith(prefix):
        return None
    digits = token[len(prefix) :]
    if not digits.isascii() or not digits.isdigit() or digits.startswith("0"):
        return None
    return int(digits)


def parse_preset_name(name: str) -> PresetName:
    """Decode a preset name; raise ``ValueError`` naming the first part that does not fit.

    Accepted: ``userbuffers_{bf16|fp8}_{h100|b200}_h<N>_tp<N>[_cp<N>]_mbs<N>_seqlen<N>[_lora]``
    with positive decimal numbers without leading zeros. Nothing is corrected or guessed
    (no case folding, no whitespace stripping).
    """
    if not isinstance(name, str):
        raise TypeError(f"preset name must be a string, got {type(name).__name__}")

    def fail(reason: str) -> ValueError:
        return ValueError(f"malformed preset name {name!r}: {reason} (the pattern is {_NAME_PATTERN})")

    parts = name.split("_")
    pos = 0

    def take() -> Optional[str]:
        nonlocal pos
        if pos >= len(parts):
            return None
        pos += 1
        return parts[pos - 1]

    def take_int(prefix: str, what: str) -> int:
        token = take()
        if token is None:
            raise fail(f"missing the {what} part '{prefix}<N>'")
        value = _positive_int(token, prefix)
        if value is None:
            raise fail(f"expected the {what} part '{prefix}<N>' (positive integer), found {token!r}")
        return value

    token = take()
    if token != "userbuffers":
        raise fail(f"must start with 'userbuffers_', found {token!r}")
    precision = take()
    if precision not in _PRECISIONS:
        raise fail(f"precision {precision!r} is not one of {', '.join(_PRECISIONS)}")
    gpu = take()
    if gpu not in _GPUS:
        raise fail(f"GPU {gpu!r} is not one of {', '.join(_GPUS)}")
    hidden = take_int("h", "hidden size")
    tp = take_int("tp", "tensor-parallel size")
    cp = 1
    if pos < len(parts) and parts[pos].startswith("cp"):
        cp = take_int("cp", "context-parallel size")
    mbs = take_int("mbs", "micro-batch size")
    seq = take_int("seqlen", "sequence length")
    lora = False
    token = take()
    if token == "lora":
        lora = True
        token = take()
    if token is not None:
        raise fail(f"unexpected trailing part {token!r}")
    return PresetName(
        precision=precision,
        gpu=gpu,
        hidden_size=hidden,
        tp=tp,
        cp=cp,
        micro_batch_size=mbs,
        seq_length=seq,
        lora=lora,
    )


def format_preset_name(fields: PresetName) -> str:
    """The preset name for ``fields`` (inverse of ``parse_preset_name``; cp 1 is left out)."""
    cp = f"_cp{fields.cp}" if fields.cp != 1 else ""
    lora = "_lora" if fields.lora else ""
    return (
        f"userbuffers_{fields.precision}_{fields.gpu}_h{fields.hidden_size}_tp{fields.tp}{cp}"
        f"_mbs{fields.micro_batch_size}_seqlen{fields.seq_length}{lora}"
    )


# --------------------------------------------------------------------------- data files


def presets_dir() -> Path:
    """Folder holding the preset YAML files (installed wheel first, then a source checkout)."""
    from pathlib import Path

    return Path(_presets_folder())


@functools.lru_cache(maxsize=None)
def _presets_folder() -> str:
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # overlap_cli/
    candidates = (os.path.join(package, "_presets"), os.path.join(os.path.dirname(package), "presets"))
    for candidate in candidates:
        if os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError("overlap-cli preset data not found; looked in " + ", ".join(candidates))


@dataclass(frozen=True)
class Preset:
    """One shipped preset.

    ``gemms`` maps each of ``GEMM_NAMES`` to its plain field values (``fp8_buf`` as a bool,
    no marker key) or ``None``; ``fp8_buf_defaulted`` names the GEMMs whose ``fp8_buf`` is
    the upstream ``(False,)`` default. Instances are shared by the ``load_presets`` cache:
    treat them as read-only.
    """

    name: str
    fields: PresetName
    gemms: dict = field(hash=False)
    fp8_buf_defaulted: frozenset = frozenset()
    path: Optional[str] = field(default=None, compare=False)  # the file it was read from

    def normalized(self) -> dict:
        """This preset in the normalized form (see the module docstring); a fresh copy."""
        out: dict[str, Optional[dict]] = {}
        for gemm in GEMM_NAMES:
            entry = self.gemms[gemm]
            if entry is None:
                out[gemm] = None
                continue
            item = dict(entry)
            if gemm in self.fp8_buf_defaulted:
                item["fp8_buf_defaulted"] = True
            out[gemm] = item
        return out

    def serialized(self) -> dict:
        """This preset as Bridge serializes it; see ``serialized_form``."""
        out: dict[str, Any] = {"_target_": LAYER_TARGET}
        for gemm in GEMM_NAMES:
            entry = self.gemms[gemm]
            if entry is None:
                out[gemm] = None
                continue
            item: dict[str, Any] = {"_target_": f"{TARGET_MODULE}.{_CLASS_FOR_METHOD[entry['method']]}"}
            item.update(entry)
            if gemm in self.fp8_buf_defaulted:
                item["fp8_buf"] = list(_FP8_BUF_TUPLE_DEFAULT)
            out[gemm] = {key: item[key] for key in sorted(item)}
        return {key: out[key] for key in sorted(out)}

    def built(self) -> dict:
        """This preset as the Python recipe builds it: each entry names its dataclass, and an entry
        whose ``fp8_buf`` is the upstream default leaves it out (the dataclass fills in ``(False,)``)."""
        out: dict[str, Any] = {}
        for gemm in GEMM_NAMES:
            entry = self.gemms[gemm]
            if entry is None:
                out[gemm] = None
                continue
            item = {"_target_": f"{TARGET_MODULE}.{_CLASS_FOR_METHOD[entry['method']]}"}
            item.update((k, v) for k, v in entry.items() if not (k == "fp8_buf" and gemm in self.fp8_buf_defaulted))
            out[gemm] = item
        return out


def _check_preset_body(name: str, body: Any, path: str) -> tuple[dict, frozenset]:
    """Validate one preset file's contents; return (plain gemms, defaulted GEMM names)."""

    def bad(reason: str) -> ValueError:
        return ValueError(f"preset file {path}: {reason}")

    if not isinstance(body, dict):
        raise bad("top level must be a mapping of the ten GEMM names")
    if set(body) != set(GEMM_NAMES):
        missing = [g for g in GEMM_NAMES if g not in body]
        extra = sorted(set(body) - set(GEMM_NAMES))
        raise bad(f"GEMM keys wrong (missing {missing}, unexpected {extra})")
    gemms: dict[str, Optional[dict]] = {}
    defaulted = set()
    for gemm in GEMM_NAMES:
        entry = body[gemm]
        if entry is None:
            gemms[gemm] = None
            continue
        if not isinstance(entry, dict):
            raise bad(f"{gemm} must be a mapping or null")
        entry = dict(entry)
        marker = entry.pop("fp8_buf_defaulted", False)
        cls = _CLASS_FOR_METHOD.get(entry.get("method"))
        if cls is None:
            raise bad(f"{gemm}: unknown method {entry.get('method')!r}")
        if set(entry) != set(OVERLAP_CLASSES[cls]):
            raise bad(f"{gemm}: fields {sorted(entry)} differ from {cls} fields {sorted(OVERLAP_CLASSES[cls])}")
        if marker is True:
            if cls != "PipelineOverlapCfg" or entry["fp8_buf"] is not False:
                raise bad(f"{gemm}: fp8_buf_defaulted needs a pipeline entry with fp8_buf: false")
            defaulted.add(gemm)
        elif marker is not False:
            raise bad(f"{gemm}: fp8_buf_defaulted must be true or absent")
        gemms[gemm] = entry
    return gemms, frozenset(defaulted)


@functools.lru_cache(maxsize=None)
def _names_cached(directory: str) -> tuple:
    """((name, PresetName), ...) of the preset files in ``directory``, sorted; no file is read."""
    names = sorted(f[: -len(".yaml")] for f in os.listdir(directory) if f.startswith("userbuffers_") and f.endswith(".yaml"))
    if not names:
        raise FileNotFoundError(f"no userbuffers_*.yaml preset files in {directory}")
    return tuple((name, parse_preset_name(name)) for name in names)


def preset_shapes() -> tuple:
    """((name, PresetName), ...) for every shipped preset, sorted by name: what each was tuned for, read
    from the file names alone (the cheap part of the data: enough to rank presets by fit)."""
    return _names_cached(_presets_folder())


INDEX_FILE = "index.json"  # next to the preset files: each file's digest and its values (write_index)


def _digest(data: bytes) -> str:
    try:
        from _blake2 import blake2b  # hashlib itself loads OpenSSL: ~5 ms of start-up
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=16).hexdigest()


@functools.lru_cache(maxsize=None)
def _index(directory: str) -> dict:
    """{name: {"digest", "body"}} of ``index.json`` in ``directory`` ({} without one): the values each
    preset file held when the index was written, so a check reads them without PyYAML."""
    import json

    try:
        with open(os.path.join(directory, INDEX_FILE), encoding="utf-8") as handle:
            return json.load(handle).get("presets", {})
    except (OSError, ValueError, AttributeError):
        return {}


def _read_body(directory: str, name: str) -> tuple:
    """(body, path) of one preset file: from the index when the file is byte for byte the one indexed
    (same digest), else read with PyYAML's safe loader."""
    import sys

    path = os.path.join(directory, f"{name}.yaml")
    with open(path, "rb") as handle:
        data = handle.read()
    # One file, with PyYAML already imported (a YAML check's fix naming a preset): reading it costs less
    # than importing json for the index. Either way gives the same values (tests/frameworks/bridge).
    if "yaml" not in sys.modules or _index.cache_info().currsize:
        known = _index(directory).get(name)
        if known is not None and known.get("digest") == _digest(data):
            return known["body"], path
    from overlap_cli.config.yamlnodes import pyyaml

    yaml = pyyaml()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(data.decode("utf-8"), Loader=loader), path  # noqa: S506 - safe loader


def write_index(directory: Optional[str] = None) -> str:
    """Write ``index.json`` for the preset files in ``directory`` (default: the shipped folder); returns
    its path. Regenerate after editing a preset: ``python -m overlap_cli.frameworks.bridge.presets``."""
    import json

    from overlap_cli.config.yamlnodes import pyyaml

    yaml = pyyaml()
    directory = directory or _presets_folder()
    rows = {}
    for name, _ in _names_cached(directory):
        with open(os.path.join(directory, f"{name}.yaml"), "rb") as handle:
            data = handle.read()
        rows[name] = {"digest": _digest(data), "body": yaml.load(data.decode("utf-8"), Loader=yaml.SafeLoader)}
    path = os.path.join(directory, INDEX_FILE)
    text = json.dumps({"format": 1, "presets": rows}, indent=1) + "\n"  # the files' key order
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    _index.cache_clear()
    return path


@functools.lru_cache(maxsize=None)
def _load_one(directory: str, name: str) -> Preset:
    """One preset file, read and checked once per process (a fix naming a preset needs only that one)."""
    body, path = _read_body(directory, name)
    gemms, defaulted = _check_preset_body(name, body, path)
    return Preset(name=name, fields=parse_preset_name(name), gemms=gemms, fp8_buf_defaulted=defaulted, path=path)


@functools.lru_cache(maxsize=None)
def _load_presets_cached(directory: str) -> dict:
    _index(directory)  # all of them: the index is cheaper than PyYAML on 19 files
    return {name: _load_one(directory, name) for name, _ in _names_cached(directory)}


def load_presets() -> dict[str, Preset]:
    """All shipped presets by name (files are read once per process; the Preset objects are shared)."""
    return dict(_load_presets_cached(_presets_folder()))


def _clear_caches() -> None:
    for cached in (_load_presets_cached, _load_one, _names_cached, _presets_folder, _index):
        cached.cache_clear()


load_presets.cache_clear = _clear_caches  # type: ignore[attr-defined]


def preset_names() -> list[str]:
    """Sorted names of all shipped presets (from the file names; no file is read)."""
    return [name for name, _ in preset_shapes()]


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ``KeyError`` with close suggestions otherwise."""
    folder = _presets_folder()
    if isinstance(name, str) and any(name == known for known, _ in _names_cached(folder)):
        return _load_one(folder, name)
    hint = closest_names(name) if isinstance(name, str) else []
    extra = f"; did you mean {', '.join(hint)}?" if hint else ""
    raise KeyError(f"unknown TP-overlap preset {name!r}{extra}")


def serialized_form(name: str) -> dict:
    """The preset as Bridge's ``to_yaml()`` writes it under ``comm_overlap.tp_comm_overlap_cfg``.

    Keys sorted, ``_target_`` on the layer and on every per-GEMM entry (class chosen by
    ``method``), all dataclass fields present, the ``(False,)`` default as ``[False]``,
    and ``None`` for GEMMs the preset leaves unset.
    """
    return get_preset(name).serialized()


# --------------------------------------------------------------------------- mappings


def _plain(value: Any) -> Any:
    """Deep copy into plain dict / list / scalars (ruamel and OmegaConf containers included)."""
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)  # plain str also for ruamel ScalarString subclasses
    if isinstance(value, bytes):
        return value
    if isinstance(value, Sequence) or _is_omegaconf_list(value):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and type(value) is not int:  # e.g. ruamel ScalarInt / ScalarBoolean
        return int(value)
    if isinstance(value, float) and type(value) is not float:
        return float(value)
    return value


def _is_omegaconf_list(value: Any) -> bool:
    return type(value).__name__ == "ListConfig"


def _is_sequence(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, (str, bytes))) or _is_omegaconf_list(value)


def _class_of(gemm: str, entry: Mapping) -> str:
    """The per-GEMM dataclass Bridge would build: from ``_target_``, else from ``method``."""
    target = entry.get("_target_")
    if target is not None:
        cls = str(target).rsplit(".", 1)[-1]
        if cls in OVERLAP_CLASSES:
            return cls
        if "method" not in entry:
            raise MappingFormatError(f"{gemm}: unknown _target_ {target!r}")
    method = entry.get("method")
    if isinstance(method, str) and method in _CLASS_FOR_METHOD:  # a list here is unhashable
        return _CLASS_FOR_METHOD[method]
    if method is None:
        raise MappingFormatError(f"{gemm}: neither _target_ nor method says which overlap config this is")
    raise MappingFormatError(
        f"{gemm}: unknown method {method!r} (expected one of {', '.join(sorted(_CLASS_FOR_METHOD))})"
    )


def _fill_entry(gemm: str, entry: Any) -> tuple[dict, str]:
    """Per-GEMM entry with ``_target_`` dropped and defaults filled in (fp8_buf left raw)."""
    if not isinstance(entry, Mapping):
        raise MappingFormatError(f"{gemm}: expected a mapping or null, got {type(entry).__name__}")
    cls = _class_of(gemm, entry)
    given = {key: _plain(value) for key, value in entry.items() if key != "_target_"}
    filled: dict[str, Any] = {}
    for key, default in OVERLAP_CLASSES[cls].items():
        if key in given:
            filled[key] = given.pop(key)
        elif default is _REQUIRED:
            raise MappingFormatError(f"{gemm}: {cls} needs '{key}', which has no default")
        else:
            filled[key] = default
    filled.update(given)  # fields the dataclass does not have: kept, so they never match a preset
    return filled, cls


def normalize_mapping(mapping: Any) -> dict:
    """Turn a ``tp_comm_overlap_cfg`` mapping into the normalized form used by the preset files.

    Accepts Bridge's serialized form, hand-written mappings without ``_target_`` keys, and
    ruamel / OmegaConf containers. Per entry: the dataclass is taken from ``_target_`` (else
    from ``method``) and its omitted fields get Bridge's defaults. ``fp8_buf``:

    * a bool stays as it is;
    * a one-element list/tuple ``[x]`` becomes ``bool(x)``; when that is ``False`` the entry
      also gets ``fp8_buf_defaulted: True`` because ``(False,)`` is truthy, i.e. *not* the
      same as ``false`` (``[true]`` behaves exactly like ``true`` and normalizes to it);
    * an empty list is falsy and normalizes to ``False``;
    * omitted on a PipelineOverlapCfg means the ``(False,)`` default (flagged as above).

    Missing GEMM keys become ``None`` (Transformer Engine sees the same dict either way).
    Top-level keys other than ``_target_`` and the ten GEMM names are copied unchanged.
    Raises ``MappingFormatError`` (a ``ValueError``) when an entry cannot be interpreted.
    """
    if not isinstance(mapping, Mapping):
        raise MappingFormatError(f"tp_comm_overlap_cfg must be a mapping, got {type(mapping).__name__}")
    out: dict[str, Any] = {}
    for gemm in GEMM_NAMES:
        entry = mapping.get(gemm)
        if entry is None:
            out[gemm] = None
            continue
        filled, _cls = _fill_entry(gemm, entry)
        if "fp8_buf" in filled:
            raw = filled["fp8_buf"]
            if _is_sequence(raw):
                if len(raw) > 1:
                    raise MappingFormatError(f"{gemm}: fp8_buf must be a bool or a one-element list, got {raw!r}")
                if len(raw) == 0:
                    filled["fp8_buf"] = False
                else:
                    element = raw[0]
                    if not isinstance(element, bool):
                        raise MappingFormatError(f"{gemm}: fp8_buf list must hold a bool, got {raw!r}")
                    filled["fp8_buf"] = element
                    if element is False:
                        filled["fp8_buf_defaulted"] = True
        out[gemm] = {key: filled[key] for key in sorted(filled, key=str)}
    for key, value in mapping.items():
        if key != "_target_" and key not in GEMM_NAMES:
            out[_plain(key)] = _plain(value)
    return out


def fp8_buf_effective(entry: Optional[Mapping]) -> bool:
    """Truthiness Transformer Engine sees for a normalized per-GEMM entry's ``fp8_buf``."""
    if not entry:
        return False
    return bool(entry.get("fp8_buf_defaulted")) or bool(entry.get("fp8_buf"))


def _strip_marker(normalized: dict) -> dict:
    out = {}
    for key, entry in normalized.items():
        if isinstance(entry, dict) and "fp8_buf_defaulted" in entry:
            entry = {k: v for k, v in entry.items() if k != "fp8_buf_defaulted"}
        out[key] = entry
    return out


def match_presets(mapping: Any, *, strict_fp8_buf: bool = True) -> list[str]:
    """Names (sorted) of all presets whose values equal ``mapping``.

    ``mapping`` may also be a ``Preset``. With ``strict_fp8_buf=False`` the ``(False,)``
    default and an explicit ``false`` count as equal (useful for "same as preset X except
    for the fp8_buf form"). A mapping that cannot be normalized matches nothing.
    """
    if isinstance(mapping, Preset):
        wanted = mapping.normalized()
    else:
        try:
            wanted = normalize_mapping(mapping)
        except MappingFormatError:
            return []
    if not strict_fp8_buf:
        wanted = _strip_marker(wanted)
    found = []
    for name, preset in _load_presets_cached(_presets_folder()).items():
        candidate = preset.normalized()
        if not strict_fp8_buf:
            candidate = _strip_marker(candidate)
        if candidate == wanted:
            found.append(name)
    return sorted(found)


def duplicate_groups() -> list[list[str]]:
    """Groups (each sorted, list sorted) of presets that hold identical values."""
    seen = set()
    groups = []
    for name, preset in sorted(_load_presets_cached(_presets_folder()).items()):
        if name in seen:
            continue
        group = match_presets(preset)
        seen.update(group)
        if len(group) > 1:
            groups.append(group)
    return groups


def te_dict(mapping: Any) -> dict:
    """The dict Bridge passes to Transformer Engine's ``initialize_ub`` for a ``tp_comm_overlap_cfg``
    mapping, a preset name or a ``Preset``.

    An entry with a per-GEMM ``_target_`` becomes that dataclass: omitted fields take its defaults
    (``fp8_buf`` of PipelineOverlapCfg is the tuple ``(False,)``) and unknown fields are dropped (the
    lenient instantiation of ``ConfigContainer.from_yaml``, megatron/training/config/instantiate_utils.py).
    An entry without ``_target_`` stays the plain mapping it is, and TE fills the gaps with its own
    defaults. ``None`` entries and names that are not GEMMs are left out, as ``asdict`` + the None filter
    leave them out (comm_overlap.py:626-632). ``fp8_buf`` is passed through as given (a list stays a
    list), since TE only tests its truthiness.
    """
    if isinstance(mapping, str):
        mapping = get_preset(mapping)
    if isinstance(mapping, Preset):
        mapping = mapping.built()
    if not isinstance(mapping, Mapping):
        raise MappingFormatError(f"tp_comm_overlap_cfg must be a mapping, got {type(mapping).__name__}")
    out: dict = {}
    for gemm in GEMM_NAMES:
        entry = mapping.get(gemm)
        if entry is None:
            continue
        if not isinstance(entry, Mapping):
            out[gemm] = entry
            continue
        cls = class_for_target(entry.get("_target_"))
        if cls is None:
            out[gemm] = {k: v for k, v in entry.items() if k != "_target_"}
            continue
        item = {}
        for key, default in OVERLAP_CLASSES[cls].items():
            if key in entry:
                item[key] = entry[key]
            elif default is not _REQUIRED:
                item[key] = default
        out[gemm] = item
    return out


def closest_names(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` shipped preset names closest to ``name`` (for "did you mean ...?")."""
    import difflib

    if not isinstance(name, str):
        return []
    names = preset_names()
    by_lower = {candidate.lower(): candidate for candidate in names}
    hits = difflib.get_close_matches(name.strip().lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[hit] for hit in hits]


if __name__ == "__main__":
    print(write_index())
