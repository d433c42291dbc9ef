"""`overlap recipes list | show` and `--version`: the Bridge recipes shipped as data, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_list_names_every_recipe_with_its_launch(run_cli, corpus):
    code, out, err = run_cli("recipes", "list", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["versions"] == {"megatron-bridge": "0.6.2", "megatron-core": "0.19.2"}
    # The recipes Bridge builds offline are the corpus of dumps; the others were read from its source.
    got = {r["name"]: (r["world_size"], r["gpu"]) for r in doc["recipes"] if r["how"] == "built"}
    assert got == {row["recipe"]: (row["world_size"], row["gpu"]) for row in corpus}
    assert {r["how"] for r in doc["recipes"]} == {"built", "source"}
    assert doc["aliases"]["llama3_8b_pretrain_config"] == "llama3_8b_pretrain_2gpu_h100_bf16_config"


def test_list_filters_by_gpu(run_cli, corpus):
    code, out, _ = run_cli("recipes", "list", "--gpu", "VR200")
    assert code == 0
    rows = [ln.split() for ln in out.splitlines()[1:] if ln.strip() and not ln.startswith(("name", " "))]
    listed = [r[0] for r in rows if r[0].endswith("_config")]
    built = [r[0] for r in rows if r[0].endswith("_config") and r[-1] == "built"]
    assert sorted(built) == sorted(r["recipe"] for r in corpus if r["gpu"] == "vr200")
    assert f"{len(listed)} recipe(s) of Megatron-Bridge 0.6.2" in out
    code, out, err = run_cli("recipes", "list", "--gpu", "z9")
    assert code == 2 and err.count("\n") == 1 and "no recipe is tuned for GPU 'z9'" in err


@pytest.mark.parametrize("suffix", ["", "_config"])
def test_show_as_dumped_prints_the_dump_bridge_wrote(run_cli, corpus, suffix):
    for row in corpus[::57]:  # eight recipes across the families
        name = row["recipe"][: -len("_config")] + suffix
        code, out, err = run_cli("recipes", "show", name, "--as-dumped")
        assert code == 0, err
        assert out == Path(row["path"]).read_text(encoding="utf-8")


MARK = "  # overlap-cli: "


def test_show_prints_the_recipe_as_built_on_the_target(run_cli, corpus):
    """Every recipe: the dump line for line, but for the fields the dumping machine decided (no Transformer
    Engine there, before the runtime update), each rewritten on its own line and marked. With --no-te only
    the ddp order stays marked (it does not depend on Transformer Engine)."""
    changed = {}
    for row in corpus:
        dump = Path(row["path"]).read_text(encoding="utf-8").splitlines()
        code, out, err = run_cli("recipes", "show", row["recipe"])
        assert code == 0, err
        shown = out.splitlines()
        assert len(shown) == len(dump), row["file"]
        diff = [(a, b) for a, b in zip(dump, shown) if a != b]
        for before, after in diff:
            assert MARK in after and before.endswith(": false") and after.split(MARK)[0] == before[: -len("false")] + "true"
            changed.setdefault(before.strip(), []).append(row["file"])
        code, out, _ = run_cli("recipes", "show", row["recipe"], "--no-te")
        kept = [b for a, b in zip(dump, out.splitlines()) if a != b]
        assert all("fp8_param_gather" in b for b in kept), row["file"]
    assert sorted(changed) == ["fp8_param_gather: false", "gradient_accumulation_fusion: false", "use_transformer_engine: false"]
    assert len(changed["use_transformer_engine: false"]) == 41  # the DeepSeek-V3 recipes' layer spec
    assert len(changed["fp8_param_gather: false"]) == 7  # the MXFP8 dumps that do not load as written
    # the 413 dumps holding false, less the 8 Wan recipes (WanModelProvider's default is a plain False)
    assert len(changed["gradient_accumulation_fusion: false"]) == 413 - 8


def test_a_saved_copy_of_the_shown_recipe_launches_like_the_recipe(run_cli, tmp_path):
    """What `recipes show NAME > FILE` saves is checked like `--recipe NAME`: the dump's false made the ten
    recipes that defer the embedding wgrad fail (PP205), the MXFP8 dumps fail at load (MP407)."""
    for name in ("llama3_70b_sft_32gpu_gb200_bf16_config", "qwen3_235b_a22b_pretrain_128gpu_gb200_fp8mx_paged_stash_dev_config"):
        saved = tmp_path / f"{name}.yaml"
        saved.write_text(run_cli("recipes", "show", name)[1], encoding="utf-8")
        code, out, err = run_cli("check", saved, "--format", "json", "--show-info", *_target_flags(name))
        file_findings = sorted((f["code"], f["message"]) for f in json.loads(out)["results"][0]["findings"])
        code, out, err = run_cli("check", "--recipe", name, "--format", "json", "--show-info")
        recipe_findings = sorted((f["code"], f["message"]) for f in json.loads(out)["results"][0]["findings"])
        assert file_findings == recipe_findings
        assert not [f for f in file_findings if f[0] in ("PP205", "MP407")]
        dumped = tmp_path / "dumped.yaml"
        dumped.write_text(run_cli("recipes", "show", name, "--as-dumped")[1], encoding="utf-8")
        code, out, err = run_cli("check", dumped, "--format", "json", *_target_flags(name))
        assert {"PP205", "MP407"} & {f["code"] for f in json.loads(out)["results"][0]["findings"]}


def _target_flags(name: str) -> list:
    from overlap_cli.frameworks.bridge import recipes

    row = recipes.info("0.6.2", name)
    return ["--world-size", row["world_size"], "--gpu", row["gpu"]]


def test_unknown_recipe_is_one_line_with_the_closest_names(run_cli):
    code, out, err = run_cli("recipes", "show", "llama3_70b_pretrain_64gpu_h10")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown recipe 'llama3_70b_pretrain_64gpu_h10'" in err
    assert "llama3_70b_pretrain_64gpu_h100_bf16_config" in err


def test_version_names_the_bridge_release(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and "Megatron-Bridge 0.6.2" in out and "Megatron-Core 0.19.2" in out
