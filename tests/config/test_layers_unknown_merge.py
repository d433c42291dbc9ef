"""An override file that writes keys into a section a source-read recipe leaves unknown keeps the rest of
that section unknown, as the same keys given as dotlist words do (Bridge merges the file onto the recipe's
own object: omegaconf_utils.py:148 and :454)."""

from __future__ import annotations

import json

# Built by AutoBridge.from_hf_pretrained(...) in Bridge's source: the catalog leaves ``model`` unknown.
RECIPE = "qwen25_vl_32b_sft_16gpu_h100_bf16_config"


def _effective(run_cli, *args):
    code, out, err = run_cli("check", "--format", "json", "--world-size", "16", "--gpu", "h100",
                             "--recipe", RECIPE, *args)
    assert code in (0, 1), err
    result = json.loads(out)["results"][0]
    assert result["error"] is None, result["error"]
    return result["effective"], result["notes"]


def test_the_recipe_leaves_model_unknown():
    from overlap_cli.frameworks.bridge import recipes

    assert ("model",) in recipes.unknown("0.6.2", RECIPE)


def test_a_file_merged_into_an_unknown_section_keeps_it_unknown(tmp_path, run_cli):
    over = tmp_path / "over.yaml"
    over.write_text("model:\n  context_parallel_size: 2\n")
    from_file, file_notes = _effective(run_cli, str(over))
    from_words, word_notes = _effective(run_cli, "model.context_parallel_size=2")
    # The key written is known, with the line that wrote it ...
    assert from_file["model.context_parallel_size"]["value"] == 2
    assert from_file["model.context_parallel_size"]["layer"] == f"{over}:2"
    # ... the rest of the recipe's model is not: what Bridge derives from it is unknown, as with the words.
    assert from_file["model.tp_comm_overlap"]["source"] == "unknown"
    assert {k: (v["value"], v["source"]) for k, v in from_file.items()} == \
        {k: (v["value"], v["source"]) for k, v in from_words.items()}
    unknown_keys = [n for n in file_notes if "key(s) the run leaves unknown" in n]
    assert unknown_keys == [n for n in word_notes if "key(s) the run leaves unknown" in n]
    assert unknown_keys and "model" in unknown_keys[0].split(":", 1)[1].replace(" ", "").split(",")


def test_a_file_writing_where_the_catalog_holds_nothing_keeps_the_unknown(tmp_path, run_cli):
    """This recipe's model goes through a helper the reader does not know: the catalog holds no mapping
    there, and the file's ``model:`` mapping still merges into Bridge's object, as a dotlist word does."""
    from overlap_cli.frameworks.bridge import recipes

    recipe = "qwen3_next_80b_a3b_sft_16gpu_h100_bf16_config"
    assert ("model",) in recipes.unknown("0.6.2", recipe)
    over = tmp_path / "over.yaml"
    over.write_text("model:\n  pipeline_model_parallel_size: 2\n")
    outs = []
    for words in ([str(over)], ["model.pipeline_model_parallel_size=2"]):
        code, out, err = run_cli("check", "--format", "json", "--world-size", "16", "--gpu", "h100",
                                 "--recipe", recipe, *words)
        assert code in (0, 1), err
        outs.append(json.loads(out)["results"][0]["effective"])
    from_file, from_words = outs
    assert from_file["model.pipeline_model_parallel_size"]["value"] == 2
    assert from_file["model.overlap_p2p_comm"]["source"] == "unknown"
    assert {k: (v["value"], v["source"]) for k, v in from_file.items()} == \
        {k: (v["value"], v["source"]) for k, v in from_words.items()}


def test_a_file_merged_into_an_unknown_model_leaves_gradient_accumulation_fusion_to_the_target(tmp_path, run_cli):
    """gradient_accumulation_fusion under an unknown model is no key the file wrote: the resolver builds it on
    the target (resolver.py, _gaf) for the file as for the words, so the findings that depend on the
    unknown model (PP205 reads it) are the same."""
    recipe = "qwen35_vl_35b_a3b_pretrain_8gpu_h100_bf16_mock_config"
    over = tmp_path / "over.yaml"
    over.write_text("model:\n  sequence_parallel: false\n")
    notes = []
    for words in ([str(over)], ["model.sequence_parallel=false"]):
        code, out, err = run_cli("check", "--format", "json", "--world-size", "8", "--gpu", "h100",
                                 "--recipe", recipe, *words)
        assert code in (0, 1), err
        notes.append([n for n in json.loads(out)["results"][0]["notes"] if n.startswith("findings that depend")])
    assert notes[0] and notes[0] == notes[1]
    assert "PP205" not in notes[0][0]
