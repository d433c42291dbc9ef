"""Bad Megatron-LM launches through the CLI: one line naming file:line(:col) and the flag, exit 2, never a traceback."""

from __future__ import annotations

import pytest

CASES = {
    "unknown_flag": ("train.sh", "ARGS=(\n  --num-layers 2\n  --overlap-grad-reduc\n)\ntorchrun --nproc_per_node 8 pretrain_gpt.py \"${ARGS[@]}\"\n",
                     "train.sh:3:3: --overlap-grad-reduc: no such Megatron-LM flag (argparse exits 2: unrecognized arguments); did you mean --overlap-grad-reduce?"),
    "non_integer_size": ("train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size 2.5\n",
                         "train.sh:2:32: --tensor-model-parallel-size: invalid int value: '2.5'"),
    "non_integer_world": ("train.sh", "NODES=two\ntorchrun --nproc_per_node 8 --nnodes $NODES pretrain_gpt.py\n",
                          "train.sh:1:7: --nnodes: not an integer: 'two' (torchrun exits: unsupported value)"),
    "yaml_unknown_flag": ("model_config.yaml", "ENV_VARS:\n  A: 1\nMODEL_ARGS:\n  --sequence-paralel: true\n",
                          "model_config.yaml:4:3: --sequence-paralel: no such Megatron-LM flag (argparse exits 2: unrecognized arguments); did you mean --sequence-parallel?"),
    "newer_flag": ("train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --megatron-fsdp-version 2\n",
                   "train.sh:1:60: --megatron-fsdp-version: not a flag of megatron-core 0.19.2 (argparse exits 2: unrecognized "
                   "arguments): it is newer, first in megatron-core 0.20.0 (in development; NVIDIA/Megatron-LM main d98e8a6)"),
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


def test_newer_flags_table_holds_only_flags_the_supported_parser_lacks():
    """newer_flags.json (tools/build_mlm_newer_flags.py): each flag is one megatron-core 0.19.2's parser does
    not have, and, where the Megatron-LM mirror is present, one its newer source names (a literal spelling,
    or the dataclass field ArgumentGroupFactory turns into it)."""
    import json
    import subprocess

    from conftest import ROOT
    from overlap_cli.frameworks.megatron_lm.args import table

    doc = json.loads((ROOT / "overlap_cli" / "frameworks" / "megatron_lm" / "newer_flags.json").read_text())
    assert doc["supported"] == f"megatron-core {table()['megatron_core']}"
    flags = [f for entry in doc["releases"] for f in entry["flags"]]
    assert flags and not set(flags) & set(table()["by_flag"])
    gitdir = ROOT.parent / ".mirror" / "NVIDIA+Megatron-LM" / "repo"
    if not gitdir.is_dir():
        pytest.skip("no Megatron-LM mirror next to the repository")
    for entry in doc["releases"]:
        commit = entry["source"].split(" ")[2]
        for flag in entry["flags"]:
            names = [flag, flag[2:].replace("-", "_")]
            for negation in ("--no-", "--disable-"):  # the negative spelling of a boolean field
                if flag.startswith(negation):
                    names.append(flag[len(negation):].replace("-", "_"))
            found = subprocess.run(["git", "-C", str(gitdir), "grep", "-q", "-F", *sum((["-e", n] for n in names), []),
                                    commit, "--", "megatron/"], capture_output=True)
            assert found.returncode == 0, flag


# (flag, the release whose parser lacks it, the release whose parser has it, what the error says it is)
RELEASE_FLAGS = [
    ("--freeze-all-layers", "0.17.1", "0.19.2", "it is newer, added in megatron-core 0.19.x (0.19.2 has it)"),
    ("--eval-micro-batch-size 1", "0.17.1", "0.18.2", "it is newer, added in megatron-core 0.18.x (0.18.2 has it)"),
    ("--rl-generation-batch-size 2", "0.19.2", "0.18.2",
     "megatron-core 0.18.2 has it; it was removed after that release"),
]


@pytest.mark.parametrize("words,lacks,has,why", RELEASE_FLAGS, ids=[w.split()[0] for w, *_ in RELEASE_FLAGS])
def test_a_flag_of_another_core_release_is_argparse_s_error_naming_that_release(run_cli, tmp_path, words, lacks, has, why):
    """The megatron-core release of the target decides the parser: the same launch reads on the release
    that has the flag and exits 2 on the one that lacks it, naming where the flag comes from."""
    launch = f"torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 {words}\n"
    flag = words.split()[0]
    for release in (lacks, has):
        (tmp_path / "train.sh").write_text(f"# overlap: target core-version={release}\n{launch}")
        code, out, err = run_cli("check", str(tmp_path / "train.sh"))
        if release == lacks:
            assert code == 2 and err.strip().replace(str(tmp_path) + "/", "") == (
                f"train.sh:2:60: {flag}: not a flag of megatron-core {lacks} (argparse exits 2: unrecognized "
                f"arguments): {why}")
        else:
            assert code in (0, 1) and "Traceback" not in err and flag not in err, err
