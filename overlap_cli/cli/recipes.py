"""``overlap recipes list | show``: the Megatron-Bridge recipes shipped with the tool (cli.options
RECIPES_LIST / RECIPES_SHOW). The catalog itself is ``frameworks.bridge.recipes``."""

from __future__ import annotations

import sys

from overlap_cli.cli.check import UsageError


def _release(opts) -> str:
    """The release whose catalog the command reads: ``--bridge-version``, else the newest; a release without
    a catalog is a usage error (never another release's recipes)."""
    from overlap_cli.frameworks.bridge import recipes
    from overlap_cli.problems import InputError

    try:
        release = opts.bridge_version or recipes.release_of(None)
        recipes.index(release)
    except InputError as exc:
        raise UsageError(f"--bridge-version {opts.bridge_version}: {exc.problem.message}") from None
    return release


def _unknown(release: str, name: str) -> UsageError:
    from overlap_cli.frameworks.bridge import recipes

    close = recipes.closest(release, name)
    hint = f"; closest: {', '.join(close)}" if close else "; `overlap recipes list` shows them all"
    return UsageError(f"unknown recipe {name!r} for Megatron-Bridge {release}{hint}")


def list_recipes(opts) -> None:
    """Every recipe of the catalog with the launch it is tuned for (world size and GPU, from its name)."""
    from overlap_cli.frameworks.bridge import recipes

    release = _release(opts)
    gpu = opts.gpu.strip().lower() if opts.gpu else None
    rows = [{**recipes.info(release, n), "how": recipes.how(release, n)} for n in recipes.names(release)]
    if gpu is not None:
        known = sorted({r["gpu"] for r in rows if r["gpu"]})
        if gpu not in known:
            raise UsageError(f"no recipe is tuned for GPU {opts.gpu!r}: the catalog has {'|'.join(known)}")
        rows = [r for r in rows if r["gpu"] == gpu]
    versions = recipes.versions(release)
    if opts.format == "json":
        import json

        from overlap_cli.results import json_document

        doc = json_document(versions=versions, recipes=rows, aliases=recipes.aliases(release))
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    width = max(len(r["name"]) for r in rows)
    sys.stdout.write(f"{'name':<{width}}  {'GPUs':>5}  {'GPU':<6}  how\n")
    for r in rows:
        gpus = str(r["world_size"]) + ("" if r["world_size_from"] == "name" else "*")
        sys.stdout.write(f"{r['name']:<{width}}  {gpus:>5}  {r['gpu'] or '-':<6}  {r['how']}\n")
    built = sum(1 for r in rows if r["how"] == "built")
    sys.stdout.write(f"\n{len(rows)} recipe(s) of Megatron-Bridge {versions['megatron-bridge']}: {built} built (Bridge's "
                     f"recipe called, its to_yaml()), {len(rows) - built} read from Bridge's source (what it leaves "
                     f"unknown stays unknown); {len(recipes.aliases(release))} public aliases (overlap recipes show ALIAS)")
    if any(r["world_size_from"] != "name" for r in rows):
        sys.stdout.write("; * no GPU count in the name: TP·PP·CP·8")
    sys.stdout.write("\n")


def show(opts) -> None:
    """The recipe as Bridge builds it on the target (``recipes.built_text``: Bridge's own dump with the fields
    the dumping machine decided rewritten and marked), or with ``--as-dumped`` exactly as Bridge wrote it
    (``ConfigContainer.to_yaml()``)."""
    from overlap_cli.frameworks.bridge import recipes

    from overlap_cli.problems import InputError

    release = _release(opts)
    try:
        if opts.as_dumped:
            text = recipes.text(release, opts.name)
        else:
            text = recipes.built_text(release, opts.name, transformer_engine=opts.te is not False)
    except KeyError:
        raise _unknown(release, opts.name) from None
    except InputError as exc:  # the release's data the built text needs (its mixed-precision recipes)
        raise UsageError(exc.problem.one_line()) from None
    key = recipes.canonical(release, opts.name)
    if key != opts.name and key != opts.name + "_config":
        sys.stdout.write(f"# {opts.name} is Bridge's alias of {key}\n")
    unknown = recipes.unknown(release, key)
    if unknown:
        sys.stdout.write(f"# read from Bridge's source; unknown (not in this text):\n")
        for path, why in sorted(unknown.items()):
            sys.stdout.write(f"#   {'.'.join(map(str, path)) or '(everything)'}: {why}\n")
    sys.stdout.write(text)
