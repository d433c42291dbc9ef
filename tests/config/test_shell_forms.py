"""Launch forms of real repositories against bash: a here-document given to ``sbatch`` (Megatron-LM's
``examples/megatron_fsdp``), ``srun bash -x -c "$CMD"`` with a ``${PROFILE_CMD}`` prefix, a launcher command
built in an array, an array joined into a command string.

bash runs each script with the launchers shimmed (bash_oracle.py), and here ``srun`` and ``sbatch`` run
what they are given as the cluster would start it: ``srun [options] CMD...`` runs CMD, ``sbatch`` with no
script file runs its standard input as the job script, both with the exported environment. The reader
must know exactly what every run agrees on (test_shell_bash.compare)."""

from __future__ import annotations

import itertools
import shutil

import pytest

from bash_oracle import BASH, Oracle
from test_shell_bash import Run, compare

from overlap_cli.frameworks.megatron_lm.args import load_launch

pytestmark = pytest.mark.skipif(BASH is None, reason="no bash on this machine")

M = ("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
     "--max-position-embeddings 128 --micro-batch-size 1")
SRUN = """#!/bin/bash
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
"""
SBATCH = """#!/bin/bash
for a in "$@"; do case "$a" in *.sh) exit 0;; esac; done
exec bash -s
"""


class ClusterOracle(Oracle):
    def __init__(self, root):
        super().__init__(root)
        for name, text in (("srun", SRUN), ("sbatch", SBATCH)):
            p = self.bin / name
            p.write_text(text)
            p.chmod(0o755)
        (self.bin / "bash").symlink_to(BASH)
        for tool in ("cat",):
            found = shutil.which(tool)
            if found:
                (self.bin / tool).symlink_to(found)
        tee = shutil.which("tee")
        if tee:
            (self.bin / "tee").symlink_to(tee)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return ClusterOracle(tmp_path_factory.mktemp("bash-forms"))


FORMS = {
    "sbatch-heredoc": (
        "TP=${TP:-2}\nexport NCCL_A=1\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --nodes=2\n"
        f'srun --ntasks-per-node=1 bash -c "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py {M} '
        '--tensor-model-parallel-size $TP --decoder-seq-length \\${DEC:-128}"\nEOF\n',
        {"TP": ([None, "4"], True), "DEC": ([None, "256"], True)}),
    "sbatch-quoted-heredoc": (
        "export TP=2\nUNSEEN=--sequence-parallel\nsbatch --nodes=1 <<'EOF'\n"
        f"torchrun --nproc_per_node 8 pretrain_gpt.py {M} --tensor-model-parallel-size $TP $UNSEEN\nEOF\n",
        {}),
    "bash-x-c-profile-prefix": (
        'if [ "${PROFILE:-0}" = 1 ]; then\n  PROFILE_CMD="nsys profile -o /tmp/x"\nelse\n  PROFILE_CMD=""\nfi\n'
        f'TRAINING_CMD="\ncd /work;\nexport PYTHONPATH=/work;\n${{PROFILE_CMD}} torchrun --nproc_per_node 8 pretrain_gpt.py {M} '
        '--tensor-model-parallel-size 2"\nsrun -l --container-image=x bash -x -c "${TRAINING_CMD}" 2>&1 | tee log\n',
        {"PROFILE": ([None, "1"], False)}),
    # Bridge's examples/models/stepfun/step3*/slurm_pretrain.sh: the launch kept in a variable by read
    "read-heredoc-into-variable": (
        "read -r -d '' INNER <<'EOF' || true\nexport TP=${TPX:-4}\n"
        f"torchrun --nproc_per_node 8 pretrain_gpt.py {M} --tensor-model-parallel-size $TP\nEOF\n"
        'srun --ntasks-per-node=1 bash -c "export X=1; ${INNER}"\n',
        {"TPX": ([None, "2"], True)}),
    # Bridge's examples/megatron_mimo/qwen35_vl/slurm_sft.sh: the per-task command from $(cat <<'EOF' ...)
    "cat-heredoc-substitution": (
        "RUN_CMD=$(cat <<'EOF'\nset -euo pipefail\n"
        f"cmd=(\n    torchrun --nproc_per_node 8 pretrain_gpt.py {M}\n    --tensor-model-parallel-size 2\n)\n"
        '"${cmd[@]}"\nEOF\n)\nsrun -l bash -c "${RUN_CMD}"\n',
        {}),
    "array-launcher": (
        'LAUNCHER=(torchrun --nproc_per_node 4)\nif [ -n "$NODES" ]; then\n  LAUNCHER+=(--nnodes "$NODES")\nfi\n'
        f'ARGS=({M} --tensor-model-parallel-size 2)\n"${{LAUNCHER[@]}}" pretrain_gpt.py "${{ARGS[@]}}"\n',
        {"NODES": ([None, "2"], False)}),
    "array-joined-into-string": (
        "PROFILE_CMD=(nsys profile -o x)\nPRETRAIN_ARGS=(--tensor-model-parallel-size 4)\n"
        f'CMD="${{PROFILE_CMD[@]}} torchrun --nproc_per_node 8 pretrain_gpt.py {M} ${{PRETRAIN_ARGS[@]}}"\n'
        'srun bash -x -c "${CMD}"\n',
        {}),
}


def _runs(oracle, path, domains: dict, only_unset_defaults: bool) -> list:
    names = list(domains)
    runs = []
    for combo in itertools.product(*(domains[n][0] for n in names)):
        if only_unset_defaults and any(v is not None and domains[n][1] for n, v in zip(names, combo)):
            continue
        env = {n: v for n, v in zip(names, combo) if v is not None}
        launches = oracle.run(path, env)
        assert launches, f"bash made no launch with {env}"
        runs.append(Run(*launches[0], hidden=tuple(names)))
    return runs


@pytest.mark.parametrize("name", sorted(FORMS))
def test_launch_form_reads_as_bash_runs_it(oracle, tmp_path, name):
    text, domains = FORMS[name]
    path = tmp_path / "launch.sh"
    path.write_text(text)
    compare(load_launch(str(path), text, take_defaults=False), _runs(oracle, path, domains, False), text)
    compare(load_launch(str(path), text), _runs(oracle, path, domains, True), text)


def test_a_heredoc_launch_names_its_form(run_cli, tmp_path):
    import json

    text, _ = FORMS["sbatch-heredoc"]
    path = tmp_path / "launch.sh"
    path.write_text(text)
    code, out, err = run_cli("check", str(path), "--format", "json", "--show-info")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert r["target"]["world_size"] == 16
    lm002 = next(f for f in r["findings"] if f["code"] == "LM002")
    assert "line 3: the launch is the here-document it is given; read as the script built it" in lm002["message"]
    assert r["effective"]["model.tensor_model_parallel_size"]["reason"] == "--tensor-model-parallel-size on line 6"


def test_megatron_fsdp_sbatch_example_reads_as_bash_runs_it(oracle):
    """Megatron-LM's examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh (vendored, tests/data/upstream): the
    launch is a bash -x -c string inside the here-document sbatch is given; with the caller's environment
    empty, every flag the reader knows is what bash passes, and none bash passes is missing."""
    from conftest import ROOT
    from overlap_cli.config.argv import UNKNOWN

    path = ROOT / "tests" / "data" / "upstream" / "NVIDIA+Megatron-LM" / "examples" / "megatron_fsdp" / "sbatch_mfsdp_deepseek_v3.sh"
    launches = oracle.run(path, {})
    assert launches, "bash made no launch"
    run = Run(*launches[0])
    launch = load_launch(str(path), path.read_text())
    assert launch.script == run.script == "pretrain_gpt.py"
    for dest, value in run.args.items():
        got = launch.args.get(dest)
        assert got is not None and got.value in (UNKNOWN, value), (dest, value, got)
    assert set(launch.args) == set(run.args)
    known = {d for d, a in launch.args.items() if a.value is not UNKNOWN}
    assert {"overlap_grad_reduce", "overlap_param_gather", "expert_model_parallel_size", "use_megatron_fsdp"} <= known


def test_an_unknown_command_before_the_shell_is_passed_over_and_said(run_cli, tmp_path):
    """``${SRUN_CMD} --nodes=$N bash -c "..."`` where a loop left $SRUN_CMD unknown (Bridge's step37 example):
    the string is still read, and LM002 says what stands before the shell."""
    import json

    path = tmp_path / "launch.sh"
    path.write_text('SRUN_CMD="srun --mpi=pmix"\nfor m in ${MOUNTS}; do\n  SRUN_CMD="${SRUN_CMD} --container-mounts=${m}"\n'
                    f'done\n${{SRUN_CMD}} --nodes=${{NODES}} bash -c "torchrun --nproc_per_node 8 pretrain_gpt.py {M} '
                    '--tensor-model-parallel-size 2"\n')
    code, out, err = run_cli("check", str(path), "--format", "json", "--show-info")
    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.tensor_model_parallel_size"]["value"] == 2
    lm002 = next(f for f in r["findings"] if f["code"] == "LM002")
    assert "line 5: ${SRUN_CMD} before the shell is not known statically; read as a command that runs it" in lm002["message"]


def test_a_heredoc_line_bash_would_read_on_is_unknown_not_an_error(tmp_path):
    """A here-document line whose ``$(`` / ``${`` closes on a later line (the reader takes a body line by line):
    that line is not known, the script is still read."""
    path = tmp_path / "launch.sh"
    path.write_text(f"cat <<EOF > notes.txt\nA=$(date \\\n +%s)\nEOF\ntorchrun --nproc_per_node 8 pretrain_gpt.py {M}\n")
    launch = load_launch(str(path), path.read_text())
    assert launch.world_size == 8 and launch.args["num_layers"].value == 4
