"""The launch-script reader's control flow: what bash decides from values the script states is decided, what
depends on the caller is followed both ways, and a flag only some ways give is unknown with its reason."""

from __future__ import annotations

import json
import textwrap

import pytest

from overlap_cli.problems import InputError
from overlap_cli.config.argv import UNKNOWN
from overlap_cli.config.shell import MAX_PATHS, read_launch_script
from overlap_cli.frameworks.megatron_lm.args import load_launch


def text_of(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


def args(src: str, take_defaults: bool = True) -> dict:
    launch = load_launch("train.sh", text_of(src), take_defaults=take_defaults)
    return {d: a.value for d, a in launch.args.items()}


def launch_of(src: str):
    return load_launch("train.sh", text_of(src))


def test_if_on_the_environment_makes_only_the_appended_flags_unknown():
    launch = launch_of('''
        ARGS=(--num-layers 4 --use-distributed-optimizer)
        if [ -n "$NSYS" ]; then
            ARGS+=(--profile --profile-step-start 3)
        fi
        torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"
        ''')
    assert launch.args["num_layers"].value == 4 and launch.args["use_distributed_optimizer"].value is True
    for dest in ("profile", "profile_step_start"):
        assert launch.args[dest].value is UNKNOWN
    reason = launch.args["profile"].reason
    assert reason == '--profile (line 3) is given or not given depending on the if on line 2 ([ -n "$NSYS" ])'
    assert 'the if on line 2 ([ -n "$NSYS" ]) is not decided statically: --profile, --profile-step-start are unknown' \
        in launch.unknowns
    assert launch.world_size == 8


def test_both_branches_giving_the_same_flag_keep_it_known():
    assert args('''
        if [[ -n $FAST ]]; then
            ARGS=(--bf16 --num-layers 2)
        else
            ARGS=(--bf16 --num-layers 4)
        fi
        python pretrain_gpt.py ${ARGS[@]}
        ''') == {"bf16": True, "num_layers": UNKNOWN}


def test_the_same_condition_twice_is_one_decision():
    # $MODE from the caller is the same both times: no path takes one branch and not the other
    launch = launch_of('''
        if [ "$MODE" = big ]; then TP=8; else TP=1; fi
        if [ "$MODE" = big ]; then SP=--sequence-parallel; else SP=--bf16; fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP $SP
        ''')
    assert len(launch.tokens) == 3
    from overlap_cli.config.shell import read_launch_script as read

    found = read("train.sh", text_of('''
        if [ "$MODE" = big ]; then TP=8; else TP=1; fi
        if [ "$MODE" = big ]; then SP=--sequence-parallel; else SP=--bf16; fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP $SP
        '''))
    assert sorted(tuple(t.text for t in p.tokens) for p in found.paths) == [
        ("--tensor-model-parallel-size", "1", "--bf16"), ("--tensor-model-parallel-size", "8", "--sequence-parallel")]


@pytest.mark.parametrize("condition, taken", [
    ('[ "$A" = x ]', True), ('[ "$A" != x ]', False), ("[[ $A == x* ]]", True), ('[[ $A == "x*" ]]', False),
    ("test -n \"$A\"", True), ("[ -z \"$B\" ]", True), ("(( N > 2 ))", True), ("(( N % 2 ))", True),
    ("[ $N -eq 3 ]", True), ("[[ $N -lt 2 || $A == y ]]", False), ("! [ -n \"$A\" ]", False), ("true && false", False),
    ("[ \"$A\" = x -a $N -ge 3 ]", True), ("[[ ( $A = x ) && ! -z $A ]]", True), ("let 'N > 5'", False),
])
def test_conditions_on_known_values_take_bash_s_branch(condition, taken):
    got = args(f'''
        A=x
        B=
        N=3
        if {condition}; then TP=2; else TP=1; fi
        python pretrain_gpt.py --tensor-model-parallel-size $TP
        ''')
    assert got == {"tensor_model_parallel_size": 2 if taken else 1}


def test_case_on_a_literal_and_on_the_environment():
    assert args('''
        SCALE="800M"
        case "${SCALE}" in
            "800M") TP=1 ;;
            8B|70B) TP=4 ;;
            *) exit 1 ;;
        esac
        python pretrain_gpt.py --tensor-model-parallel-size $TP
        ''') == {"tensor_model_parallel_size": 1}
    launch = launch_of('''
        case "$SCALE" in
            8B) TP=4 ;;
            *) TP=1 ;;
        esac
        python pretrain_gpt.py --tensor-model-parallel-size $TP --num-layers 2
        ''')
    assert launch.args["tensor_model_parallel_size"].value is UNKNOWN
    assert "1 or 4" in launch.args["tensor_model_parallel_size"].reason or "4 or 1" in launch.args["tensor_model_parallel_size"].reason
    assert launch.args["num_layers"].value == 2


def test_case_fall_through_and_exit_paths():
    assert args('''
        M=a
        case $M in
            a) X=(--bf16) ;&
            b) X+=(--num-layers 2) ;;
            c) X+=(--num-layers 9) ;;
        esac
        [ -d /data ] || exit 1
        python pretrain_gpt.py "${X[@]}"
        ''') == {"bf16": True, "num_layers": 2}


def test_loops_functions_and_arithmetic():
    assert args('''
        for f in --bf16 --sequence-parallel; do ARGS+=("$f"); done
        add() { ARGS+=("$@"); local TMP=1; }
        add --num-layers 4
        i=1
        ((i++))
        let "j = i * 8"
        for ((k = 0; k < 3; k++)); do ARGS+=(--micro-batch-size $k); done
        while [ $i -lt 5 ]; do ((i++)); if (( i == 4 )); then break; fi; done
        python pretrain_gpt.py "${ARGS[@]}" --global-batch-size $j --seq-length $i --hidden-size ${TMP:-128}
        ''') == {"bf16": True, "sequence_parallel": True, "num_layers": 4, "micro_batch_size": 2,
                 "global_batch_size": 16, "seq_length": 4, "hidden_size": 128}  # TMP was local to add()


def test_return_gives_the_call_its_status():
    # bash's return N: the call fails for N != 0, so `if ! run; then exit 1` ends the path that failed and the
    # launch is reached only where every call succeeded; bare `return` keeps the last command's status
    assert args('''
        COUNT=0
        run() {
            if [[ -d /data/$1 ]]; then COUNT=$((COUNT + 1)); else return 1; fi
            return 0
        }
        ok() { true; return; }
        for c in a b c d; do
            if ! run $c; then exit 1; fi
        done
        ok || exit 1
        python pretrain_gpt.py --train-iters $COUNT
        ''') == {"train_iters": 4}
    assert args('''
        run() { return $CODE; }
        N=2
        run || N=3
        python pretrain_gpt.py --train-iters $N
        ''')["train_iters"] is UNKNOWN  # return with a value not known statically: the status is not known


def test_a_loop_with_an_unknown_condition_makes_what_it_changes_unknown():
    launch = launch_of('''
        N=1
        L=4
        while read -r line; do N=$((N + 1)); done
        python pretrain_gpt.py --micro-batch-size $N --num-layers $L
        ''')
    assert launch.args["micro_batch_size"].value is UNKNOWN and launch.args["num_layers"].value == 4
    assert any("$N changes in the loop on line 3" in u for u in launch.unknowns)


def test_subshells_and_pipelines_do_not_keep_assignments():
    assert args('''
        TP=1
        ( TP=8 )
        echo x | TP=4
        { TP=2; }
        python pretrain_gpt.py --tensor-model-parallel-size $TP
        ''') == {"tensor_model_parallel_size": 2}


def test_a_sourced_file_may_set_any_variable():
    launch = launch_of('''
        TP=2
        source ./cluster.env
        PP=${PP:-1}
        python pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --num-layers 2
        ''')
    assert launch.args["tensor_model_parallel_size"].value is UNKNOWN
    assert launch.args["pipeline_model_parallel_size"].value is UNKNOWN
    assert launch.args["num_layers"].value == 2


@pytest.mark.parametrize("line", [
    "python ${MEGATRON_LM}/pretrain_gpt.py --num-layers 2",
    "torchrun --nproc_per_node 8 $MEGATRON_PATH/pretrain_gpt.py --num-layers 2",
    'python "$ROOT"/pretrain_gpt.py --num-layers 2',
    'python "${ROOT:-/opt/m}/pretrain_gpt.py" --num-layers 2',
    "cd $DIR && python pretrain_gpt.py --num-layers 2",
    "cd $DIR || exit 1; python3 -u ./pretrain_gpt.py --num-layers 2",
    '$PROFILE_CMD torchrun --nproc_per_node 8 "${MEG}/pretrain_gpt.py" --num-layers 2',
    "nsys profile -o out --trace=cuda,nvtx -f true python -m torch.distributed.run --nproc_per_node 2 pretrain_gpt.py --num-layers 2",
    "${LAUNCHER} ${MEG}/pretrain_gpt.py --num-layers 2",
    'torchrun --nproc_per_node 8 "$DIR/pretrain_gpt.py" --num-layers 2 2>&1 | tee log.txt',
    "srun bash -c true; run() { torchrun --nproc_per_node 2 $M/pretrain_gpt.py \"$@\"; }; run --num-layers 2",
])
def test_the_script_path_in_a_variable_is_a_launch(line):
    launch = launch_of(line + "\n")
    assert launch.script == "pretrain_gpt.py"
    assert {d: a.value for d, a in launch.args.items()} == {"num_layers": 2}
    assert not any("MEGATRON" in u or "$ROOT" in u or "$DIR" in u for u in launch.unknowns)


def test_an_unknown_launcher_before_the_script_leaves_the_world_size_unknown():
    launch = launch_of("${LAUNCHER} ${MEG}/pretrain_gpt.py --num-layers 2\n")
    assert launch.world_size is None
    assert any("the launcher before pretrain_gpt.py is not known statically" in u for u in launch.unknowns)


def test_default_quoting_inside_braces():
    launch = launch_of('''
        NNODES=${SLURM_NNODES:-"2"}
        GPUS=${GPUS-'4'}
        torchrun --nnodes $NNODES --nproc_per_node $GPUS pretrain_gpt.py --num-layers ${LAYERS:-"8"}
        ''')
    assert launch.world_size == 8 and launch.args["num_layers"].value == 8
    assert "line 1: ${SLURM_NNODES:-\"2\"} is '2' unless the environment sets SLURM_NNODES" in launch.unknowns


def test_without_defaults_a_condition_on_a_defaulted_variable_forks():
    src = '''
        PROFILE=${PROFILE:-0}
        if [ "$PROFILE" = 1 ]; then ARGS=(--profile); fi
        python pretrain_gpt.py --num-layers 2 "${ARGS[@]}"
        '''
    assert args(src) == {"num_layers": 2}
    assert args(src, take_defaults=False) == {"num_layers": 2, "profile": UNKNOWN}


def test_a_path_where_argparse_exits_drops_out_with_a_sentence():
    launch = launch_of('''
        if [ -n "$OLD" ]; then ARGS=(--no-such-flag); fi
        python pretrain_gpt.py --num-layers 2 "${ARGS[@]}"
        ''')
    assert launch.args["num_layers"].value == 2 and "no_such_flag" not in launch.args
    assert any("the launch exits at start-up" in u and "--no-such-flag" in u for u in launch.unknowns)


def test_many_paths_are_merged_and_the_differing_values_are_unknown():
    conditions = "\n".join(f'if [ -n "$E{i}" ]; then ARGS+=(--num-layers {i}); fi' for i in range(8))
    launch = load_launch("train.sh", f"ARGS=(--bf16)\n{conditions}\npython pretrain_gpt.py \"${{ARGS[@]}}\"\n")
    assert launch.args["bf16"].value is True and launch.args["num_layers"].value is UNKNOWN
    assert 2 ** 8 > MAX_PATHS
    assert any(f"more than {MAX_PATHS} ways through the script" in u for u in launch.unknowns)


@pytest.mark.parametrize("src, message", [
    ("if true; then\n  python pretrain_gpt.py\n", "syntax error: unexpected end of file ('fi' expected for the if on line 1)"),
    ("case x in\n a) echo ;;\n", "syntax error: unexpected end of file"),
    ("echo )\npython pretrain_gpt.py\n", "syntax error near unexpected token ')'"),
    ("for x in a b; echo\npython pretrain_gpt.py\n", "syntax error"),
])
def test_what_bash_cannot_parse_is_one_line(src, message):
    with pytest.raises(InputError) as err:
        read_launch_script("train.sh", src)
    assert message in err.value.problem.one_line()


def test_no_path_reaches_a_launch():
    with pytest.raises(InputError) as err:
        read_launch_script("train.sh", "exit 0\ntorchrun pretrain_gpt.py\n")
    assert "no Megatron-LM launch line found" in err.value.problem.message


def test_lm002_lists_every_unknown_in_json_and_names_what_they_change(tmp_path, run_cli):
    script = tmp_path / "train.sh"
    script.write_text(text_of('''
        export CUDA_DEVICE_MAX_CONNECTIONS=1
        TP=${TP:-2}
        A=${A:-1}; B=${B:-1}; C=${C:-1}
        ARGS=()
        if [ -n "$NSYS" ]; then ARGS=(--overlap-grad-reduce); fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --sequence-parallel "${ARGS[@]}"
        '''))
    code, out, err = run_cli("check", "--format", "json", "--gpu", "h100", "--show-info", str(script))
    result = json.loads(out)["results"][0]
    lm002 = next(f for f in result["findings"] if f["code"] == "LM002")
    unknowns = lm002["details"]["unknowns"]
    assert len(unknowns) == 5 and "and 2 more (--format json lists them all)" in lm002["message"]
    assert {"line": 2, "message": "line 2: ${TP:-2} is '2' unless the environment sets TP"} in unknowns
    assert unknowns[-1]["message"].startswith('the if on line 5 ([ -n "$NSYS" ]) is not decided statically')
    # TP from a default can change, and so what depends on it; the overlap flag is unknown
    changed = lm002["details"]["can_change"]
    assert "ddp.overlap_grad_reduce" in changed and "model.tensor_model_parallel_size" in changed
    assert "ddp.bucket_size" in changed  # from DP, which TP decides
    assert "ddp.use_distributed_optimizer" not in changed
    assert "the printed values they can change: ddp.overlap_grad_reduce" in lm002["message"]
    eff = result["effective"]["ddp.overlap_grad_reduce"]
    assert eff["source"] == "unknown" and "depending on the if on line 5" in eff["reason"]


def test_dotlist_words_are_flags_of_the_launch(tmp_path, run_cli):
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 --overlap-grad-reduce\n")
    code, out, err = run_cli("check", "--format", "json", str(script), "model.tensor_model_parallel_size=4",
                             "ddp.overlap_grad_reduce=false", "ddp.fp8_param_gather=true", "ddp.bucket_size=1000000",
                             "env.CUDA_DEVICE_MAX_CONNECTIONS=1")
    eff = json.loads(out)["results"][0]["effective"]
    assert eff["model.tensor_model_parallel_size"] == {
        "value": 4, "source": "user", "layer": "command line",
        "reason": "model.tensor_model_parallel_size=4 on the command line (--tensor-model-parallel-size 4)"}
    assert eff["ddp.overlap_grad_reduce"]["value"] is False and eff["ddp.overlap_grad_reduce"]["layer"] == "command line"
    assert eff["ddp.bucket_size"]["value"] is None  # no --overlap-grad-reduce left: resolve_ddp_bucket_size gives None
    assert eff["ddp.fp8_param_gather"]["value"] is True and eff["ddp.fp8_param_gather"]["layer"] == "command line"
    assert eff["env.CUDA_DEVICE_MAX_CONNECTIONS"]["value"] == "1"
    assert json.loads(out)["results"][0]["target"]["data_parallel_size"] == 2


@pytest.mark.parametrize("word, message", [
    ("model.no_such_field=1", "command-line override 'model.no_such_field=1': no Megatron-LM flag sets model.no_such_field"),
    ("ddp.tensor_model_parallel_size=2", "no Megatron-LM flag sets ddp.tensor_model_parallel_size"),
    ("model.tensor_model_parallel_size=two", "--tensor-model-parallel-size: invalid int value: 'two'"),
    ("model.sequence_parallel=1", "--sequence-parallel is a switch: give true or false"),
])
def test_an_unmappable_dotlist_word_is_refused_in_one_line(tmp_path, run_cli, word, message):
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n")
    code, out, err = run_cli("check", str(script), word)
    assert code == 2
    lines = [line for line in (out + err).splitlines() if message in line]
    assert len(lines) == 1 and lines[0].startswith(str(script))
