"""A MODEL_ARGS value with a space, as Megatron-LM's functional-test harness builds the command line from it
(tests/functional_tests/shell_test_utils/_run_training.sh:131-166 at d98e8a64ddf34856e74b24714e3bedb2f5a39553):
``value="$(echo "$value" | xargs)"``; a value wrapped in ``[ ]`` loses its brackets and is appended unquoted
(``$key $value``: bash splits it into words), any other value with a space is appended quoted (``$key "$value"``:
one word); then ``eval "TRAINING_PARAMS_ARRAY=(...)"``.

Two of Megatron-LM's own test cases (vendored, tests/data/upstream/SOURCES.json) give
``--hierarchical-context-parallel-sizes`` (nargs='+', type=int) the sizes 2 and 2: the resume variant as
``"[2 2]"`` -- two words, [2, 2] --, the other as ``2 2`` -- one word ``'2 2'``, which argparse's int() refuses:
``invalid int value: '2 2'``, exit 2. That second case is in no recipe of tests/test_utils/recipes at that commit
(only the resume variant is named there, commented out), so nothing runs it; the error is what it would meet."""

from __future__ import annotations

import json

from conftest import ROOT

CASES = ROOT / "tests/data/upstream/NVIDIA+Megatron-LM/tests/functional_tests/test_cases/gpt"
SPACED = CASES / "gpt3_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic/model_config.yaml"
BRACKETED = CASES / "gpt3_mcore_te_tp1_pp2_resume_torch_dist_cp4_a2a_p2p_nondeterministic/model_config.yaml"


def test_a_value_with_a_space_is_one_word_argparse_refuses(run_cli):
    assert "  --hierarchical-context-parallel-sizes: 2 2\n" in SPACED.read_text()
    code, out, err = run_cli("check", str(SPACED))
    assert code == 2 and out == ""
    assert err == f"{SPACED}:42:42: --hierarchical-context-parallel-sizes: invalid int value: '2 2'\n"


def test_a_bracketed_value_is_split_into_its_words(run_cli):
    assert '  --hierarchical-context-parallel-sizes: "[2 2]"\n' in BRACKETED.read_text()
    code, out, err = run_cli("check", str(BRACKETED), "--format", "json", "--exit-zero")
    (r,) = json.loads(out)["results"]
    assert r["error"] is None, r["error"]
    assert r["effective"]["model.context_parallel_size"]["value"] == 4
