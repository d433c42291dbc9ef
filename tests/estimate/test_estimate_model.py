"""The model's responses to the settings it is about: overlaps never slow it down (unless it says why),
the pipeline bubble follows (p-1)/(v*m), bucket size changes the exposed DP tail, the JSON contract."""

import json

import pytest

from overlap_cli.estimate.model import estimate
from overlap_cli.frameworks.bridge import recipes as catalog
from recipe_files import recipe_file  # noqa: F401  (fixture)

RECIPES = {  # name -> (world size, gpu): dense and MoE, TP/CP/PP/EP layouts, Hopper and Blackwell
    "llama3_70b_pretrain_64gpu_h100_bf16_config": (64, "h100"),
    "llama3_8b_pretrain_8gpu_h100_fp8cs_config": (8, "h100"),
    "deepseek_v3_pretrain_256gpu_gb200_bf16_config": (256, "gb200"),
    "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs_config": (16, "h100"),
    "gpt_oss_120b_pretrain_64gpu_b200_bf16_config": (64, "b200"),
    "nemotron_3_nano_pretrain_8gpu_b200_fp8mx_config": (8, "b200"),
}



def run_estimate(run_cli, path, world, gpu, *overrides):
    code, out, err = run_cli("estimate", path, *overrides, "--world-size", str(world), "--gpu", gpu, "--format", "json")
    assert code == 0, err
    return json.loads(out)["results"][0]["estimate"]


def shape_of(path, world, gpu, overrides=()):
    from overlap_cli.check.engine import check
    from overlap_cli.cli.check import parse_overrides
    from overlap_cli.estimate.inputs import shape_from_view
    from overlap_cli.launch_profile.profile import Target

    t = Target(world_size=world)
    t.set("world_size", world, "flag")
    t.set("gpu", gpu, "flag")
    return shape_from_view(check(path, t, parse_overrides(list(overrides))).view)


OVERLAPS = {  # Shape field -> what turning it on also needs
    "overlap_grad_reduce": {},
    "overlap_param_gather": {},
    "tp_overlap": {"sp": True},
    "overlap_p2p": {},
    "ep_overlap": {},
    "delay_wgrad": {"ep_overlap": True},
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_turning_an_overlap_on_never_slows_the_estimate(tmp_path, name, recipe_file):
    world, gpu = RECIPES[name]
    base = shape_of(recipe_file(name), world, gpu)
    for field, needs in OVERLAPS.items():
        for cdmc in ("1", "32"):
            off = base.replace(**{field: False}, cdmc=cdmc)
            on = off.replace(**{field: True}, **needs)
            t_off, e_on = estimate(off).step_time, estimate(on)
            if e_on.step_time > t_off * (1 + 1e-9):
                # Only userbuffers' SM contention may make an overlap cost time, and the estimate says so.
                assert field == "tp_overlap" and any("SMs while they run" in a for a in e_on.assumptions), (field, cdmc)


def test_overlap_through_the_cli(tmp_path, run_cli, recipe_file):
    """The same through the whole pipeline: comm_overlap.* overrides, as Bridge takes them."""
    path = recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config")
    on = run_estimate(run_cli, path, 64, "h100")
    off = run_estimate(run_cli, path, 64, "h100", "comm_overlap.overlap_grad_reduce=false", "comm_overlap.overlap_param_gather=false")
    assert off["breakdown_s"]["dp_exposed"] > on["breakdown_s"]["dp_exposed"]
    assert off["step_time_s"] > on["step_time_s"]
    no_tp = run_estimate(run_cli, path, 64, "h100", "comm_overlap.tp_comm_overlap=false")
    assert no_tp["breakdown_s"]["tp_exposed"] > on["breakdown_s"]["tp_exposed"]


CONFIG = """model:
  num_layers: 32
  hidden_size: 4096
  ffn_hidden_size: 14336
  num_attention_heads: 32
  num_query_groups: 8
  seq_length: 4096
  vocab_size: 128256
  tensor_model_parallel_size: 2
  pipeline_model_parallel_size: {pp}
  virtual_pipeline_model_parallel_size: {vpp}
  sequence_parallel: true
train:
  global_batch_size: {gbs}
  micro_batch_size: 1
"""


@pytest.mark.parametrize("pp,vpp,gbs", [(4, "null", 64), (4, 2, 64), (4, 4, 128), (8, 2, 256), (2, 8, 32)])
def test_pipeline_bubble_is_p_minus_1_over_v_m(tmp_path, run_cli, pp, vpp, gbs):
    path = tmp_path / "cfg.yaml"
    path.write_text(CONFIG.format(pp=pp, vpp=vpp, gbs=gbs))
    world = 2 * pp * 2  # DP 2
    est = run_estimate(run_cli, str(path), world, "h100")
    b = est["breakdown_s"]
    v = 1 if vpp == "null" else vpp
    m = gbs // 2
    per_microbatch_path = (b["compute"] + b["tp_exposed"] + b["cp_exposed"] + b["ep_exposed"])
    assert b["pp_bubble"] == pytest.approx(per_microbatch_path * (pp - 1) / (v * m), rel=1e-9)


def test_bucket_size_changes_the_exposed_tail_only_when_overlapped(tmp_path, recipe_file):
    path = recipe_file("llama3_8b_pretrain_8gpu_h100_fp8cs_config")
    base = shape_of(path, 64, "h100")  # DP 64 over the network
    on = {b: estimate(base.replace(overlap_grad_reduce=True, bucket_size=b)).parts["dp_exposed"] for b in (10**6, 4 * 10**7, 4 * 10**8, 4 * 10**9)}
    assert on[4 * 10**7] < on[4 * 10**8] < on[4 * 10**9]  # a bigger last bucket is a longer exposed tail
    assert on[10**6] > on[4 * 10**7]  # thousands of tiny buckets: each pays a collective's latency
    off = {b: estimate(base.replace(overlap_grad_reduce=False, overlap_param_gather=False, bucket_size=b)).parts["dp_exposed"] for b in (4 * 10**7, 4 * 10**9)}
    assert off[4 * 10**7] == off[4 * 10**9] > on[4 * 10**7]  # not overlapped: one buffer, all exposed


def test_cuda_device_max_connections_on_hopper(tmp_path, recipe_file):
    path = recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config")
    base = shape_of(path, 64, "h100")
    ordered, unordered = estimate(base.replace(cdmc="1")), estimate(base.replace(cdmc="8"))
    assert unordered.parts["tp_exposed"] > ordered.parts["tp_exposed"]
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in unordered.reasons["tp_exposed"]


def test_text_names_the_setting_behind_each_exposed_part(tmp_path, run_cli, recipe_file):
    path = recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config")
    code, out, err = run_cli("estimate", path, "comm_overlap.overlap_grad_reduce=false", "--world-size", "64", "--gpu", "h100")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("dp_exposed"))
    assert "overlap_grad_reduce is off" in line and "DP = 2" in line
    assert "tp_comm_overlap is on" in next(x for x in out.splitlines() if x.startswith("tp_exposed"))


def test_a_config_without_a_model_shape_is_one_line_exit_2(root, run_cli):
    code, out, err = run_cli("estimate", str(root / "examples" / "pp_without_vpp.yaml"), "--world-size", "64")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "cannot estimate: model." in err and "Traceback" not in err


@pytest.mark.parametrize("gpu", ["vr200", "r100"])
def test_rubin_gets_memory_and_no_step_time(tmp_path, run_cli, recipe_file, gpu):
    """Memory needs no peak, only the step time does: on a GPU without step-time figures the estimate is the
    memory, the step time says why it is missing, and the exit is 0 (nothing failed)."""
    path = recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config")
    code, out, err = run_cli("estimate", path, "--world-size", "64", "--gpu", gpu, "--format", "json")
    [result] = json.loads(out)["results"]
    assert code == 0 and result["error"] is None and err == ""
    est = result["estimate"]
    assert est["step_time_unavailable"].endswith("has no published dense Tensor Core peak or bandwidth figures this model could cite")
    assert est["step_time_s"] is None and est["breakdown_s"] is None
    _, h100, _ = run_cli("estimate", path, "--world-size", "64", "--gpu", "h100", "--format", "json")
    on_h100 = json.loads(h100)["results"][0]["estimate"]["memory"]
    mem = est["memory"]
    # the same count as on any GPU (the userbuffers of a Hopper-tuned preset aside: no GPU-specific term), and
    # no verdict without the GPU's published capacity
    assert mem["weights_and_optimizer_bytes"] == on_h100["weights_and_optimizer_bytes"] > 0
    assert mem["activation_bytes"] == on_h100["activation_bytes"] > 0
    assert mem["capacity_bytes"] is None and mem["verdict"] == "unknown capacity"
    code, text, err = run_cli("estimate", path, "--world-size", "64", "--gpu", gpu)
    assert code == 0 and "step time not estimated: " in text and "memory, most-loaded rank: weights and optimizer" in text
    assert "(GPU capacity unknown)" in text


def test_accuracy_floor_on_the_published_rows():
    """The shipped constants against Megatron-Bridge's measured rows (in-sample; bench/estimate_accuracy.py
    scores held-out rows and models): a broken FLOP count or a lost overlap term fails this."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    from bench import estimate_data as E
    from overlap_cli.estimate.model import constants

    data, _ = E.joined()
    assert len(data) >= 120
    meas = [r["step_time_s"] for r, *_ in data]
    sc = E.scores(meas, [E.predict(s, constants()) for _, s, *_ in data])
    base = E.scores(meas, [E.baseline(r, s) for r, s, *_ in data])
    assert sc["mape"] < 15 and sc["tau"] > 0.85
    assert sc["mape"] < base["mape"] / 2


def test_a_megatron_lm_launch_estimates_and_tune_says_it_does_not_search_it(root, run_cli):
    launch = str(root / "examples" / "megatron-lm" / "gpt_pretrain_tp_overlap.sh")
    code, out, err = run_cli("estimate", launch, "--gpu", "h100", "--format", "json")
    assert code == 0, err
    est = json.loads(out)["results"][0]["estimate"]
    assert est["step_time_s"] >= est["breakdown_s"]["compute"] > 0
    assert all(v >= 0 for v in est["breakdown_s"].values())
    code, out, err = run_cli("tune", launch, "--gpu", "h100")
    assert code == 2 and out == "" and err.count("\n") == 1 and "megatron-lm launch" in err


def test_one_hardware_queue_on_sm100_exposes_overlapped_dp_and_a2a(recipe_file):
    dense = shape_of(recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config"), 64, "b200")  # TP 4, CP 2, DP 2
    one, many = estimate(dense.replace(cdmc="1")), estimate(dense.replace(cdmc="32"))
    assert one.parts["dp_exposed"] > many.parts["dp_exposed"] and "one hardware queue" in one.reasons["cdmc"]
    moe = shape_of(recipe_file("deepseek_v3_pretrain_256gpu_gb200_bf16_config"), 256, "gb200").replace(ep_overlap=True)
    assert estimate(moe.replace(cdmc="1")).parts["ep_exposed"] > estimate(moe.replace(cdmc="32")).parts["ep_exposed"]


def test_diff_shows_the_estimated_step_time_change(recipe_file, run_cli):
    path = recipe_file("llama3_70b_pretrain_64gpu_h100_bf16_config")
    flags = ["--world-size", "64", "--vs-world-size", "128", "--gpu", "h100"]
    code, out, err = run_cli("diff", path, *flags, "--format", "json")
    assert code == 0, err  # the step time is shown, not a difference: only provenance differs at 64 vs 128
    steps = json.loads(out)["estimate"]
    assert steps["new_step_time_s"] < steps["old_step_time_s"]  # twice the data-parallel replicas, same batch
    assert steps["change_s"] == pytest.approx(steps["new_step_time_s"] - steps["old_step_time_s"])
    code, out, _ = run_cli("diff", path, *flags)
    assert out.splitlines()[-1].startswith("estimated step time: ") and " -> " in out.splitlines()[-1]


def test_a_folder_is_estimated_file_by_file(root, run_cli, tmp_path):
    code, out, err = run_cli("estimate", str(root / "examples" / "bridge"), "--gpu", "h100", "--world-size", "64", "--format", "json")
    results = json.loads(out)["results"]
    assert len(results) >= 2 and all(r["file"].endswith(".yaml") for r in results)
    code, out, err = run_cli("estimate", str(tmp_path / "missing.yaml"))
    assert code == 2 and err.count("\n") == 1 and "missing.yaml" in err


def test_an_estimate_of_a_launch_the_rules_say_fails_says_so(root, run_cli):
    # The example asks for --tp-comm-overlap without --sequence-parallel: validate_args asserts (LM101).
    launch = str(root / "examples" / "megatron-lm" / "gpt_pretrain_tp_overlap.sh")
    code, out, err = run_cli("estimate", launch, "--gpu", "h100", "--format", "json")
    assumptions = json.loads(out)["results"][0]["estimate"]["assumptions"]
    assert assumptions[0].startswith("overlap check predicts this launch fails (LM101)")
    # A tuned recipe the rules pass.
    code, out, err = run_cli("estimate", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--format", "json")
    assert code == 0, err
    assert not any("predicts this launch fails" in a for a in json.loads(out)["results"][0]["estimate"]["assumptions"])


def test_every_estimate_carries_an_interval_in_text_and_json(run_cli):
    name = "llama3_70b_pretrain_64gpu_h100_fp8cs_config"  # Bridge measured dense FP8 runs on H100
    code, out, err = run_cli("estimate", "--recipe", name, "--world-size", "64", "--gpu", "h100", "--format", "json")
    assert code == 0, err
    est = json.loads(out)["results"][0]["estimate"]
    lo, hi = est["interval_s"]
    assert lo <= est["step_time_s"] <= hi and lo < hi
    iv = est["interval"]
    assert iv["class"] == iv["from"] == "hopper/dense/fp8" and iv["covered"] and iv["n"] >= 5 and 0 < iv["level"] < 1
    assert iv["note"] is None
    code, out, _ = run_cli("estimate", "--recipe", name, "--world-size", "64", "--gpu", "h100")
    line = next(x for x in out.splitlines() if x.strip().startswith("interval:"))
    assert f"{lo:.3f} .. {hi:.3f} s" in line
    # No BF16 dense run on Hopper was measured: the class is outside the calibration and says so.
    code, out, _ = run_cli("estimate", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--world-size", "64",
                           "--gpu", "h100", "--format", "json")
    iv = json.loads(out)["results"][0]["estimate"]["interval"]
    assert not iv["covered"] and iv["from"] == "hopper/dense" and "no measured row of class hopper/dense/bf16" in iv["note"]


def test_a_run_outside_the_calibration_says_so(run_cli):
    # No measured Bridge row on A100 (its efficiency is a published figure, not fitted).
    code, out, err = run_cli("estimate", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--world-size", "64",
                             "--gpu", "a100", "--format", "json")
    assert code == 0, err
    iv = json.loads(out)["results"][0]["estimate"]["interval"]
    assert not iv["covered"] and iv["from"] == "all" and iv["note"].startswith("outside the calibration's coverage (no measured row on a100)")


def test_memory_in_the_estimate_and_a_run_over_the_gpu_is_a_warning_with_the_numbers(run_cli):
    code, out, err = run_cli("estimate", "--recipe", "llama3_70b_pretrain_64gpu_h100_bf16_config", "--world-size", "64",
                             "--gpu", "h100", "--format", "json")
    mem = json.loads(out)["results"][0]["estimate"]["memory"]
    for key in ("weights_and_optimizer_bytes", "activation_bytes", "userbuffers_bytes", "dp_buckets_bytes",
                "param_gather_buffers_bytes", "capacity_bytes"):
        assert mem[key] >= 0, key
    assert mem["capacity_bytes"] == 80 * 2**30 and mem["verdict"] == "fits"
    # The recipe reduces gradients in BF16 (its mixed precision turns grad_reduce_in_fp32 off): 2 bytes of
    # gradient per parameter where Bridge's formula counts 4, the one difference.
    assert [d.split(";")[0] for d in mem["differs_from_megatron_formula"]] == [
        "Bridge's formula counts FP32 gradients (6 + 12/DP bytes per parameter)"]
    assert mem["userbuffers_bytes"] > 0  # the recipe turns tp_comm_overlap on
    # Llama 3 8B on two H100s at DP 1 x CP 2: 8.0 B parameters x (2 + 4 + 12/2) bytes alone exceed 80 GiB.
    code, out, err = run_cli("estimate", "--recipe", "llama3_8b_pretrain_2gpu_h100_bf16_config", "--world-size", "2",
                             "--gpu", "h100", "--format", "json")
    est = json.loads(out)["results"][0]["estimate"]
    assert est["memory"]["verdict"] == "does not fit"
    assert est["warnings"] and "weights and optimizer" in est["warnings"][0] and "GiB" in est["warnings"][0]
    # Without --world-size the 2 GPUs are the recipe name's (TP 1 x PP 1 x CP 2, llama3.py:238): a note with the
    # smallest DP that fits, not "does not fit". The recipe takes its vocabulary from its NullTokenizer
    # (use_tokenizer_vocab_size: 32,000 rows, not the model's 128,256): DP 1 is 97.5 GiB, DP 2 (4 GPUs)
    # 60.7 GiB of weights and optimizer + 16.6 GiB of activations.
    code, out, err = run_cli("estimate", "--recipe", "llama3_8b_pretrain_2gpu_h100_bf16_config", "--format", "json")
    est = json.loads(out)["results"][0]["estimate"]
    mem = est["memory"]
    assert mem["verdict"] == "fits with more data parallelism" and not est["warnings"] and not mem["world_size_stated"]
    assert mem["fits_at"]["data_parallel_size"] == 2 and mem["fits_at"]["world_size"] == 4
    assert mem["vocabulary"]["rows"] == 32000 and mem["vocabulary"]["unknown"] is None
    assert mem["fits_at"]["total_bytes"] <= mem["capacity_bytes"] < mem["total_bytes"]
    assert "world size 2 (from recipe llama3_8b_pretrain_2gpu_h100_bf16_config; DP 1)" in mem["note"]
    code, text, err = run_cli("estimate", "--recipe", "llama3_8b_pretrain_2gpu_h100_bf16_config")
    text = " ".join(text.split())  # the table wraps long lines
    assert "fits with more data parallelism" in text and "note: memory: 97.5 GiB" in text and "at DP 2 (4 GPUs)" in text
    assert "warning:" not in text
    code, text, err = run_cli("tune", "--recipe", "llama3_8b_pretrain_2gpu_h100_bf16_config")
    assert "\nnote: memory: 97.5 GiB" in text and "warning: memory" not in text  # tune says the same
    code, out, err = run_cli("estimate", "--recipe", "llama3_8b_pretrain_2gpu_h100_bf16_config", "--world-size", "16",
                             "--gpu", "h100", "--format", "json")
    assert json.loads(out)["results"][0]["estimate"]["memory"]["verdict"] == "fits"  # DP 8 shards the optimizer


def _memory_of(run_cli, *args) -> dict:
    code, out, err = run_cli("estimate", *args, "--format", "json")
    [result] = json.loads(out)["results"]
    assert code == 0 and result["error"] is None, (out, err)
    return result["estimate"]["memory"]


def test_the_vocabulary_is_the_one_setup_gives_the_model(run_cli, tmp_path):
    """Bridge's setup() sets model.vocab_size before the model is built (training/setup.py:292-298,
    _validate_and_set_vocab_size at 681-720): the tokenizer's size, padded to make_vocab_size_divisible_by x
    TP, when tokenizer.use_tokenizer_vocab_size is set; otherwise model.vocab_size as written, unpadded."""
    gemma = "gemma3_1b_pretrain_1gpu_h100_bf16_config"  # NullTokenizer of 32,000 over a 262,144-row model
    mem = _memory_of(run_cli, "--recipe", gemma, "--gpu", "h100")
    assert mem["vocabulary"]["rows"] == 32000 and "use_tokenizer_vocab_size" in mem["vocabulary"]["how"]
    own = tmp_path / "own.yaml"
    own.write_text("tokenizer:\n  use_tokenizer_vocab_size: false\n")
    kept = _memory_of(run_cli, "--recipe", gemma, str(own), "--gpu", "h100")
    assert kept["vocabulary"]["rows"] == 262144 and "not padded" in kept["vocabulary"]["how"]
    # The embedding is tied (one hidden x vocab matrix): the weights differ by exactly its rows' parameters.
    assert kept["parameters_on_rank"] - mem["parameters_on_rank"] == 1152 * (262144 - 32000)
    odd = tmp_path / "odd.yaml"
    odd.write_text("tokenizer:\n  vocab_size: 32001\nmodel:\n  tensor_model_parallel_size: 2\n")
    padded = _memory_of(run_cli, "--recipe", gemma, str(odd), "--gpu", "h100", "--world-size", "2")
    assert padded["vocabulary"]["rows"] == 32256  # ceil(32001 / (128 x 2)) x 256


def test_a_vocabulary_only_the_tokenizer_files_give_is_unknown(run_cli, tmp_path):
    """A Hugging Face tokenizer whose size the run takes (use_tokenizer_vocab_size): the size is in the
    tokenizer's files, so the embedding's memory is unknown with the reason -- not the model's HF vocabulary."""
    hf = tmp_path / "hf.yaml"
    hf.write_text("tokenizer:\n  tokenizer_type: HuggingFaceTokenizer\n  tokenizer_model: meta-llama/Llama-3.2-1B\n")
    mem = _memory_of(run_cli, "--recipe", "llama32_1b_pretrain_1gpu_h100_bf16_config", str(hf), "--gpu", "h100")
    assert mem["vocabulary"]["rows"] is None
    assert "HuggingFaceTokenizer meta-llama/Llama-3.2-1B" in mem["vocabulary"]["unknown"]
    assert mem["weights_and_optimizer_bytes"] is None and mem["total_bytes"] is None
    assert mem["activation_bytes"] is None  # PP 1: the logits' activations hold the vocabulary too
    assert 0 < mem["at_least_bytes"] < mem["capacity_bytes"] and mem["verdict"] == "unknown vocabulary"
    assert mem["fits"] is None
    code, text, _ = run_cli("estimate", "--recipe", "llama32_1b_pretrain_1gpu_h100_bf16_config", str(hf), "--gpu", "h100")
    text = " ".join(text.split())
    assert "memory, most-loaded rank: at least " in text and "the vocabulary is unknown (tokenizer.use_tokenizer_vocab_size" in text


def test_an_estimate_is_never_built_on_a_value_the_run_leaves_unknown(run_cli, tmp_path):
    """A Python run whose TP comes from the environment: the view holds TP's class default (1) there; the
    estimate says the key is unknown instead of a step time and memory at TP 1."""
    script = tmp_path / "train.py"
    script.write_text("import os\nfrom megatron.bridge.recipes.llama import llama3_8b_pretrain_config\n"
                      "cfg = llama3_8b_pretrain_config()\ncfg.model.tensor_model_parallel_size = int(os.environ['TP'])\n")
    code, out, err = run_cli("estimate", str(script), "--world-size", "8", "--gpu", "h100")
    assert code == 2 and out == ""
    assert err.strip() == (f"{script}: cannot estimate: model.tensor_model_parallel_size is unknown (unknown: the "
                           f"environment variable TP read at {script}:4 (give --set TP=VALUE or --env-from-shell)): the "
                           "estimate is not built on a class default standing in for it")
