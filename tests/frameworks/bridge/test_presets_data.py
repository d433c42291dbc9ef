"""Preset data layer: presets/*.yaml against the reference values, and overlap_cli.frameworks.bridge.presets."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from overlap_cli.frameworks.bridge import presets as P
from conftest import ROOT as ROOT_DIR  # noqa: E402

REPO = ROOT_DIR
DATA = ROOT_DIR / "tests" / "data"
PRESETS_DIR = REPO / "presets"
REFERENCE_JSON = DATA / "userbuffers_presets.json"
SHARED_JSON = ROOT_DIR.parent / "shared" / "reference" / "userbuffers_presets.json"
LLAMA_SAMPLE = DATA / "bridge_samples" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"
LLAMA_PRESET = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192"

REFERENCE = json.loads(REFERENCE_JSON.read_text(encoding="utf-8"))
REF_PRESETS: dict = REFERENCE["presets"]
REF_SOURCE: dict = REFERENCE["source"]
NAMES = sorted(REF_PRESETS)

# Written from the brief / Bridge source, independently of the module under test.
EXPECTED_GEMM_ORDER = [
    "qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad", "qkv_fprop",
    "proj_dgrad", "fc1_fprop", "fc2_dgrad", "proj_fprop", "fc2_fprop",
]  # fmt: skip
CLASS_BY_METHOD = {
    "bulk": "megatron.bridge.training.comm_overlap.BulkOverlapCfg",
    "ring_exchange": "megatron.bridge.training.comm_overlap.RingExchangeOverlapCfg",
    "pipeline": "megatron.bridge.training.comm_overlap.PipelineOverlapCfg",
}
# Defaults of the Bridge 0.6.2 dataclasses (fields without a default are absent here).
BRIDGE_DEFAULTS = {
    "bulk": {"method": "bulk"},
    "ring_exchange": {
        "aggregate": False, "method": "ring_exchange", "num_sm": 1, "cga_size": 1,
        "set_sm_margin": False, "fp8_buf": False, "atomic_gemm": False,
    },
    "pipeline": {"fp8_buf": (False,), "atomic_gemm": False, "method": "pipeline"},
}  # fmt: skip
NAME_RE = re.compile(
    r"userbuffers_(?P<precision>bf16|fp8)_(?P<gpu>h100|b200)_h(?P<hidden>\d+)_tp(?P<tp>\d+)"
    r"(?:_cp(?P<cp>\d+))?_mbs(?P<mbs>\d+)_seqlen(?P<seq>\d+)(?P<lora>_lora)?"
)


def ref_groups() -> list[list[str]]:
    """Presets with identical reference values, computed from the JSON alone."""
    groups: list[list[str]] = []
    for name in NAMES:
        for group in groups:
            if REF_PRESETS[group[0]] == REF_PRESETS[name]:
                group.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def same_values_as(name: str) -> list[str]:
    return sorted(n for n in NAMES if REF_PRESETS[n] == REF_PRESETS[name])


def ref_serialized(name: str) -> dict:
    """Bridge's dump of a preset, built from the reference JSON by the rules in the brief."""
    out = {"_target_": "megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg"}
    for gemm, entry in REF_PRESETS[name].items():
        if entry is None:
            out[gemm] = None
            continue
        item = {k: v for k, v in entry.items() if k != "fp8_buf_defaulted"}
        if entry.get("fp8_buf_defaulted"):
            item["fp8_buf"] = [False]
        item["_target_"] = CLASS_BY_METHOD[entry["method"]]
        out[gemm] = item
    return out


def load_sample(path: Path = LLAMA_SAMPLE) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- reference data


def test_reference_copy_is_complete():
    assert len(REF_PRESETS) == 19
    assert REF_SOURCE["repository"] == "NVIDIA-NeMo/Megatron-Bridge"
    assert re.fullmatch(r"[0-9a-f]{40}", REF_SOURCE["commit"])
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert "userbuffers_presets.json" in readme and REF_SOURCE["commit"] in readme


def test_reference_copy_matches_shared_original():
    if not SHARED_JSON.is_file():
        pytest.skip(f"shared reference folder not present ({SHARED_JSON}); the shipped copy is used instead")
    assert SHARED_JSON.read_bytes() == REFERENCE_JSON.read_bytes()


def test_bridge_samples_copied():
    folder = DATA / "bridge_samples"
    names = {p.name for p in folder.iterdir()}
    assert {
        "README.md",
        "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml",
        "llama31_405b_peft_32gpu_h100_bf16_config.yaml",
        "deepseek_v3_pretrain_256gpu_b300_fp8mx_config.yaml",
    } <= names


# --------------------------------------------------------------------------- preset YAML files


def test_one_file_per_preset():
    files = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))
    assert files == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_yaml_file_values_equal_reference(name):
    text = (PRESETS_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    body = yaml.safe_load(text)
    assert list(body) == EXPECTED_GEMM_ORDER
    # Every field, the method and the fp8_buf_defaulted marker, exactly as in the reference.
    assert body == REF_PRESETS[name]
    for gemm, entry in body.items():
        if entry is None:
            continue
        assert isinstance(entry["method"], str)
        if "fp8_buf" in entry:
            assert isinstance(entry["fp8_buf"], bool)


@pytest.mark.parametrize("name", NAMES)
def test_yaml_file_header(name):
    text = (PRESETS_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert "NVIDIA-NeMo/Megatron-Bridge" in header
    assert REF_SOURCE["path"] in header
    assert REF_SOURCE["commit"] in header
    m = NAME_RE.fullmatch(name)

    def value(label: str) -> str:
        found = re.search(rf"^#\s+{label}\s+(\S+)", header, re.MULTILINE | re.IGNORECASE)
        assert found, f"{label} missing from the header of {name}"
        return found.group(1)

    assert value("precision") == m["precision"]
    assert value("GPU").lower() == m["gpu"]
    assert value("hidden size") == m["hidden"]
    assert value("TP") == m["tp"]
    assert value("CP") == (m["cp"] or "1")
    assert value("micro-batch size") == m["mbs"]
    assert value("sequence length") == m["seq"]
    assert value("LoRA") == ("yes" if m["lora"] else "no")
    if any(e and e.get("fp8_buf_defaulted") for e in REF_PRESETS[name].values()):
        assert "(False,)" in header and "[false]" in header


# --------------------------------------------------------------------------- load_presets


def test_presets_dir_in_checkout():
    assert P.presets_dir() == PRESETS_DIR.resolve()


def test_load_presets_matches_reference():
    presets = P.load_presets()
    assert sorted(presets) == NAMES
    for name, preset in presets.items():
        ref = REF_PRESETS[name]
        assert preset.name == name
        assert preset.fields == P.parse_preset_name(name)
        assert list(preset.gemms) == EXPECTED_GEMM_ORDER
        assert preset.fp8_buf_defaulted == {g for g, e in ref.items() if e and e.get("fp8_buf_defaulted")}
        for gemm, entry in ref.items():
            if entry is None:
                assert preset.gemms[gemm] is None
                continue
            plain = {k: v for k, v in entry.items() if k != "fp8_buf_defaulted"}
            assert preset.gemms[gemm] == plain
            assert "fp8_buf_defaulted" not in preset.gemms[gemm]


def test_load_presets_is_cached():
    first, second = P.load_presets(), P.load_presets()
    assert first is not second  # callers get their own dict ...
    assert all(first[n] is second[n] for n in first)  # ... over one set of parsed presets


def test_defaulted_fp8_buf_only_on_pipeline_entries_of_bf16_presets():
    # Sanity check of the data against rule UB-004: every shipped FP8 preset sets fp8_buf
    # explicitly on its PipelineOverlapCfg entries; only BF16 presets keep the tuple default.
    for name, preset in P.load_presets().items():
        for gemm in preset.fp8_buf_defaulted:
            assert preset.gemms[gemm]["method"] == "pipeline"
            assert preset.fields.precision == "bf16", (name, gemm)


def test_lora_presets_have_no_wgrad_entries():
    for name, preset in P.load_presets().items():
        none = {g for g, e in preset.gemms.items() if e is None}
        assert none == ({"qkv_wgrad", "fc1_wgrad"} if preset.fields.lora else set()), name


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", NAMES)
def test_parse_every_shipped_name(name):
    m = NAME_RE.fullmatch(name)
    parsed = P.parse_preset_name(name)
    assert parsed == P.PresetName(
        precision=m["precision"],
        gpu=m["gpu"],
        hidden_size=int(m["hidden"]),
        tp=int(m["tp"]),
        cp=int(m["cp"] or 1),
        micro_batch_size=int(m["mbs"]),
        seq_length=int(m["seq"]),
        lora=bool(m["lora"]),
    )
    assert P.format_preset_name(parsed) == name == parsed.name


def test_parse_spot_checks():
    cp2 = P.parse_preset_name("userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192")
    assert (cp2.precision, cp2.gpu, cp2.hidden_size, cp2.tp, cp2.cp) == ("fp8", "b200", 16384, 4, 2)
    assert (cp2.micro_batch_size, cp2.seq_length, cp2.lora) == (1, 8192, False)
    lora = P.parse_preset_name("userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora")
    assert (lora.tp, lora.cp, lora.seq_length, lora.lora) == (4, 1, 2048, True)
    mbs2 = P.parse_preset_name("userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048")
    assert (mbs2.precision, mbs2.hidden_size, mbs2.micro_batch_size) == ("bf16", 6144, 2)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "userbuffers",
        "userbuffers_fp16_h100_h8192_tp4_mbs1_seqlen8192",  # unknown precision
        "userbuffers_bf16_a100_h8192_tp4_mbs1_seqlen8192",  # unknown GPU
        "userbuffers_bf16_h100_8192_tp4_mbs1_seqlen8192",  # hidden size without 'h'
        "userbuffers_bf16_h100_h8192_mbs1_seqlen8192",  # no TP
        "userbuffers_bf16_h100_h8192_tp4_seqlen8192",  # no mbs
        "userbuffers_bf16_h100_h8192_tp4_mbs1",  # no seqlen
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192_qlora",  # unknown suffix
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192_lora_lora",
        "userbuffers_bf16_h100_h8192_cp2_tp4_mbs1_seqlen8192",  # cp before tp
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192_cp2",  # cp after seqlen
        "userbuffers_bf16_h100_h8192_tp0_mbs1_seqlen8192",  # zero
        "userbuffers_bf16_h100_h8192_tp04_mbs1_seqlen8192",  # leading zero
        "userbuffers_bf16_h100_h8192_tpx_mbs1_seqlen8192",
        "userbuffers_bf16_h100_h8192_tp-4_mbs1_seqlen8192",
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8k",
        "Userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",  # no case folding
        "userbuffers_BF16_h100_h8192_tp4_mbs1_seqlen8192",
        " userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",  # no stripping
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192\n",
        "userbuffers_bf16_h100_h8192__tp4_mbs1_seqlen8192",
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192.yaml",
        "bf16_h100_h8192_tp4_mbs1_seqlen8192",
        "userbuffers_bf16_h100_h8192_tp٤_mbs1_seqlen8192",  # non-ASCII digit
    ],
)
def test_parse_rejects_malformed(bad):
    with pytest.raises(ValueError) as info:
        P.parse_preset_name(bad)
    message = str(info.value)
    assert repr(bad) in message
    assert "userbuffers_{precision}_{gpu}" in message  # says what a valid name looks like


@pytest.mark.parametrize("bad", [None, 42, ["userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192"]])
def test_parse_rejects_non_strings(bad):
    with pytest.raises(TypeError):
        P.parse_preset_name(bad)


def test_parse_message_names_the_bad_part():
    with pytest.raises(ValueError, match="'fp16'"):
        P.parse_preset_name("userbuffers_fp16_h100_h8192_tp4_mbs1_seqlen8192")
    with pytest.raises(ValueError, match="seqlen"):
        P.parse_preset_name("userbuffers_bf16_h100_h8192_tp4_mbs1")


def test_closest_names():
    typo = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8129"
    assert P.closest_names(typo)[0] == LLAMA_PRESET
    assert P.closest_names("USERBUFFERS_FP8_H100_H8192_TP4_MBS1_SEQLEN8192")[0] == (
        "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"
    )
    assert len(P.closest_names(typo, n=5)) == 5
    assert set(P.closest_names(typo, n=5)) <= set(NAMES)
    assert P.closest_names("completely unrelated") == []


def test_get_preset_unknown_suggests():
    with pytest.raises(KeyError, match=LLAMA_PRESET):
        P.get_preset("userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8129")


# --------------------------------------------------------------------------- serialized form


def test_serialized_form_equals_bridge_dump_of_llama_sample():
    sample = load_sample()["comm_overlap"]["tp_comm_overlap_cfg"]
    form = P.serialized_form(LLAMA_PRESET)
    assert form == sample
    assert list(form) == list(sample)  # same (sorted) key order
    for gemm in EXPECTED_GEMM_ORDER:
        assert list(form[gemm]) == list(sample[gemm])
    assert form["proj_fprop"]["fp8_buf"] == [False]


def test_serialized_form_dumps_to_the_same_text_as_bridge():
    lines = LLAMA_SAMPLE.read_text(encoding="utf-8").splitlines()
    start = lines.index("  tp_comm_overlap_cfg:")
    end = start + 1
    while lines[end].startswith("    "):
        end += 1
    bridge_text = "\n".join(line[2:] for line in lines[start:end]) + "\n"
    ours = yaml.safe_dump({"tp_comm_overlap_cfg": P.serialized_form(LLAMA_PRESET)}, default_flow_style=False)
    assert ours == bridge_text


@pytest.mark.parametrize("name", NAMES)
def test_serialized_form_all_presets(name):
    form = P.serialized_form(name)
    assert form == ref_serialized(name)
    assert list(form) == sorted(form)
    for gemm in EXPECTED_GEMM_ORDER:
        if form[gemm] is not None:
            assert list(form[gemm]) == sorted(form[gemm])
    # Every YAML dump of it survives a round trip.
    assert yaml.safe_load(yaml.safe_dump(form)) == form


def test_serialized_form_is_a_fresh_copy():
    form = P.serialized_form(LLAMA_PRESET)
    form["qkv_dgrad"]["num_sm"] = 999
    form["proj_fprop"]["fp8_buf"].append(True)
    assert P.serialized_form(LLAMA_PRESET) == load_sample()["comm_overlap"]["tp_comm_overlap_cfg"]


def test_serialized_form_unknown_name():
    with pytest.raises(KeyError):
        P.serialized_form("userbuffers_bf16_h100_h1_tp1_mbs1_seqlen1")


# --------------------------------------------------------------------------- normalize / match


@pytest.mark.parametrize("name", NAMES)
def test_normalize_serialized_form_gives_reference_values(name):
    assert P.normalize_mapping(P.serialized_form(name)) == REF_PRESETS[name]


@pytest.mark.parametrize("name", NAMES)
def test_match_own_serialized_form(name):
    found = P.match_presets(P.serialized_form(name))
    assert name in found
    assert found == same_values_as(name)


def test_match_llama_sample_as_loaded_by_each_parser():
    from omegaconf import OmegaConf
    from ruamel.yaml import YAML

    expected = same_values_as(LLAMA_PRESET)
    assert P.match_presets(load_sample()["comm_overlap"]["tp_comm_overlap_cfg"]) == expected
    round_trip = YAML().load(LLAMA_SAMPLE.read_text(encoding="utf-8"))
    assert P.match_presets(round_trip["comm_overlap"]["tp_comm_overlap_cfg"]) == expected
    omega = OmegaConf.load(LLAMA_SAMPLE)
    assert P.match_presets(omega.comm_overlap.tp_comm_overlap_cfg) == expected


def test_samples_without_overlap_cfg_match_nothing():
    for sample in ("llama31_405b_peft_32gpu_h100_bf16_config.yaml", "deepseek_v3_pretrain_256gpu_b300_fp8mx_config.yaml"):
        cfg = load_sample(DATA / "bridge_samples" / sample)["comm_overlap"]["tp_comm_overlap_cfg"]
        assert cfg is None
        assert P.match_presets(cfg) == []


def strip_targets(mapping: dict) -> dict:
    out = {k: v for k, v in mapping.items() if k != "_target_"}
    for gemm, entry in out.items():
        if isinstance(entry, dict):
            out[gemm] = {k: v for k, v in entry.items() if k != "_target_"}
    return out


def minimal_hand_written(name: str) -> dict:
    """Only the values that differ from Bridge's dataclass defaults, plus method; no _target_."""
    out = {}
    for gemm, entry in REF_PRESETS[name].items():
        if entry is None:
            out[gemm] = None
            continue
        defaults = BRIDGE_DEFAULTS[entry["method"]]
        kept = {"method": entry["method"]}
        for key, val in entry.items():
            if key in ("method", "fp8_buf_defaulted"):
                continue
            if key == "fp8_buf" and entry.get("fp8_buf_defaulted"):
                continue  # left at the (False,) default by omission
            if key in defaults and defaults[key] == val:
                continue
            kept[key] = val
        out[gemm] = kept
    return out


@pytest.mark.parametrize("name", NAMES)
def test_match_without_targets_and_with_defaults_omitted(name):
    expected = same_values_as(name)
    assert P.match_presets(strip_targets(P.serialized_form(name))) == expected
    hand = minimal_hand_written(name)
    assert P.normalize_mapping(hand) == REF_PRESETS[name]
    assert P.match_presets(hand) == expected


def test_missing_method_inferred_from_target():
    form = P.serialized_form(LLAMA_PRESET)
    for entry in form.values():
        if isinstance(entry, dict):
            del entry["method"]
    assert P.match_presets(form) == same_values_as(LLAMA_PRESET)


def test_fp8_buf_forms():
    form = P.serialized_form(LLAMA_PRESET)
    expected = same_values_as(LLAMA_PRESET)

    as_tuple = copy.deepcopy(form)
    as_tuple["proj_fprop"]["fp8_buf"] = (False,)
    as_tuple["fc2_fprop"]["fp8_buf"] = (False,)
    assert P.match_presets(as_tuple) == expected

    # An explicit false is falsy; the preset's (False,) is truthy: a different value.
    explicit = copy.deepcopy(form)
    explicit["proj_fprop"]["fp8_buf"] = False
    explicit["fc2_fprop"]["fp8_buf"] = False
    normalized = P.normalize_mapping(explicit)
    assert "fp8_buf_defaulted" not in normalized["proj_fprop"]
    assert P.fp8_buf_effective(normalized["proj_fprop"]) is False
    assert P.match_presets(explicit) == []
    assert P.match_presets(explicit, strict_fp8_buf=False) == expected

    # [true] behaves like true, which is not what the preset holds.
    truthy = copy.deepcopy(form)
    truthy["proj_fprop"]["fp8_buf"] = [True]
    assert P.normalize_mapping(truthy)["proj_fprop"]["fp8_buf"] is True
    assert "fp8_buf_defaulted" not in P.normalize_mapping(truthy)["proj_fprop"]
    assert P.match_presets(truthy) == []


def test_fp8_buf_effective_on_preset_entries():
    for name in NAMES:
        for gemm, entry in P.normalize_mapping(P.serialized_form(name)).items():
            if entry is None or "fp8_buf" not in entry:
                continue
            ref = REF_PRESETS[name][gemm]
            assert P.fp8_buf_effective(entry) is bool(ref["fp8_buf"] or ref.get("fp8_buf_defaulted"))


def test_changed_value_matches_nothing():
    form = P.serialized_form(LLAMA_PRESET)
    form["fc2_fprop"]["num_sm"] = 17
    assert P.match_presets(form) == []
    form = P.serialized_form(LLAMA_PRESET)
    form["qkv_fprop"]["extra_field"] = 1
    assert P.match_presets(form) == []


def test_missing_gemm_key_reads_as_none():
    lora = "userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora"
    form = P.serialized_form(lora)
    del form["qkv_wgrad"], form["fc1_wgrad"]
    assert P.match_presets(form) == same_values_as(lora)


@pytest.mark.parametrize(
    "bad",
    [
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",  # a name is not a mapping (UB-003)
        ["qkv_dgrad"],
        {"qkv_dgrad": "bulk"},
        {"qkv_dgrad": {"num_sm": 4, "cga_size": 2, "set_sm_margin": False}},  # no class, no method
        {"qkv_dgrad": {"method": "scatter", "num_sm": 4}},
        {"qkv_dgrad": {"method": "bulk", "num_sm": 4}},  # required fields missing
        {"proj_fprop": {"method": "pipeline", "num_sm": 1, "cga_size": 1, "num_splits": 4,
                        "set_sm_margin": True, "fp8_buf": [False, False]}},
    ],
)  # fmt: skip
def test_unreadable_mappings(bad):
    with pytest.raises(P.MappingFormatError):
        P.normalize_mapping(bad)
    assert issubclass(P.MappingFormatError, ValueError)
    assert P.match_presets(bad) == []


# --------------------------------------------------------------------------- duplicates


def test_duplicate_groups_from_reference():
    groups = P.duplicate_groups()
    assert groups == sorted(sorted(g) for g in ref_groups())
    # The pair the brief points at is one of them.
    assert any(
        {"userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192", "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"} <= set(g)
        for g in groups
    )
    members = [n for g in groups for n in g]
    assert len(members) == len(set(members))


# --------------------------------------------------------------------------- TE dict


def ref_te_dict(name: str) -> dict:
    out = {}
    for gemm, entry in REF_PRESETS[name].items():
        if entry is None:
            continue
        item = {k: v for k, v in entry.items() if k != "fp8_buf_defaulted"}
        if entry.get("fp8_buf_defaulted"):
            item["fp8_buf"] = (False,)
        out[gemm] = item
    return out


@pytest.mark.parametrize("name", NAMES)
def test_te_dict(name):
    expected = ref_te_dict(name)
    assert P.te_dict(name) == expected
    from_yaml = P.te_dict(P.serialized_form(name))
    assert set(from_yaml) == set(expected)
    for gemm, entry in from_yaml.items():
        assert "_target_" not in entry
        want = dict(expected[gemm])
        if want.get("fp8_buf") == (False,):
            assert entry["fp8_buf"] == [False] and bool(entry["fp8_buf"]) is True
            want["fp8_buf"] = [False]
        assert entry == want


def test_te_dict_drops_lora_wgrad_entries():
    te = P.te_dict("userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora")
    assert "qkv_wgrad" not in te and "fc1_wgrad" not in te
    assert len(te) == 8


def test_te_dict_instantiates_the_named_dataclass_and_keeps_a_plain_entry_as_written():
    """An entry naming its dataclass gets that dataclass's defaults and loses the fields it does not
    have; an entry without ``_target_`` reaches TE as written (TE fills in its own defaults)."""
    pipeline = "megatron.bridge.training.comm_overlap.PipelineOverlapCfg"
    te = P.te_dict({"proj_fprop": {"_target_": pipeline, "num_sm": 8, "cga_size": 2, "num_splits": 4,
                                   "set_sm_margin": True, "not_a_field": 1},
                    "qkv_fprop": {"method": "ring_exchange"}, "qkv_dgrad": None, "extra": {"num_sm": 1}})  # fmt: skip
    assert te == {
        "qkv_fprop": {"method": "ring_exchange"},
        "proj_fprop": {"num_sm": 8, "cga_size": 2, "num_splits": 4, "set_sm_margin": True, "fp8_buf": (False,),
                       "atomic_gemm": False, "method": "pipeline"},
    }  # fmt: skip


# --------------------------------------------------------------------------- import cost


def test_import_is_light():
    # Only what overlap_cli.frameworks.bridge.presets itself pulls in (the package __init__ is someone else's business).
    code = (
        "import sys, overlap_cli; before = set(sys.modules); import overlap_cli.frameworks.bridge.presets; "
        "print(sorted(m for m in ('yaml', 'difflib') if m in sys.modules and m not in before))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_preset_index_is_current_and_equals_the_files():
    """presets/index.json holds each file's digest and values; it must be regenerated with the files
    (``python -m overlap_cli.frameworks.bridge.presets``), and what it holds is what PyYAML reads."""
    index = json.loads((PRESETS_DIR / P.INDEX_FILE).read_text(encoding="utf-8"))["presets"]
    assert sorted(index) == sorted(p.stem for p in PRESETS_DIR.glob("userbuffers_*.yaml"))
    for name, row in index.items():
        data = (PRESETS_DIR / f"{name}.yaml").read_bytes()
        assert row["digest"] == P._digest(data), f"{name}: presets/index.json is stale"
        assert json.dumps(row["body"]) == json.dumps(yaml.safe_load(data)), name


def test_an_edited_preset_file_is_read_from_the_file(tmp_path):
    """A file that differs from the one indexed is read again, not served from the index."""
    for path in PRESETS_DIR.iterdir():
        shutil.copy(path, tmp_path / path.name)
    P.write_index(str(tmp_path))
    target = tmp_path / f"{LLAMA_PRESET}.yaml"
    text = target.read_text(encoding="utf-8")
    edited = re.sub(r"num_sm: (\d+)", lambda m: f"num_sm: {int(m.group(1)) + 7}", text, count=1)
    assert edited != text
    target.write_text(edited, encoding="utf-8")
    assert LLAMA_PRESET in P._index(str(tmp_path))  # loaded: the index is consulted, and its digest differs
    body, _ = P._read_body(str(tmp_path), LLAMA_PRESET)
    assert body == yaml.safe_load(edited)
    assert body != json.loads((tmp_path / P.INDEX_FILE).read_text())["presets"][LLAMA_PRESET]["body"]
    P._index.cache_clear()


def test_the_index_serves_an_unchanged_file(tmp_path):
    for path in PRESETS_DIR.iterdir():
        shutil.copy(path, tmp_path / path.name)
    P.write_index(str(tmp_path))
    index = json.loads((tmp_path / P.INDEX_FILE).read_text())["presets"]
    index[LLAMA_PRESET]["body"]["marker"] = "from the index"  # only the index holds this
    (tmp_path / P.INDEX_FILE).write_text(json.dumps({"format": 1, "presets": index}))
    P._index.cache_clear()
    assert P._index(str(tmp_path))
    body, _ = P._read_body(str(tmp_path), LLAMA_PRESET)
    assert body["marker"] == "from the index"
    P._index.cache_clear()
