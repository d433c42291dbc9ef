"""The leaves of a recipe's values and a Bridge dump, compared as the differential tests of the catalog do
(test_source_recipes_differential.py, test_release_catalog_differential.py)."""

from __future__ import annotations


def leaves(data, path=()):
    """(path, value) of every leaf, ``_target_`` keys left out."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key != "_target_":
                yield from leaves(value, path + (key,))
    else:
        yield path, data


def at(data, path):
    """The value at ``path``, or KeyError (the class, as a marker) where there is none."""
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return KeyError
        data = data[part]
    return data


def same(a, b) -> bool:
    if a == b:
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return str(a) == str(b)  # torch dtypes and enums: the dump writes them as text
