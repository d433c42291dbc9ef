"""What every Megatron-Bridge form shares once its run is loaded into a ``Config``: the resolution
(Bridge's ``runtime_config_update`` order, over samples when the run leaves keys unknown), the target a
recipe's own world size gives when it does not hold the run, and the provenance layer of each value.

The YAML forms, Python runs and ``run_recipe.py`` launches all resolve here; they differ only in how they
load the run and where they place a finding.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.launch_profile.profile import Target

from overlap_cli.forms.base import Answer
from overlap_cli.results import Note

FRAMEWORK = "bridge"


def config_notes(cfg) -> list:
    """The notes a loaded Bridge config carries: ``${oc.env:...}`` read from this machine, and the loader's
    warnings (a ``${...}`` left unresolved)."""
    out = []
    if cfg.uses_env_resolver:
        out.append(Note("${oc.env:...} was resolved with this machine's environment; the launch machine's value may differ",
                        "environment"))
    out.extend(Note(w, "warning") for w in cfg.warnings)
    return out


def resolve(run, findings_for) -> Answer:
    """The effective values and findings of a loaded Bridge run (``run.config`` a Config)."""
    from overlap_cli.frameworks.bridge.launch_env import effective_entries
    from overlap_cli.frameworks.bridge.unknowns import effective_and_findings, resolve_all

    from overlap_cli.frameworks.bridge import releases
    from overlap_cli.frameworks.bridge.release_fields import drop_absent

    release = releases.of(run.target)
    cfg, dropped = drop_absent(run.config, release)  # keys the release lacks: dropped, as Bridge does
    target = run.target
    _no_ddp(cfg)
    views, world_note = _resolved_where_the_world_holds(cfg, target)
    if views is not None:  # the run's own grid, read before resolving, does not fit its recipe's world
        (views, inputs), target = views, world_note[0]
        world_note = world_note[1]
    else:
        views, inputs = resolve_all(cfg, target)  # one view unless the run leaves inputs unknown
        narrowed = recipe_world_does_not_hold(target, views)
        if narrowed is not None:
            target, world_note = narrowed
            views, inputs = resolve_all(cfg, target)
    effective, findings, some = effective_and_findings(cfg, views, inputs, effective_entries, findings_for)
    if cfg.layered:  # every value names its layer: the resolver set the user's; the others name their source
        for key, v in effective.items():
            if v.layer is None:
                v.layer = cfg.label(("env_vars", key[len("env."):])) if v.source == "env_vars" else v.source
    shown = sorted(".".join(map(str, p)) or "the whole config" for p in cfg.unknown) if cfg.unknown else []
    dp = views[0].dp if len({v.dp for v in views}) == 1 else None  # a run whose TP/PP/CP is unknown has no known DP
    answer = Answer(views[0], effective, findings, target, dp, depends=some, unknown=shown, world_note=world_note,
                    notes=dropped)
    if release.BRIDGE_VERSION != releases.BRIDGE.newest():  # the mirror cites the newest release's lines
        from overlap_cli.frameworks.bridge.cites import finish

        finish(answer, release, _user_files(run, cfg))
    return answer


def _user_files(run, cfg) -> set:
    """The names the run's own files are cited by (``FILE:LINE`` of a layer), never read as upstream files."""
    import os

    files = {str(f) for f in [run.file, cfg.file, *(getattr(layer, "file", None) for layer in cfg.layer_list)] if f}
    return files | {os.path.basename(f) for f in files}


def _no_ddp(cfg) -> None:
    """``ddp: null``: ``from_yaml`` builds the container with ``ddp=None`` (a value given is not replaced by the
    field's default_factory, megatron/training/config/instantiate_utils.py), so no DDP config exists and no
    class default is the run's: its keys are unknown (and validate() fails on it: CFG010)."""
    from overlap_cli.rules.cfg_validate import NULL_DDP

    if isinstance(cfg.data, dict) and "ddp" in cfg.data and cfg.data["ddp"] is None and ("ddp",) not in cfg.unknown:
        line = cfg.position(("ddp",))[0]
        cfg.unknown = {**cfg.unknown, ("ddp",): f"{NULL_DDP}{f' (line {line})' if line else ''}: the run has no DDP config"}


def launch_env(view) -> list:
    """``overlap env``: (variable, Value) of every launch variable the run wants (frameworks/bridge/launch_env.py)."""
    from overlap_cli.frameworks.bridge.launch_env import plan

    return [(e.name, e.wanted()) for e in plan(view, all_variables=True)]


def recipe_world_does_not_hold(target: Target, views: list):
    """(the target without a world size, a note) when the world size is only the one the run's recipe is
    written for (its name: ``..._64gpu_...``) and the run's own TP·PP·CP does not divide it — the user changed
    the model's sharding, so the recipe's GPU count says nothing about where this run launches (an error
    there would be the tool's assumption, not Bridge's). None otherwise: a world size the user gave stands,
    and so does the recipe's when it holds the run."""
    if target.source("world_size") != "recipe" or not any(v.dp_error for v in views):
        return None
    if len({(v.tp, v.pp, v.cp) for v in views}) > 1:
        return None  # the run's TP·PP·CP is unknown (sampled): what depends on it is unknown already

    bad = next(v for v in views if v.dp_error)
    return _world_note(target, bad.tp, bad.pp, bad.cp)


def _world_note(target: Target, tp: int, pp: int, cp: int) -> tuple:
    from overlap_cli.launch_profile.profile import for_run

    note = (f"world size unknown: recipe {target.get('recipe')} is written for {target.world_size} GPUs, which do not "
            f"hold this run's TP*PP*CP = {tp}*{pp}*{cp} = {tp * pp * cp}; the "
            "data-parallel-dependent values are unknown (give --world-size)")
    return for_run(target, recipe_world_holds=False), Note(note, "world-size")


def _resolved_where_the_world_holds(cfg, target: Target) -> tuple:
    """((views, inputs), (target, note)) of a run whose recipe's world size does not hold the TP*PP*CP its
    model section gives (the resolver's step 1: the class defaults under the run's values), resolved once,
    without that world size -- as ``recipe_world_does_not_hold`` finds after a first resolution, which is
    then not made. (None, None) when that is not known before resolving (the run leaves keys unknown, a
    size is no positive integer), or the resolution disagrees: the caller resolves as usual."""
    from overlap_cli.frameworks.bridge import releases
    from overlap_cli.frameworks.bridge.unknowns import resolve_all

    ws = target.world_size
    if cfg.unknown or ws is None or target.source("world_size") != "recipe":
        return None, None
    model = dict(releases.of(target).SECTION_DEFAULTS.get("model", {}))
    model.update(cfg.section("model") or {})
    grid = tuple(model.get(k) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"))
    if not all(type(v) is int and v > 0 for v in grid) or not ws % (grid[0] * grid[1] * grid[2]):
        return None, None
    narrowed = _world_note(target, *grid)
    resolved = resolve_all(cfg, narrowed[0])
    if any((v.tp, v.pp, v.cp) != grid for v in resolved[0]):
        return None, None
    return resolved, narrowed
