"""Launches as clusters write them, through the real CLI: a command built in a variable and run by ``eval`` or
``$CMD``, container runtimes around torchrun (shifter, apptainer/singularity, docker, enroot, pyxis), ``bcprun``,
Megatron-LM's ``--yaml-cfg``, a flag spelled the way forks spell it, and a flag whose value is a variable that
is certainly unset. Public launch scripts are vendored under tests/data/upstream (SOURCES.json: repository,
path, commit): Alibaba's Pai-Megatron-Patch (``eval ${run_cmd}``), AWS's awsome-distributed-training (pyxis
``srun --container-image``), Megatron-LM's ``examples/gpt3/gpt_config.yaml`` (``--yaml-cfg``)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import ROOT

UPSTREAM = ROOT / "tests" / "data" / "upstream"
PAI = UPSTREAM / "alibaba+Pai-Megatron-Patch" / "examples" / "llama3" / "run_pretrain_megatron_llama.sh"
AWS = UPSTREAM / "aws-samples+awsome-distributed-training" / "3.test_cases" / "megatron" / "megatron-lm" / "slurm"
GPT_CONFIG = UPSTREAM / "NVIDIA+Megatron-LM" / "examples" / "gpt3" / "gpt_config.yaml"
MODEL = ("--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
         "--micro-batch-size 1 --global-batch-size 32 --bf16")


def check(run_cli, path, *flags):
    code, out, err = run_cli("check", str(path), "--format", "json", "--show-effective", *flags)
    result = json.loads(out)["results"][0]
    return code, result, err


def effective(result) -> dict:
    assert result["error"] is None, result["error"]
    return {k: (v["value"], v["source"]) for k, v in result["effective"].items()}


def write(tmp_path, name: str, body: str):
    path = tmp_path / name
    path.write_text("#!/bin/bash\n" + body)
    return path


# -- a command built in a variable ---------------------------------------------------------------------


def test_pai_megatron_patch_eval_of_run_cmd(run_cli):
    """``run_cmd="torchrun $DISTRIBUTED_ARGS pretrain_llama.py ${megatron_options} ..."; eval ${run_cmd}``: eval
    joins the words and bash parses them again; the flags are read where the script wrote them, the sizes taken
    from the script's positional arguments ($12, $13) are unknown, never Megatron-LM's default."""
    code, result, _ = check(run_cli, PAI, "--world-size", "16", "--show-info")
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (None, "unknown")
    assert "--tensor-model-parallel-size on line 179" in result["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert eff["model.pipeline_model_parallel_size"] == (None, "unknown")
    notes = json.dumps(result)
    assert "the launch is the string eval runs" in notes
    # Pai's own flags (its pretrain_llama.py adds them) are noted, not refused
    assert "--patch-tokenizer-type is not a Megatron-LM flag" in notes
    assert code in (0, 1)


def test_eval_reparses_quotes_and_sees_every_variable(run_cli, tmp_path):
    """eval runs in the script's shell: a variable the script never exports is still seen, and the quotes
    inside the string are quotes again (bash -c would see neither)."""
    path = write(tmp_path, "eval.sh", f"TP=4\nEXTRA=\"--pipeline-model-parallel-size '2'\"\n"
                                      f"run_cmd=\"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP $EXTRA {MODEL}\"\n"
                                      "eval \"$run_cmd\" 2>&1 | tee log.txt\n")
    _, result, _ = check(run_cli, path)
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (4, "user")
    assert eff["model.pipeline_model_parallel_size"] == (2, "user")
    assert result["target"]["world_size"] == 8
    assert result["effective"]["model.tensor_model_parallel_size"]["reason"].startswith("--tensor-model-parallel-size on line 4")


@pytest.mark.parametrize("launch", ["${CMD}", "$CMD", "eval ${CMD}", "eval \"${CMD}\""])
def test_command_in_a_variable(run_cli, tmp_path, launch):
    path = write(tmp_path, "cmd.sh", f"CMD=\"torchrun --nproc_per_node 4 --nnodes 2 pretrain_gpt.py "
                                     f"--tensor-model-parallel-size 2 {MODEL}\"\n{launch}\n")
    _, result, _ = check(run_cli, path)
    assert effective(result)["model.tensor_model_parallel_size"] == (2, "user")
    assert result["target"]["world_size"] == 8


# -- container runtimes -----------------------------------------------------------------------------------

CONTAINERS = {
    "shifter": "srun -N 2 --ntasks-per-node=1 shifter --image=nvcr.io/nvidia/pytorch:24.01-py3 --volume $PWD:/ws -- {L}",
    "apptainer": "srun apptainer exec --nv -B /data:/data --env A=1 /images/pt.sif {L}",
    "singularity": "singularity exec --nv --bind /data /images/pt.sif {L}",
    "docker": "docker run --gpus all --rm -it --ipc=host -v $PWD:/ws -w /ws -e X=1 nvcr.io/nvidia/pytorch:24.01-py3 {L}",
    "podman": "podman run --rm --device nvidia.com/gpu=all img:latest {L}",
    "enroot": "enroot start --mount /data:/data --rw --env X pytorch {L}",
    "pyxis": "srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 --container-mounts /data:/data --no-container-mount-home {L}",
    "docker-bash-lc": "docker run --gpus all nvcr.io/nvidia/pytorch:24.01-py3 bash -lc \"{L}\"",
    "apptainer-bash-c": "apptainer exec --nv img.sif bash -c '{L}'",
}


@pytest.mark.parametrize("runtime", sorted(CONTAINERS))
def test_torchrun_inside_a_container(run_cli, tmp_path, runtime):
    launch = f"torchrun --nproc_per_node 4 --nnodes 2 pretrain_gpt.py --tensor-model-parallel-size 4 {MODEL}"
    path = write(tmp_path, f"{runtime}.sh", CONTAINERS[runtime].format(L=launch) + "\n")
    code, result, _ = check(run_cli, path)
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (4, "user")
    assert result["target"]["world_size"] == 8
    assert "--tensor-model-parallel-size on line 2" in result["effective"]["model.tensor_model_parallel_size"]["reason"]


def test_a_container_command_that_runs_nothing_is_no_launch(run_cli, tmp_path):
    """``docker pull IMAGE`` and ``apptainer build`` run nothing of the line: no launch is read from them."""
    path = write(tmp_path, "pull.sh", "docker pull torchrun\napptainer build torchrun.sif pretrain_gpt.def\n")
    code, out, err = run_cli("check", str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["results"] == []  # named or walked alike: skipped, no launch is read
    assert [s["reason"].split(" (")[0] for s in doc["skipped"]] == ["not a launch"]


def test_bcprun_cmd_string(run_cli, tmp_path):
    """NGC's ``bcprun --nnodes N --npernode M --cmd STRING``: the string is read as the script built it; the world
    size is the launcher's (WORLD_SIZE), unknown, with bcprun's process count named."""
    path = write(tmp_path, "bcp.sh", "TP=2\nbcprun --nnodes 2 --npernode 8 --env A=1 --cmd "
                                     f"\"python pretrain_gpt.py --tensor-model-parallel-size $TP {MODEL}\"\n")
    _, result, _ = check(run_cli, path, "--show-info")
    assert effective(result)["model.tensor_model_parallel_size"] == (2, "user")
    assert result["target"]["world_size"] is None
    text = json.dumps(result)
    assert "the launch is the string bcprun --cmd runs" in text
    assert "bcprun starts the command as 16 processes (2 x 8)" in text


def test_aws_pyxis_sbatch_gpt3(run_cli):
    """awsome-distributed-training's Megatron-LM GPT-3 job: ``srun ${AUTO_RESUME} -l "${ARGS[@]}"`` with pyxis'
    --container-image in ARGS, ``python -m torch.distributed.run "${TORCHRUN_ARGS[@]}"``, sizes from ``: "${X:=4}"``."""
    _, result, _ = check(run_cli, AWS / "gpt3" / "2.distributed-training.sbatch", "--world-size", "16")
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (4, "user")
    assert eff["model.pipeline_model_parallel_size"] == (2, "user")
    assert result["target"]["data_parallel_size"] == 2
    assert result["effective"]["model.tensor_model_parallel_size"]["reason"] == \
        "--tensor-model-parallel-size on line 80 (through variable MEGATRON_PARALLELISM (line 79))"


def test_aws_pyxis_sbatch_llama2(run_cli):
    _, result, _ = check(run_cli, AWS / "llama2" / "pretrain-llama2.sbatch", "--world-size", "16")
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (4, "user")
    assert eff["model.pipeline_model_parallel_size"] == (4, "user")
    assert eff["model.sequence_parallel"] == (True, "user")
    assert eff["ddp.overlap_grad_reduce"] == (True, "user")
    assert eff["env.CUDA_DEVICE_MAX_CONNECTIONS"] == ("1", "user")


# -- a flag a fork spells its own way -------------------------------------------------------------------


@pytest.mark.parametrize("script, exits", [("pretrain_gpt.py", True), ("pretrain_llama.py", False)])
def test_underscore_flag_is_unknown_never_the_default(run_cli, tmp_path, script, exits):
    """``--tensor_model_parallel_size`` is no spelling megatron-core's parser has (argparse matches exactly,
    allow_abbrev=False): Megatron-LM's own pretrain_gpt.py exits on it, a fork's script may accept it. Either way
    the size it may set is unknown, at its line — not an input error, not TP 1 from argparse's default."""
    path = write(tmp_path, "fork.sh", f"TP=4\ntorchrun --nproc_per_node 8 {script} --tensor_model_parallel_size $TP {MODEL}\n")
    code, result, _ = check(run_cli, path)
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (None, "unknown")
    reason = result["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert reason.startswith("--tensor_model_parallel_size (line 3) is not Megatron-LM's spelling of --tensor-model-parallel-size")
    assert ("exits on it (argparse: unrecognized arguments)" in reason) is exits
    assert eff["model.pipeline_model_parallel_size"] == (1, "default")  # the flags it does not respell stay read
    assert code in (0, 1)


def test_a_typo_of_megatron_lm_flag_is_still_argparse_error(run_cli, tmp_path):
    path = write(tmp_path, "typo.sh", f"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-paralel-size 4 {MODEL}\n")
    code, result, _ = check(run_cli, path)
    assert code == 2
    assert result["error"]["message"].startswith("no such Megatron-LM flag (argparse exits 2: unrecognized arguments)")


# -- a variable certainly unset --------------------------------------------------------------------------


def test_unset_variable_where_a_flag_needs_its_value(run_cli, tmp_path, monkeypatch):
    """With the caller's environment known whole (--env-from-shell), ``--tensor-model-parallel-size $TP_SIZE`` of a
    variable nobody sets leaves argparse ``--tensor-model-parallel-size --pipeline-model-parallel-size 2``: its
    "expected one argument" exit, an input error at the flag's line."""
    path = write(tmp_path, "unset.sh", "\n# sizes\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size "
                                       f"$TP_SIZE --pipeline-model-parallel-size 2 {MODEL}\n")
    monkeypatch.delenv("TP_SIZE", raising=False)
    code, result, _ = check(run_cli, path, "--env-from-shell")
    assert code == 2
    assert result["error"]["line"] == 4 and result["error"]["key"] == "--tensor-model-parallel-size"
    assert "expected one argument" in result["error"]["message"]
    # without the caller's environment, it may be set there: unknown
    code, result, _ = check(run_cli, path)
    assert effective(result)["model.tensor_model_parallel_size"] == (None, "unknown")
    # set in the environment the launch runs from: read
    monkeypatch.setenv("TP_SIZE", "2")
    _, result, _ = check(run_cli, path, "--env-from-shell")
    assert effective(result)["model.tensor_model_parallel_size"] == (2, "user")


def test_scheduler_variables_are_not_taken_for_unset(run_cli, tmp_path, monkeypatch):
    """The job's scheduler sets SLURM_* for the script (the shell running the check does not have them): with
    --env-from-shell such a variable is still unknown, not unset."""
    path = write(tmp_path, "slurm.sh", "torchrun --nproc_per_node 8 --nnodes $SLURM_NNODES pretrain_gpt.py "
                                       f"--tensor-model-parallel-size 2 {MODEL}\n")
    monkeypatch.delenv("SLURM_NNODES", raising=False)
    code, result, _ = check(run_cli, path, "--env-from-shell")
    assert result["error"] is None and result["target"]["world_size"] is None


# -- --yaml-cfg -------------------------------------------------------------------------------------------


def test_yaml_cfg_replaces_the_launch_flags(run_cli, tmp_path):
    """Megatron-LM's examples/gpt3/gpt_config.yaml through ``--yaml-cfg``: load_yaml's values replace argparse's
    (the launch's --tensor-model-parallel-size 4 is ignored), each at its line of the file; a key the file does
    not have is unknown (the run has no value for it), not argparse's default."""
    shutil.copy(GPT_CONFIG, tmp_path / "gpt_config.yaml")
    path = write(tmp_path, "train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 "
                                       "--yaml-cfg gpt_config.yaml\n")
    _, result, _ = check(run_cli, path)
    eff = effective(result)
    tp = result["effective"]["model.tensor_model_parallel_size"]
    assert (tp["value"], tp["source"], tp["reason"]) == (1, "user", "gpt_config.yaml:74 (--yaml-cfg on line 2)")
    assert eff["ddp.overlap_grad_reduce"] == (False, "user")
    assert result["effective"]["ddp.overlap_grad_reduce"]["reason"].startswith("gpt_config.yaml:217")
    assert eff["model.sequence_parallel"] == (False, "forced-off")  # the file's True, turned off at TP 1
    assert eff["ddp.align_param_gather"] == (None, "unknown")
    assert "not in gpt_config.yaml" in result["effective"]["ddp.align_param_gather"]["reason"]


def test_yaml_cfg_not_found_leaves_every_value_unknown(run_cli, tmp_path):
    path = write(tmp_path, "train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 "
                                       "--yaml-cfg $CFG_DIR/gpt.yaml\n")
    code, result, _ = check(run_cli, path, "--show-info")
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (None, "unknown")
    assert eff["ddp.overlap_grad_reduce"] == (None, "unknown")
    assert "the file --yaml-cfg names is not known statically" in result["effective"]["model.tensor_model_parallel_size"]["reason"]
    assert not [f for f in result["findings"] if f["severity"] == "error"]


def test_yaml_cfg_values_are_load_yamls(tmp_path):
    """Every value read from gpt_config.yaml is what megatron-core 0.19.2's load_yaml gives, flattened as
    validate_yaml flattens its model_parallel and language_model sections (yaml_arguments.py:352-353)."""
    from differential import reference_python

    from overlap_cli.frameworks.megatron_lm.yaml_cfg import _read

    python = reference_python()
    if python is None:
        pytest.skip("no megatron-core environment (OVERLAP_BRIDGE_ENV)")
    script = (
        "import json, sys, types\n"
        "from megatron.training.yaml_arguments import load_yaml\n"
        "ns = load_yaml(sys.argv[1])\n"
        "flat = dict(vars(ns)); flat.update(vars(ns.model_parallel)); flat.update(vars(ns.language_model))\n"
        "print(json.dumps({k: v for k, v in flat.items() if not isinstance(v, types.SimpleNamespace)}))\n")
    out = subprocess.run([str(python), "-c", script, str(GPT_CONFIG)], capture_output=True, text=True, check=True)
    real = json.loads(out.stdout.strip().splitlines()[-1])
    mine = {k: v for k, (v, _line) in _read(str(GPT_CONFIG)).items()}
    real.pop("yaml_cfg"), real.pop("_is_global_batch_size_explicitly_specified")
    assert mine == real


@pytest.mark.parametrize("form", ["direct", "bash -c"])
def test_docker_run_passes_only_its_env_options(run_cli, tmp_path, form):
    """The container starts with the image's environment and docker run's -e/--env only: the script's exported
    CUDA_DEVICE_MAX_CONNECTIONS does not reach torchrun (validate_args' assert at TP > 1 on Hopper), while
    ``-e TP`` carries the script's TP and ``-e NVTE_X=1`` sets a value of its own."""
    launch = f"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP {MODEL}"
    wrapped = launch if form == "direct" else f"bash -c '{launch}'"
    path = write(tmp_path, "docker.sh", "export CUDA_DEVICE_MAX_CONNECTIONS=1\nexport TP=4\n"
                                        f"docker run --gpus all -e TP -e NVTE_X=1 --rm img:1 {wrapped}\n")
    code, result, _ = check(run_cli, path, "--gpu", "h100")
    eff = effective(result)
    assert eff["model.tensor_model_parallel_size"] == (4, "user")
    assert eff["env.CUDA_DEVICE_MAX_CONNECTIONS"] == (None, "default")
    assert [f["code"] for f in result["findings"] if f["severity"] == "error"] == ["LM501"]
    assert code == 1
    # the same launch without the container: the export reaches it
    path.write_text(f"#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\nexport TP=4\n{launch}\n")
    _, result, _ = check(run_cli, path, "--gpu", "h100")
    assert effective(result)["env.CUDA_DEVICE_MAX_CONNECTIONS"] == ("1", "user")
