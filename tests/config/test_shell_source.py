"""``source FILE`` against bash: a file at a path known statically is read in the script's shell, so what it
sets is what bash has at the launch, and exactly the values that depend on the caller are unknown.

bash runs each layout from the script's own folder (the reader reads a relative path from there and says
so), with the launchers shimmed (bash_oracle.py) and ``dirname`` / ``readlink`` / ``realpath`` the real
programs, since the paths are built with them. Not restricted bash: rbash refuses a ``/`` in the argument
of ``source``; only the scripts written here are run."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bash_oracle import BASH, Oracle, parse_log
from test_shell_bash import Run, compare

from overlap_cli.config.argv import UNKNOWN
from overlap_cli.frameworks.megatron_lm.args import load_launch

pytestmark = pytest.mark.skipif(BASH is None or shutil.which("dirname") is None, reason="no bash / coreutils")

MODEL = ("--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
         "--max-position-embeddings 128 --micro-batch-size 1")


class SourcingOracle(Oracle):
    def __init__(self, root):
        super().__init__(root)
        for tool in ("dirname", "readlink", "realpath"):
            found = shutil.which(tool)
            if found:
                (self.bin / tool).symlink_to(found)
        self.prelude.write_text("command_not_found_handle() { return 0; }\n")

    def run(self, script, env: dict, args: tuple = (), dirs: tuple = ()) -> list:
        self.runs += 1
        log = self.root / f"log{self.runs}"
        log.write_bytes(b"")
        base = {"PATH": str(self.bin), "HOME": str(self.work), "BASH_ENV": str(self.prelude), "SHIM_LOG": str(log),
                "SHIM_IGNORE": " ".join(env), "LC_ALL": "C", **env}
        subprocess.run([BASH, str(script), *args], cwd=script.parent, env=base, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, check=False)
        return parse_log(log.read_bytes())


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return SourcingOracle(tmp_path_factory.mktemp("bash-source"))


LAYOUTS = {
    # Megatron-LM's post_training/modelopt form: the script's folder by readlink -f "$0"
    "script-dir": {
        "train.sh": 'SCRIPT_DIR="$(dirname "$(readlink -f "$0")")"\nsource "${SCRIPT_DIR}/conf/args.sh"\n'
                    f'torchrun --nproc_per_node $GPUS pretrain_gpt.py {MODEL} --tensor-model-parallel-size $TP $EXTRA\n',
        "conf/args.sh": 'GPUS=4\nTP=${TP:-2}\nif [ -n "$FAST" ]; then\n  EXTRA="--sequence-parallel"\nfi\n'
                        "export CUDA_DEVICE_MAX_CONNECTIONS=1\nreturn 0\nGPUS=99\n",
        "env": {"TP": ([None, "4"], True), "FAST": ([None, "1"], False)},
    },
    # ${BASH_SOURCE[0]} inside a sourced file is that file: a nested fragment beside it
    "bash-source": {
        "run.sh": '. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh" 8\n'
                  f'torchrun --nproc_per_node "$N" pretrain_gpt.py {MODEL} $ARGS --pipeline-model-parallel-size "$1"\n',
        "lib/common.sh": 'N=$1\nsource "$(dirname "${BASH_SOURCE[0]}")/parallel.sh"\n',
        "lib/parallel.sh": 'ARGS="--tensor-model-parallel-size 2"\nARGS+=" --use-distributed-optimizer"\n',
        "env": {},
        "args": ("2",),
    },
    # a plain relative path, from the folder the script runs in
    "relative": {
        "go.sh": "source conf/sizes.sh\nexport NCCL_X=$((TP * 2))\n"
                 f"torchrun --nproc_per_node $((TP * PP)) pretrain_gpt.py {MODEL} --tensor-model-parallel-size $TP "
                 "--pipeline-model-parallel-size $PP\n",
        "conf/sizes.sh": "TP=2\nPP=${PP:-2}\n",
        "env": {"PP": ([None, "1"], True)},
    },
}


def _write(tmp_path, layout: dict):
    main = None
    for rel, text in layout.items():
        if rel in ("env", "args"):
            continue
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        main = main or p
    return main


def _runs(oracle, path, domains: dict, args: tuple, only_unset_defaults: bool) -> list:
    import itertools

    names = list(domains)
    runs = []
    for combo in itertools.product(*(domains[n][0] for n in names)):
        if only_unset_defaults and any(v is not None and domains[n][1] for n, v in zip(names, combo)):
            continue
        env = {n: v for n, v in zip(names, combo) if v is not None}
        launches = oracle.run(path, env, args)
        assert launches, f"bash made no launch with {env}"
        runs.append(Run(*launches[0], hidden=tuple(names)))
    return runs


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_a_sourced_file_reads_as_bash_runs_it(oracle, tmp_path, name):
    layout = LAYOUTS[name]
    path = _write(tmp_path, layout)
    text = path.read_text()
    args = layout.get("args", ())
    if args:  # the script's own arguments are not known statically: bash's run with them stands for one choice
        launch = load_launch(str(path), text)
        run = _runs(oracle, path, {}, args, False)[0]
        for dest, value in run.args.items():
            got = launch.args.get(dest)
            assert got is not None and got.value in (UNKNOWN, value), (dest, value, got)
        assert set(launch.args) == set(run.args)
        known = {d for d, a in launch.args.items() if a.value is not UNKNOWN}
        assert {"tensor_model_parallel_size", "use_distributed_optimizer"} <= known
        assert launch.args["pipeline_model_parallel_size"].value is UNKNOWN  # "$1": the script's own $1
        assert launch.world_size == run.world == 8  # common.sh's $1 is source's argument, not the script's
        return
    compare(load_launch(str(path), text, take_defaults=False), _runs(oracle, path, layout["env"], args, False), text)
    compare(load_launch(str(path), text), _runs(oracle, path, layout["env"], args, True), text)


def test_what_a_sourced_file_sets_is_placed_on_the_source_line(run_cli, tmp_path):
    path = _write(tmp_path, LAYOUTS["script-dir"])
    code, out, err = run_cli("check", str(path), "--format", "json")
    import json

    r = json.loads(out)["results"][0]
    assert r["error"] is None, r["error"]
    assert "line 2: read conf/args.sh, which the script sources; what it sets is placed on that line" in r["notes"]
    assert r["target"]["world_size"] == 4 and "world size 4 from the launch's sizes (line 2)" in r["notes"]
    assert r["effective"]["env.CUDA_DEVICE_MAX_CONNECTIONS"] == {"value": "1", "source": "user", "reason": "exported on line 2"}
    tp = r["effective"]["model.tensor_model_parallel_size"]
    assert tp["value"] == 2 and tp["source"] == "user"
    # a relative path is read from the script's folder, and the note says bash looks in the working directory
    path = _write(tmp_path / "rel", LAYOUTS["relative"])
    code, out, err = run_cli("check", str(path), "--format", "json")
    notes = json.loads(out)["results"][0]["notes"]
    assert any(n.startswith("line 1: read conf/sizes.sh, which the script sources; what it sets is placed on that line "
                            "(bash looks for it in the folder the script is run from") for n in notes), notes


def test_a_file_not_read_leaves_what_it_may_set_unknown(tmp_path):
    """A path not known statically, a file that is not there, one that defines functions, one that runs the
    launch itself: not read, so every variable may be what it sets."""
    for i, (fragment, source) in enumerate((
        (None, 'source "$CONF_DIR/args.sh"'),
        (None, "source missing.sh"),
        ("setup() { TP=4; }\nTP=2\n", "source args.sh\nsetup"),
        (f"TP=2\ntorchrun --nproc_per_node 2 pretrain_gpt.py {MODEL}\n", "source args.sh"),
    )):
        d = tmp_path / str(i)
        d.mkdir()
        if fragment is not None:
            (d / "args.sh").write_text(fragment)
        script = d / "train.sh"
        script.write_text(f"TP=1\n{source}\ntorchrun --nproc_per_node 8 pretrain_gpt.py {MODEL} --tensor-model-parallel-size $TP\n")
        launch = load_launch(str(script), script.read_text())
        assert launch.args["tensor_model_parallel_size"].value is UNKNOWN, source
        assert not launch.sourced
