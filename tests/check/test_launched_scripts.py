"""A launch of a Megatron-Bridge training script of its own (``torchrun train.py --tp 2``): the script is read as the
launch starts it (forms/python_run.load_from_launch) -- the launch's words are its sys.argv[1:], what the launch
exports its environment, the launch's sizes its world size --; its findings name the script's lines, and
``overlap fix`` leaves the launch alone and says how to fix the script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import ROOT

STRAGGLER = (ROOT / "tests/data/python/NVIDIA-NeMo+Megatron-Bridge/examples/training_features/resiliency/"
             "straggler_detection")  # upstream 067f987df03b8355b03192d88d70f1709fedf51a (tests/data/python/SOURCES.json)

TRAIN = '''\
import argparse
import os

from megatron.bridge.recipes.llama import llama3_8b_pretrain_config
from megatron.bridge.training.pretrain import pretrain


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tp", type=int, default=1)
    args = parser.parse_args()
    cfg = llama3_8b_pretrain_config()
    cfg.model.tensor_model_parallel_size = args.tp
    cfg.model.context_parallel_size = 1
    cfg.model.sequence_parallel = False
    cfg.model.tp_comm_overlap = True
    cfg.ddp.overlap_grad_reduce = os.environ.get("GRAD_OVERLAP", "1") == "1"
    pretrain(cfg, None)


if __name__ == "__main__":
    main()
'''
LAUNCH = "#!/bin/bash\nexport GRAD_OVERLAP=0\ntorchrun --nproc_per_node 8 --nnodes 2 train.py --tp 4\n"


def _layout(tmp_path: Path, launch: str = LAUNCH) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "launch.sh").write_text(launch)
    return tmp_path / "launch.sh"


def _result(run_cli, *args) -> dict:
    code, out, err = run_cli("check", *map(str, args), "--format", "json", "--exit-zero")
    (r,) = json.loads(out)["results"]
    return r


def test_the_launch_s_words_environment_and_world_size_reach_the_script(run_cli, tmp_path):
    launch = _layout(tmp_path)
    r = _result(run_cli, launch)
    assert r["error"] is None and r["file"] == str(launch)
    eff = r["effective"]
    assert eff["model.tensor_model_parallel_size"]["value"] == 4
    assert eff["model.tensor_model_parallel_size"]["reason"] == (
        f"set in {tmp_path / 'train.py'}:13 from the command line's --tp 4")
    assert eff["ddp.overlap_grad_reduce"]["value"] is False  # the launch exports GRAD_OVERLAP=0
    assert r["target"]["world_size"] == 16 and r["target"]["data_parallel_size"] == 4
    assert r["notes"][0].startswith(f"read as launched by {launch} (line 3): {tmp_path / 'train.py'} with the launch's "
                                    "words (--tp 4)")
    # the same script alone: argparse's default, the caller's environment
    alone = _result(run_cli, tmp_path / "train.py", "--world-size", "16")
    assert alone["effective"]["model.tensor_model_parallel_size"]["value"] == 1
    assert alone["effective"]["ddp.overlap_grad_reduce"]["value"] is True


def test_findings_name_the_script_s_lines(run_cli, tmp_path):
    launch = _layout(tmp_path)
    r = _result(run_cli, launch)
    (tp104,) = [f for f in r["findings"] if f["code"] == "TP104"]
    assert tp104["origin"] == f"{tmp_path / 'train.py'}:16" and tp104["line"] is None
    code, out, err = run_cli("check", str(launch))
    assert f"{tmp_path / 'train.py'}:16: TP104 error: model.tp_comm_overlap: true" in out


def test_an_option_the_script_does_not_take_is_argparse_s_exit(run_cli, tmp_path):
    launch = _layout(tmp_path, LAUNCH.replace("--tp 4", "--tp 4 --pp 2"))
    code, out, err = run_cli("check", str(launch))
    assert code == 2
    assert "argparse at" in err and "unrecognized arguments: --pp 2" in err and len(err.strip().splitlines()) == 1


def test_fix_declines_the_launch_and_names_the_command_for_the_script(run_cli, tmp_path):
    launch = _layout(tmp_path, LAUNCH.replace("--nnodes 2", "--nnodes 1"))
    before = launch.read_text(), (tmp_path / "train.py").read_text()
    code, out, err = run_cli("fix", str(launch), "--unsafe-fixes", "--severity-threshold", "info", "--write")
    assert (launch.read_text(), (tmp_path / "train.py").read_text()) == before
    assert (f"{launch}: the launch is not edited; its findings are in {tmp_path / 'train.py'}, the script it runs: "
            f"fix it there (overlap fix {tmp_path / 'train.py'} -- --tp 4)") in out + err


def test_a_folder_run_checks_the_script_alone_and_as_launched(run_cli, tmp_path):
    _layout(tmp_path)
    code, out, err = run_cli("check", str(tmp_path), "--format", "json", "--exit-zero")
    files = sorted(Path(r["file"]).name for r in json.loads(out)["results"])
    assert files == ["launch.sh", "train.py"]


def test_bridge_s_straggler_example_reads_the_launch_s_words(run_cli, tmp_path):
    """Bridge's run_straggler_detection.sh: a ``while``/``case`` over its own arguments feeds torchrun and the
    script's words; what the caller may pass leaves them unknown, and the script's argparse reads what is known."""
    for f in STRAGGLER.iterdir():
        shutil.copy(f, tmp_path / f.name)
    r = _result(run_cli, tmp_path / "run_straggler_detection.sh")
    assert r["error"] is None, r["error"]
    assert r["notes"][0] == (f"read as launched by {tmp_path / 'run_straggler_detection.sh'} (line 60): "
                             f"{tmp_path / 'straggler_detection_example.py'} with the launch's words (--train-iters … "
                             "--report-interval …) and its exported environment")
    tp = r["effective"]["model.tensor_model_parallel_size"]
    assert (tp["value"], tp["reason"]) == (1, f"set in {tmp_path / 'straggler_detection_example.py'}:88")


def test_a_default_the_caller_replaces_does_not_make_the_launch_an_input_error(run_cli, tmp_path):
    """Megatron-LM's examples/mimo/scripts/run_vlm_train.sh (vendored, tests/data/upstream/SOURCES.json):
    ``PRETRAINED_LANGUAGE_MODEL_CHECKPOINT_PATH=${2:-""}`` then ``(--language-model-checkpoint "$P")`` expanded
    unquoted: run without a second argument, bash drops the empty word and argparse exits ("expected one
    argument") -- that is one caller. A caller who gives the checkpoint runs it: the launch is checked with the
    second argument unknown, and the exit of the other reading is said (LM002)."""
    script = ROOT / "tests/data/upstream/NVIDIA+Megatron-LM/examples/mimo/scripts/run_vlm_train.sh"
    code, out, err = run_cli("check", str(script), "--format", "json", "--show-info")
    (r,) = json.loads(out)["results"]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.context_parallel_size"]["value"] == 2 and r["target"]["world_size"] == 2
    (lm002,) = [f for f in r["findings"] if f["code"] == "LM002"]
    assert lm002["details"]["unknowns"][0]["message"] == (
        "line 25: with the defaults taken for what its caller gives (its arguments, its environment), the launch exits "
        "at start-up (--language-model-checkpoint: expected one argument); read with those values unknown, as a "
        "caller who gives them runs it")
