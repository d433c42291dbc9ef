"""Which framework an input is for, and which files a folder walk checks."""

from __future__ import annotations

from overlap_cli.check.discovery import discover
from overlap_cli.frameworks.detect import discoverable, framework_of

LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n"


def test_by_name_and_content(tmp_path):
    (tmp_path / "a.yaml").write_text("MODEL_ARGS:\n  --num-layers: 2\n")
    (tmp_path / "b.yaml").write_text("model:\n  tensor_model_parallel_size: 2\n")
    (tmp_path / "launch").write_text(LAUNCH)
    assert framework_of(str(tmp_path / "a.yaml")) == "megatron-lm"
    assert framework_of(str(tmp_path / "b.yaml")) == "bridge"
    assert framework_of(str(tmp_path / "launch")) == "megatron-lm"  # no suffix, a shell #!
    for name in ("x.sh", "x.bash", "x.slurm", "x.SBATCH"):
        assert framework_of(name, "") == "megatron-lm"
    assert framework_of(str(tmp_path / "b.yaml"), forced="megatron-lm") == "megatron-lm"
    assert framework_of("x.sh", "", forced="bridge") == "bridge"


def test_folder_walk_takes_launch_scripts_with_a_launch_line_only(tmp_path):
    (tmp_path / "train.sh").write_text(LAUNCH)
    (tmp_path / "build.sh").write_text("#!/bin/bash\nmake -j8\n")
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun python pretrain_gpt.py --num-layers 2\n")
    (tmp_path / "model_config.yaml").write_text("ENV_VARS:\n  A: 1\nMODEL_ARGS:\n  --num-layers: 2\n")
    (tmp_path / "nemo.yaml").write_text("MODEL_ARGS:\n  trainer.num_nodes: 1\n")
    found = discover([str(tmp_path)])
    names = sorted(p.rsplit("/", 1)[-1] for p in found.files)
    assert names == ["job.sbatch", "model_config.yaml", "train.sh"]
    # each noted: build.sh with the reason it is not checked (a folder run accounts for every file)
    assert [p.rsplit("/", 1)[-1] for p, _ in found.skipped] == ["build.sh", "nemo.yaml"]
    assert found.skipped[0][1].startswith("not a launch")
    assert discoverable(str(tmp_path / "build.sh")) is False


def test_a_named_script_without_a_launch_line_is_skipped_as_in_a_folder(tmp_path):
    (tmp_path / "build.sh").write_text("make\n")
    found = discover([str(tmp_path / "build.sh")])
    assert found.files == [] and [r for _, r in found.skipped] == [discover([str(tmp_path)]).skipped[0][1]]
    assert found.skipped[0][1].startswith("not a launch")


def test_a_fifo_is_never_opened(tmp_path):
    import os

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert framework_of(str(fifo)) == "bridge"  # returns at once: the Bridge reader then refuses it
    assert discoverable(str(tmp_path / "fifo.sh")) is True  # missing: the check says why


def test_empty_model_args_is_a_launch_with_the_scripts_defaults(tmp_path):
    (tmp_path / "model_config.yaml").write_text("ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\nTEST_TYPE: regular\n")
    assert discoverable(str(tmp_path / "model_config.yaml")) is True
