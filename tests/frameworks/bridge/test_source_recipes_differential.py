"""The catalog's recipes read from Bridge's source, against Bridge building them.

Those recipes ask Hugging Face for their model's config, so the catalog reads them from source and leaves
what that config holds unknown. source_recipe_reference.py builds each one with megatron-bridge 0.6.2 in an
environment that has it, the Hugging Face answer replaced by a plain GPTModelProvider (nothing else is
replaced). Every value the catalog holds as known must then be what Bridge built: it was written by the
recipe, not by the model's config. Skips without the environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from differential import reference_python
from dump_values import at, leaves, same

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def built():
    python = reference_python()
    if python is None:
        pytest.skip("no environment with megatron-bridge 0.6.2 (set OVERLAP_BRIDGE_ENV)")
    from overlap_cli.frameworks.bridge import recipes

    todo = []
    for key in recipes.names("0.6.2"):
        if recipes.how("0.6.2", key) != "source":
            continue
        todo.append(key)
    proc = subprocess.run([str(python), str(HERE / "source_recipe_reference.py")], input=json.dumps(todo),
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        pytest.skip(f"the reference run failed: {proc.stderr.strip().splitlines()[-1:]}")
    return todo, json.loads(proc.stdout)


def test_every_known_value_of_a_source_read_recipe_is_what_bridge_builds(built):
    from overlap_cli.frameworks.bridge import recipes

    todo, dumps = built
    compared, values, wrong = 0, 0, []
    for key in todo:
        dump = dumps.get(key)
        if not isinstance(dump, dict) or "error" in dump:
            continue  # needs more than the model's config (a local file, the vocabulary): nothing to compare
        compared += 1
        data, _unknown = recipes.data("0.6.2", key)
        for path, value in leaves(data):
            other = at(dump, path)
            if other is KeyError:
                continue  # an attribute set on an object whose class does not declare it: never dumped
            values += 1
            if not same(value, other):
                wrong.append((key, ".".join(map(str, path)), value, other))
    assert compared >= 150, (compared, len(todo))  # 191 of 280 build in the reference environment
    assert not wrong, (len(wrong), wrong[:8])
    print(f"{compared} recipes, {values} values compared", file=sys.stderr)
