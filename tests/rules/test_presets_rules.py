"""UB6xx rules and the effective tp_comm_overlap_cfg, through real configs (`overlap check` / `overlap fix`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from overlap_cli.frameworks.bridge import presets as P
from overlap_cli.frameworks.bridge import te_userbuffers as TE
from conftest import ROOT as ROOT_DIR  # noqa: E402

ROOT = ROOT_DIR
CASES = ROOT / "tests" / "cases"
LLAMA_DUMP = ROOT / "examples" / "bridge" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"
LLAMA_PRESET = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192"
GEMMS = ["qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad", "qkv_fprop",
         "proj_dgrad", "fc1_fprop", "fc2_dgrad", "proj_fprop", "fc2_fprop"]  # fmt: skip


def check(run_cli, path, *args):
    code, out, _ = run_cli("check", path, *args, "--format", "json")
    return code, json.loads(out)["results"][0]


def ub_findings(result, code=None):
    return [f for f in result["findings"] if f["code"].startswith("UB") and (code is None or f["code"] == code)]


def write_config(tmp_path, model: dict, comm_overlap: dict, name="c.yaml", **sections) -> Path:
    doc = {"model": {"sequence_parallel": True, **model}, **sections, "comm_overlap": comm_overlap}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


LLAMA_MODEL = {"hidden_size": 8192, "seq_length": 8192, "tensor_model_parallel_size": 4}
TRAIN = {"micro_batch_size": 1}


# -- the effective value -----------------------------------------------------------------------


def test_effective_value_of_a_recognised_preset(run_cli):
    _, r = check(run_cli, CASES / "ub_preset_fits.yaml", "--gpu", "h100")
    v = r["effective"]["model.tp_comm_overlap_cfg"]
    assert v["source"] == "user"
    value = v["value"]
    assert value["preset"] == LLAMA_PRESET and value["matches"] == [LLAMA_PRESET]
    te = value["te_config"]
    assert list(te) == GEMMS  # asdict() order, no None entries
    assert all("_target_" not in e for e in te.values())
    # What Bridge hands to TE: the (False,) default stays truthy (JSON writes the tuple as a list).
    assert te["proj_fprop"]["fp8_buf"] == [False] and te["qkv_fprop"]["fp8_buf"] is False
    assert te == json.loads(json.dumps(P.te_dict(LLAMA_PRESET)))
    assert not ub_findings(r)


def test_effective_value_of_bridge_dump_and_lora_drops_wgrads(run_cli, tmp_path):
    _, r = check(run_cli, LLAMA_DUMP)
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] == LLAMA_PRESET
    lora = "userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora"
    path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(lora)})
    _, r = check(run_cli, path)
    value = r["effective"]["model.tp_comm_overlap_cfg"]["value"]
    assert value["preset"] == lora
    assert set(value["te_config"]) == set(GEMMS) - {"qkv_wgrad", "fc1_wgrad"}


def test_effective_value_custom_null_and_unused(run_cli, tmp_path):
    custom = P.serialized_form(LLAMA_PRESET)
    custom["fc2_fprop"]["num_sm"] = 17
    path = write_config(tmp_path, LLAMA_MODEL, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": custom})
    _, r = check(run_cli, path)
    value = r["effective"]["model.tp_comm_overlap_cfg"]["value"]
    assert value["preset"] == "custom" and value["matches"] == [] and value["te_config"]["fc2_fprop"]["num_sm"] == 17
    # TP overlap not requested: the preset is recognised, nothing reaches Transformer Engine.
    _, r = check(run_cli, CASES / "ub608_unused_preset.yaml")
    value = r["effective"]["model.tp_comm_overlap_cfg"]["value"]
    assert value == {"preset": LLAMA_PRESET, "matches": [LLAMA_PRESET], "te_config": None}
    # A string keeps preset null and says what was given.
    _, r = check(run_cli, CASES / "ub603_path_string.yaml")
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] is None
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["given"] == "/configs/ub_tp2.yaml"


def test_text_report_names_the_preset(run_cli):
    code, out, _ = run_cli("check", CASES / "ub_preset_fits.yaml", "--gpu", "h100", "--format", "text", "--show-effective")
    assert f"preset {LLAMA_PRESET}" in out


# -- UB606: preset vs model ---------------------------------------------------------------------


def test_tp4_preset_on_tp2_warns_naming_tp_and_offers_an_unsafe_exact_fit(run_cli):
    # Unsafe even when exact: other SM counts and splits replace the ones the file tuned.
    code, r = check(run_cli, CASES / "ub606_tp4_preset_on_tp2.yaml", "--gpu", "b200")
    (f,) = ub_findings(r, "UB606")
    assert f["severity"] == "warning" and code == 1
    assert "TP 4 in the preset vs 2 here" in f["message"]
    assert "GPU h100 in the preset vs b200 here" in f["message"]
    assert f["fix"]["applicability"] == "unsafe"
    (edit,) = f["fix"]["edits"]
    assert edit == {"op": "set", "key": "comm_overlap.tp_comm_overlap_cfg",
                    "value": P.serialized_form("userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192")}  # fmt: skip


def test_tp_mismatch_without_exact_fit_gets_unsafe_nearest(run_cli):
    # On H100 no TP2/h8192/seq8192 bf16 preset exists: nearest is suggested, unsafely.
    code, r = check(run_cli, CASES / "ub606_tp4_preset_on_tp2.yaml", "--gpu", "h100")
    (f,) = ub_findings(r, "UB606")
    assert f["severity"] == "warning" and "TP 4 in the preset vs 2 here" in f["message"]
    assert f["fix"]["applicability"] == "unsafe"
    name = f["fix"]["edits"][0]["value"]
    assert P.match_presets(name) and P.parse_preset_name(P.match_presets(name)[0]).tp == 2


def test_bridge_llama_dump_cp2_is_info_not_warning(run_cli):
    # Bridge's own recipe pairs the h8192/tp4 (CP1) preset with CP=2; no better preset exists.
    _, r = check(run_cli, LLAMA_DUMP, "--gpu", "h100", "--world-size", "32")
    (f,) = ub_findings(r)
    assert f["code"] == "UB606" and f["severity"] == "info"
    assert "CP 1 in the preset vs 2 here" in f["message"] and "no shipped preset fits better" in f["message"]
    assert f["fix"] is None


def test_precision_mismatch_and_lora_fields(run_cli, tmp_path):
    fp8 = "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"
    path = write_config(tmp_path, LLAMA_MODEL, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(fp8)},
                        train=TRAIN, mixed_precision="bf16_mixed")  # fmt: skip
    _, r = check(run_cli, path, "--gpu", "h100")
    (f,) = ub_findings(r, "UB606")
    # The mapping equals two presets; both are named, the one closer to the run is used.
    assert f["severity"] == "warning" and "precision fp8 in the preset vs bf16 here" in f["message"]
    assert "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192" in f["message"]
    assert f["fix"]["applicability"] == "unsafe" and f["fix"]["edits"][0]["value"] == P.serialized_form(LLAMA_PRESET)
    lora = "userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora"
    path = write_config(tmp_path, {"hidden_size": 8192, "seq_length": 4096, "tensor_model_parallel_size": 2},
                        {"tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(lora)},
                        train=TRAIN, mixed_precision="bf16_with_fp8_delayed_scaling_mixed")  # fmt: skip
    _, r = check(run_cli, path, "--gpu", "h100")
    (f,) = ub_findings(r, "UB606")
    assert f["severity"] == "info" and "LoRA yes in the preset vs no here" in f["message"]
    path.write_text(path.read_text() + "peft:\n  _target_: megatron.bridge.peft.lora.LoRA\n")
    _, r = check(run_cli, path, "--gpu", "h100")
    assert not ub_findings(r)


def test_duplicate_group_prefers_the_member_that_fits(run_cli, tmp_path):
    pair = ("userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192", "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192")
    mp = "bf16_with_fp8_delayed_scaling_mixed"
    for name, tp, gpu in ((pair[0], 2, "b200"), (pair[1], 4, "h100")):
        other = pair[1] if name == pair[0] else pair[0]
        path = write_config(tmp_path, {**LLAMA_MODEL, "tensor_model_parallel_size": tp},
                            {"tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(other)},
                            train=TRAIN, mixed_precision=mp)  # fmt: skip
        _, r = check(run_cli, path, "--gpu", gpu)
        value = r["effective"]["model.tp_comm_overlap_cfg"]["value"]
        assert value["preset"] == name and value["matches"] == sorted(pair)
        assert not ub_findings(r)


# -- UB603: strings ------------------------------------------------------------------------------


def test_string_preset_name_error_with_expanding_safe_fix(run_cli):
    code, r = check(run_cli, CASES / "ub603_preset_name_string.yaml")
    (f,) = ub_findings(r)
    assert f["code"] == "UB603" and f["severity"] == "error" and code == 1
    assert f["fix"]["applicability"] == "safe"
    assert f["fix"]["edits"] == [{"op": "set", "key": "comm_overlap.tp_comm_overlap_cfg", "value": P.serialized_form(LLAMA_PRESET)}]


def test_string_fix_applied_then_recognised(run_cli, tmp_path):
    path = tmp_path / "c.yaml"
    shutil.copy(CASES / "ub603_preset_name_string.yaml", path)
    code, out, err = run_cli("fix", "--write", path)
    assert "UB603" in out + err
    _, r = check(run_cli, path)
    assert not ub_findings(r, "UB603")
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] == LLAMA_PRESET
    assert yaml.safe_load(path.read_text())["comm_overlap"]["tp_comm_overlap_cfg"] == P.serialized_form(LLAMA_PRESET)


def test_unknown_string_names_closest_and_has_no_fix(run_cli, tmp_path):
    typo = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8129"
    path = write_config(tmp_path, LLAMA_MODEL, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": typo})
    _, r = check(run_cli, path)
    (f,) = ub_findings(r, "UB603")
    assert f["fix"] is None and LLAMA_PRESET in f["message"]
    assert "only accepted on model.tp_comm_overlap_cfg with comm_overlap null" in f["message"]


def test_string_with_tp_gated_off_is_a_warning_and_path_on_model_is_accepted(run_cli, tmp_path):
    path = write_config(tmp_path, {**LLAMA_MODEL, "sequence_parallel": False}, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": LLAMA_PRESET})
    _, r = check(run_cli, path)
    (f,) = ub_findings(r, "UB603")
    assert f["severity"] == "warning"
    # Without comm_overlap, model.tp_comm_overlap_cfg may be a YAML path (initialize.py reads it).
    path.write_text(yaml.safe_dump({"model": {**LLAMA_MODEL, "sequence_parallel": True, "tp_comm_overlap": True,
                                              "tp_comm_overlap_cfg": "/cfg/ub.yaml"}}))  # fmt: skip
    _, r = check(run_cli, path)
    assert not ub_findings(r, "UB603")


def test_mapping_without_target_warns(run_cli, tmp_path):
    form = P.serialized_form(LLAMA_PRESET)
    del form["_target_"]
    path = write_config(tmp_path, LLAMA_MODEL, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": form})
    _, r = check(run_cli, path)
    (f,) = ub_findings(r, "UB603")
    assert f["severity"] == "warning" and f["fix"]["applicability"] == "unsafe"
    assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] == LLAMA_PRESET


def test_missing_required_field_with_target(run_cli, tmp_path):
    bulk = "megatron.bridge.training.comm_overlap.BulkOverlapCfg"
    cfg = {"_target_": P.LAYER_TARGET, "qkv_dgrad": {"_target_": bulk, "num_sm": 4}}
    path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": cfg})
    _, r = check(run_cli, path)
    (f,) = ub_findings(r, "UB603")
    assert f["severity"] == "error" and "cga_size" in f["message"] and "set_sm_margin" in f["message"]


# -- UB601 / UB604 / UB605 / UB607 / UB608 -------------------------------------------------------


def test_null_with_tp_on_is_info_naming_the_fitting_preset(run_cli):
    code, r = check(run_cli, ROOT / "examples" / "llama3_70b_tuned.yaml", "--gpu", "h100", "--world-size", "64")
    (f,) = ub_findings(r)
    assert f["code"] == "UB601" and f["severity"] == "info" and LLAMA_PRESET in f["message"]
    assert f["fix"]["applicability"] == "unsafe"
    assert code == 0


def test_fp8_buf_default_only_in_fp8_runs(run_cli, tmp_path):
    _, r = check(run_cli, CASES / "ub604_fp8_buf_default.yaml")
    (f,) = ub_findings(r, "UB604")
    assert f["key"] == "comm_overlap.tp_comm_overlap_cfg.proj_fprop.fp8_buf"
    assert f["fix"]["applicability"] == "safe" and f["fix"]["edits"][0]["value"] is True
    bf16 = tmp_path / "bf16.yaml"
    bf16.write_text((CASES / "ub604_fp8_buf_default.yaml").read_text().replace("bf16_with_fp8_delayed_scaling_mixed", "bf16_mixed"))
    _, r = check(run_cli, bf16)
    assert not ub_findings(r, "UB604")


def test_atomic_gemm_rules(run_cli, tmp_path):
    def run(cfg, mp):
        path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": {"_target_": P.LAYER_TARGET, **cfg}}, mixed_precision=mp)
        return ub_findings(check(run_cli, path)[1], "UB605")

    ring_atomic = {"method": "ring_exchange", "atomic_gemm": True}
    fp8 = "bf16_with_fp8_delayed_scaling_mixed"
    # FP8, both GEMMs of the TP block atomic ring-exchange: accepted.
    assert run({"qkv_fprop": ring_atomic, "proj_fprop": ring_atomic}, fp8) == []
    # Only one of the pair: assertion.
    (f,) = run({"qkv_fprop": ring_atomic}, fp8)
    assert f["severity"] == "error" and "proj_fprop" in f["message"]
    # Atomic + bulk in FP8: TE turns it off with a warning.
    (f,) = run({"fc1_wgrad": {"method": "bulk", "atomic_gemm": True}}, fp8)
    assert f["severity"] == "warning"
    # FP8 current scaling keeps the first/last layer in BF16: Bridge adds non-FP8 userbuffers (TE >= 2.8).
    (f, g) = run({"qkv_fprop": ring_atomic, "proj_fprop": ring_atomic}, "bf16_with_fp8_current_scaling_mixed")
    assert "BF16 first/last layers" in f["message"]


def test_bootstrap_backend_null_and_invalid_when_off(run_cli, tmp_path):
    path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": True, "tp_comm_bootstrap_backend": None})
    (f,) = ub_findings(check(run_cli, path)[1], "UB607")
    assert f["severity"] == "warning" and "MPI" in f["message"] and f["fix"]["applicability"] == "unsafe"
    path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": False, "tp_comm_bootstrap_backend": "ucc"})
    (f,) = ub_findings(check(run_cli, path)[1], "UB607")
    assert f["severity"] == "warning"


def test_unused_preset_is_info_and_its_removal_unsafe(run_cli, tmp_path):
    # A recipe may switch TP overlap off on purpose and keep its tuned preset: nothing breaks at launch.
    (f,) = ub_findings(check(run_cli, CASES / "ub608_unused_preset.yaml")[1])
    assert f["code"] == "UB608" and f["severity"] == "info" and f["fix"] == {
        "applicability": "unsafe", "message": f["fix"]["message"],
        "edits": [{"op": "remove", "key": "comm_overlap.tp_comm_overlap_cfg"}],
    }  # fmt: skip


# -- the TE constraint checks against real data --------------------------------------------------


@pytest.mark.parametrize("name", P.preset_names())
def test_every_shipped_preset_passes_the_te_checks_in_its_own_precision(name):
    preset = P.get_preset(name)
    form = P.serialized_form(name)
    te = P.te_dict(form)
    # The dumped form gives TE what the Python preset gives it ((False,) is [False] once dumped).
    assert json.dumps(te) == json.dumps(P.te_dict(name))
    fp8 = preset.fields.precision == "fp8"
    assert TE.structure_problems(form) == []
    assert TE.wgrad_problems(te) == []
    assert TE.method_problems(te, fp8=fp8, bf16_layer_buffers=False) == []
    # FP8 presets write fp8_buf explicitly; only BF16 ones keep the truthy default.
    assert bool(TE.defaulted_fp8_buf(form, te)) == bool(preset.fp8_buf_defaulted)


def test_shipped_presets_with_their_own_shape_report_nothing(run_cli, tmp_path):
    for name in P.preset_names():
        f = P.parse_preset_name(name)
        model = {"hidden_size": f.hidden_size, "seq_length": f.seq_length, "tensor_model_parallel_size": f.tp,
                 "context_parallel_size": f.cp}  # fmt: skip
        mp = "bf16_with_fp8_delayed_scaling_mixed" if f.precision == "fp8" else "bf16_mixed"
        extra = {"peft": {"_target_": "megatron.bridge.peft.lora.LoRA"}} if f.lora else {}
        path = write_config(tmp_path, model, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(name)},
                            train={"micro_batch_size": f.micro_batch_size}, mixed_precision=mp, **extra)  # fmt: skip
        _, r = check(run_cli, path, "--gpu", f.gpu)
        assert not ub_findings(r), (name, ub_findings(r))
        assert r["effective"]["model.tp_comm_overlap_cfg"]["value"]["preset"] == name


def test_unknown_methods_and_fields(run_cli, tmp_path):
    ring = "megatron.bridge.training.comm_overlap.RingExchangeOverlapCfg"
    cfg = {
        "_target_": P.LAYER_TARGET,
        "qkv_dgrad": {"method": "scatter", "num_sm": 4},  # a dgrad TE has no method list for: KeyError
        "fc2_fprop": {"method": "chunked"},  # elsewhere TE silently builds a non-ring overlap
        "proj_dgrad": {"_target_": ring, "num_sms": 2},  # dataclass field typo: dropped by the loader
        "fc1_fprop": {"method": "ring_exchange", "use_ce": False, "numsm": 2},  # plain dict: add_ub() TypeError
    }
    path = write_config(tmp_path, {"tensor_model_parallel_size": 2}, {"tp_comm_overlap": True, "tp_comm_overlap_cfg": cfg})
    _, r = check(run_cli, path)
    methods = {f["key"].split(".")[2]: f for f in ub_findings(r, "UB605")}
    assert set(methods) == {"qkv_dgrad", "fc2_fprop"}
    assert "KeyError" in methods["qkv_dgrad"]["message"] and "silently" in methods["fc2_fprop"]["message"]
    fields = {f["key"]: f["severity"] for f in ub_findings(r, "UB609")}
    assert fields == {
        "comm_overlap.tp_comm_overlap_cfg.proj_dgrad.num_sms": "warning",
        "comm_overlap.tp_comm_overlap_cfg.fc1_fprop.numsm": "error",  # use_ce is a TE keyword: accepted
    }


def test_without_comm_overlap_the_model_value_is_described(run_cli, tmp_path):
    # No comm_overlap: model.tp_comm_overlap_cfg goes to Transformer Engine as written (no Bridge gate).
    fp8 = "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"model": {**LLAMA_MODEL, "tensor_model_parallel_size": 2, "sequence_parallel": True,
                                              "tp_comm_overlap": True, "tp_comm_overlap_cfg": P.serialized_form(fp8)}}))  # fmt: skip
    _, r = check(run_cli, path, "--gpu", "h100")
    value = r["effective"]["model.tp_comm_overlap_cfg"]["value"]
    assert value["matches"] == ["userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192", fp8]
    (f,) = ub_findings(r, "UB606")
    assert f["key"] == "model.tp_comm_overlap_cfg" and f["fix"] is None  # fixes only edit comm_overlap
