"""Megatron-LM's functional-test YAML as the harness turns it into a command line."""

from __future__ import annotations

import textwrap

import pytest

from overlap_cli.problems import InputError
from overlap_cli.config.argv import UNKNOWN
from overlap_cli.config.mlm_yaml import looks_like_mlm_yaml, read_mlm_yaml

TEXT = textwrap.dedent("""\
    ENV_VARS:
      CUDA_DEVICE_MAX_CONNECTIONS: 1
      CUBLAS_WORKSPACE_CONFIG: :4096:8
      OUT: ${OUTPUT_PATH}/x
    MODEL_ARGS:
      --num-layers: 12
      --sequence-parallel: true
      --data-path: ${DATA_PATH}/text/my-gpt3_00_text_document
      --recompute-modules: "[core_attn mlp]"
      --moe-layer-freq: ([0]*3+[1]*11)
      --pipeline-model-parallel-layout: Et*2|(tt|)*5t|tmL
      --min-lr: 1.0e-5
      --dist-ckpt-strictness: log_all # a comment
      --empty: ""
    TEST_TYPE: regular
    """)


def test_words_as_the_harness_builds_them():
    found = read_mlm_yaml("model_config.yaml", TEXT)
    assert [t.text for t in found.tokens] == [
        "--num-layers", "12", "--sequence-parallel", "--data-path", None, "--recompute-modules", "core_attn", "mlp",
        "--moe-layer-freq", "([0]*3+[1]*11)", "--pipeline-model-parallel-layout", "Et*2|(tt|)*5t|tmL",
        "--min-lr", "1.0e-5", "--dist-ckpt-strictness", "log_all",
    ]
    assert found.tokens[4].what == "${DATA_PATH}"
    assert found.kind == "yaml" and found.launch_line == 5 and found.script is None
    assert any("--empty has an empty value" in u for u in found.unknowns)


def test_positions_and_spans():
    found = read_mlm_yaml("model_config.yaml", TEXT)
    flag, value = found.tokens[0], found.tokens[1]
    assert (flag.line, flag.column, flag.span) == (6, 3, (6, 3, 15))
    assert (value.line, value.column, value.span, value.literal) == (6, 17, (6, 17, 19), True)
    assert found.tokens[6].literal is False  # one of two words split out of "[core_attn mlp]"


def test_env_vars():
    env = read_mlm_yaml("model_config.yaml", TEXT).env
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"].value == "1" and env["CUDA_DEVICE_MAX_CONNECTIONS"].how == "ENV_VARS"
    assert env["CUBLAS_WORKSPACE_CONFIG"].value == ":4096:8"
    assert env["OUT"].value is UNKNOWN


def test_merge_keys_written_key_wins():
    text = "BASE: &base\n  --num-layers: 2\n  --hidden-size: 64\nMODEL_ARGS:\n  <<: *base\n  --num-layers: 4\n"
    found = read_mlm_yaml("m.yaml", text)
    assert [t.text for t in found.tokens] == ["--hidden-size", "64", "--num-layers", "4"]
    assert found.tokens[0].literal is False and found.tokens[2].literal is True


def test_missing_model_args():
    with pytest.raises(InputError) as err:
        read_mlm_yaml("m.yaml", "ENV_VARS: {A: 1}\n")
    assert err.value.problem.one_line().startswith("m.yaml: no top-level MODEL_ARGS: mapping")


def test_invalid_yaml_is_one_line():
    with pytest.raises(InputError) as err:
        read_mlm_yaml("m.yaml", "MODEL_ARGS:\n  --a: [1\n")
    assert err.value.problem.one_line().startswith("m.yaml:3:1: invalid YAML")


def test_looks_like():
    assert looks_like_mlm_yaml(TEXT)
    assert not looks_like_mlm_yaml("model:\n  tensor_model_parallel_size: 2\n")


def test_repeated_key_is_two_words_and_the_last_wins():
    from overlap_cli.frameworks.megatron_lm.args import load_launch

    lau = load_launch("m.yaml", "MODEL_ARGS:\n  --ffn-hidden-size: 64\n  --num-layers: 2\n  --ffn-hidden-size: 128\n")
    assert lau.argv == ["--ffn-hidden-size", "64", "--num-layers", "2", "--ffn-hidden-size", "128"]
    assert lau.args["ffn_hidden_size"].value == 128 and lau.args["ffn_hidden_size"].line == 4


def test_nemo_style_model_args_are_not_megatron_flags():
    with pytest.raises(InputError) as err:
        read_mlm_yaml("m.yaml", "MODEL_ARGS:\n  trainer.num_nodes: 1\n")
    assert err.value.problem.one_line().startswith("m.yaml:2:3: MODEL_ARGS: MODEL_ARGS holds no --flag keys")


@pytest.mark.parametrize("text, expected", [
    ("MODEL_ARGS:\n  ? [a, b]\n  : 1\n", "m.yaml:2:5: MODEL_ARGS: MODEL_ARGS keys are flag names (--flag: value); this one is a sequence"),
    ("MODEL_ARGS:\n  --num-layers: [1, {a: 2}]\n", "m.yaml:2:3: MODEL_ARGS.--num-layers: a list of flag values holds scalars only"),
    ("MODEL_ARGS:\n  --x: {a: 1}\n", "m.yaml:2:3: MODEL_ARGS.--x: a mapping is not a flag value"),
])
def test_shapes_that_are_no_command_line(text, expected):
    with pytest.raises(InputError) as err:
        read_mlm_yaml("m.yaml", text)
    assert err.value.problem.one_line() == expected
