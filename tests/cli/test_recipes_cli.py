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
def test_show_prints_the_dump_bridge_wrote(run_cli, corpus, suffix):
    for row in corpus[::57]:  # eight recipes across the families
        name = row["recipe"][: -len("_config")] + suffix
        code, out, err = run_cli("recipes", "show", name)
        assert code == 0, err
        assert out == Path(row["path"]).read_text(encoding="utf-8")


def test_unknown_recipe_is_one_line_with_the_closest_names(run_cli):
    code, out, err = run_cli("recipes", "show", "llama3_70b_pretrain_64gpu_h10")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown recipe 'llama3_70b_pretrain_64gpu_h10'" in err
    assert "llama3_70b_pretrain_64gpu_h100_bf16_config" in err


def test_version_names_the_bridge_release(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and "Megatron-Bridge 0.6.2" in out and "Megatron-Core 0.19.2" in out
