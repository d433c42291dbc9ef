"""Each Megatron-Bridge release module (overlap_cli/frameworks/bridge/releases/) against that release's own
source: every class default it states, every field it says the release lacks, its mixed-precision recipe
names, whether it has ``env_vars``, and the lines its behaviour tables cite.

The sources are the releases' wheels unpacked (``megatron_bridge-X`` / ``megatron_core-Y`` under
``OVERLAP_RELEASE_SOURCES``, default /tmp/src) and, for ``main``, the Bridge snapshot in
../shared/upstream/Megatron-Bridge (on megatron-core 0.19.2); a release whose source is not there skips.
The source is parsed with ``ast``, never imported.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from conftest import ROOT

SOURCES = Path(os.environ.get("OVERLAP_RELEASE_SOURCES") or "/tmp/src")
MAIN_BRIDGE = ROOT.parent / "shared" / "upstream" / "Megatron-Bridge" / "src"

_BRIDGE_FILES = {"config": "megatron/bridge/training/config.py", "co": "megatron/bridge/training/comm_overlap.py",
                 "mp": "megatron/bridge/training/mixed_precision.py", "gpt": "megatron/bridge/models/gpt_provider.py"}
_CORE_FILES = {"mpc": "megatron/core/model_parallel_config.py", "tc": "megatron/core/transformer/transformer_config.py",
               "ddpc": "megatron/core/distributed/distributed_data_parallel_config.py",
               "oc": "megatron/core/optimizer/optimizer_config.py",
               "bmdc": "megatron/core/datasets/blended_megatron_dataset_config.py",
               "train": "megatron/training/config/training_config.py"}


def _release(version):
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.get(version)


def _versions():
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    return BRIDGE.versions()


class Source:
    """One release's files, parsed: the fields of every dataclass by class name (its default's source text)."""

    def __init__(self, bridge: Path, core: Path):
        self.paths = {**{k: bridge / v for k, v in _BRIDGE_FILES.items()}, **{k: core / v for k, v in _CORE_FILES.items()}}
        self.trees, self.lines, self.fields = {}, {}, {}
        for tag, path in self.paths.items():
            text = path.read_text(encoding="utf-8")
            self.lines[tag] = text.splitlines()
            tree = self.trees[tag] = ast.parse(text)
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                own = self.fields.setdefault(cls.name, {})
                for st in cls.body:
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                        own.setdefault(st.target.id, st.value)

    def default(self, classes, name):
        """(found, value) of field ``name`` in the first of ``classes`` that has it; value None when not a literal."""
        for cls in classes:
            if name in self.fields.get(cls, {}):
                return True, _literal(self.fields[cls][name])
        return False, None

    def line(self, spec: str) -> str:
        """The text of ``path:line`` (a path ending in one of the parsed files)."""
        path, line = spec.rsplit(":", 1)
        tag = next(t for t, p in self.paths.items() if p.as_posix().endswith(path))
        return self.lines[tag][int(line.split("-")[0]) - 1]


_NOT_LITERAL = object()


def _literal(node):
    if node is None:
        return "<required>"
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        kw = {k.arg: k.value for k in node.keywords}
        if "default" in kw:
            return _literal(kw["default"])
        if "default_factory" in kw:
            return {"list": [], "dict": {}}.get(getattr(kw["default_factory"], "id", None), _NOT_LITERAL)
        return "<required>"
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _NOT_LITERAL


def _source(version):
    release = _release(version)
    bridge = MAIN_BRIDGE if version == "main" else SOURCES / f"megatron_bridge-{version}"
    core = SOURCES / f"megatron_core-{release.CORE_VERSION}"
    if not (bridge / _BRIDGE_FILES["co"]).exists() or not (core / _CORE_FILES["tc"]).exists():
        pytest.skip(f"no source of Megatron-Bridge {version} / megatron-core {release.CORE_VERSION} (set OVERLAP_RELEASE_SOURCES)")
    return release, Source(bridge, core)


_MODEL = ("ModelParallelConfig", "TransformerConfig", "GPTModelProvider")
# Each table of a release module and the classes its keys are fields of.
_TABLES = {
    "DDP_DEFAULTS": ("DistributedDataParallelConfig",),
    "OPTIMIZER_DEFAULTS": ("OptimizerConfig",),
    "LAUNCH_MODEL_DEFAULTS": _MODEL,
    "MP_DEFAULTS": ("MixedPrecisionConfig",),
    "COMM_OVERLAP_FIELDS": ("CommOverlapConfig",),
}
_SECTION_CLASSES = {"model": _MODEL, "ddp": ("DistributedDataParallelConfig",), "optimizer": ("OptimizerConfig",),
                    "dataset": ("BlendedMegatronDatasetConfig",), "validation": ("ValidationConfig",),
                    "dist": ("DistributedInitConfig",)}
# MODEL_DEFAULTS entries that are not a class default of the release: num_layers is "unknown when absent"
# (TransformerConfig requires it), gradient_accumulation_fusion is the provider's machine-dependent factory.
_NOT_CLASS_DEFAULTS = {"num_layers", "gradient_accumulation_fusion"}


@pytest.mark.parametrize("version", _versions())
def test_every_stated_default_is_the_release_class_default(version):
    release, src = _source(version)
    wrong = []
    tables = [(name, getattr(release, name), classes) for name, classes in _TABLES.items()]
    tables.append(("MODEL_DEFAULTS", {k: v for k, v in release.MODEL_DEFAULTS.items() if k not in _NOT_CLASS_DEFAULTS}, _MODEL))
    for name, table, classes in tables:
        for key, stated in table.items():
            found, value = src.default(classes, key)
            if not found:
                wrong.append((name, key, "no such field"))
            elif value is not _NOT_LITERAL and value != stated:
                wrong.append((name, key, stated, value))
    for name in ("OTHER_FIELD_DEFAULTS", "VALIDATE_DEFAULTS"):
        for (section, key), stated in getattr(release, name).items():
            found, value = src.default(_SECTION_CLASSES[section] + ("TransformerConfig",), key)
            if not found:
                wrong.append((name, section, key, "no such field"))
            elif value is not _NOT_LITERAL and value != stated:
                wrong.append((name, section, key, stated, value))
    assert wrong == []


@pytest.mark.parametrize("version", _versions())
def test_a_field_the_release_lacks_is_absent_from_its_source_and_from_its_tables(version):
    from overlap_cli.frameworks.bridge.schema import KEY_TYPES

    release, src = _source(version)
    for section, key in release.ABSENT_FIELDS:
        assert not src.default(_SECTION_CLASSES[section], key)[0], (section, key)
        assert key not in release.SECTION_DEFAULTS.get(section, {}) and (section, key) not in release.OTHER_FIELD_DEFAULTS
        assert (section, key) not in release.VALIDATE_DEFAULTS
        if section == "model":
            assert key not in release.LAUNCH_MODEL_DEFAULTS
    # every field the tool types is either one of the release's or said to be absent
    for section, key in KEY_TYPES:
        if section in ("model", "ddp", "optimizer") and (section, key) not in release.ABSENT_FIELDS:
            assert src.default(_SECTION_CLASSES[section], key)[0], (section, key)
    assert src.default(("ConfigContainer",), "env_vars")[0] == release.HAS_ENV_VARS


@pytest.mark.parametrize("version", _versions())
def test_the_mixed_precision_recipes_are_the_registered_functions(version):
    release, src = _source(version)
    registered = {f.name for f in ast.walk(src.trees["mp"]) if isinstance(f, ast.FunctionDef)
                  and any(getattr(d, "id", None) == "register" for d in f.decorator_list)}
    assert set(release.MP_RECIPES) == registered


@pytest.mark.parametrize("version", _versions())
def test_the_cited_lines_hold_the_checks(version):
    release, src = _source(version)
    co = "megatron/bridge/training/comm_overlap.py"
    tc = "megatron/core/transformer/transformer_config.py"
    for check, line in release.EP_PRECHECK_LINES.items():
        assert src.line(f"{co}:{line}").strip().startswith("assert"), (check, line)
    for check, line in release.EP_CORE_LINES.items():
        text = src.line(f"{tc}:{line}").strip()
        assert text.startswith("raise ValueError" if check == "experts-null" else "assert"), (check, line, text)
    mtp_line = release.EP_PRECHECK_LINES["mtp"]
    assert release.EP_MTP_MESSAGE in " ".join(src.lines["co"][mtp_line - 1:mtp_line + 2]).replace('"', "")
    assert ("moe-module" in release.EP_PRECHECK_LINES) == any(
        "disable moe in recompute_modules" in ln for ln in src.lines["co"])
    if release.EP_CORE_MTP_NEEDS_PP_LINE is not None:
        assert "pipeline_model_parallel_size > 1" in src.line(f"{tc}:{release.EP_CORE_MTP_NEEDS_PP_LINE}")
    graph = src.lines["tc"][release.EP_CORE_CUDA_GRAPH["line"] - 4:release.EP_CORE_CUDA_GRAPH["line"] + 3]
    assert all(any(f"in self.{field}" in ln for ln in graph) for field in release.EP_CORE_CUDA_GRAPH["fields"]
               if field != "cuda_graph_scope" or len(release.EP_CORE_CUDA_GRAPH["fields"]) == 1)
    assert release.EP_CORE_NCCLEP == any("ncclep" in ln for ln in src.lines["tc"])
    for spec in filter(None, [release.FSDP_MAX_CONNECTIONS_ASSERT_AT, release.MXFP8_REUSE_ASSERT["at"],
                              (release.EVAL_BATCH_CHECK or {}).get("at")]):
        assert src.line(spec).strip().startswith("assert"), spec
    if release.EVAL_BATCH_CHECK is not None:  # the message names the DP size it divides by
        line = int(release.EVAL_BATCH_CHECK["at"].rsplit(":", 1)[1])
        assert f"* {release.EVAL_BATCH_CHECK['dp_name']} (" in " ".join(src.lines["config"][line:line + 3])


@pytest.mark.parametrize("version", _versions())
def test_the_validate_behaviour_flags_follow_the_source(version):
    release, src = _source(version)
    config = "\n".join(src.lines["config"])
    assert ("overlap_param_gather settings were not in sync" in config) == release.SYNCS_OVERLAP_PARAM_GATHER
    assert ("use_distributed_optimizer=True is required for Megatron-FSDP" in config) == \
        release.FSDP_FORCES_DISTRIBUTED_OPTIMIZER
    assert ("FSDP requires CUDA_DEVICE_MAX_CONNECTIONS" in config) == (release.FSDP_MAX_CONNECTIONS_ASSERT_AT is not None)
    assert ("eval_global_batch_size % eval_dp_product" in config) == (release.EVAL_BATCH_CHECK is not None)
    assert ("_disable_native_energon_packing_moe_overlap" in config) == \
        (release.ENERGON_PACKING_CLEARS_EP_OVERLAP is not None)
    in_finalize = any("reuse_grad_buf_for_mxfp8_param_ag must be set" in ln for ln in src.lines["mp"])
    assert in_finalize == release.MXFP8_REUSE_ASSERT["under_fsdp"]
