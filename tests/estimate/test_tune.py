"""``overlap tune`` proposes only what the rules accept, each faster than the config as written, and
``--write`` makes the file that run."""

import json

import pytest

from overlap_cli.frameworks.bridge import recipes as catalog
from recipe_files import recipe_file  # noqa: F401  (fixture)

CASES = {
    "llama3_70b_pretrain_64gpu_h100_bf16_config": (64, "h100"),
    "deepseek_v3_pretrain_256gpu_gb200_bf16_config": (256, "gb200"),
    "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config": (16, "h100"),
    "llama3_8b_pretrain_8gpu_h100_fp8cs_config": (8, "h100"),
}



@pytest.mark.parametrize("reshard", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_tune_never_proposes_a_crashing_candidate(tmp_path, run_cli, name, reshard, recipe_file):
    world, gpu = CASES[name]
    path = recipe_file(name)
    flags = ["--world-size", str(world), "--gpu", gpu]
    code, out, err = run_cli("tune", path, *flags, "--format", "json", "--top", "4", *(["--allow-reshard"] if reshard else []))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["evaluated"] >= 100
    for cand in doc["candidates"]:
        assert cand["step_time_s"] < doc["base"]["step_time_s"] and cand["gain_s"] > 0
        # The rules, run again on the candidate: no error finding (a predicted crash).
        code, out, err = run_cli("check", path, *cand["overrides"], *flags, "--format", "json")
        assert code in (0, 1), err
        findings = json.loads(out)["results"][0]["findings"]
        assert not [f for f in findings if f["severity"] == "error"], cand["overrides"]
        # And the estimate of the candidate is the one tune reports.
        code, out, _ = run_cli("estimate", path, *cand["overrides"], *flags, "--format", "json")
        assert json.loads(out)["results"][0]["estimate"]["step_time_s"] == pytest.approx(cand["step_time_s"])


def test_tune_finds_the_dp_overlap_a_config_turned_off(tmp_path, run_cli):
    path = tmp_path / "cfg.yaml"
    text = catalog.text("0.6.2", "llama3_8b_pretrain_8gpu_h100_fp8cs_config")
    path.write_text(text)
    flags = ["--world-size", "64", "--gpu", "h100"]
    code, out, err = run_cli("tune", str(path), "comm_overlap.overlap_grad_reduce=false", *flags, "--format", "json")
    assert code == 0, err
    best = json.loads(out)["candidates"][0]
    assert {"op": "set", "key": "comm_overlap.overlap_grad_reduce", "value": True} in best["edits"]


def test_write_applies_the_best_candidate(tmp_path, run_cli, recipe_file):
    path = recipe_file("deepseek_v3_pretrain_256gpu_gb200_bf16_config")
    flags = ["--world-size", "256", "--gpu", "gb200"]
    code, out, _ = run_cli("tune", path, *flags, "--format", "json")
    best = json.loads(out)["candidates"][0]
    before = open(path).read()
    code, out, err = run_cli("tune", path, *flags, "--write")
    assert code == 0, err and "wrote candidate 1" in out
    after = open(path).read()
    assert after != before
    assert len(after.splitlines()) - len(before.splitlines()) <= len(best["edits"])  # edits in place, nothing reflowed
    code, out, _ = run_cli("estimate", path, *flags, "--format", "json")
    assert json.loads(out)["results"][0]["estimate"]["step_time_s"] == pytest.approx(best["step_time_s"])
    code, out, _ = run_cli("check", path, *flags, "--format", "json")
    assert not [f for f in json.loads(out)["results"][0]["findings"] if f["severity"] == "error"]


def test_recipe_layering_estimate_and_tune_write_the_override_file(tmp_path, run_cli):
    recipe = "llama3_70b_pretrain_64gpu_h100_fp8cs_config"
    flags = ["--recipe", recipe, "--world-size", "64", "--gpu", "h100"]
    code, out, err = run_cli("estimate", *flags, "--format", "json")
    assert code == 0, err
    alone = json.loads(out)["results"][0]
    override = tmp_path / "override.yaml"
    override.write_text("comm_overlap:\n  tp_comm_overlap: false\n")
    code, out, err = run_cli("estimate", str(override), *flags, "--format", "json")
    layered = json.loads(out)["results"][0]
    assert layered["file"] == str(override)
    assert layered["estimate"]["breakdown_s"]["tp_exposed"] > alone["estimate"]["breakdown_s"]["tp_exposed"]
    code, out, err = run_cli("tune", str(override), *flags, "--format", "json")
    assert code == 0, err
    best = json.loads(out)["candidates"][0]
    code, out, err = run_cli("tune", str(override), *flags, "--write")
    assert code == 0, err
    code, out, _ = run_cli("estimate", str(override), *flags, "--format", "json")
    assert json.loads(out)["results"][0]["estimate"]["step_time_s"] == pytest.approx(best["step_time_s"])
    code, out, err = run_cli("tune", *flags, "--write")
    assert code == 2 and "give one after --recipe/--base" in err


def test_the_userbuffers_preset_is_not_proposed_for_a_gain_below_one_percent(tmp_path, run_cli):
    # The preset tuned for this run changes only the SMs the userbuffers kernels take: worth ~0.1 % here.
    override = tmp_path / "override.yaml"
    override.write_text("comm_overlap:\n  tp_comm_overlap_cfg: null\n")
    flags = ["--recipe", "llama3_70b_pretrain_64gpu_h100_fp8cs_config", "--world-size", "64", "--gpu", "h100"]
    code, out, err = run_cli("estimate", str(override), *flags, "--format", "json")
    without = json.loads(out)["results"][0]["estimate"]["step_time_s"]
    code, out, err = run_cli("estimate", *flags, "--format", "json")  # the recipe: the preset in place
    with_preset = json.loads(out)["results"][0]["estimate"]["step_time_s"]
    assert 0 <= without - with_preset < 0.01 * without
    code, out, err = run_cli("tune", str(override), *flags, "--format", "json")
    assert code == 0, err
    keys = [e["key"] for c in json.loads(out)["candidates"] for e in c["edits"]]
    assert not any("tp_comm_overlap_cfg" in k for k in keys)


def test_tune_proposes_only_changes_worth_their_uncertainty(run_cli):
    import json as _json

    for name, world in (("llama3_70b_pretrain_64gpu_h100_bf16_config", "64"), ("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "16")):
        code, out, err = run_cli("tune", "--recipe", name, "--world-size", world, "--gpu", "h100", "--format", "json")
        assert code == 0, err
        doc = _json.loads(out)
        base = doc["base"]["step_time_s"]
        for c in doc["candidates"]:
            assert c["gain_s"] >= 0.01 * base and c["gain_s"] > c["uncertainty_s"] >= 0
        if not doc["candidates"]:
            assert doc["nothing_worth_changing"].startswith("nothing in reach is worth changing")
        assert doc["dropped_memory"] >= 0 and doc["memory_limit_bytes"] >= 80 * 2**30
        code, text, _ = run_cli("tune", "--recipe", name, "--world-size", world, "--gpu", "h100")
        if not doc["candidates"]:
            lines = [x for x in text.splitlines() if x.startswith("nothing in reach")]
            assert len(lines) == 1 and ("below 1 %" in lines[0] or "within its uncertainty" in lines[0]
                                        or "no change gains 1 % of the step on its own" in lines[0])


def test_tune_drops_resharding_candidates_above_the_gpu_memory(run_cli):
    import json as _json

    # Llama 3 70B on 64 H100: layouts with less model parallelism need more than 80 GiB per GPU.
    code, out, err = run_cli("tune", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--world-size", "64",
                             "--gpu", "h100", "--allow-reshard", "--format", "json")
    assert code == 0, err
    doc = _json.loads(out)
    assert doc["dropped_memory"] > 0
    code, text, _ = run_cli("tune", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--world-size", "64",
                            "--gpu", "h100", "--allow-reshard")
    assert f"{doc['dropped_memory']} dropped above 80.0 GiB of memory per GPU" in text.splitlines()[0]
