"""What a Bridge run is, whatever it is written in: the input model every Bridge front end produces and
the engine consumes.

A ``BridgeRun`` says *what runs* -- a catalog recipe or a full dump as the base, override files in order,
dotlist words, or a Python run (``FILE`` / ``FILE::FUNCTION``) -- and nothing about *where* it runs (the
``launch_profile.Target``: world size, GPU, versions). ``load`` turns it into the merged ``Config`` the
resolver reads; the catalog (frameworks.bridge.recipes) is looked up here, not in config/.

``recipe_run(name, override_file, dotlist)`` is the entry point for Bridge's own launch scripts
(``run_recipe.py --recipe NAME [--config-file F] key=value ...``): the same object a Python run produces.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)


@dataclass(frozen=True)
class BridgeRun:
    """What runs. Exactly one of ``recipe`` / ``base`` / ``python`` names the start (or none: the top file
    alone); ``files`` are the override files bottom to top (the last one is the file a fix edits);
    ``dotlist`` the parsed command-line overrides, applied last."""

    recipe: Optional[str] = None
    base: Optional[str] = None
    python: Optional[str] = None  # FILE or FILE::FUNCTION
    files: tuple = ()
    dotlist: tuple = ()
    target: Optional[object] = None  # where it runs: its release decides the config's fields and defaults

    @property
    def label(self) -> str:
        if self.python:
            return self.python
        if self.recipe:
            return f"recipe {self.recipe}"
        return str(self.base or (self.files[-1] if self.files else "<command line>"))

    def load(self, text: Optional[str] = None):
        """The merged Config (``text``: the top file's contents when already read). InputError on bad input."""
        overrides = list(self.dotlist) or None
        if self.python:
            from overlap_cli.frameworks.bridge.python_load import load_python

            return load_python(self.python, text, overrides, target=self.target)[0]
        from overlap_cli.config.layers import Stack, load_layered
        from overlap_cli.frameworks.bridge.dotlist_shape import bridge_config
        from overlap_cli.frameworks.bridge.recipes import release_of

        shape = bridge_config(self.target)

        top = self.files[-1] if self.files else None
        stack = Stack(recipe=None if self.base else self.recipe, base=self.base, lower=tuple(self.files[:-1]),
                      recipe_layer=None if self.base or not self.recipe else recipe_layer(release_of(self.target), self.recipe))
        if not self.recipe and not self.base:
            if top is None:
                raise InputError(InputProblem("<command line>", "no config file given"))
            from overlap_cli.config.loader import load_config

            return load_config(top, overrides, text=text, shape=shape)  # one file, nothing under it
        return load_layered(top, stack, overrides, text if top is not None else None, shape)


def unknown_recipe(release: str, name: str, where: str = "--recipe") -> InputProblem:
    """An unknown recipe of ``release``, with the closest names of that release's catalog."""
    from overlap_cli.frameworks.bridge.recipes import closest

    near = closest(release, name)
    hint = f"; did you mean {', '.join(near)}?" if near else " (overlap recipes list shows them all)"
    return InputProblem(where, f"unknown recipe {name!r}: not a recipe of Megatron-Bridge {release}{hint}")


@functools.lru_cache(maxsize=4)
def _recipe_layer(release: str, key: str):
    from overlap_cli.config.layers import BaseLayer
    from overlap_cli.config.yamlnodes import parse_nodes
    from overlap_cli.frameworks.bridge import recipes

    text = recipes.text(release, key)
    data, positions, _interpolations = parse_nodes(text, f"recipe {key}")
    return BaseLayer(key, data, positions, text, tuple(sorted(recipes.unknown(release, key).items())))


def recipe_layer(release: str, name: str):
    """The recipe ``name`` (a function name or an alias) of the catalog of ``release`` as a base layer, parsed
    once per process (config.layers copies its data); InputError with that release's closest names when it
    has none."""
    from overlap_cli.frameworks.bridge import recipes

    key = recipes.canonical(release, name)
    if key is None:
        raise InputError(unknown_recipe(release, name))
    return _recipe_layer(release, key)


def recipe_name(release: str, name: str) -> str:
    """The catalog's spelling of ``name`` in ``release``; InputError with the closest names when there is none."""
    return recipe_layer(release, name).name


def recipe_run(name: str, override_file: Optional[str] = None, dotlist=(), target=None) -> BridgeRun:
    """The run ``run_recipe.py --recipe NAME [--config-file FILE] key=value ...`` launches: the recipe (a
    function name or a public alias), the override file merged onto it, then the dotlist words (strings
    as written, or parsed overrides). ``.load()`` gives its Config; InputError for an unknown recipe."""
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.frameworks.bridge.recipes import release_of

    parsed = tuple(parse_override(w) if isinstance(w, str) else w for w in dotlist)
    return BridgeRun(recipe=recipe_name(release_of(target), name), files=(override_file,) if override_file else (), dotlist=parsed,
                     target=target)
