"""``overlap diff OLD NEW`` through the real command line: what differs in the effective settings, the
findings that appear or disappear, the exit codes of diff, the JSON document."""

import json
import shutil

import pytest

PP = "examples/pp_without_vpp.yaml"
TUNED = "examples/llama3_70b_tuned.yaml"


def diff_json(run_cli, *args):
    code, out, err = run_cli("diff", *args, "--format", "json")
    assert err == ""
    return code, json.loads(out)


def changes(doc) -> dict:
    return {c["key"]: c for c in doc["effective"]}


def recipe(corpus, name):
    return next(r for r in corpus if r["recipe"] == name)


def test_world_size_change_on_a_real_recipe(run_cli, corpus, root):
    """One Bridge recipe at 64 and 128 GPUs: DP 2 -> 4, the DP overlap defaults keep their values but their
    provenance names the new DP. Nothing Bridge runs with differs: the text says so and exits 0, naming what
    it leaves out; the provenance changes are in the JSON and with --show-provenance (then exit 1)."""
    row = recipe(corpus, "llama3_70b_pretrain_64gpu_h100_bf16_config")
    code, doc = diff_json(run_cli, row["path"], "--world-size", "64", "--vs-world-size", "128")
    assert code == 0
    assert (doc["old"]["target"]["world_size"], doc["new"]["target"]["world_size"]) == (64, 128)
    assert (doc["old"]["target"]["data_parallel_size"], doc["new"]["target"]["data_parallel_size"]) == (2, 4)
    assert doc["old"]["file"] == doc["new"]["file"] == row["path"]
    assert doc["effective"] == []
    by_key = {c["key"]: c for c in doc["provenance"]}
    bucket = by_key["ddp.bucket_size"]
    assert bucket["old"]["value"] == bucket["new"]["value"]
    assert "DP=2" in bucket["old"]["reason"] and "DP=4" in bucket["new"]["reason"]
    assert by_key["ddp.overlap_grad_reduce"]["new"]["source"] == "bridge-auto"
    assert not any(k.startswith("model.") for k in by_key)  # TP/PP/CP/SP do not depend on the world size
    # DP301 (info) is on both sides, saying DP=2 / DP=4: a changed finding, not one appearing and one disappearing
    [(old, new)] = [(c["old"], c["new"]) for c in doc["findings"]["changed"] if c["new"]["code"] == "DP301"]
    assert old["message"].startswith("DP=2") and new["message"].startswith("DP=4")
    assert not [f for f in doc["findings"]["appeared"] + doc["findings"]["disappeared"] if f["code"] == "DP301"]

    code, out, err = run_cli("diff", row["path"], "--world-size", "64", "--vs-world-size", "128")
    assert (code, err) == (0, "")
    assert "target: world size 64 -> 128, DP 2 -> 4" in out
    assert "no difference in the effective settings or findings" in out
    assert "ddp.bucket_size" not in out and "DP301" not in out
    assert (f"Not shown: {len(doc['provenance'])} setting(s) with the same value and another provenance "
            "(--show-provenance), 1 info finding change(s) (--show-info).") in out

    code, out, err = run_cli("diff", row["path"], "--world-size", "64", "--vs-world-size", "128", "--show-provenance")
    assert (code, err) == (1, "")
    assert f"effective settings ({len(doc['provenance'])} differ):" in out
    assert "ddp.bucket_size  (same value, other provenance)" in out and "DP301" not in out
    code, out, err = run_cli("diff", row["path"], "--world-size", "64", "--vs-world-size", "128", "--show-info")
    assert (code, err) == (1, "")
    assert "findings (0 appeared, 0 disappeared, 1 changed):\n  ~ DP301 info ddp.use_distributed_optimizer: DP=4" in out
    assert "    (was: DP=2" in out and "ddp.bucket_size" not in out


def test_values_are_written_as_the_config_writes_them(run_cli, tmp_path, root):
    """A userbuffers config that differs is its preset's name and the GEMM entries that differ, one per line in
    YAML's spelling -- not the effective mapping as one Python dict on a line."""
    dump = root / "examples" / "bridge" / "llama3_70b_pretrain_32gpu_h100_bf16_config.yaml"
    text = dump.read_text()
    start = text.index("    qkv_dgrad:")
    assert text[start:].startswith("    qkv_dgrad:\n")
    new = tmp_path / "new.yaml"
    # One GEMM's SM count changed in the dump's own table.
    block = text[start:text.index("\n    qkv_wgrad:", start)]
    assert "      num_sm: 4\n" in block + "\n"
    new.write_text(text[:start] + block.replace("num_sm: 4", "num_sm: 8") + text[start + len(block):])
    code, out, err = run_cli("diff", str(dump), str(new), "--world-size", "64")
    assert (code, err) == (1, ""), err
    lines = out.splitlines()
    at = lines.index("  model.tp_comm_overlap_cfg")
    assert lines[at + 1].startswith("    - preset userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192  [user: ")
    assert lines[at + 2].startswith("    + preset custom  [user: ")
    assert lines[at + 3] == "      qkv_dgrad.num_sm: 4 -> 8"
    assert not lines[at + 4].startswith("      ")  # nothing else of the table differs
    assert "{'" not in out and "True" not in out and max(len(line) for line in lines) < 400


def test_python_runs_spell_values_as_python(run_cli, tmp_path, root):
    """Two Python runs: a value is written as the script writes it (``True`` / ``None``), not as YAML's."""
    script = (root / "tests" / "data" / "python" / "llama3_70b_train.py").read_text()
    old, new = tmp_path / "old.py", tmp_path / "new.py"
    old.write_text(script)
    tp, overlap = "cfg.model.tensor_model_parallel_size = 4\n", "CommOverlapConfig(tp_comm_overlap=True)"
    assert tp in script and overlap in script
    new.write_text(script.replace(tp, tp + "cfg.model.virtual_pipeline_model_parallel_size = None\n")
                   .replace(overlap, "CommOverlapConfig(tp_comm_overlap=False)"))
    code, out, err = run_cli("diff", str(old), str(new), "--world-size", "64")
    assert code == 1 and "Traceback" not in err, err
    lines = out.splitlines()
    at = lines.index("  model.tp_comm_overlap")
    assert lines[at + 1].startswith("    - True  [") and lines[at + 2].startswith("    + False  [")
    at = lines.index("  model.virtual_pipeline_model_parallel_size")
    assert lines[at + 1].startswith("    - 5  [") and lines[at + 2].startswith(f"    + None  [user: set in {new}:")
    assert "null" not in out and "true" not in out


def test_nodes_on_the_new_side_replace_the_world_size(run_cli, corpus):
    """--vs-nodes/--vs-gpus-per-node state NEW's launch size as a whole: OLD's --world-size is not carried over."""
    row = recipe(corpus, "llama3_70b_pretrain_64gpu_h100_bf16_config")
    code, doc = diff_json(run_cli, row["path"], "--world-size", "64", "--vs-nodes", "16", "--vs-gpus-per-node", "8")
    assert code == 0 and doc["provenance"]  # only provenance differs (the DP in the DP defaults' reasons)
    assert doc["new"]["target"]["world_size"] == 128 and doc["new"]["target"]["data_parallel_size"] == 4


def test_two_configs_one_key_changed(run_cli, tmp_path, root):
    """A copy with one key changed: exactly that key and what Bridge derives from it differ."""
    old = tmp_path / "old.yaml"
    shutil.copy(root / TUNED, old)
    new = tmp_path / "new.yaml"
    text = old.read_text()
    assert "  virtual_pipeline_model_parallel_size: 2\n" in text
    new.write_text(text.replace("  virtual_pipeline_model_parallel_size: 2\n", "  virtual_pipeline_model_parallel_size: null\n"))
    code, doc = diff_json(run_cli, str(old), str(new), "--world-size", "64")
    assert code == 1
    by_key = changes(doc)
    vpp = by_key["model.virtual_pipeline_model_parallel_size"]
    assert (vpp["old"]["value"], vpp["new"]["value"]) == (2, None)
    # Without VPP Bridge switches p2p overlap off and batches p2p; the world size and TP are unchanged.
    assert by_key["model.batch_p2p_comm"]["new"]["value"] is True
    assert "model.tensor_model_parallel_size" not in by_key and "ddp.bucket_size" not in by_key
    assert doc["old"]["target"]["data_parallel_size"] == doc["new"]["target"]["data_parallel_size"]
    assert set(by_key) <= {
        "model.virtual_pipeline_model_parallel_size", "model.overlap_p2p_comm", "model.batch_p2p_comm",
        "ddp.align_param_gather", "env.NCCL_P2P_NET_CHUNKSIZE",
    }, set(by_key)


def test_two_different_configs(run_cli, root):
    code, doc = diff_json(run_cli, PP, TUNED, "--world-size", "64")
    assert code == 1
    by_key = changes(doc)
    assert (by_key["model.tensor_model_parallel_size"]["old"]["value"], by_key["model.tensor_model_parallel_size"]["new"]["value"]) == (2, 4)
    assert by_key["model.batch_p2p_comm"]["old"]["source"] == "bridge-auto"
    assert "model.pipeline_model_parallel_size" not in by_key  # PP=4 in both
    assert "PP202" in {f["code"] for f in doc["findings"]["disappeared"]}  # TUNED has VPP: p2p overlap is legal


@pytest.mark.parametrize("args", [[PP, PP], [TUNED, "--world-size", "64", "--vs-world-size", "64"]])
def test_identical_inputs_exit_0(run_cli, args):
    code, out, err = run_cli("diff", *args)
    assert (code, err) == (0, "")
    assert "no difference in the effective settings or findings" in out
    code, doc = diff_json(run_cli, *args)
    assert code == 0 and doc["effective"] == doc["provenance"] == []
    assert doc["findings"] == {"appeared": [], "disappeared": [], "changed": []}


@pytest.mark.parametrize("bad_side", ["old", "new"])
def test_bad_input_on_either_side_is_one_line_exit_2(run_cli, bad_side, root):
    bad = "examples/invalid_parallel_size.yaml"
    args = [bad, PP] if bad_side == "old" else [PP, bad]
    code, out, err = run_cli("diff", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"{bad}:4:3: model.tensor_model_parallel_size:")


def test_unreadable_yaml_and_missing_file(run_cli, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [\n")
    code, out, err = run_cli("diff", PP, str(broken))
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith(f"{broken}:2:")
    code, out, err = run_cli("diff", str(tmp_path / "missing.yaml"), PP)
    assert code == 2 and out == "" and err.count("\n") == 1 and "missing.yaml" in err


@pytest.mark.parametrize("args", [[PP], [PP, TUNED, TUNED], [PP, "model.seq_length=4096"], [PP, "--vs-world-size", "0"]])
def test_usage_errors(run_cli, args):
    """One file without a --vs- flag, three files, an override, a bad --vs- value: one line, exit 2."""
    code, out, err = run_cli("diff", *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err


def test_json_shape_and_version(run_cli):
    code, doc = diff_json(run_cli, PP, TUNED, "--world-size", "64")
    assert code == 1
    assert list(doc) == ["version", "old", "new", "effective", "provenance", "findings", "estimate"] and doc["version"] == 1
    assert set(doc["estimate"]) == {"old_step_time_s", "new_step_time_s", "change_s", "unavailable"}
    for side in ("old", "new"):
        assert set(doc[side]) == {"file", "target"}
    assert doc["old"]["file"] == PP and doc["new"]["file"] == TUNED
    for change in doc["effective"]:
        assert set(change) == {"key", "old", "new"}
        for side in ("old", "new"):
            assert change[side] is None or set(change[side]) == {"value", "source", "reason"}
        assert change["old"] != change["new"]
        assert change["old"] is None or change["new"] is None or change["old"]["value"] != change["new"]["value"]
    for change in doc["provenance"]:
        assert change["old"]["value"] == change["new"]["value"] and change["old"] != change["new"]
    assert set(doc["findings"]) == {"appeared", "disappeared", "changed"}
    finding = doc["findings"]["appeared"][0]
    assert set(finding) == {"code", "severity", "message", "key", "line", "column", "fix"}


def test_findings_change_across_gpus(run_cli):
    """The same config on H100 and on B200: CUDA_DEVICE_MAX_CONNECTIONS needs 1 on Hopper and 32 on SM100+,
    so ENV501's finding on the same key says another thing: one changed finding, not one appearing and one
    disappearing."""
    code, doc = diff_json(run_cli, PP, "--gpu", "h100", "--vs-gpu", "b200", "--world-size", "64")
    assert code == 1
    assert doc["old"]["target"]["gpu"] == "h100" and doc["new"]["target"]["gpu"] == "b200"
    [(gone, came)] = [(c["old"], c["new"]) for c in doc["findings"]["changed"] if c["new"]["code"] == "ENV501"]
    assert gone["key"] == came["key"] and gone["severity"] == came["severity"] == "warning"
    assert "needs 1" in gone["message"] and "needs 32" in came["message"]
    assert not [f for f in doc["findings"]["appeared"] + doc["findings"]["disappeared"] if f["code"] == "ENV501"]
    # the config sets no env_vars: unset at launch on both GPUs (what to export is the findings' and the reason's)
    env = changes(doc).get("env.CUDA_DEVICE_MAX_CONNECTIONS")
    assert env is None or (env["old"]["value"], env["new"]["value"]) == (None, None)
    code, out, err = run_cli("diff", PP, "--gpu", "h100", "--vs-gpu", "b200", "--world-size", "64")
    assert code == 1 and "target: GPU h100 -> b200" in out
    assert "  ~ ENV501 warning" in out and "needs 32" in out and "(was: " in out and "needs 1" in out


def test_te_switch_twin(run_cli):
    """--vs-no-te: the NEW side without Transformer Engine (TP comm overlap needs it)."""
    code, doc = diff_json(run_cli, TUNED, "--world-size", "64", "--vs-no-te")
    assert code == 1
    assert doc["old"]["target"]["transformer_engine"] is True and doc["new"]["target"]["transformer_engine"] is False
    assert doc["effective"] or doc["findings"]["appeared"]


def test_every_per_side_target_flag_has_a_vs_twin():
    """--vs-world-size, --vs-te/--vs-no-te, ...: each per-side TARGET row has its twin in DIFF."""
    from overlap_cli.cli import options

    spelt = {n for row in options.DIFF for n in row.spellings()}
    for row in options.TARGET:
        if row.dest in options.PER_SIDE:
            assert {"--vs-" + n[2:] for n in row.spellings()} <= spelt, row.names
