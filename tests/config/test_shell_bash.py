"""The launch-script reader against bash itself (bash_oracle.py: the script runs with every launcher shimmed,
so bash says which words reach the launch and with what environment).

For generated scripts (shell_gen.py) bash runs once per choice of the environment variables the flags
depend on. Read without defaults (``${VAR:-d}`` not known), the reader must know exactly the flags all those
runs agree on, with their values, and call exactly the others unknown; read as ``overlap check`` reads it
(defaults taken), the same against the runs where no such default is overridden. The world size, the
training script and the exported environment are held to the same rule. For the vendored upstream scripts
(tests/data/upstream/NVIDIA+Megatron-LM), every flag the reader knows must be what bash passes with the
caller's environment empty, and no flag bash passes may be missing.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from bash_oracle import BASH, Oracle, split_launch
from conftest import ROOT
from shell_gen import generate

from overlap_cli.problems import InputError
from overlap_cli.config.argv import UNKNOWN, Token
from overlap_cli.frameworks.megatron_lm.args import load_launch, parse_tokens

pytestmark = pytest.mark.skipif(BASH is None, reason="no bash on this machine")

UPSTREAM = ROOT / "tests" / "data" / "upstream"
ABSENT = "<absent>"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return Oracle(tmp_path_factory.mktemp("bash"))


class Run:
    """What bash launched: the training script, its argv as argparse reads it, world size, environment."""

    def __init__(self, argv: list, env: dict, hidden: tuple = ()):
        self.script, words, self.world = split_launch(argv)
        if self.world is None and argv[0] == "srun" and (env.get("WORLD_SIZE") or "").isdigit():  # parse_args reads it
            self.world = int(env["WORLD_SIZE"])
        self.words = words
        tokens = [Token(w, None, None, "bash") for w in words]
        self.args = {d: a.value for d, a in parse_tokens("bash", tokens, [], script=self.script, strict=False).items()}
        self.env = {k: v for k, v in env.items() if k not in hidden}


def bash_runs(oracle, path: Path, domains: dict, only_unset_defaults: bool = False) -> list:
    names = list(domains)
    runs = []
    for combo in itertools.product(*(domains[n][0] for n in names)):
        if only_unset_defaults and any(v is not None and domains[n][1] for n, v in zip(names, combo)):
            continue
        env = {n: v for n, v in zip(names, combo) if v is not None}
        launches = oracle.run(path, env)
        assert launches, f"bash made no launch with {env}:\n{path.read_text()}"
        runs.append(Run(*launches[0], hidden=tuple(names)))
    return runs


def agree(values: list):
    keys = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return values[0] if len(keys) == 1 else UNKNOWN


def compare(launch, runs: list, text: str) -> None:
    """The reader knows exactly what every run agrees on; what they do not agree on is unknown."""
    where = f"\n--- script ---\n{text}\n--- bash argv ---\n" + "\n".join(" ".join(r.words) for r in runs)
    assert launch.script == agree([r.script for r in runs]), where
    for dest in sorted(set(launch.args) | {d for r in runs for d in r.args}):
        expected = agree([r.args.get(dest, ABSENT) for r in runs])
        got = launch.args.get(dest)
        if expected is UNKNOWN:
            assert got is not None and got.value is UNKNOWN, f"{dest}: bash runs differ, the reader says {got}{where}"
        elif expected == ABSENT:
            assert got is None, f"{dest}: never passed by bash, the reader has {got}{where}"
        else:
            assert got is not None and got.value is not UNKNOWN and got.value == expected, \
                f"{dest}: bash passes {expected!r} on every run, the reader has {got}{where}"
    world = agree([r.world for r in runs])
    assert launch.world_size == (None if world is UNKNOWN else world), where
    exported = {k: v for k, v in launch.env.items() if v.how in ("export", "prefix")}
    for name in sorted(set(exported) | {k for r in runs for k in r.env}):
        expected = agree([r.env.get(name, ABSENT) for r in runs])
        got = exported.get(name)
        if expected is UNKNOWN:
            assert got is not None and got.value is UNKNOWN, f"env {name}{where}"
        elif expected == ABSENT:
            assert got is None, f"env {name}: not in bash's launch environment, the reader has {got}{where}"
        else:
            assert got is not None and got.value == expected, f"env {name}: bash has {expected!r}, reader {got}{where}"


SEEDS = range(160)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_script_reads_as_bash_runs_it(oracle, tmp_path, seed):
    script = generate(seed)
    text = "\n".join(script.lines) + "\n"
    path = tmp_path / "train.sh"
    path.write_text(text)
    # every environment variable unknown (no default taken): against every choice of them
    compare(load_launch(str(path), text, take_defaults=False), bash_runs(oracle, path, script.env_domains), text)
    # as `overlap check` reads it: a ${VAR:-default} is its default, so against the runs that leave those unset
    compare(load_launch(str(path), text), bash_runs(oracle, path, script.env_domains, only_unset_defaults=True), text)


def test_the_generator_exercises_what_it_should():
    """The seeds above cover every piece and launcher form, and forks on the environment."""
    texts = ["\n".join(generate(seed).lines) for seed in SEEDS]
    joined = "\n".join(texts)
    for needle in ("+=(", "case ", "elif ", "[[ ", "(( ", "${MEG}/pretrain_gpt.py", '"$MEG"/pretrain_gpt.py',
                   ":-\"", "srun -N", "$LAUNCHER", "uv run", "nsys profile", "cd $WORK_DIR &&", "export ",
                   " \\\n", "for f in", "add_ARGS", "let ", "&& ARGS"):
        assert needle in joined, needle
    assert sum(1 for seed in SEEDS if generate(seed).env_domains) > len(SEEDS) // 2


# Vendored for the folder-walk corpus (tests/check/test_upstream_trees.py), not launches bash runs here: a
# template bash cannot parse, fragments other scripts source, a preprocessing script, inference launches,
# and launches inside ``srun ... bash -c`` (srun is not shimmed) or behind a sourced file.
NOT_ORACLE = frozenset((
    "examples/academic_paper_scripts/sc21/SRUN.sh", "examples/academic_paper_scripts/sc21/CONFIG.sh",
    "examples/academic_paper_scripts/sc21/run_figure_11.sh", "examples/academic_paper_scripts/msdp/prompt_knwl_gen.sh",
    "examples/academic_paper_scripts/detxoify_lm/annotations/preprocess.sh", "examples/multimodal/nvlm/sft_34b_internvit.sh",
    "examples/post_training/modelopt/train.sh", "examples/post_training/modelopt/conf/arguments.sh",
    "examples/mamba/run_text_gen_server_8b.sh", "examples/inference/run_offline_inference.sh",
    "examples/megatron_fsdp/sbatch_checkpoint_convert.sh",
    "examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh",  # sbatch's here-document: test_shell_forms runs it
))


def _upstream_scripts():
    sources = json.loads((UPSTREAM / "SOURCES.json").read_text())
    return [s for s in sources if s["repo"] == "NVIDIA/Megatron-LM" and s["path"].endswith(".sh")
            and s["path"] not in NOT_ORACLE]


# What a script needs to reach its launch in bash: its arguments (paths it does not default), the
# directories it insists on, the variables it refuses to run without. A script that defaults its arguments (${1:-...}) runs without them, as the
# reader (which takes the defaults) reads it.
UPSTREAM_RUNS = {
    "examples/mamba/train.sh": {"args": ("/data/corpus", "/data/tokenizer.model")},
    "examples/mixtral/train_mixtral_8x7b_distributed.sh": {"args": ("/ckpt", "/data/tokenizer.model", "/data/corpus")},
    "examples/gptoss/02_train.sh": {"dirs": ("NO_VALUE_PROVIDED",)},
    "examples/gpt3/train_gpt3_175b_distributed.sh": {"args": ("/ckpt", "/tb", "/vocab.json", "/merges.txt", "/data")},
    "examples/mimo/scripts/run_vlm_train.sh": {"args": ("/data/corpus",)},
    "examples/multimodal/pretrain_mistral_clip.sh": {"env": {"WORKSPACE": "/ws", "LOAD_NAME": "mistral"}},
    "examples/bert/train_bert_340m_distributed.sh": {"args": ("/ckpt", "/tb", "/vocab.txt", "/data")},
}


@pytest.mark.parametrize("source", _upstream_scripts(), ids=lambda s: s["path"])
def test_upstream_script_flags_are_what_bash_passes(oracle, source):
    path = UPSTREAM / "NVIDIA+Megatron-LM" / source["path"]
    text = path.read_text()
    how = UPSTREAM_RUNS.get(source["path"], {})
    launches = oracle.run(path, how.get("env", {}), how.get("args", ()), how.get("dirs", ()))
    assert launches, "bash made no launch"
    try:
        run = Run(*launches[0], hidden=tuple(how.get("env", {})))
    except InputError as exc:  # what bash passes makes argparse exit: the reader says the same
        with pytest.raises(InputError) as ours:
            load_launch(str(path), text)
        assert ours.value.problem.describe() == exc.problem.describe()
        return
    launch = load_launch(str(path), text)
    assert launch.script == run.script
    for dest, value in run.args.items():
        got = launch.args.get(dest)
        assert got is not None, f"{dest}: bash passes {value!r}, the reader does not see it"
        assert got.value is UNKNOWN or got.value == value, f"{dest}: bash passes {value!r}, the reader has {got.value!r}"
    for dest, got in launch.args.items():
        if got.value is not UNKNOWN:
            assert dest in run.args, f"{dest}: the reader has {got.value!r}, bash does not pass it"
    if launch.world_size is not None:
        assert launch.world_size == run.world
    exported = {k: v for k, v in launch.env.items() if v.how in ("export", "prefix")}
    for name, value in run.env.items():
        assert name in exported and exported[name].value in (UNKNOWN, value), f"env {name}: bash has {value!r}"
    for name, var in exported.items():
        if var.value is not UNKNOWN:
            assert run.env.get(name) == var.value, f"env {name}: the reader has {var.value!r}, bash {run.env.get(name)!r}"
