"""What a catalog recipe's name says about where it launches, for the target (launch_profile ranks it).

Bridge's recipe names carry the launch they are tuned for (``..._64gpu_h100_...``); the catalog holds each
recipe's world size and GPU read from its name (recipes.info). launch_profile knows no catalog: the
engines and the command line hand it this lookup."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.launch_profile.profile import RecipeLaunch


def recipe_launch(name: str, target) -> Optional[RecipeLaunch]:
    """The launch recipe ``name`` is tuned for, under the catalog's spelling of the name, in the catalog of
    the release ``target`` names; None for a name that catalog does not hold (the loader reports it)."""
    from overlap_cli.frameworks.bridge import recipes
    from overlap_cli.launch_profile.profile import GPUS, RecipeLaunch

    try:
        row = recipes.info(recipes.release_of(target), name)
    except KeyError:
        return None
    gpu = row.get("gpu")
    return RecipeLaunch(row["name"], row.get("world_size"), gpu if gpu in GPUS else None)
