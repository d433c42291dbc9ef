"""Bad Megatron-LM launches through the CLI: one line naming file:line(:col) and the flag, exit 2, never a traceback."""

from __future__ import annotations

import pytest

CASES = {
    "no_launch_line": ("train.sh", "#!/bin/bash\npython tools/preprocess_data.py --input x\n",
                       "train.sh: no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"),
    "unknown_flag": ("train.sh", "ARGS=(\n  --num-layers 2\n  --overlap-grad-reduc\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py \"${ARGS[@]}\"\n",
                     "train.sh:3:3: --overlap-grad-reduc: no such Megatron-LM flag (argparse exits 2: unrecognized arguments); did you mean --overlap-grad-reduce?"),
    "non_integer_size": ("train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size 2.5\n",
                         "train.sh:2:32: --tensor-model-parallel-size: invalid int value: '2.5'"),
    "non_integer_world": ("train.sh", "NODES=two\ntorchrun --nproc_per_node 8 --nnodes $NODES pretrain_gpt.py\n",
                          "train.sh:1:7: --nnodes: not an integer: 'two' (torchrun exits: unsupported value)"),
    "yaml_unknown_flag": ("model_config.yaml", "ENV_VARS:\n  A: 1\nMODEL_ARGS:\n  --sequence-paralel: true\n",
                          "model_config.yaml:4:3: --sequence-paralel: no such Megatron-LM flag (argparse exits 2: unrecognized arguments); did you mean --sequence-parallel?"),
    "yaml_non_integer": ("model_config.yaml", "MODEL_ARGS:\n  --pipeline-model-parallel-size: two\n",
                         "model_config.yaml:2:35: --pipeline-model-parallel-size: invalid int value: 'two'"),
    "unterminated_quote": ("train.sh", "torchrun pretrain_gpt.py --data-path 'x\n",
                           "train.sh:1:38: unterminated single quote"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_launch_is_one_line_exit_2(run_cli, tmp_path, name):
    filename, text, expected = CASES[name]
    (tmp_path / filename).write_text(text)
    code, out, err = run_cli("check", str(tmp_path / filename))
    assert code == 2
    line = err.strip().replace(str(tmp_path) + "/", "")
    assert line == expected
    assert "Traceback" not in err


def test_backslash_blank_at_the_end_of_a_launch_line(run_cli, tmp_path):
    (tmp_path / "train.sh").write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 \\ \n    --sequence-parallel\n")
    code, out, err = run_cli("check", str(tmp_path / "train.sh"))
    assert code == 2
    assert err.strip().endswith("train.sh:1:60: unrecognized argument ' ': an escaped blank (a backslash followed by a "
                                "space at the end of a line does not continue it; argparse exits 2)")


def test_crlf_script_says_why_its_continuations_break(run_cli, tmp_path):
    # bash reads "\<CR><LF>" as an escaped carriage return: the launch gets the word "\r", argparse refuses it.
    text = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size 2\n"
    (tmp_path / "train.sh").write_bytes(text.replace("\n", "\r\n").encode())
    code, out, err = run_cli("check", str(tmp_path / "train.sh"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "train.sh:2:45: unrecognized argument '\\r': the script has CRLF line ends" in err
