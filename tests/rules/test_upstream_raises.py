"""What upstream raises, held to the upstream files that show it (vendored under tests/data/upstream with their
commit, SOURCES.json), through the real CLI."""

from __future__ import annotations

import json

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
BRIDGE = UPSTREAM / "NVIDIA-NeMo+Megatron-Bridge"
NANO_FSDP = BRIDGE / "examples" / "models" / "nemotron" / "nemotron_3" / "nano" / "slurm_pretrain_fsdp.sh"
COMMON = BRIDGE / "src" / "megatron" / "bridge" / "recipes" / "common.py"
RECIPE_RUNNER = BRIDGE / "scripts" / "training" / "recipe_runner.py"


def _results(run_cli, *args) -> dict:
    code, out, err = run_cli("check", *args, "--format", "json")
    assert code in (0, 1), err
    return {r["file"].replace("\\", "/"): r for r in json.loads(out)["results"]}


def _codes(result) -> list:
    assert result["error"] is None, result["error"]
    return [f["code"] for f in result["findings"]]


# -- CFG010's sequence length, after what run_recipe.py syncs -----------------------------------------------


def test_a_run_recipe_launch_syncs_the_model_sequence_length_before_validate(run_cli):
    """Bridge's nano FSDP example runs run_recipe.py with ``model.seq_length=512 dataset.sequence_length=512`` over
    a recipe whose dataset.seq_length is 8192. run_recipe.py calls sync_model_dataset_sequence_length before it
    validates (run_recipe.py:515, recipe_runner.py:471-486): the model takes the dataset's seq_length, so
    validate()'s sequence-length assert (config.py:1505) cannot fire."""
    runner = RECIPE_RUNNER.read_text(encoding="utf-8")
    assert "def sync_model_dataset_sequence_length" in runner and "config.model.seq_length = dataset_seq_length" in runner
    (result,) = _results(run_cli, str(NANO_FSDP)).values()
    assert "CFG010" not in _codes(result)
    # the same recipe and overrides given to check directly (no runner, no sync): validate() asserts
    by_hand = _results(run_cli, "--recipe", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config",
                       "model.seq_length=512", "dataset.sequence_length=512")
    (direct,) = by_hand.values()
    seq = [f for f in direct["findings"] if f["code"] == "CFG010"]
    assert len(seq) == 1 and "Sequence length in model config: 512, Sequence length in dataset config: 8192" in seq[0]["message"]


def test_the_sync_takes_the_dataset_length_the_launch_gives(run_cli, tmp_path):
    """``-sl 4096`` sets dataset.seq_length (run_recipe.py's convenience flag); the sync carries it to the model,
    so the launch is accepted, where ``--recipe`` with the same dotlist is refused."""
    launch = tmp_path / "train.sh"
    launch.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 scripts/training/run_recipe.py "
                      "--recipe llama3_8b_pretrain_config -sl 4096\n")
    (result,) = _results(run_cli, str(launch)).values()
    assert "CFG010" not in _codes(result)
    (direct,) = _results(run_cli, "--recipe", "llama3_8b_pretrain_config", "dataset.seq_length=4096").values()
    assert "CFG010" in _codes(direct)


def test_no_sequence_length_finding_for_a_model_nobody_wrote(run_cli):
    """recipes/common.py's _pretrain_common builds ``ConfigContainer(model=None, ...)`` (the caller sets the model):
    no model seq_length exists, so the class default 1024 must not stand in against the dataset's 4096."""
    assert "model=None," in COMMON.read_text(encoding="utf-8")
    result = _results(run_cli, f"{COMMON}::_pretrain_common")
    (pretrain,) = result.values()
    assert "CFG010" not in _codes(pretrain)
    assert not any("1024" in f["message"] for f in pretrain["findings"])


# -- PP209: the pipeline split, as Bridge's own unit test builds it -------------------------------------------

COMM_OVERLAP_TEST = BRIDGE / "tests" / "unit_tests" / "training" / "test_comm_overlap.py"
PROVIDER = "megatron.bridge.models.gpt_provider.GPTModelProvider"
GPT_CONFIG = "megatron.training.models.gpt.GPTModelConfig"
TRANSFORMER = "megatron.bridge.models.transformer_config.TransformerConfig"
CHUNKS = "Make sure the number of model chunks is the same across all pipeline stages."


def _unit_test_models() -> dict:
    """{helper: model kwargs} of the two ``test_get_model_comm_overlap_cfgs_pp_with_vp`` tests: the helper's
    defaults (with its pipeline_dtype rule) updated with the test's keywords, read from the file with ast."""
    import ast

    tree = ast.parse(COMM_OVERLAP_TEST.read_text(encoding="utf-8"))
    defaults = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("create_gpt_config", "create_gpt_model_config"):
            assign = fn.body[1]  # defaults = {...} / tc_defaults = {...}
            defaults[fn.name] = ast.literal_eval(assign.value)
    models = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "test_get_model_comm_overlap_cfgs_pp_with_vp":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") in defaults:
                    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                    model = {**defaults[call.func.id], **kw}
                    if model["pipeline_model_parallel_size"] > 1:
                        model["pipeline_dtype"] = "fp32"
                    models[call.func.id] = {k: v for k, v in model.items() if v is not None}
    return models


def _pp209(run_cli, tmp_path, name: str, model: dict) -> list:
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps({"model": model, "comm_overlap": {"tp_comm_overlap": False}}))
    (result,) = _results(run_cli, str(path), "--world-size", "8").values()
    return [f for f in result["findings"] if f["code"] == "PP209"]


def test_bridges_pp_with_vp_unit_test_model_does_not_build(run_cli, tmp_path):
    """12 layers over PP 4 x VPP 2: 3 layers per rank do not make 2 chunks. Bridge's unit test only asks
    comm_overlap which p2p mode it picks; the model it describes cannot be built: the provider asserts in
    provide() (gpt_provider.py:250-254), the GPTModelConfig form in its finalize at validate (gpt.py:222-235)."""
    models = _unit_test_models()
    provider, wrapped = models["create_gpt_config"], models["create_gpt_model_config"]
    assert (provider["num_layers"], provider["pipeline_model_parallel_size"],
            provider["virtual_pipeline_model_parallel_size"]) == (12, 4, 2)
    found = _pp209(run_cli, tmp_path, "provider", {"_target_": PROVIDER, **provider})
    assert [f["message"] for f in found] == [
        f'AssertionError when the model is built: "{CHUNKS}" (megatron/bridge/models/gpt_provider.py:252)']
    assert found[0]["key"] == "model.virtual_pipeline_model_parallel_size"
    form = {"_target_": GPT_CONFIG, "vocab_size": 32000, "transformer": {"_target_": TRANSFORMER, **wrapped}}
    found = _pp209(run_cli, tmp_path, "gpt_model_config", form)
    assert [f["message"] for f in found] == [
        f'AssertionError at validate(): "{CHUNKS}" (megatron/training/models/gpt.py:233)']
    # a VPP the layers divide (12 over PP 2 x VPP 3) builds in both forms
    for name, model in (("even_provider", {"_target_": PROVIDER, **provider}),
                        ("even_form", {**form, "transformer": dict(form["transformer"])})):
        inner = model["transformer"] if "transformer" in model else model
        inner.update(pipeline_model_parallel_size=2, virtual_pipeline_model_parallel_size=3)
        assert _pp209(run_cli, tmp_path, name, model) == []


# (model fields, what megatron-core 0.19.2 raises: (stage, message) or None), checked against the real code by
# test_pipeline_split_matches_the_real_code when the Bridge environment is there
SPLITS = (
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2},
     ("model build", CHUNKS)),
    ({"num_layers": 12, "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 3}, None),
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 2,
      "num_layers_in_last_pipeline_stage": 2}, None),
    ({"num_layers": 12, "pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2,
      "num_layers_in_last_pipeline_stage": 2}, ("validate", "Mismatch: 8 middle layers remaining but 0 middle PP")),
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 2,
      "num_layers_in_last_pipeline_stage": 3}, ("validate", "number of layers at middle stage: 7 must be divisible")),
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3,
      "virtual_pipeline_model_parallel_size": 2}, ("validate", "number of layers at first stage: 3must be divisible")),
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "account_for_embedding_in_pipeline_split": True},
     ("validate", "number of middle layers: 13 must be divisible by middle pipeline_model_parallel_size 4")),
    ({"num_layers": 14, "pipeline_model_parallel_size": 4, "account_for_embedding_in_pipeline_split": True,
      "account_for_loss_in_pipeline_split": True, "virtual_pipeline_model_parallel_size": 2}, None),
    ({"num_layers": 14, "pipeline_model_parallel_size": 4, "account_for_embedding_in_pipeline_split": True,
      "account_for_loss_in_pipeline_split": True, "virtual_pipeline_model_parallel_size": 3},
     ("validate", "number of layers on each pipeline rank: 4(after enable")),
    ({"num_layers": 12, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3,
      "account_for_loss_in_pipeline_split": True}, ("validate", "num_layers_in_first_pipeline_stage and")),
    ({"num_layers": 7, "pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "Et|tt|tt|tL"},
     ("validate", "Number of decoder layers 6must match num_layers 7")),
    ({"num_layers": 6, "pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "tt|tt|tt|L"},
     ("validate", "The first layer must be embedding, but got LayerType.decoder")),
    ({"num_layers": 6, "pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "Et|tt|tt|tL"}, None),
)


def test_each_split_is_reported_where_the_real_code_raises(run_cli, tmp_path):
    base = {"_target_": PROVIDER, "hidden_size": 768, "num_attention_heads": 12, "pipeline_dtype": "fp32"}
    for i, (fields, expected) in enumerate(SPLITS):
        found = _pp209(run_cli, tmp_path, f"split{i}", {**base, **fields})
        if expected is None:
            assert found == [], (fields, found)
            continue
        stage, text = expected
        when = "at validate()" if stage == "validate" else "when the model is built"
        assert len(found) == 1 and when in found[0]["message"] and text in found[0]["message"], (fields, found)


def test_pipeline_split_matches_the_real_code(tmp_path):
    """The same splits through megatron-bridge 0.6.2: the provider's finalize (validate) then provide() (model
    build), in the environment with the real packages (skipped without it)."""
    import os
    import subprocess

    import pytest

    env = os.environ.get("OVERLAP_BRIDGE_ENV")
    if not env or not os.path.exists(os.path.join(env, "bin", "python")):
        pytest.skip("OVERLAP_BRIDGE_ENV (megatron-bridge 0.6.2) not set")
    script = tmp_path / "split.py"
    script.write_text(
        "import json, sys, warnings\nwarnings.filterwarnings('ignore')\n"
        "from megatron.bridge.models.gpt_provider import GPTModelProvider\n"
        "out = []\n"
        "for kw in json.loads(sys.argv[1]):\n"
        "    stage = 'validate'\n"
        "    try:\n"
        "        m = GPTModelProvider(hidden_size=768, num_attention_heads=12, pipeline_dtype='fp32', **kw)\n"
        "        m.finalize(); stage = 'model build'; m.provide()\n"
        "        out.append(None)\n"
        "    except Exception as e:\n"
        "        out.append([stage, str(e)])\n"
        "print(json.dumps(out))\n")
    done = subprocess.run([os.path.join(env, "bin", "python"), str(script), json.dumps([f for f, _ in SPLITS])],
                          capture_output=True, text=True, timeout=600)
    real = json.loads(done.stdout.strip().splitlines()[-1])
    for (fields, expected), got in zip(SPLITS, real):
        if expected is None:  # builds as far as the split goes: provide() stops later, without process groups
            assert got is None or got[0] == "model build" and "pipeline" not in got[1] and "chunks" not in got[1], (fields, got)
        else:
            assert got is not None and got[0] == expected[0] and expected[1] in got[1], (fields, got)


# -- ddp: null -------------------------------------------------------------------------------------------------


def test_a_null_ddp_is_no_ddp_config(run_cli, tmp_path):
    """``ddp: null`` in a saved run_config.yaml: from_yaml builds the container with ddp=None and validate()
    fails reading it (AttributeError, config.py:1345; megatron-bridge 0.6.2 in the reference environment). The
    DP values are not the class defaults: the run has no DDP config."""
    sample = (ROOT / "tests" / "data" / "bridge_samples" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml").read_text()
    head, _, rest = sample.partition("\nddp:\n")
    body = rest.split("\n")
    while body and body[0].startswith(" "):
        body.pop(0)
    dump = tmp_path / "run_config.yaml"
    dump.write_text(head + "\nddp: null\n" + "\n".join(body))
    code, out, err = run_cli("check", str(dump), "--world-size", "32", "--format", "json", "--show-effective")
    (result,) = json.loads(out)["results"]
    cfg010 = [f for f in result["findings"] if f["code"] == "CFG010"]
    assert [f["message"] for f in cfg010] == [
        "Bridge refuses the run: \"'NoneType' object has no attribute 'use_megatron_fsdp'\" "
        "(megatron/bridge/training/config.py:1345)"]
    assert cfg010[0]["key"] == "ddp" and code == 1
    overlap = result["effective"]["ddp.overlap_grad_reduce"]
    assert overlap["source"] == "unknown" and "ddp: null" in overlap["reason"]
    assert not [f for f in result["findings"] if f["code"].startswith("DP")]


# -- Megatron-LM: examples/gptoss/02_train.sh, 12 layers over PP = the world size (8) ---------------------------

GPTOSS = UPSTREAM / "NVIDIA+Megatron-LM" / "examples" / "gptoss" / "02_train.sh"
LAYERS_NOT_DIVISIBLE = "Number of layers should be divisible by the pipeline-model-parallel size"


def test_gptoss_layers_do_not_divide_over_its_default_pipeline(run_cli):
    """PP_SIZE=${WORLD_SIZE} = 8 GPUs x 1 node unless --distributed-config-file names a file the script sources
    (which may set both): on the script's own paths validate_args asserts 12 layers over PP 8
    (arguments.py:963); the path through the sourced file leaves PP unknown. A warning naming that decision."""
    text = GPTOSS.read_text(encoding="utf-8")
    assert "NUM_LAYERS=12" in text and "PP_SIZE=${WORLD_SIZE}" in text
    (result,) = _results(run_cli, str(GPTOSS)).values()
    (found,) = [f for f in result["findings"] if f["code"] == "LM203"]
    assert found["severity"] == "warning" and found["key"] == "--num-layers"
    assert found["message"] == (
        f'validate_args asserts "{LAYERS_NOT_DIVISIBLE}" (megatron/training/arguments.py:963) unless the if on line 78 '
        '([ -n "$DISTRIBUTED_CONFIG_FILE" ]) holds and the if on line 79 ([ ! -f "$DISTRIBUTED_CONFIG_FILE" ]) does not '
        "hold")
    assert result["effective"]["model.pipeline_model_parallel_size"]["source"] == "unknown"


def test_a_layer_split_every_path_fails_is_no_warning_but_the_error(run_cli, tmp_path):
    """The same launch with the world size stated on every path: the merged reading knows PP, the error stands."""
    launch = tmp_path / "train.sh"
    launch.write_text("#!/bin/bash\nif [ -n \"$FAST\" ]; then MBS=2; else MBS=1; fi\n"
                      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 12 --pipeline-model-parallel-size 8 "
                      "--hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
                      "--micro-batch-size $MBS\n")
    (result,) = _results(run_cli, str(launch)).values()
    found = [f for f in result["findings"] if f["code"] == "LM203"]
    assert [f["severity"] for f in found] == ["error"] and LAYERS_NOT_DIVISIBLE in found[0]["message"]


def test_megatron_lm_refuses_12_layers_over_pp_8(tmp_path):
    """megatron-core 0.19.2's validate_args on the launch's words of the default path (skipped without the env)."""
    import os
    import subprocess

    import pytest

    env = os.environ.get("OVERLAP_BRIDGE_ENV")
    if not env or not os.path.exists(os.path.join(env, "bin", "python")):
        pytest.skip("OVERLAP_BRIDGE_ENV (megatron-core 0.19.2) not set")
    argv = ["--num-layers", "12", "--pipeline-model-parallel-size", "8", "--hidden-size", "512", "--num-attention-heads",
            "64", "--seq-length", "8192", "--max-position-embeddings", "8192", "--micro-batch-size", "1",
            "--global-batch-size", "128", "--bf16", "--train-samples", "100"]
    done = subprocess.run([os.path.join(env, "bin", "python"),
                           str(ROOT / "tests" / "frameworks" / "megatron_lm" / "mlm_reference.py")],
                          input=json.dumps([{"argv": argv, "world_size": 8, "arch": 9}]), capture_output=True, text=True,
                          timeout=600)
    (real,) = json.loads(done.stdout.strip().splitlines()[-1])
    assert (real["error"], real["stage"], real["where"]) == (LAYERS_NOT_DIVISIBLE, "validate_args",
                                                               "megatron/training/arguments.py:963")
