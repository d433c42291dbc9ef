"""The recipe catalog against the dumps it was built from: each of the 456 recipes checked as ``--recipe
NAME`` (the merged-run path: catalog text, layers, the recipe's own target) says exactly what a check of its
dump file with the same target says -- effective values and target, and findings but for the refusals only
a file meets -- and with an override file that changes nothing but the training length, still the same
settings.

The refusals only a file meets: Bridge launches the values a file holds, and a dump holds what the dumping
machine computed before the runtime update. ``gradient_accumulation_fusion: false`` (no Transformer Engine
there) stops the ten recipes that defer the embedding wgrad (PP205) and the CUDA-graphed delayed wgrad
(EP707); the ddp section's reuse_grad_buf_for_mxfp8_param_ag beside fp8_param_gather: false stops the
MXFP8 dumps at load (MP407). Built on the target (``--recipe``) none of them happens."""

from __future__ import annotations


def _target(**flags):
    from overlap_cli.cli.check import target_from_options
    from overlap_cli.cli.options import TARGET, options

    return target_from_options(options(TARGET, **flags))


FILE_ONLY = {
    "PP205": "gradient_accumulation_fusion is false in",
    "EP707": "gradient_accumulation_fusion is off",
    "MP407": "ConfigContainer.from_yaml builds ddp",
}


def _essence(result):
    effective = {k: (v.value, v.source) for k, v in (result.effective or {}).items()}
    findings = sorted((f.code, f.severity, f.key, f.message) for f in result.findings)
    target = {k: v for k, v in result.target.items() if k not in ("sources", "recipe")}
    return effective, findings, target


def _file_only(finding) -> bool:
    code, severity, _key, message = finding
    return severity == "error" and code in FILE_ONLY and FILE_ONLY[code] in message


def test_every_recipe_from_the_catalog_equals_its_dump(corpus, tmp_path):
    from overlap_cli.check.engine import check

    override = tmp_path / "short.yaml"
    override.write_text("train:\n  train_iters: 10\n", encoding="utf-8")
    differ, layered_differ, file_only = [], [], {}
    for row in corpus:
        name = row["file"][: -len(".yaml")]
        dump = check(row["path"], _target(world_size=row["world_size"], gpu=row["gpu"], te_version="2.12")).result
        recipe = check(None, _target(recipe=name, te_version="2.12")).result
        assert dump.error is None and recipe.error is None, (name, dump.error, recipe.error)
        (eff_d, find_d, tgt_d), (eff_r, find_r, tgt_r) = _essence(dump), _essence(recipe)
        extra = [f for f in find_d if f not in find_r]
        if eff_d != eff_r or tgt_d != tgt_r or [f for f in find_r if f not in find_d] or not all(map(_file_only, extra)):
            differ.append(name)
        if extra:
            file_only[name] = sorted({f[0] for f in extra})
        assert recipe.target["sources"]["world_size"] == "recipe", name
        layered = check(str(override), _target(recipe=name, te_version="2.12")).result
        if _essence(layered)[0] != _essence(dump)[0]:
            layered_differ.append(name)
    assert not differ, (len(differ), differ[:5])
    codes = [c for v in file_only.values() for c in v]
    assert (codes.count("PP205"), codes.count("MP407"), codes.count("EP707")) == (10, 7, 2), file_only
    assert not layered_differ, (len(layered_differ), layered_differ[:5])
