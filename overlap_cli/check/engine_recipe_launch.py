"""The pipeline for a launch script that runs Megatron-Bridge's recipe runner (``run_recipe.py``): the run is
the recipe it names, merged with the launch's overrides in the runner's order (frameworks.bridge.run_recipe),
on the world size the launch starts (torchrun's or srun's sizes; a ``--world-size`` / ``--nodes`` flag
or directive wins) — checked by the Bridge resolver and rules like any merged run."""

from __future__ import annotations

from overlap_cli.results import UNKNOWN, FileResult, Value, finding_order
from overlap_cli.problems import InputError, InputProblem


def lookup_recipe(name: str):
    """The catalog's name of the recipe a launch names (None: not in the catalog). One call, so the
    catalog's aliases answer here as soon as it has them."""
    from overlap_cli.frameworks.bridge import recipes

    return recipes.canonical(name)


def check_recipe_launch(result: FileResult, path: str, text: str, found, target, selection, overrides=None):
    """Fill ``result``; return the resolved view, or None on an input error."""
    from overlap_cli.check.selection import filter_findings
    from overlap_cli.config.layers import COMMAND_LINE
    from overlap_cli.frameworks.bridge.runs import recipe_run
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.frameworks.bridge import run_recipe
    from overlap_cli.frameworks.bridge.launch_env import effective_entries
    from overlap_cli.frameworks.bridge.unknowns import effective_and_findings, resolve_all
    from overlap_cli.rules import run_rules

    try:
        run = run_recipe.read(found)
        if run.recipe is None:
            raise InputError(InputProblem(path, f"{run_recipe.RUNNER}: the recipe it runs is not known statically",
                                          line=run.recipe_line))
        name = lookup_recipe(run.recipe)
        if name is None:
            raise InputError(InputProblem(path, _not_in_catalog(run.recipe), line=run.recipe_line))
        dotlist = []
        for raw, line in run.overrides:
            try:
                dotlist.append((parse_override(raw), line))
            except InputError as exc:
                raise InputError(InputProblem(path, exc.problem.message, line=line)) from None
        target = _launch_target(target, name, found)
        cfg = recipe_run(name, None, [o for o, _ in dotlist] + list(overrides or ())).load()
        for layer in cfg.layer_list:  # the launch's words are the command line: name the script's lines
            if layer.kind == COMMAND_LINE:
                layer.file, layer.label = path, path
                layer.positions = {o.path: (line, 1) for o, line in dotlist}
        result.target = target.to_json(None)
        _unknown_overrides(cfg, run.unknown_keys)
        views, inputs = resolve_all(cfg, target)  # one view unless the recipe leaves keys unknown
        view = views[0]
        result.effective, findings, some = effective_and_findings(
            cfg, views, inputs, effective_entries, lambda v: filter_findings(run_rules(v), path, text, selection))
    except InputError as exc:
        result.error = exc.problem
        return None
    result.target = target.to_json(view.dp if len({v.dp for v in views}) == 1 else None)
    for key, v in result.effective.items():
        if v.layer is None:
            v.layer = cfg.label(("env_vars", key[len("env."):])) if v.source == "env_vars" else v.source
    _mark_unknown(result.effective, run.unknown_keys)
    for key, v in result.effective.items():
        env = found.env.get(key[len("env."):]) if key.startswith("env.") else None
        if env is not None and v.source == "shell" and env.how in ("export", "prefix"):
            v.reason = v.reason.replace("exported in the shell", f"exported by the launch (line {env.line})", 1)
            v.layer = f"{path}:{env.line}"
    unknown = {k for k, v in result.effective.items() if v.source == UNKNOWN}
    lines = {o.path: line for o, line in dotlist}
    for f in findings:  # a finding is at the launch's word that set its key, else in the layer that did
        path_ = tuple(f.key.split(".")) if f.key else None
        if path_ is not None and path_ in lines:
            f.line, f.column, f.origin = lines[path_], None, None
        else:
            f.line = f.column = None
            f.origin = cfg.label(path_) if path_ is not None else f"recipe {name}"
    result.findings = sorted((f for f in findings if f.key not in unknown), key=finding_order)
    result.notes.append(f"read as a Megatron-Bridge run: {run_recipe.RUNNER} --recipe {name} (line {run.recipe_line}),"
                        f" {len(run.overrides)} override(s) from the launch")
    if some:
        result.notes.append("findings that depend on keys the run leaves unknown (not reported): " + ", ".join(some))
    if cfg.unknown:
        shown = sorted(".".join(map(str, p)) or "the whole config" for p in cfg.unknown)
        result.notes.append(f"{len(shown)} key(s) the run leaves unknown: " + ", ".join(shown[:6])
                            + (" ..." if len(shown) > 6 else ""))
    result.notes.extend(run.notes)
    result.notes.extend(s for s in found.unknowns if "is not known statically" in s or "placeholder" in s)
    result.notes.extend(cfg.warnings)
    if target.source("world_size") == "launch":
        where = f" (line {found.world_size_line})" if found.world_size_line else ""
        result.notes.append(f"world size {target.world_size} from the launch's sizes{where}")
    elif target.world_size is None:
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    elif found.world_size is not None and found.world_size != target.world_size:
        where = f" (line {found.world_size_line})" if found.world_size_line else ""
        result.notes.append(f"world size {target.world_size} from {target.source_label('world_size')} (flag > file): "
                            f"the launch's own sizes{where} give {found.world_size}")
    note = target.provenance_note()
    if note:
        result.notes.append(note)
    return view


def _not_in_catalog(name: str) -> str:
    """A launch names a recipe the catalog does not hold. The catalog holds the recipes of Megatron-Bridge that
    could be built offline, under their function names: an alias, a recipe that reads a Hugging Face config
    or one newer than the release may be real, so the line says what is known — it is not in the catalog."""
    from overlap_cli.frameworks.bridge.recipes import closest, versions

    near = closest(name)
    hint = f"; closest: {', '.join(near)}" if near else " (overlap recipes list shows them all)"
    return (f"scripts/training/run_recipe.py --recipe {name}: not in overlap-cli's catalog of Megatron-Bridge "
            f"{versions().get('megatron-bridge', '?')} recipes (which lacks Bridge's aliases and the recipes that read a "
            f"Hugging Face config){hint}")


def _launch_target(target, recipe: str, found):
    """The target of the run: the recipe's own launch (its GPU) below every statement about this file, the
    launch's world size above the recipe's and [tool.overlap]'s, a flag / directive / per-file-target above
    both (launch_profile.profile's precedence, the launch's sizes ranked as the recipe's)."""
    from overlap_cli.frameworks.bridge.recipe_launch import recipe_launch
    from overlap_cli.launch_profile.profile import RecipeLaunch, for_run

    exported = {n: e.value for n, e in found.env.items() if e.how in ("export", "prefix") and isinstance(e.value, str)}
    # what the launch exports is the process's environment: it wins over env_vars (setdefault)
    return for_run(target, recipe=recipe_launch(recipe) or RecipeLaunch(recipe), launch_world_size=found.world_size,
                   launch_env=exported)


def _unknown_overrides(cfg, unknown_keys: list) -> None:
    """An override whose value is not known statically (``model.tensor_model_parallel_size=$TP`` in a loop) is
    a key the run leaves unknown: its value leaves the config and what Bridge derives from it is found by
    resolving with it varied (frameworks/bridge/unknowns.py), never from the recipe's value it replaces."""
    for key, why in unknown_keys:
        if not key:
            continue  # a word that may be any override: every value it could set is marked below
        path = tuple(key.split("."))
        node = cfg.data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
        cfg.unknown = {**cfg.unknown, path: why}


def _mark_unknown(effective: dict, unknown_keys: list) -> None:
    """A word of the launch that may be any override (``$EXTRA_ARGS``) makes every value it could set unknown
    (all of them); an override of a known key with an unknown value is unknown through ``cfg.unknown``
    (_unknown_overrides)."""
    for key, why in unknown_keys:
        if key == "":
            for k, v in list(effective.items()):
                effective[k] = Value(UNKNOWN, UNKNOWN, why, layer=v.layer)
