"""The releases of a framework overlap-cli mirrors, each one data module, chosen by the target.

Each framework keeps its releases in a ``releases/`` package, one module per release (``v0_6_2.py`` is
release 0.6.2, ``main.py`` a snapshot of a branch), and lists them in a ``Releases`` table: the version a
target names selects the module, no version selects the newest numbered release, and a version the tool
holds no data for is an input error, never another release's facts (a fact of 0.6.2 checked against a 0.4.2
run would be a guess presented as Bridge's word).

No fallback between releases. Every release module of a table defines the same public names (a name one
release lacks upstream is still defined there, saying so: an empty table, None), so code written against
one release's names reads every release's. A module may build on another release's data only by an
explicit import of a named value at module level::

    from overlap_cli.frameworks.bridge.releases.v0_6_2 import MODEL_OVERLAP_DEFAULTS  # same in 0.6.0

never by importing the other module itself (``import ...v0_6_2``, whose attributes would be looked up in
the other release each time they are read), ``import *``, a module ``__getattr__`` (PEP 562: a name this
release lacks would be answered by another), or ``globals()`` / ``vars()`` edits. ``Releases.get`` returns
the module itself, so a name a release lacks raises AttributeError. tests/frameworks/test_releases.py
holds every release module to this and lists the names shared by import."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

from overlap_cli.problems import InputError, InputProblem


def module_version(module_name: str) -> str:
    """``v0_6_2`` -> ``0.6.2``; a module not named after a number (``main``: a branch's snapshot) is its name."""
    if module_name.startswith("v") and module_name[1:2].isdigit():
        return module_name[1:].replace("_", ".")
    return module_name


def is_release(version: str) -> bool:
    """A numbered release (``0.6.2``), not a branch's snapshot (``main``)."""
    return all(part.isdigit() for part in version.split("."))


def _order(version: str) -> tuple:
    # a snapshot of a branch sorts after every numbered release
    return (0, tuple(int(p) for p in version.split("."))) if is_release(version) else (1, (version,))


def stated_problem(target, key: str, message: str) -> InputProblem:
    """An input problem about the target's field ``key``, placed where that field was written: the command
    line, the config's ``# overlap: target`` line, [tool.overlap] or a per-file-target entry, --detect
    (launch_profile.profile.Target.stated_at)."""
    if target is None or not hasattr(target, "stated_at"):
        return InputProblem("<target>", message, key=key)
    file, where, line = target.stated_at(key)
    return InputProblem(file, message, key=where, line=line)


class Releases:
    """``loaders``: {module name (``v0_6_2``): a function importing that module}; ``product``: the name in
    messages (``Megatron-Bridge``); ``key``: the target field that selects one (``bridge_version``)."""

    def __init__(self, product: str, key: str, loaders: dict):
        self.product, self.key = product, key
        self._loaders = {module_version(name): load for name, load in loaders.items()}
        # the table is fixed once built: every run's target asks for the default, so it is worked out once
        self._versions = sorted(self._loaders, key=_order)
        self._newest = [v for v in self._versions if is_release(v)][-1]

    def versions(self) -> list:
        """The versions held, oldest first (a branch's snapshot, ``main``, last)."""
        return list(self._versions)

    def newest(self) -> str:
        """The newest numbered release held: the default. A branch's snapshot is chosen only by name."""
        return self._newest

    def holds(self, version: str) -> bool:
        return version in self._loaders

    def get(self, version: Optional[str] = None, target=None):
        """The data module of ``version`` (None: the newest). InputError for a release the tool holds no data
        for, placed where ``target`` names it (stated_problem)."""
        chosen = self.newest() if version is None else version
        load: Optional[Callable] = self._loaders.get(chosen)
        if load is None:
            raise InputError(stated_problem(target, self.key, self.missing(version, target)))
        return load()

    def missing(self, version: str, target=None) -> str:
        """The sentence of a release the tool holds no data for; an installed one (--detect) says how to name
        the release to check against instead."""
        held = f"(it mirrors {', '.join(self.versions())})"
        if target is not None and target.source(self.key) == "detected":
            flag = "--" + self.key.replace("_", "-")
            return (f"{self.product} {version} is installed, a release overlap-cli holds no data for {held}: name "
                    f"the release to check against with {flag} (main for a build of the main branch)")
        return f"overlap-cli holds no data for {self.product} {version} {held}; checking against another release's defaults would be a guess"

    def of(self, target):
        """The data module of the release ``target`` names in its ``key`` field (the newest when it names none)."""
        return self.get(getattr(target, self.key, None) if target is not None else None, target)
