"""The recipe catalog against the dumps it was built from: each of the 456 recipes checked as ``--recipe
NAME`` (the merged-run path: catalog text, layers, the recipe's own target) says exactly what a check of its
dump file with the same target says -- effective values, findings and target -- and with an override file
that changes nothing but the training length, still the same settings."""

from __future__ import annotations


def _target(**flags):
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options

    return target_from_options(options(TARGET, **flags))


def _essence(result):
    effective = {k: (v.value, v.source) for k, v in (result.effective or {}).items()}
    findings = sorted((f.code, f.severity, f.key, f.message) for f in result.findings)
    target = {k: v for k, v in result.target.items() if k not in ("sources", "recipe")}
    return effective, findings, target


def test_every_recipe_from_the_catalog_equals_its_dump(corpus, tmp_path):
    from overlap_cli.check.engine import check

    override = tmp_path / "short.yaml"
    override.write_text("train:\n  train_iters: 10\n", encoding="utf-8")
    differ, layered_differ = [], []
    for row in corpus:
        name = row["file"][: -len(".yaml")]
        dump = check(row["path"], _target(world_size=row["world_size"], gpu=row["gpu"], te_version="2.12")).result
        recipe = check(None, _target(recipe=name, te_version="2.12")).result
        assert dump.error is None and recipe.error is None, (name, dump.error, recipe.error)
        if _essence(dump) != _essence(recipe):
            differ.append(name)
        assert recipe.target["sources"]["world_size"] == "recipe", name
        layered = check(str(override), _target(recipe=name, te_version="2.12")).result
        if _essence(layered)[0] != _essence(dump)[0]:
            layered_differ.append(name)
    assert not differ, (len(differ), differ[:5])
    assert not layered_differ, (len(layered_differ), layered_differ[:5])
