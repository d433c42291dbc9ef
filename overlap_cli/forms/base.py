"""The one input model every form's ``load`` produces (``Run``) and what its ``resolve`` answers (``Answer``).

A ``Run`` is *what runs* (the form's loaded config: a Bridge ``Config``, a Megatron-LM launch, ...), *where
it runs* (the ``Target`` the file's own statements and launch lines made), and what the reading itself has
to say (typed notes). The engine (check.engine) turns an ``Answer`` into the ``FileResult`` every report
writes, and adds the notes every form shares (world size, target provenance, unknown keys) in one place.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

    from overlap_cli.launch_profile.profile import Target

from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)


@dataclass
class Launch:
    """What a launch line says about where the run runs: the world size its torchrun / srun sizes give and
    the line that gives it (None: the launch does not say)."""

    world_size: Optional[int] = None
    line: Optional[int] = None


@dataclass
class Run:
    """One run, as a form read it. ``form``: the form module that loaded it (resolve, fix and annotate are
    asked there); ``config``: the form's loaded object; ``detail``: what else the form keeps for its own
    resolve / placing (the launch a recipe launch was read from, ...)."""

    form: Any
    file: Optional[str]
    text: Optional[str]
    target: Target
    config: Any
    notes: list = field(default_factory=list)  # results.Note, in the order they are printed
    launch: Launch = field(default_factory=Launch)
    detail: Any = None
    # The file whose ``# overlap: ignore[...]`` comments and per-file selection apply, when it is not ``file``
    # (a Python run's file without ``::FUNCTION``; the top override file of a merged run).
    comments_file: Optional[str] = None


@dataclass
class Answer:
    """A resolved run. ``view``: what the rules read (the first sample's view when the run leaves keys
    unknown); ``target``: the target the values were computed for (a form may narrow it, e.g. drop a recipe's
    world size that does not hold the run); ``dp``: the data-parallel size when every sample agrees on it."""

    view: Any
    effective: dict
    findings: list
    target: Target
    dp: Optional[int] = None
    depends: list = field(default_factory=list)  # findings only some samples give ("CODE (key)")
    unknown: list = field(default_factory=list)  # keys the run leaves unknown, as printed
    world_note: Any = None  # a Note the resolution made about the world size (it replaces the generic one)
    notes: list = field(default_factory=list)  # further Notes of the resolution


@dataclass
class DiscoveryContext:
    """What a form's ``discover`` may need beyond the file: ``configs_only`` (the pre-commit hook: skip what
    is not plainly a config rather than check it) and the command's target (an override file's recipe
    named in [tool.overlap])."""

    configs_only: bool = False
    target: Any = None
