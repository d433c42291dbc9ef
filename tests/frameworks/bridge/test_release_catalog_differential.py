"""Each release's catalog against that release's own code: a seeded sample of its recipes built by the
release in its environment (source_recipe_reference.py: Bridge's recipe functions called, the Hugging Face
answer of the recipes read from source replaced by a plain GPTModelProvider) and compared with what the
catalog holds. A recipe Bridge built for the catalog must come out the same, key for key (0.6.2's were built
from dumps Bridge wrote with the Hugging Face config at hand: where the reference used the stand-in, their
``model`` section is that config's and is left out); one read from source must agree on every value it holds
as known. Skips a release without its environment (differential.reference_python)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from differential import reference_python
from dump_values import at, leaves, same
from overlap_cli.frameworks.bridge import recipes

HERE = Path(__file__).resolve().parent
SAMPLE = 40  # recipes per release: ~1 min per release in its environment
SEED = 32


def sample(release: str) -> list:
    names = recipes.names(release)
    return sorted(random.Random(f"{SEED}:{release}").sample(names, min(SAMPLE, len(names))))


def test_the_sample_is_seeded_and_spans_both_kinds():
    assert sample("0.5.1") == sample("0.5.1")
    kinds = {recipes.how("0.6.2", n) for n in sample("0.6.2")}
    assert kinds == {"built", "source"}


@pytest.mark.parametrize("release", recipes.held())
def test_the_catalog_of_a_release_is_what_that_release_builds(release):
    python = reference_python(release)
    if python is None:
        pytest.skip(f"no environment with megatron-bridge {release} (differential.reference_python)")
    todo = sample(release)
    proc = subprocess.run([str(python), str(HERE / "source_recipe_reference.py")], input=json.dumps(todo),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dumps = json.loads(proc.stdout)
    compared, values, wrong = {"built": 0, "source": 0}, 0, []
    for key in todo:
        dump, how = dumps.get(key), recipes.how(release, key)
        if how == "source" and (not isinstance(dump, dict) or "error" in dump):
            continue  # needs more than the model's config (a local file, the vocabulary): nothing to compare
        assert isinstance(dump, dict) and "error" not in dump, (key, dump)  # built for the catalog: builds here
        compared[how] += 1
        data, unknown = recipes.data(release, key)
        stood_in = dump.pop("__hf_stand_in__", False) and how == "built"  # built here without the real model
        for path, value in leaves(data):
            other = at(dump, path)
            if other is KeyError and how == "source" or stood_in and path[0] == "model":
                continue  # an attribute set on an object whose class does not declare it: never dumped
            values += 1
            if not same(value, other):
                wrong.append((key, ".".join(map(str, path)), value, other))
        if how == "built":  # and nothing the build holds is missing from the catalog
            wrong.extend((key, ".".join(map(str, p)), "(missing)", v) for p, v in leaves(dump)
                         if at(data, p) is KeyError and not (stood_in and p[0] == "model"))
    assert compared["built"] > 0, compared
    assert not wrong, (len(wrong), wrong[:8])
    print(f"Megatron-Bridge {release}: {compared} recipes, {values} values compared", file=sys.stderr)
