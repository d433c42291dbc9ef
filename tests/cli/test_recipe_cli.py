"""Recipe runs through the command line: the recipe named in a directive, [tool.overlap] or a per-file
target (a folder of override files in one command), target precedence, ``fix --write`` on an override file,
``diff`` between recipe runs, and every bad input of a layered run: one line naming where, exit 2."""

from __future__ import annotations

import json

import pytest

R70 = "llama3_70b_pretrain_64gpu_h100_bf16_config"
GEMMA = "gemma3_1b_pretrain_1gpu_h100_bf16_config"
QWEN_MOE = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
L8 = "llama3_8b_pretrain_8gpu_h100_bf16_config"
CO_TARGET = "megatron.bridge.training.comm_overlap.CommOverlapConfig"


def results_of(run_cli, *args) -> dict:
    code, out, err = run_cli("check", *args, "--format", "json")
    assert code in (0, 1), err
    return {r["file"].replace("\\", "/"): r for r in json.loads(out)["results"]}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository of override files: [tool.overlap] names a recipe and a world size, a per-file target
    another recipe for qwen_*.yaml, two files name theirs in a directive."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.overlap]\nrecipe = "{L8}"\nworld-size = 16\n\n'
        f'[tool.overlap.per-file-target]\n"runs/qwen_*.yaml" = {{ recipe = "{QWEN_MOE}" }}\n'
    )
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "plain.yaml").write_text("model:\n  sequence_parallel: true\n")
    (runs / "gemma.yaml").write_text(f"# overlap: recipe={GEMMA}\ncomm_overlap:\n  overlap_grad_reduce: true\n")
    (runs / "qwen_moe.yaml").write_text("ddp:\n  overlap_param_gather: false\n")
    (runs / "sized.yaml").write_text(f"# overlap: recipe={GEMMA}\n# overlap: target world-size=4\n"
                                     "ddp:\n  overlap_grad_reduce: false\n")
    return tmp_path


def test_a_folder_of_override_files_in_one_command(run_cli, repo):
    results = results_of(run_cli, "runs")
    assert set(results) == {"runs/plain.yaml", "runs/gemma.yaml", "runs/qwen_moe.yaml", "runs/sized.yaml"}
    got = {f: (r["target"]["recipe"], r["target"]["sources"]["recipe"]) for f, r in results.items()}
    assert got == {
        "runs/plain.yaml": (L8, "pyproject"),
        "runs/gemma.yaml": (GEMMA, "directive"),
        "runs/qwen_moe.yaml": (QWEN_MOE, "per-file-target"),
        "runs/sized.yaml": (GEMMA, "directive"),
    }
    assert all(r["error"] is None for r in results.values())
    # the directive's recipe leaves comm_overlap null: the mapping in the file is a plain dict (CFG006 at its line)
    cfg006 = [f for f in results["runs/gemma.yaml"]["findings"] if f["code"] == "CFG006"]
    assert [(f["line"], f["key"]) for f in cfg006] == [(2, "comm_overlap")]
    eff = results["runs/qwen_moe.yaml"]["effective"]
    assert eff["model.tensor_model_parallel_size"]["layer"] == f"recipe {QWEN_MOE}"
    assert eff["ddp.overlap_param_gather"]["value"] is True  # comm_overlap's DP path overwrites the file's false
    [cfg005] = [f for f in results["runs/qwen_moe.yaml"]["findings"] if f["code"] == "CFG005"]
    assert cfg005["line"] == 2 and cfg005.get("origin") is None


def test_target_precedence(run_cli, repo):
    """flag > directive > per-file-target > the recipe's own launch > [tool.overlap]."""
    results = results_of(run_cli, "runs")
    sizes = {f: (r["target"]["world_size"], r["target"]["sources"]["world_size"]) for f, r in results.items()}
    assert sizes == {
        "runs/plain.yaml": (8, "recipe"),  # the recipe's 8 GPUs beat [tool.overlap] world-size = 16
        "runs/gemma.yaml": (1, "recipe"),
        "runs/qwen_moe.yaml": (16, "recipe"),
        "runs/sized.yaml": (4, "directive"),  # the directive beats the recipe
    }
    assert results["runs/plain.yaml"]["target"]["gpu"] == "h100"
    flagged = results_of(run_cli, "runs", "--world-size", "32")
    assert {(r["target"]["world_size"], r["target"]["sources"]["world_size"]) for r in flagged.values()} == {(32, "flag")}
    # --recipe on the command line beats the file's directive
    [r] = results_of(run_cli, "--recipe", QWEN_MOE, "runs/gemma.yaml").values()
    assert (r["target"]["recipe"], r["target"]["sources"]["recipe"]) == (QWEN_MOE, "flag")
    assert not [f for f in r["findings"] if f["code"] == "CFG006"]  # that recipe has a comm_overlap section


def test_per_file_target_recipe_beats_pyproject(run_cli, repo):
    (repo / "runs" / "qwen_dense.yaml").write_text("model:\n  sequence_parallel: true\n")
    r = results_of(run_cli, "runs/qwen_dense.yaml")["runs/qwen_dense.yaml"]
    assert (r["target"]["recipe"], r["target"]["sources"]["recipe"]) == (QWEN_MOE, "per-file-target")


def test_fix_writes_the_override_file_only(run_cli, repo):
    before_recipe = run_cli("recipes", "show", GEMMA)[1]
    gemma = repo / "runs" / "gemma.yaml"
    code, out, err = run_cli("fix", "--write", "runs/gemma.yaml")
    assert code == 0, out + err
    text = gemma.read_text()
    assert text.startswith(f"# overlap: recipe={GEMMA}\ncomm_overlap:\n  overlap_grad_reduce: true\n")  # kept
    assert f"  _target_: {CO_TARGET}" in text  # CFG006's fix: Bridge then instantiates the mapping
    assert run_cli("recipes", "show", GEMMA)[1] == before_recipe
    [r] = results_of(run_cli, "runs/gemma.yaml").values()
    assert not [f for f in r["findings"] if f["severity"] == "error"]
    assert run_cli("fix", "--write", "runs/gemma.yaml")[0] == 0
    assert gemma.read_text() == text  # idempotent


def test_fix_adds_a_key_the_recipe_holds_to_the_top_file(run_cli, tmp_path, monkeypatch):
    """The recipe turns TP overlap on; a lower file of the user's switched sequence parallelism off (TP102).
    The user's false stays (a safe fix never changes a value the user wrote): the fix turns the recipe's
    request off in the top file, which Bridge merges last; the lower file and the recipe stay as they are."""
    monkeypatch.chdir(tmp_path)
    lower = tmp_path / "lower.yaml"
    top = tmp_path / "top.yaml"
    lower.write_text("model:\n  sequence_parallel: false\n")
    top.write_text("# my run\nddp:\n  average_in_collective: true  # keep this\n")
    code, out, err = run_cli("fix", "--recipe", R70, "lower.yaml", "top.yaml", "--write")
    assert code == 0, out + err
    assert "fixed top.yaml: TP102" in out
    assert lower.read_text() == "model:\n  sequence_parallel: false\n"
    text = top.read_text()
    assert text.startswith("# my run\nddp:\n  average_in_collective: true  # keep this\n")
    assert "comm_overlap:\n  tp_comm_overlap: false" in text
    [r] = results_of(run_cli, "--recipe", R70, "lower.yaml", "top.yaml").values()
    assert r["effective"]["model.sequence_parallel"]["layer"] == "lower.yaml:2"
    assert r["effective"]["model.tp_comm_overlap"]["value"] is False
    assert "TP102" not in {f["code"] for f in r["findings"]}
    run_cli("fix", "--recipe", R70, "lower.yaml", "top.yaml", "--write")
    assert top.read_text() == text


def diff_json(run_cli, *args):
    code, out, err = run_cli("diff", *args, "--format", "json")
    assert err == "", err
    return code, json.loads(out)


def test_diff_recipe_at_another_world_size(run_cli):
    code, doc = diff_json(run_cli, "--recipe", R70, "--vs-world-size", "128")
    assert code == 0  # the same values; only their provenance names another DP
    assert doc["old"]["file"] == doc["new"]["file"] == f"recipe {R70}"
    assert (doc["old"]["target"]["data_parallel_size"], doc["new"]["target"]["data_parallel_size"]) == (2, 4)
    bucket = next(c for c in doc["provenance"] if c["key"] == "ddp.bucket_size")
    assert "DP=2" in bucket["old"]["reason"] and "DP=4" in bucket["new"]["reason"]
    code, out, _ = run_cli("diff", "--recipe", R70, "--vs-world-size", "128", "--show-provenance")
    assert code == 1 and f"--- recipe {R70} (world size 64, DP 2)" in out
    assert "target: world size 64 -> 128, DP 2 -> 4" in out


def test_diff_two_override_files(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("model:\n  sequence_parallel: false\n")
    (tmp_path / "b.yaml").write_text("model:\n  tensor_model_parallel_size: 8\n")
    code, doc = diff_json(run_cli, "--recipe", R70, "a.yaml", "b.yaml")
    assert code == 1
    by_key = {c["key"]: c for c in doc["effective"]}
    tp = by_key["model.tensor_model_parallel_size"]
    assert (tp["old"]["value"], tp["old"]["layer"]) == (4, f"recipe {R70}")
    assert (tp["new"]["value"], tp["new"]["layer"]) == (8, "b.yaml:2")
    sp = by_key["model.sequence_parallel"]
    assert (sp["old"]["layer"], sp["new"]["layer"]) == ("a.yaml:2", f"recipe {R70}")
    assert "TP102" in [f["code"] for f in doc["findings"]["disappeared"]]
    assert run_cli("diff", "--recipe", R70, "a.yaml", "a.yaml")[0] == 0


def test_diff_two_recipes(run_cli):
    b200 = "llama3_70b_pretrain_64gpu_b200_bf16_config"
    code, doc = diff_json(run_cli, "--recipe", R70, "--vs-recipe", b200)
    assert code == 1
    assert (doc["old"]["file"], doc["new"]["file"]) == (f"recipe {R70}", f"recipe {b200}")
    assert (doc["old"]["target"]["gpu"], doc["new"]["target"]["gpu"]) == ("h100", "b200")
    layers = {c["new"].get("layer") for c in doc["effective"]}
    assert f"recipe {b200}" in layers
    code, out, _ = run_cli("diff", "--recipe", R70, "--vs-recipe", b200)
    assert code == 1 and f"+++ recipe {b200}" in out


def test_diff_of_two_dumps(run_cli, corpus):
    old = next(r for r in corpus if r["recipe"] == R70)
    new = next(r for r in corpus if r["recipe"] == "llama3_70b_pretrain_64gpu_b200_bf16_config")
    code, doc = diff_json(run_cli, old["path"], new["path"], "--world-size", "64")
    assert code == 1 and doc["effective"]


# Every bad input of a layered run: (arguments, files to write, the one line's start, words it contains)
BAD = [
    # (llama3_70b_pretrain is Bridge's alias llama3_70b_pretrain_config, a recipe)
    ("unknown-recipe", ["--recipe", "llama3_70b_pretrain_64gpu", "over.yaml"], {},
     "--recipe: unknown recipe 'llama3_70b_pretrain_64gpu'", [R70]),
    ("not-a-mapping", ["--recipe", R70, "list.yaml"], {"list.yaml": "- a\n- b\n"},
     "list.yaml:1:1: an override file must be a mapping", []),
    ("wrong-type-in-file", ["--recipe", R70, "over.yaml", "bad.yaml"],
     {"bad.yaml": "model:\n  sequence_parallel: true\n  tensor_model_parallel_size: four\n"},
     "bad.yaml:3:3: model.tensor_model_parallel_size: wrong type", ["'four'"]),
    ("wrong-type-dotlist", ["--recipe", R70, "ddp.overlap_grad_reduce=maybe"], {},
     "command line: ddp.overlap_grad_reduce: wrong type", ["'maybe'"]),
    ("key-without-plus", ["--recipe", R70, "over.yaml", "model.no_such_key=1"], {},
     "command line: override 'model.no_such_key=1': key model.no_such_key is not in", ["+model.no_such_key"]),
    ("plus-on-existing", ["--recipe", R70, "+model.tensor_model_parallel_size=2"], {},
     "command line: override '+model.tensor_model_parallel_size=2': key model.tensor_model_parallel_size already exists",
     ["++model.tensor_model_parallel_size"]),
    ("malformed-dotlist", ["--recipe", R70, "over.yaml", "model.=1"], {}, "overlap: error: override 'model.=1'", ["empty key"]),
    ("malformed-delete", ["--recipe", R70, "~"], {}, "overlap: error: override '~'", ["~key"]),
    ("delete-value-mismatch", ["--recipe", R70, "~model.sequence_parallel=false"], {},
     "command line: override '~model.sequence_parallel=false'", ["model.sequence_parallel is True"]),
    ("invalid-yaml", ["--recipe", R70, "broken.yaml"], {"broken.yaml": "model: [\n"}, "broken.yaml:2:1: invalid YAML", []),
    ("missing-file", ["--recipe", R70, "nofile.yaml"], {}, "nofile.yaml: file not found", []),
    ("directive-unknown", ["dir.yaml"], {"dir.yaml": "model:\n  sequence_parallel: true\n# overlap: recipe=llama3_70b_pretrain_64gpu\n"},
     "dir.yaml:3:12: recipe: # overlap: unknown recipe 'llama3_70b_pretrain_64gpu'", [R70]),
    ("pyproject-unknown", ["over.yaml"], {"pyproject.toml": '[tool.overlap]\nrecipe = "nope_recipe"\n'},
     "pyproject.toml: tool.overlap.recipe: unknown recipe 'nope_recipe'", ["overlap recipes list"]),
    ("pyproject-not-a-name", ["over.yaml"], {"pyproject.toml": "[tool.overlap]\nrecipe = 3\n"},
     "overlap: error: ", ["pyproject.toml: tool.overlap.recipe: must be a recipe name, got 3"]),
    ("per-file-target-unknown", ["over.yaml"],
     {"pyproject.toml": '[tool.overlap.per-file-target]\n"*.yaml" = { recipe = "qwen3_nope" }\n'},
     "pyproject.toml: tool.overlap.per-file-target.recipe: unknown recipe 'qwen3_nope'", []),
    ("recipe-and-base", ["--recipe", R70, "--base", "over.yaml"], {}, "overlap: error: give either --recipe NAME or --base FILE", []),
    ("recipe-and-directory", ["--recipe", R70, "."], {}, "overlap: error: .: --recipe/--base merge the override files", ["per-file-target"]),
]


@pytest.mark.parametrize("args, files, start, words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, monkeypatch, args, files, start, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "over.yaml").write_text("model:\n  sequence_parallel: true\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code, out, err = run_cli("check", *args)
    lines = [line for line in (out + err).splitlines() if line.strip() and not line.startswith("note:")]
    assert code == 2, out + err
    assert len(lines) == 1, lines
    line = lines[0].replace(str(tmp_path) + "/", "")
    assert line.startswith(start), line
    for w in words:
        assert w in line, line
    assert "Traceback" not in out + err


def test_a_resharded_recipe_run_does_not_inherit_the_recipe_gpu_count(tmp_path, run_cli):
    """The recipe's name gives the GPUs it is written for (8 for L8, TP 1 x PP 1 x CP 2 there); an override
    that reshards the model to TP 4 x CP 2 = 8 still fits, TP 4 x PP 2 x CP 2 = 16 does not: the world size
    is then unknown with the reason, not a DP307 start-up error the user's launch may never meet. Given on
    the command line, the same world size is the user's and DP307 stands."""
    over = tmp_path / "reshard.yaml"
    over.write_text("model:\n  tensor_model_parallel_size: 4\n  pipeline_model_parallel_size: 2\n")
    code, out, err = run_cli("check", "--recipe", L8, str(over), "--format", "json", "--show-effective")
    result = json.loads(out)["results"][0]
    assert "DP307" not in {f["code"] for f in result["findings"]}
    assert result["target"]["world_size"] is None and result["target"]["data_parallel_size"] is None
    assert any("written for 8 GPUs" in n and "= 16" in n for n in result["notes"]), result["notes"]
    assert result["effective"]["ddp.overlap_grad_reduce"]["source"] == "unknown"
    code, out, err = run_cli("check", "--recipe", L8, str(over), "--world-size", "8", "--format", "json")
    assert "DP307" in {f["code"] for f in json.loads(out)["results"][0]["findings"]}
    over.write_text("model:\n  tensor_model_parallel_size: 4\n")
    code, out, err = run_cli("check", "--recipe", L8, str(over), "--format", "json")
    assert json.loads(out)["results"][0]["target"]["data_parallel_size"] == 1


# A catalog entry read from Bridge's source whose model a Hugging Face config describes: its model section
# is unknown (recipes show lists it), and nothing about the model may be reported as a default.
NANO_PEFT = "nemotron_3_nano_peft_8gpu_h100_bf16_config"


def test_a_recipe_with_an_unknown_model_reports_nothing_from_model_defaults(run_cli):
    result = results_of(run_cli, "--recipe", NANO_PEFT)[f"recipe {NANO_PEFT}"]
    assert result["error"] is None
    # model.seq_length is unknown: no seq-length mismatch against the class default 1024
    assert [f for f in result["findings"] if f["code"] == "CFG010"] == []
    # what the recipe's helper sets on the unknown model is known (model.tensor_model_parallel_size = 1 on
    # the provider it gets from the Hugging Face config); what the provider itself holds is not
    tp = result["effective"]["model.tensor_model_parallel_size"]
    assert (tp["value"], tp["source"]) == (1, "user"), tp
    assert result["effective"]["model.tp_comm_overlap"]["source"] == "unknown"


def test_a_rule_reading_a_key_of_the_unknown_model_reports_no_finding(run_cli):
    # Moonlight's model comes from its Hugging Face config; the recipe asks for EP overlap. Bridge's
    # EP-overlap pre-check reads num_moe_experts, which only that config holds: the view's class default
    # (null) is no reason for "num_moe_experts is null".
    name = "moonlight_16b_pretrain_16gpu_h100_bf16_config"
    result = results_of(run_cli, "--recipe", name)[f"recipe {name}"]
    assert result["error"] is None
    assert "EP701" not in {f["code"] for f in result["findings"]}, result["findings"]
    assert any("EP701 (comm_overlap.overlap_moe_expert_parallel_comm)" in n for n in result["notes"]), result["notes"]
    # the layout the recipe writes on that model is known
    ep = result["effective"]["model.tensor_model_parallel_size"]
    assert ep["source"] == "user", ep


def test_a_dotlist_under_an_unknown_model_is_taken_as_written(run_cli):
    """Bridge's config has the model's fields; whether it has this one cannot be known here, so the
    override is not refused, and its value is the run's (the rest of the model stays unknown)."""
    result = results_of(run_cli, "--recipe", NANO_PEFT, "model.hybrid_override_pattern=M-M-",
                        "model.tensor_model_parallel_size=2", "--show-effective")[f"recipe {NANO_PEFT}"]
    assert result["error"] is None
    tp = result["effective"]["model.tensor_model_parallel_size"]
    assert (tp["value"], tp["source"]) == (2, "user")
    assert result["effective"]["model.tp_comm_overlap"]["source"] == "unknown"
    # a key of a section the recipe knows is still refused as Bridge refuses it
    code, _, err = run_cli("check", "--recipe", NANO_PEFT, "train.micro_batch_sizee=1")
    assert code == 2 and "train.micro_batch_sizee" in err and "Could not override" in err


@pytest.mark.parametrize("recipe, word", [
    # a dataclass field to_yaml() leaves out (GPTDatasetConfig.to_cfg_dict skips it, config.py:287-296) but
    # create_omegaconf_dict_config writes: Bridge's own nemotron_3 nano example sets it
    ("nemotron_3_nano_pretrain_8gpu_h100_bf16_config", "dataset.sequence_length=512"),
    # a CheckpointConfig(...) the recipe source writes with a few keywords: the class has the others
    ("qwen2_audio_7b_sft_1gpu_h100_bf16_config", "checkpoint.save_optim=false"),
])
def test_a_field_of_the_dataclass_is_overridable_where_the_values_lack_it(run_cli, recipe, word):
    code, _, err = run_cli("check", "--recipe", recipe, word)
    assert code in (0, 1), err
    section, key = word.split("=")[0].split(".")
    code, _, err = run_cli("check", "--recipe", recipe, f"{section}.{key}x=1")
    assert code == 2 and f"Could not override '{section}.{key}x'" in err
