"""The releases of a framework overlap-cli mirrors, each one data module, chosen by the target.

Each framework keeps its releases in a ``releases/`` package, one module per release (``v0_6_2.py`` is
release 0.6.2), and lists them in a ``Releases`` table: the version a target names selects the module, no
version selects the newest, and a version the tool holds no data for is an input error, never another
release's facts (a fact of 0.6.2 checked against a 0.4.2 run would be a guess presented as Bridge's word)."""

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


class Releases:
    """``loaders``: {module name (``v0_6_2``): a function importing that module}; ``product``: the name in
    messages (``Megatron-Bridge``); ``key``: the target field that selects one (``bridge_version``)."""

    def __init__(self, product: str, key: str, loaders: dict):
        self.product, self.key = product, key
        self._loaders = {module_version(name): load for name, load in loaders.items()}

    def versions(self) -> list:
        """The versions held, oldest first (a branch's snapshot, ``main``, last)."""
        return sorted(self._loaders, key=_order)

    def newest(self) -> str:
        """The newest numbered release held: the default. A branch's snapshot is chosen only by name."""
        return [v for v in self.versions() if is_release(v)][-1]

    def get(self, version: Optional[str] = None):
        """The data module of ``version`` (None: the newest). InputError for a release the tool holds no data for."""
        chosen = self.newest() if version is None else version
        load: Optional[Callable] = self._loaders.get(chosen)
        if load is None:
            raise InputError(InputProblem(
                "<target>",
                f"{self.key} {version}: overlap-cli holds no data for {self.product} {version} (it mirrors "
                f"{', '.join(self.versions())}); checking against another release's defaults would be a guess",
                key=self.key,
            ))
        return load()

    def of(self, target):
        """The data module of the release ``target`` names in its ``key`` field (the newest when it names none)."""
        return self.get(getattr(target, self.key, None) if target is not None else None)
