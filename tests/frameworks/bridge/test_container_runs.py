"""Bridge runs whose config is written field by field -- ``ConfigContainer(model=..., train=TrainingConfig(...),
ddp=DistributedDataParallelConfig(...), ...)`` -- through the real CLI: each field the file gives is the
file's, at its line; a section (or field) it leaves out is its class default; a class overlap-cli holds no
defaults for, or an expression it cannot evaluate, leaves exactly what it may hold unknown, with FILE:LINE;
what Python itself raises on (a missing required section, a positional argument, an unknown field) is one
line, exit 2. Bridge's own recipe modules that build their config so (vendored unchanged under
tests/data/upstream/) read as the catalog recipes of the same name that Bridge itself built."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import ROOT

EXAMPLE = ROOT / "tests" / "data" / "python" / "gpt_from_fields.py"
RECIPES = ROOT / "tests" / "data" / "upstream" / "NVIDIA-NeMo+Megatron-Bridge" / "src" / "megatron" / "bridge" / "recipes"

IMPORTS = """\
from megatron.core.distributed import DistributedDataParallelConfig
from megatron.bridge.models.gpt_provider import GPTModelProvider
from megatron.bridge.training.config import (CheckpointConfig, ConfigContainer, GPTDatasetConfig, LoggerConfig,
    OptimizerConfig, SchedulerConfig, TokenizerConfig, TrainingConfig)
"""
REQUIRED = """\
    train=TrainingConfig(global_batch_size=64, micro_batch_size=1),
    optimizer=OptimizerConfig(use_distributed_optimizer=True),
    scheduler=SchedulerConfig(),
    dataset=GPTDatasetConfig(random_seed=1, seq_length=1024, reset_position_ids=False, reset_attention_mask=False,
                             eod_mask_loss=False),
    logger=LoggerConfig(),
    tokenizer=TokenizerConfig(tokenizer_type="NullTokenizer", vocab_size=1000),
    checkpoint=CheckpointConfig(),
"""


def _check(run_cli, path, *flags):
    code, out, err = run_cli("check", str(path), "--format", "json", "--world-size", "32", "--gpu", "h100", *flags)
    return code, json.loads(out)["results"], err


def _line(path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_each_field_given_is_the_files_at_its_line_and_the_rest_are_class_defaults(run_cli):
    code, results, _ = _check(run_cli, EXAMPLE)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = {k: (v["value"], v["source"], v.get("layer")) for k, v in r["effective"].items()}
    # A keyword of the provider built into a local first, then passed in.
    assert eff["model.tensor_model_parallel_size"] == (4, "user", f"{EXAMPLE}:{_line(EXAMPLE, 'tensor_model_parallel_size=4')}")
    assert eff["model.sequence_parallel"][:2] == (True, "user")
    # Left out of GPTModelProvider(...): ModelParallelConfig's default (model_parallel_config.py:83).
    assert eff["model.pipeline_model_parallel_size"][:2] == (1, "default")
    # The DDP object: a keyword, and a field set on the local afterwards.
    assert eff["ddp.use_distributed_optimizer"] == (True, "user", f"{EXAMPLE}:{_line(EXAMPLE, 'ddp = Distributed')}")
    # The tuple a helper of the module returns, unpacked: the optimizer it built.
    assert r["effective"]["optimizer.overlap_param_gather"]["source"] != "unknown"
    assert eff["env.CUDA_DEVICE_MAX_CONNECTIONS"][0] in (1, "1")
    # An assignment after the container was built points at its own line (CFG005: Bridge's DP path
    # overwrites ddp.bucket_size).
    cfg005 = [f for f in r["findings"] if f["code"] == "CFG005" and f["key"] == "ddp.bucket_size"]
    assert cfg005 and cfg005[0]["line"] == _line(EXAMPLE, "cfg.ddp.bucket_size")
    assert not any(v["source"] == "unknown" for k, v in r["effective"].items() if not k.startswith("env.")), \
        [k for k, v in r["effective"].items() if v["source"] == "unknown"]


def test_a_model_class_it_holds_no_defaults_for_leaves_the_other_model_fields_unknown(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + textwrap.dedent("""\
        from megatron.bridge.models.llama import Llama3ModelProvider8B

        cfg = ConfigContainer(
            model=Llama3ModelProvider8B(tensor_model_parallel_size=4, sequence_parallel=True),
        """) + REQUIRED + ")\n")
    code, results, _ = _check(run_cli, path)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    assert (eff["model.tensor_model_parallel_size"]["value"], eff["model.tensor_model_parallel_size"]["source"]) == (4, "user")
    pp = eff["model.pipeline_model_parallel_size"]
    # Never ModelParallelConfig's 1: the provider class may declare its own default.
    assert pp["source"] == "unknown" and "Llama3ModelProvider8B" in pp["reason"] and f"{path}:8" in pp["reason"], pp
    # The sections it does know are not touched by the model's unknown fields (validate() syncs the
    # optimizer's use_distributed_optimizer onto ddp).
    assert (eff["ddp.use_distributed_optimizer"]["value"], eff["ddp.use_distributed_optimizer"]["source"]) == (True, "bridge-auto")


def test_a_section_it_cannot_evaluate_is_exactly_that_sections_keys_unknown(tmp_path, run_cli):
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + textwrap.dedent("""\
        from my_project import make_ddp

        cfg = ConfigContainer(
            model=GPTModelProvider(tensor_model_parallel_size=2, num_layers=4, hidden_size=512, num_attention_heads=8),
            ddp=make_ddp(),
        """) + REQUIRED + ")\n")
    code, results, _ = _check(run_cli, path)
    r = results[0]
    assert r["error"] is None, r["error"]
    eff = r["effective"]
    og = eff["ddp.use_distributed_optimizer"]
    assert og["source"] == "unknown" and "make_ddp" in og["reason"] and f"{path}:9" in og["reason"], og
    assert (eff["model.tensor_model_parallel_size"]["value"], eff["model.pipeline_model_parallel_size"]["value"]) == (2, 1)
    assert eff["model.pipeline_model_parallel_size"]["source"] == "default"


@pytest.mark.parametrize("call, needle", [
    ("ConfigContainer(model=GPTModelProvider())", "without train, optimizer, scheduler, dataset, logger, tokenizer, checkpoint"),
    ("ConfigContainer(GPTModelProvider())", "keyword arguments only"),
    ("ConfigContainer(modle=GPTModelProvider(),\n" + REQUIRED + ")", "unexpected keyword argument 'modle'"),
])
def test_what_python_raises_on_is_one_line_exit_2(tmp_path, run_cli, call, needle):
    path = tmp_path / "run.py"
    path.write_text(IMPORTS + f"\ncfg = {call}\n")
    code, out, err = run_cli("check", str(path))
    assert code == 2
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len([line for line in lines if needle in line]) == 1, out + err
    assert f"{path}:6" in out + err
    assert "Traceback" not in out + err


def test_fix_edits_a_keyword_in_place(tmp_path, run_cli):
    path = tmp_path / "run.py"
    text = IMPORTS + textwrap.dedent("""\
        from megatron.bridge.training.comm_overlap import CommOverlapConfig

        cfg = ConfigContainer(
            model=GPTModelProvider(tensor_model_parallel_size=4, sequence_parallel=False,  # keep this comment
                                   num_layers=4, hidden_size=1024, num_attention_heads=8),
            comm_overlap=CommOverlapConfig(tp_comm_overlap=True),
        """) + REQUIRED + ")\n"
    path.write_text(text)
    code, results, _ = _check(run_cli, path)
    # TP overlap asked for without sequence parallelism (TP102): the fix turns the keyword's literal on.
    assert any(f["code"] == "TP102" for f in results[0]["findings"]), [f["code"] for f in results[0]["findings"]]
    code, out, err = run_cli("fix", str(path), "--write", "--unsafe-fixes", "--world-size", "32", "--gpu", "h100")
    new = path.read_text()
    assert "sequence_parallel=True,  # keep this comment" in new, new
    # Every line but that one is kept; what the file does not set is added after the container's call
    # (ConfigContainer's env_vars is a dict by default, config.py:965).
    old_lines, new_lines = text.splitlines(), new.splitlines()
    assert [a for a, b in zip(old_lines, new_lines) if a != b] == [old_lines[_line(path, "keep this comment") - 1].replace("True", "False")]
    assert all(line.startswith("cfg.") for line in new_lines[len(old_lines):])
    code, results, _ = _check(run_cli, path)
    assert results[0]["effective"]["model.sequence_parallel"]["value"] is True
    assert not any(f["code"] == "TP102" for f in results[0]["findings"])


def _functions(path):
    import ast

    return [n.name for n in ast.parse(path.read_text()).body
            if isinstance(n, ast.FunctionDef) and n.name.endswith("_config") and not n.name.startswith("_")]


@pytest.mark.parametrize("module", ["wan/h100/wan.py", "gpt/h100/vanilla_gpt.py", "flux/h100/flux.py",
                                    "qwen2_audio/h100/qwen2_audio.py"])
def test_bridges_field_by_field_recipes_read_as_the_built_recipe_of_the_same_name(run_cli, module):
    """Read from the module, each recipe function agrees, key by key, with the catalog's recipe of that name
    that Bridge itself built (wan, vanilla_gpt), as the perf recipes do (test_perf_recipes_source): every
    value the reading knows equals the built one. Where the reading says ``default`` (a field the code
    leaves out) the dump says ``user`` (a dump writes every field): the values must still be equal."""
    from overlap_cli.frameworks.bridge import recipes

    path = RECIPES / module
    target = ("--world-size", "8", "--gpu", "h100")
    code, out, err = run_cli("check", str(path), "--format", "json", *target)
    read = {r["file"].rsplit("::", 1)[1]: r for r in json.loads(out)["results"] if "::" in r["file"]}
    assert set(_functions(path)) <= set(read)
    compared = 0
    for name in _functions(path):
        r = read[name]
        assert r["error"] is None, (name, r["error"])
        if recipes.canonical("0.6.2", name) != name or recipes.how("0.6.2", name) != "built":
            # Read from this very source in the catalog: its entry holds what the reading holds.
            assert recipes.how("0.6.2", name) == "source", name
            continue
        code, out, err = run_cli("check", "--recipe", name, "--format", "json", *target)
        built = json.loads(out)["results"][0]
        assert built["error"] is None, built["error"]
        for key, v in r["effective"].items():
            if v["source"] == "unknown":
                continue
            b = built["effective"][key]
            if (v["source"], b["source"]) == ("default", "user"):
                assert v["value"] == b["value"], (name, key, v, b)
            else:
                assert (v["value"], v["source"]) == (b["value"], b["source"]), (name, key, v, b)
            compared += 1
    # vanilla_gpt's GPTModelProvider() is a class overlap-cli knows (every effective key compared); wan's
    # WanModelProvider is not, so only the model fields the recipe sets and the other sections are known.
    if module.startswith(("wan", "gpt")):
        assert compared >= (20 if module.startswith("gpt") else 12) * len(_functions(path)), compared


def test_a_recipe_function_that_raises_says_so(tmp_path, run_cli):
    """As Bridge's qwen3_next_80b_a3b_peft_1gpu_h100_bf16_config does (recipes/qwen/h100/qwen3_next.py:310)."""
    path = tmp_path / "recipes.py"
    path.write_text(IMPORTS + textwrap.dedent("""\

        def peft_config() -> ConfigContainer:
            raise NotImplementedError("PEFT is not supported here")
        """))
    code, out, err = run_cli("check", f"{path}::peft_config")
    assert code == 2
    assert "raises NotImplementedError('PEFT is not supported here') at" in out + err and f"{path}:7" in out + err
    assert "Traceback" not in out + err
