"""The launch-script reader: bash's quoting, continuations, assignments and expansions, up to the launch line."""

from __future__ import annotations

import textwrap

import pytest

from overlap_cli.problems import InputError
from overlap_cli.config.argv import LAUNCH_LINE, UNKNOWN
from overlap_cli.config.shell import has_launch_line, read_launch_script


def read(text: str, name: str = "train.sh"):
    return read_launch_script(name, textwrap.dedent(text).lstrip("\n"))


def words(found):
    return [t.text for t in found.tokens]


def test_continuations_quotes_and_comments():
    found = read('''
        # launch
        torchrun --nproc_per_node 8 pretrain_gpt.py \\
            --num-layers 2 \\
            --data-path "/data/my corpus" 'a b'\\
            --lr=1e-4   # trailing comment
        ''')
    assert found.script == "pretrain_gpt.py" and found.launch_line == 2
    assert words(found) == ["--num-layers", "2", "--data-path", "/data/my corpus", "a b", "--lr=1e-4"]
    quoted = found.tokens[3]
    assert (quoted.line, quoted.column, quoted.literal, quoted.span) == (4, 17, True, (4, 17, 34))
    assert found.world_size == 8 and found.world_size_line == 2


def test_arrays_keep_the_line_of_each_element():
    found = read('''
        TP=2
        MODEL_ARGS=(
            --num-layers 24   # a comment inside the array
            --tensor-model-parallel-size $TP
        )
        torchrun --nproc-per-node=4 --nnodes 2 pretrain_gpt.py "${MODEL_ARGS[@]}" --sequence-parallel
        ''')
    assert words(found) == ["--num-layers", "24", "--tensor-model-parallel-size", "2", "--sequence-parallel"]
    flag = found.tokens[0]
    assert (flag.line, flag.column, flag.origin, flag.literal) == (3, 5, "variable MODEL_ARGS (line 2)", True)
    tp = found.tokens[3]
    assert tp.line == 1 and tp.origin == "variable TP (line 1)"  # the text "2" is written on line 1
    last = found.tokens[4]
    assert last.origin == LAUNCH_LINE and last.literal and last.span == (6, 75, 94)
    assert found.world_size == 8


def test_unquoted_expansion_splits_and_quoted_does_not():
    found = read('''
        OPTS="--num-layers 4 --hidden-size 64"
        python pretrain_gpt.py $OPTS "$OPTS"
        ''')
    assert words(found) == ["--num-layers", "4", "--hidden-size", "64", "--num-layers 4 --hidden-size 64"]
    assert found.tokens[2].line == 1 and found.tokens[2].column == 22  # inside the string on line 1


def test_default_expansion_and_unknowns_are_never_guessed():
    found = read('''
        TP=${TP:-4}
        NODES=$(scontrol show hostnames | wc -l)
        torchrun --nproc_per_node 8 --nnodes $NODES pretrain_gpt.py --tensor-model-parallel-size $TP --save $CKPT `date` $EXTRA
        ''')
    assert words(found) == ["--tensor-model-parallel-size", "4", "--save", None, None, None]
    assert found.world_size is None
    text = "\n".join(found.unknowns)
    assert "${TP:-4} is '4' unless the environment sets TP" in text
    assert "$(scontrol show hostnames | wc -l) is not known statically" in text
    assert "$CKPT is not set in the script" in text
    assert found.tokens[-1].multi and found.tokens[-1].what == "$EXTRA"
    assert found.tokens[3].multi and found.tokens[4].what == "`date`"


def test_a_condition_on_the_environment_is_followed_both_ways():
    found = read('''
        TP=1
        if [ "$BIG" = 1 ]; then
            TP=8
        fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2
        ''')
    assert sorted([t.text for t in p.tokens][1] for p in found.paths) == ["1", "8"]
    assert [c for p in found.paths for c in p.choices] == [(("if", 5, 0), "holds"), (("if", 5, 0), "does not hold")]
    assert found.forks[("if", 5, 0)] == 'the if on line 2 ([ "$BIG" = 1 ])'


def test_launch_environment_exports_and_prefixes():
    found = read('''
        export CUDA_DEVICE_MAX_CONNECTIONS=1
        NCCL_DEBUG=INFO
        NVTE_X=1; export NVTE_X
        unset GONE
        GONE=1
        unset GONE
        NVTE_FWD_LAYERNORM_SM_MARGIN=16 torchrun --nproc_per_node 2 pretrain_gpt.py
        export AFTER=1
        ''')
    env = found.env
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"].value == "1" and env["CUDA_DEVICE_MAX_CONNECTIONS"].how == "export"
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"].line == 1
    assert env["NCCL_DEBUG"].how == "assignment"
    assert env["NVTE_X"].how == "export" and env["NVTE_X"].line == 3
    assert env["NVTE_FWD_LAYERNORM_SM_MARGIN"].how == "prefix" and env["NVTE_FWD_LAYERNORM_SM_MARGIN"].value == "16"
    assert "GONE" not in env and "AFTER" not in env


def test_exported_unknown_value():
    found = read('''
        export CUDA_DEVICE_MAX_CONNECTIONS=$CONN
        torchrun --nproc_per_node 2 pretrain_gpt.py
        ''')
    assert found.env["CUDA_DEVICE_MAX_CONNECTIONS"].value is UNKNOWN


@pytest.mark.parametrize("line, kind", [
    ("python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py --num-layers 2", 8),
    ("srun -N 2 --ntasks-per-node=1 --container-image img torchrun --nproc-per-node 4 --nnodes 2 pretrain_gpt.py --num-layers 2", 8),
    ("python3 -u pretrain_bert.py --num-layers 2", None),
    ("exec env A=1 python pretrain_gpt.py --num-layers 2", None),
    ("uv run --no-sync python -m torch.distributed.run --nproc_per_node 2 $MEGATRON/pretrain_gpt.py --num-layers 2", 2),
    ("torchrun --nproc 8 pretrain_gpt.py --num-layers 2", 8),  # torchrun's parser allows abbreviations
])
def test_launch_forms(line, kind):
    found = read(line + "\n")
    assert found.script in ("pretrain_gpt.py", "pretrain_bert.py")
    assert words(found) == ["--num-layers", "2"]
    assert found.world_size == kind


@pytest.mark.parametrize("nnodes, note", [("1:4", "elastic"), ("$N", "not known statically")])
def test_world_size_unknown(nnodes, note):
    found = read(f"torchrun --nproc_per_node 8 --nnodes {nnodes} pretrain_gpt.py\n")
    assert found.world_size is None and any(note in u for u in found.unknowns)


def test_world_size_not_an_integer():
    with pytest.raises(InputError) as err:
        read("echo hi\ntorchrun --nproc_per_node eight pretrain_gpt.py\n")
    assert err.value.problem.one_line() == "train.sh:2:27: --nproc-per-node: not an integer: 'eight' (torchrun exits: unsupported value)"


def test_no_launch_line():
    with pytest.raises(InputError) as err:
        read("python tools/preprocess_data.py --input x\necho done\n")
    assert err.value.problem.one_line().startswith("train.sh: no Megatron-LM launch line found")


def test_unterminated_quote_is_one_line_error():
    with pytest.raises(InputError) as err:
        read('A="abc\ntorchrun pretrain_gpt.py\n')
    assert err.value.problem.one_line() == "train.sh:1:3: unterminated double quote"


def test_heredoc_body_is_skipped_and_only_first_launch_is_checked():
    found = read('''
        cat > cfg.txt <<EOF
        torchrun --nproc_per_node 1 pretrain_gpt.py --num-layers 99
        EOF
        torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 2
        torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 3
        ''')
    assert words(found) == ["--num-layers", "2"] and found.launch_line == 4
    assert any("only the first (line 4)" in u for u in found.unknowns)


def test_has_launch_line():
    assert has_launch_line("torchrun pretrain_gpt.py\n")
    assert not has_launch_line("#!/bin/bash\nmake -j8\n")
    assert not has_launch_line("echo 'torchrun is great'\n")


def test_a_string_variable_splits_into_known_words_around_an_unknown_one():
    found = read('''
        OPTIONS=" \\
            --num-layers 4 \\
            --save ${CKPT} \\
            ${EXTRA_ARGS} \\
            --hidden-size 64"
        torchrun --nproc_per_node 8 pretrain_gpt.py ${OPTIONS}
        ''')
    assert words(found) == ["--num-layers", "4", "--save", None, None, "--hidden-size", "64"]
    assert found.tokens[0].line == 2 and found.tokens[5].line == 5
    assert found.tokens[4].multi and found.tokens[4].what == "${EXTRA_ARGS}"


def test_process_substitution_and_redirections():
    found = read('''
        while read -r line; do echo "$line"; done < <(python list.py)
        torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 2 2>&1 > log.txt
        diff <(echo a) <(echo b)
        ''')
    assert words(found) == ["--num-layers", "2"]


def test_parentheses_and_comparisons_inside_a_test():
    found = read('''
        if [[ ( "$MODEL" == gpt_* || "$A" < "$B" ) && -n "${X:-}" ]]; then
            echo yes
        fi
        torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 2
        ''')
    assert words(found) == ["--num-layers", "2"]


def test_launcher_in_a_variable():
    found = read('''
        LAUNCHER="torchrun --nproc_per_node 4 --nnodes 2"
        $LAUNCHER pretrain_gpt.py --num-layers 2
        ''')
    assert found.launch_line == 2 and found.script == "pretrain_gpt.py" and found.world_size == 8
    assert words(found) == ["--num-layers", "2"] and found.tokens[0].literal
    found = read('''
        RUN="python pretrain_gpt.py --num-layers 3"
        $RUN --hidden-size 8
        ''')
    assert words(found) == ["--num-layers", "3", "--hidden-size", "8"]
    assert found.tokens[0].origin == "variable RUN (line 1)" and not found.tokens[0].literal and found.tokens[0].line == 1


def test_unknown_command_words_are_not_launch_unknowns():
    found = read('''
        $PREPARE --fast
        torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 2
        ''')
    assert not any("PREPARE" in u for u in found.unknowns)


def test_backslash_blank_does_not_continue_the_launch():
    found = read("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 \\ \n    --sequence-parallel\n")
    assert words(found) == ["--num-layers", "2", " "]  # bash passes the escaped blank as a word too
    assert any("line 1: the backslash is followed by a blank" in u and "line 2 on are not passed" in u for u in found.unknowns)


@pytest.mark.parametrize("expr, value", [
    ("$GPUS*$NODES", "16"), ("GPUS * NODES / 4", "4"), ("(GPUS + 2) % 3", "1"), ("-7 / 2", "-3"), ("${GPUS}*2", "16"),
    ("GPUS / 0", None), ("UNSET * 2", None), ("GPUS ** 2", "64"), ("$(nproc) * 2", None), ("GPUS++", None),
    ("NODES << 2", "8"), ("GPUS > NODES ? 1 : 0", "1"), ("08", None),
])
def test_arithmetic_of_known_integers(expr, value):
    found = read(f'''
        GPUS=8
        NODES=2
        torchrun --nproc_per_node 8 pretrain_gpt.py --global-batch-size $(({expr}))
        ''')
    assert words(found)[-1] == value


@pytest.mark.parametrize("text, size, line, tasks", [
    # srun starting python itself: Megatron-LM's world size is WORLD_SIZE (arguments.py:144), not the task count
    ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\nsrun python pretrain_gpt.py --num-layers 2\n", None, None, 32),
    ("#SBATCH -N 4\nsrun --ntasks-per-node 8 --nodes=2 python pretrain_gpt.py --num-layers 2\n", None, None, 16),
    ("srun -n 64 --container-image x python pretrain_gpt.py --num-layers 2\n", None, None, 64),
    ("srun -N2 python pretrain_gpt.py --num-layers 2\n", None, None, None),
    ("#SBATCH --nodes=2-4\n#SBATCH --ntasks-per-node=8\nsrun python pretrain_gpt.py --num-layers 2\n", None, None, None),
    ("export WORLD_SIZE=16\nsrun -n 16 python pretrain_gpt.py --num-layers 2\n", 16, 1, "exported"),
    ("WORLD_SIZE=16 srun -n 16 python pretrain_gpt.py --num-layers 2\n", 16, 1, "exported"),
    ("WORLD_SIZE=16\nsrun -n 16 python pretrain_gpt.py --num-layers 2\n", None, None, 16),  # not exported
    ("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\nsrun torchrun --nproc_per_node 8 --nnodes 4 pretrain_gpt.py --num-layers 2\n", 32, 3, "torchrun"),
])
def test_world_size_of_srun_tasks(text, size, line, tasks):
    found = read_launch_script("job.sbatch", text)
    assert words(found) == ["--num-layers", "2"]
    assert (found.world_size, found.world_size_line) == (size, line)
    said = [u for u in found.unknowns if "srun starts the training script itself" in u]
    if isinstance(tasks, str):  # torchrun, or the script's own WORLD_SIZE, decides: nothing to say
        assert said == []
    else:
        assert len(said) == 1 and "WORLD_SIZE" in said[0] and "arguments.py:144" in said[0]
        assert (f"as {tasks} tasks" in said[0]) is (tasks is not None)
