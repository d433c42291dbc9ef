"""Training scripts as people write them, through the CLI: each idiom read to the value Python would compute,
or left unknown exactly where the reader cannot know, naming FILE:LINE and why (tests/pyidioms.py holds the
same idioms to the real Bridge, test_python_idioms_differential.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import CORPUS

ROOT = Path(__file__).resolve().parents[3]
# Upstream Python runs, copied unchanged under OWNER+NAME/<path in the repository>, listed in SOURCES.json
# (beside the upstream trees that folder-run tests walk whole).
VENDORED = ROOT / "tests" / "data" / "python"
UPSTREAM = VENDORED / "NVIDIA-NeMo+Megatron-Bridge"
DUMP = CORPUS / "llama32_1b_pretrain_1gpu_h100_bf16_config.yaml"
HEAD = """\
import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from megatron.bridge.recipes.llama import llama32_1b_pretrain_config
from megatron.bridge.training.config import ConfigContainer
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain
from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides
"""


def check(run_cli, path, *args) -> tuple:
    """(exit code, the one JSON result) of ``overlap check PATH ARGS``."""
    code, out, err = run_cli("check", str(path), "--world-size", "8", "--format", "json", "--show-effective", *args)
    results = json.loads(out)["results"] if out.strip() else []
    return code, (results[-1] if results else {"stderr": err})


def script(tmp_path, body: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return path


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def value(result, key):
    e = result["effective"][key]
    return e["value"], e["source"], e["reason"]


def test_main_guard_runs_as_main(tmp_path, run_cli):
    path = script(tmp_path, """
        if __name__ == "__main__":
            cfg = llama32_1b_pretrain_config()
            cfg.model.tensor_model_parallel_size = 2
            pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None
    assert value(r, "model.tensor_model_parallel_size")[:2] == (2, "user")
    assert f"train.py:{line_of(path, 'tensor_model_parallel_size = 2')}" in value(r, "model.tensor_model_parallel_size")[2]


def test_main_function_called_from_the_guard_is_the_script_run_and_still_named(tmp_path, run_cli):
    path = script(tmp_path, """
        def main():
            cfg = llama32_1b_pretrain_config()
            cfg.ddp.overlap_grad_reduce = False
            pretrain(config=cfg, forward_step_func=forward_step)

        if __name__ == "__main__":
            main()
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None and value(r, "ddp.overlap_grad_reduce")[:2] == (False, "user")
    code, named = check(run_cli, f"{path}::main")
    assert named["error"] is None and value(named, "ddp.overlap_grad_reduce")[:2] == (False, "user")


def test_argparse_defaults_are_known_and_a_required_argument_is_unknown_with_its_line(tmp_path, run_cli):
    path = script(tmp_path, """
        def get_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--tp", type=int, default="4")
            parser.add_argument("--no-overlap", dest="overlap", action="store_false")
            parser.add_argument("--pp", type=int, required=True)
            return parser.parse_args()

        def main():
            args = get_args()
            cfg = llama32_1b_pretrain_config()
            cfg.model.tensor_model_parallel_size = args.tp
            cfg.ddp.overlap_grad_reduce = args.overlap
            cfg.model.pipeline_model_parallel_size = args.pp
            pretrain(cfg, forward_step)

        if __name__ == "__main__":
            main()
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None
    assert value(r, "model.tensor_model_parallel_size")[0] == 4  # a string default goes through type=int
    assert value(r, "ddp.overlap_grad_reduce")[0] is True
    pp = value(r, "model.pipeline_model_parallel_size")
    assert pp[1] == "unknown" and f"--pp (required, {path}:{line_of(path, '--pp')})" in pp[2]


def test_argparse_refuses_a_word_it_does_not_know(tmp_path, run_cli):
    path = script(tmp_path, """
        parser = argparse.ArgumentParser()
        parser.add_argument("--tp", type=int, choices=[1, 2, 4], default=1)
        args = parser.parse_args(["--tp", "8"])
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = args.tp
        """)
    code, r = check(run_cli, path)
    assert code == 2
    assert r["error"]["line"] == line_of(path, "parse_args(") and "invalid choice: 8" in r["error"]["message"]


def test_environment_variables_come_from_set_and_env_from_shell(tmp_path, run_cli, monkeypatch):
    path = script(tmp_path, """
        TP = int(os.environ["OVL_TP"])
        PP = int(os.getenv("OVL_PP", "2"))
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = TP
        cfg.model.pipeline_model_parallel_size = PP
        if "OVL_NO_OVERLAP" in os.environ:
            cfg.ddp.overlap_grad_reduce = False
        """)
    code, r = check(run_cli, path)
    tp = value(r, "model.tensor_model_parallel_size")
    assert tp[1] == "unknown" and f"the environment variable OVL_TP read at {path}:{line_of(path, 'OVL_TP')}" in tp[2]
    assert value(r, "model.pipeline_model_parallel_size")[0] == 2  # the default, nobody sets it
    assert value(r, "ddp.overlap_grad_reduce")[1] == "unknown"
    code, r = check(run_cli, path, "--set", "OVL_TP=4", "--set", "OVL_PP=1", "--set", "OVL_NO_OVERLAP=")
    assert [value(r, k)[0] for k in ("model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                                     "ddp.overlap_grad_reduce")] == [4, 1, False]
    monkeypatch.delenv("OVL_TP", raising=False)
    code, r = check(run_cli, path, "--env-from-shell")
    assert code == 2 and "OVL_TP is not set" in r["error"]["message"] and r["error"]["line"] == line_of(path, "OVL_TP")


def test_helper_functions_and_classes_of_the_module(tmp_path, run_cli):
    path = script(tmp_path, """
        @dataclass
        class Parallelism:
            tp: int = 1
            sp: bool = False

            def apply(self, cfg):
                cfg.model.tensor_model_parallel_size = self.tp
                cfg.model.sequence_parallel = self.sp

        class Trainer:
            def __init__(self, parallelism):
                self.cfg = llama32_1b_pretrain_config()
                self.parallelism = parallelism

            def configure(self, **ddp):
                self.parallelism.apply(self.cfg)
                for key, value in ddp.items():
                    setattr(self.cfg.ddp, key, value)
                return self.cfg

        if __name__ == "__main__":
            trainer = Trainer(Parallelism(2, sp=True))
            pretrain(trainer.configure(overlap_param_gather=False), forward_step)
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None
    assert [value(r, k)[0] for k in ("model.tensor_model_parallel_size", "model.sequence_parallel",
                                     "ddp.overlap_param_gather")] == [2, True, False]
    assert f"train.py:{line_of(path, 'self.tp')}" in value(r, "model.tensor_model_parallel_size")[2]


def test_a_loop_over_names_is_run_and_one_over_what_is_not_known_is_unknown(tmp_path, run_cli):
    path = script(tmp_path, """
        def small():
            c = llama32_1b_pretrain_config()
            c.model.tensor_model_parallel_size = 1
            return c

        def large():
            c = llama32_1b_pretrain_config()
            c.model.tensor_model_parallel_size = 4
            return c

        BUILDERS = {"small": small, "large": large}
        for name, build in BUILDERS.items():
            if name == "large":
                cfg = build()
                break
        for flag in os.environ.get("OVL_FLAGS", "").split(","):
            cfg.ddp.overlap_grad_reduce = flag == "grad"
        pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    assert value(r, "model.tensor_model_parallel_size")[0] == 4
    assert value(r, "ddp.overlap_grad_reduce")[:2] == (False, "user")  # "".split(",") is [""]
    code, r = check(run_cli, path, "--set", "OVL_FLAGS=param,grad")
    assert value(r, "ddp.overlap_grad_reduce")[0] is True
    path.write_text(path.read_text().replace('os.environ.get("OVL_FLAGS", "").split(",")', 'os.environ["OVL_FLAGS"].split(",")'))
    code, r = check(run_cli, path)
    ogr = value(r, "ddp.overlap_grad_reduce")
    assert ogr[1] == "unknown" and f"a loop over a sequence overlap-cli does not know at {path}:{line_of(path, 'for flag')}" in ogr[2]


def test_a_mapping_of_lambdas_chosen_by_an_argument(tmp_path, run_cli):
    path = script(tmp_path, f"""
        RECIPES = {{
            "yaml": lambda: ConfigContainer.from_yaml({str(DUMP)!r}),
            "recipe": lambda: llama32_1b_pretrain_config(),
        }}
        TWEAKS = {{"sp": lambda c: setattr(c.model, "sequence_parallel", True)}}

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--recipe", choices=sorted(RECIPES), default="recipe")
            args = parser.parse_args()
            cfg = RECIPES[args.recipe]()
            cfg.model.tensor_model_parallel_size = 2
            TWEAKS["sp"](cfg)
            pretrain(cfg, forward_step)

        if __name__ == "__main__":
            main()
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None and value(r, "model.sequence_parallel")[:2] == (True, "user")
    assert "recipe llama32_1b_pretrain" in " ".join(r.get("notes", [])) or r["target"]["gpu"] == "h100"
    path.write_text(path.read_text().replace('default="recipe"', 'default=os.environ["OVL_RECIPE"]'))
    code, r = check(run_cli, path)
    ddp = value(r, "ddp.overlap_grad_reduce")
    assert ddp[1] == "unknown" and f"RECIPES[args.recipe]() at {path}:{line_of(path, 'RECIPES[args.recipe]()')} calls one of yaml, recipe" in ddp[2]
    assert value(r, "model.tensor_model_parallel_size")[0] == 2  # written after the choice: known


def test_process_config_with_overrides_in_the_script(tmp_path, run_cli):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "over.yaml").write_text("model:\n  tensor_model_parallel_size: 2\nddp:\n  overlap_grad_reduce: false\n")
    path = script(tmp_path, """
        CONF = Path(__file__).parent / "conf" / "over.yaml"
        parser = argparse.ArgumentParser()
        parser.add_argument("--config-file", default=str(CONF))
        args, extras = parser.parse_known_args()
        cfg = llama32_1b_pretrain_config()
        cfg = process_config_with_overrides(cfg, config_filepath=args.config_file,
                                            cli_overrides=extras + ["model.sequence_parallel=true"])
        pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None
    assert [value(r, k)[0] for k in ("model.tensor_model_parallel_size", "ddp.overlap_grad_reduce",
                                     "model.sequence_parallel")] == [2, False, True]
    assert f"train.py:{line_of(path, 'process_config_with_overrides(cfg')}" in value(r, "model.sequence_parallel")[2]
    path.write_text(path.read_text().replace("model.sequence_parallel=true", "model.no_such_field=1"))
    code, r = check(run_cli, path)
    assert code == 2 and "no_such_field" in r["error"]["message"] and r["error"]["line"] == line_of(path, "process_config_with_overrides(cfg")


def test_omegaconf_from_cli_without_words_is_empty(tmp_path, run_cli):
    path = script(tmp_path, """
        from omegaconf import OmegaConf

        cli = OmegaConf.from_cli()
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = cli.get("tp", 2)
        pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    assert value(r, "model.tensor_model_parallel_size")[:2] == (2, "user")


def test_hydra_main_reads_its_config_folder(tmp_path, run_cli):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "train.yaml").write_text("parallel:\n  tp: 4\n")
    path = script(tmp_path, """
        import hydra

        @hydra.main(version_base=None, config_path="conf", config_name="train")
        def main(conf):
            cfg = llama32_1b_pretrain_config()
            cfg.model.tensor_model_parallel_size = conf.parallel.tp
            pretrain(cfg, forward_step)

        if __name__ == "__main__":
            main()
        """)
    code, r = check(run_cli, path)
    assert value(r, "model.tensor_model_parallel_size")[:2] == (4, "user")
    (tmp_path / "conf" / "train.yaml").write_text("defaults:\n  - model: big\n  - _self_\nparallel:\n  tp: 4\n")
    code, r = check(run_cli, path)
    tp = value(r, "model.tensor_model_parallel_size")
    assert tp[1] == "unknown" and f"@hydra.main at {path}:{line_of(path, '@hydra.main')}" in tp[2] and "defaults list" in tp[2]


def test_bridges_own_tutorial_with_its_yaml(run_cli):
    """Megatron-Bridge's tutorials/recipes/llama/02_pretrain_with_yaml.py (vendored with its conf/): argparse's
    ``--config-file`` default (``Path(__file__).parent.resolve() / "conf" / ...``) merged by
    process_config_with_overrides over llama32_1b_pretrain_config(), inside main() under the guard."""
    path = UPSTREAM / "tutorials" / "recipes" / "llama" / "02_pretrain_with_yaml.py"
    sources = json.loads((VENDORED / "SOURCES.json").read_text())
    listed = {VENDORED / s["repo"].replace("/", "+") / s["path"] for s in sources}
    assert listed == {p for p in UPSTREAM.rglob("*") if p.is_file()}
    code, r = check(run_cli, path)
    assert r["error"] is None
    assert not [k for k, v in r["effective"].items() if v["source"] == "unknown"]
    tp = value(r, "model.tensor_model_parallel_size")
    assert tp[:2] == (1, "user") and f"02_pretrain_with_yaml.py:{line_of(path, 'config = process_config_with_overrides(')}" in tp[2]


@pytest.fixture(autouse=True)
def _corpus():
    if not DUMP.is_file():
        pytest.skip(f"the recipe dumps are not at {CORPUS} (set OVERLAP_CORPUS)")


def test_a_launch_passes_the_script_its_words_and_exported_environment(tmp_path):
    """forms.python_run.load_launched: the words after the script on a launch line are its ``sys.argv[1:]``
    (argparse reads them; a word not known statically may set any option: those are unknown), what the
    launch exports is its environment."""
    from overlap_cli.config.shell import read_launch_script
    from overlap_cli.forms import python_run
    from overlap_cli.launch_profile.profile import build_target

    train = script(tmp_path, """
        parser = argparse.ArgumentParser()
        parser.add_argument("--tp", type=int, default=1)
        parser.add_argument("--no-overlap", dest="overlap", action="store_false")
        args = parser.parse_args()
        cfg = llama32_1b_pretrain_config()
        cfg.model.tensor_model_parallel_size = args.tp
        cfg.ddp.overlap_grad_reduce = args.overlap
        cfg.model.sequence_parallel = os.environ["OVL_SP"] == "1"
        pretrain(cfg, forward_step)
        """)
    target = build_target({})

    def launched(line: str):
        launch = tmp_path / "launch.sh"
        launch.write_text(f"#!/bin/bash\nexport OVL_SP=1\nTP=4\n{line}\n")
        found = read_launch_script(str(launch), launch.read_text(), env={})
        return python_run.load_launched(str(train), found, target).config

    cfg = launched("torchrun --nproc_per_node 8 train.py --tp $TP --no-overlap")
    assert cfg.data["model"]["tensor_model_parallel_size"] == 4
    assert cfg.data["ddp"]["overlap_grad_reduce"] is False and cfg.data["model"]["sequence_parallel"] is True
    cfg = launched("torchrun --nproc_per_node 8 train.py --tp $TP $EXTRA")
    assert ("model", "tensor_model_parallel_size") in cfg.unknown and cfg.data["model"]["sequence_parallel"] is True
    assert "not known statically may set --tp" in cfg.unknown[("model", "tensor_model_parallel_size")]
    from overlap_cli.problems import InputError

    with pytest.raises(InputError, match="unrecognized arguments: --pp 2") as refused:
        launched("torchrun train.py --pp 2")
    assert refused.value.problem.line == line_of(train, "parse_args()")


def test_fix_adds_its_line_after_the_recipe_call_inside_main(tmp_path, run_cli):
    path = script(tmp_path, """
        from megatron.bridge.recipes.llama import llama3_70b_pretrain_config

        def main():
            cfg = llama3_70b_pretrain_config()
            cfg.model.tensor_model_parallel_size = 4
            pretrain(cfg, forward_step)

        if __name__ == "__main__":
            main()
        """)
    code, out, err = run_cli("fix", str(path), "--world-size", "64", "--diff")
    added = [line for line in out.splitlines() if line.startswith("+ ")]
    assert added and all(line.startswith("+    cfg.") for line in added), out
    assert out.index("cfg = llama3_70b_pretrain_config()") < out.index(added[0])


def test_loops_inside_loops_are_bounded(tmp_path, run_cli):
    path = script(tmp_path, """
        cfg = llama32_1b_pretrain_config()
        for a in range(200):
            for b in range(200):
                cfg.train.train_iters = a * b
        cfg.ddp.overlap_grad_reduce = False
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None and value(r, "ddp.overlap_grad_reduce")[0] is False
    reasons = " ".join(r.get("notes", []))
    assert code in (0, 1) and "train.train_iters" in reasons


def test_a_loop_over_recipe_names_looked_up_in_bridges_module(tmp_path, run_cli):
    path = script(tmp_path, """
        from megatron.bridge.recipes import llama

        WANT = "llama3_8b"
        for name in ["llama32_1b", "llama3_8b", "llama3_70b"]:
            if name == WANT:
                cfg = getattr(llama, f"{name}_pretrain_config")()
                break
        cfg.ddp.overlap_grad_reduce = False
        pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None and value(r, "ddp.overlap_grad_reduce")[:2] == (False, "user")
    assert any("llama3_8b_pretrain" in v["reason"] for v in r["effective"].values()), r["effective"]


def test_main_that_builds_the_config_without_launching_it(tmp_path, run_cli):
    path = script(tmp_path, """
        def main():
            cfg = llama32_1b_pretrain_config()
            cfg.ddp.overlap_grad_reduce = False
            cfg.to_yaml("run_config.yaml")

        if __name__ == "__main__":
            main()
        """)
    code, r = check(run_cli, path)
    assert r["error"] is None and value(r, "ddp.overlap_grad_reduce")[:2] == (False, "user")


def test_the_scripts_own_export_is_what_the_launch_gets(tmp_path, run_cli):
    """os.environ[NAME] = ... in the script is in the process before Bridge installs env_vars with
    os.environ.setdefault: it wins over env_vars."""
    path = script(tmp_path, """
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        cfg = llama32_1b_pretrain_config()
        cfg.env_vars = {"CUDA_DEVICE_MAX_CONNECTIONS": 8}
        pretrain(cfg, forward_step)
        """)
    code, r = check(run_cli, path)
    env = value(r, "env.CUDA_DEVICE_MAX_CONNECTIONS")
    assert env[0] in ("1", 1) and env[1] != "unknown"
