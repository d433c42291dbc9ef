"""argparse's meaning of a Megatron-LM command line, from the table generated off the real parser."""

from __future__ import annotations

import pytest

from overlap_cli.problems import InputError
from overlap_cli.frameworks.megatron_lm.args import UNKNOWN, defaults, load_launch, option, table


def launch(args: str, name: str = "run.sh"):
    return load_launch(name, f"torchrun --nproc_per_node 8 pretrain_gpt.py {args}\n")


def error(args: str) -> str:
    with pytest.raises(InputError) as err:
        launch(args)
    return err.value.problem.one_line()


def test_table_is_megatron_core_0_19_2_without_abbreviations():
    doc = table()
    assert doc["megatron_core"] == "0.19.2"
    assert doc["parser"]["allow_abbrev"] is False
    assert {"core", "modelopt", "vlm", "inference"} <= set(doc["groups"])


def test_values_converted_as_argparse_does():
    args = launch("--tensor-model-parallel-size 2 --lr=3e-4 --sequence-parallel --no-overlap-p2p-communication "
                  "--recompute-modules core_attn mlp --attention-backend flash --moe-layer-freq '([0]*3+[1]*5)'").args
    assert args["tensor_model_parallel_size"].value == 2
    assert args["lr"].value == pytest.approx(3e-4)
    assert args["sequence_parallel"].value is True
    assert args["overlap_p2p_comm"].value is False and args["overlap_p2p_comm"].flag == "--no-overlap-p2p-communication"
    assert args["recompute_modules"].value == ["core_attn", "mlp"]
    assert args["attention_backend"].value == "flash"
    assert args["moe_layer_freq"].value == "([0]*3+[1]*5)"


def test_last_occurrence_wins_and_counts():
    arg = launch("--tensor-model-parallel-size 2 --num-layers 4 --tensor-model-parallel-size 4").args["tensor_model_parallel_size"]
    assert arg.value == 4 and arg.occurrences == 2 and arg.column == 91


def test_placeable_only_on_the_launch_line():
    text = "ARGS=(--num-layers 4)\ntorchrun --nproc_per_node 8 pretrain_gpt.py \"${ARGS[@]}\" --tensor-model-parallel-size 2\n"
    args = load_launch("run.sh", text).args
    assert args["tensor_model_parallel_size"].placeable and args["tensor_model_parallel_size"].value_span == (2, 87, 88)
    nl = args["num_layers"]
    assert not nl.placeable and nl.literal and nl.origin == "variable ARGS (line 1)" and (nl.line, nl.column) == (1, 7)


def test_unknown_values_stay_unknown():
    args = launch("--tensor-model-parallel-size $TP --save $CKPT").args
    assert args["tensor_model_parallel_size"].value is UNKNOWN and not args["tensor_model_parallel_size"].placeable
    with pytest.raises(TypeError):
        bool(UNKNOWN)


def test_optional_groups_are_recognised():
    args = launch("--export-model-type GPTModel --export-te-mcore-model").args
    assert args["export_model_type"].value == "GPTModel" and args["export_te_mcore_model"].value is True


def test_unknown_flag_suggests_the_closest():
    assert error("--tensor-model-paralel-size 2") == (
        "run.sh:1:45: --tensor-model-paralel-size: no such Megatron-LM flag (argparse exits 2: unrecognized "
        "arguments); did you mean --tensor-model-parallel-size?")


def test_no_prefix_abbreviation():
    assert "did you mean --tensor-model-parallel-size?" in error("--tensor-model-parallel 2")


def test_type_error_names_flag_and_value():
    assert error("--tensor-model-parallel-size four") == "run.sh:1:74: --tensor-model-parallel-size: invalid int value: 'four'"


def test_choice_error():
    assert "invalid choice: 'fast'" in error("--attention-backend fast")


def test_missing_value_and_explicit_value_on_a_switch():
    assert error("--num-layers") == "run.sh:1:45: --num-layers: expected one argument"
    assert error("--num-layers --hidden-size 4").endswith("--num-layers: expected one argument")
    assert error("--sequence-parallel=1").endswith("--sequence-parallel: ignored explicit argument '1'")


def test_stray_word_is_unrecognized():
    assert error("--sequence-parallel false") == "run.sh:1:65: unrecognized arguments: false"


def test_negative_number_is_a_value():
    assert launch("--seed -1").args["seed"].value == -1


def test_defaults_and_option_rows():
    d = defaults()
    assert d["overlap_p2p_comm"] is True and d["tensor_model_parallel_size"] == 1 and d["tp_comm_overlap"] is False
    row = option("overlap_p2p_comm")
    assert row["action"] == "store_false" and row["flags"] == ["--no-overlap-p2p-communication"]
    assert option("tensor_model_parallel_size")["type"] == "int"
    assert option("no_such_dest") is None


def test_yaml_through_the_same_semantics():
    text = "ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\n  --tensor-model-parallel-size: 2\n  --tp-comm-overlap: true\n  --save: ${CHECKPOINT_SAVE_PATH}\n"
    lau = load_launch("model_config.yaml", text)
    assert lau.kind == "yaml" and lau.args["tp_comm_overlap"].value is True and lau.args["save"].value is UNKNOWN
    assert lau.args["tensor_model_parallel_size"].placeable and lau.args["tensor_model_parallel_size"].value_span == (4, 33, 34)
    assert lau.env["CUDA_DEVICE_MAX_CONNECTIONS"].value == "1"


def test_yaml_unknown_flag_points_at_the_key():
    with pytest.raises(InputError) as err:
        load_launch("m.yaml", "MODEL_ARGS:\n  --num-layer: 2\n")
    assert err.value.problem.one_line().startswith("m.yaml:2:3: --num-layer: no such Megatron-LM flag")


def test_unquoted_parenthesis_is_a_shell_syntax_error():
    assert error("--moe-layer-freq ([0]*3+[1]*5)") == (
        "run.sh:1:62: syntax error near unexpected token '(' (bash would not run this line; quote the word)")


def test_a_script_outside_the_table_may_add_flags_of_its_own():
    lau = load_launch("run.sh", "torchrun --nproc_per_node 8 tools/run_text_generation.py --use-te --out-seq-length 64 --num-layers 2\n")
    assert lau.args["num_layers"].value == 2 and "use_te" not in lau.args
    assert any("--use-te is not a Megatron-LM flag; run_text_generation.py may add it" in u for u in lau.unknowns)


def test_a_script_the_table_holds_gets_only_its_own_groups():
    assert launch("--export-model-type GPTModel").args["export_model_type"].value == "GPTModel"  # pretrain_gpt.py: ModelOpt
    msg = error("--model-provider gpt")
    assert msg.startswith("run.sh:1:45: --model-provider: pretrain_gpt.py has no such flag")
    assert "gpt_dynamic_inference.py" in msg


def test_yaml_false_is_a_stray_word_with_a_hint():
    with pytest.raises(InputError) as err:
        load_launch("m.yaml", "MODEL_ARGS:\n  --num-layers: 2\n  --sequence-parallel: false\n")
    line = err.value.problem.one_line()
    assert line.startswith("m.yaml:3:24: unrecognized arguments: false (`--flag: false` hands argparse the word 'false'")


def test_torch_distributed_launch_use_env():
    lau = load_launch("run.sh", "python -m torch.distributed.launch --use_env --nproc_per_node 4 pretrain_gpt.py --num-layers 2\n")
    assert lau.world_size == 4 and lau.args["num_layers"].value == 2
