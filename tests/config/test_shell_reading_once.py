"""A launch script is run (statically) once per text and options: the check and the fix ask for the same
reading (config/shell.py ``_read``), and so does folder discovery's sniff. A reading that looked for a sourced file by the script's
path is kept for that path only. Megatron-Bridge's qwen3_omni ``local_train_thinker_full.sh`` (489 lines,
more than 64 ways through it) took 4.25 s before; its check now reads it twice (with and without the
``${VAR:-default}`` defaults), each reading a few hundred milliseconds at most."""

from __future__ import annotations

import json
import time

from conftest import ROOT

from overlap_cli.config import shell
from overlap_cli.config.shell_eval import Reader

SCRIPT = """#!/bin/bash
TP=2
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 8 --hidden-size 512 \\
    --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 32
"""


def _count_runs(monkeypatch) -> list:
    calls: list = []
    real = Reader.run_script

    def counted(self, start=None):
        if type(self) is Reader:
            calls.append(self.path)
        return real(self, start)

    monkeypatch.setattr(Reader, "run_script", counted)
    shell._READINGS.clear()
    return calls


def test_a_check_runs_the_script_once(run_cli, tmp_path, monkeypatch):
    path = tmp_path / "train.sh"
    path.write_text(SCRIPT)
    calls = _count_runs(monkeypatch)
    code, out, err = run_cli("check", str(path), "--show-effective")
    assert "model.tensor_model_parallel_size                    2" in out, out + err
    assert len(calls) == 1  # the check, the fix and the annotator share one whole reading


def test_a_reading_that_sourced_by_path_is_not_shared(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "sizes.sh").write_text("TP=4\n")
    (tmp_path / "b" / "sizes.sh").write_text("TP=8\n")
    text = 'source "$(dirname "$0")/sizes.sh"\n' + SCRIPT.split("\n", 2)[2]
    calls = _count_runs(monkeypatch)
    first = shell.read_launch_script(str(tmp_path / "a" / "train.sh"), text)
    second = shell.read_launch_script(str(tmp_path / "b" / "train.sh"), text)
    assert [t.text for t in first.tokens[:2]] == ["--tensor-model-parallel-size", "4"]
    assert [t.text for t in second.tokens[:2]] == ["--tensor-model-parallel-size", "8"]
    assert len(calls) == 2
    again = shell.read_launch_script(str(tmp_path / "a" / "train.sh"), text)
    assert [t.text for t in again.tokens[:2]] == ["--tensor-model-parallel-size", "4"] and len(calls) == 3
    assert again.file == str(tmp_path / "a" / "train.sh")


def test_a_reading_is_not_changed_by_what_is_made_of_it(tmp_path):
    """The launch made twice from one reading is the same (shell_launch works on copies of the paths)."""
    text = "$PROFILE_CMD " + SCRIPT.split("\n", 2)[2].replace("--tensor-model-parallel-size $TP", "$EXTRA")
    shell._READINGS.clear()
    one = shell.read_launch_script(str(tmp_path / "t.sh"), text)
    two = shell.read_launch_script(str(tmp_path / "t.sh"), text)
    assert one.unknowns == two.unknowns and len(one.unknowns) == len(set(one.unknowns))
    assert [(t.text, t.line, t.column) for t in one.tokens] == [(t.text, t.line, t.column) for t in two.tokens]


def test_many_paths_read_in_bounded_time():
    """Megatron-Bridge's local_train_thinker_full.sh (in ../shared/upstream when present): its two readings — a
    template retry with its empty values as placeholders, and the reading without defaults — take well under a
    second of CPU (4.25 s of wall time for the whole check before)."""
    import pytest

    path = ROOT.parent / "shared" / "upstream" / "Megatron-Bridge" / "examples" / "models" / "qwen" / "qwen3_omni" / \
        "local_train_thinker_full.sh"
    if not path.is_file():
        pytest.skip("no ../shared/upstream/Megatron-Bridge")
    text = path.read_text()
    shell._READINGS.clear()
    start = time.process_time()
    found = shell.read_launch_script(str(path), text)
    without = shell.read_launch_script(str(path), text, take_defaults=False)  # "${PYTHON_BIN}" -m torch.distributed.run
    spent = time.process_time() - start
    assert found.launch_line == without.launch_line == 449
    assert spent < 1.0, spent


def test_a_folder_check_reads_each_launch_once(run_cli, tmp_path, monkeypatch):
    """Discovery reads every script of the folder before the check of each launch asks for the same reading:
    the readings that found a launch outlive more than ``_KEEP`` scripts read in between."""
    count = shell._KEEP + 4
    for k in range(count):
        (tmp_path / f"train_{k:02d}.sh").write_text(SCRIPT.replace("TP=2", f"TP={1 + k % 2}  # {k}"))
        (tmp_path / f"util_{k:02d}.sh").write_text(f"#!/bin/bash\nX={k}\ntorchrun_helper() {{ echo; }}\n")
    texts: list = []
    real = Reader.run_script

    def counted(self, start=None):
        if type(self) is Reader and "pretrain_gpt.py" in self.text:
            texts.append(self.text)
        return real(self, start)

    monkeypatch.setattr(Reader, "run_script", counted)
    shell._READINGS.clear()
    code, out, err = run_cli("check", str(tmp_path), "--format", "json")
    assert code in (0, 1) and json.loads(out)["summary"]["files"] == count, out + err
    assert len(texts) == len(set(texts)) == count  # each launch read once, by discovery: its check reads it no more
