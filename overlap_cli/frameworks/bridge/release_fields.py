"""Keys a run writes that the Megatron-Bridge release it is checked against does not have.

Bridge loads a config leniently: ``ConfigContainer.from_yaml`` drops the keyword arguments a dataclass does
not take with a warning (megatron/training/config/instantiate_utils.py ``_filter_kwargs_for_target``), and
the ``--config-file`` merge skips a key its config object lacks with "Key '...' in overrides not found in
config object ... Skipping." (release.UNKNOWN_KEY_SKIPPED_AT). Such a key has no effect on the run: the
tool drops it the same way before resolving, with a note naming the key and the release, so no value or
finding of a release rests on a field that release does not have (``env_vars`` before 0.6.0, ``ddp.num_buckets``
on 0.4.2). A dotlist on such a key is refused where Hydra's struct mode refuses it (dotlist_shape).
"""

from __future__ import annotations

from overlap_cli.results import Note


def absent_paths(cfg, release) -> list:
    """The paths ``cfg`` writes that ``release`` (a frameworks.bridge.releases module) has no field for, in
    file order of their sections."""
    data = cfg.data if isinstance(cfg.data, dict) else {}
    out = []
    if not release.HAS_ENV_VARS and "env_vars" in data:
        out.append(("env_vars",))
    out.extend(sorted(path for path in release.ABSENT_FIELDS
                      if isinstance(data.get(path[0]), dict) and path[1] in data[path[0]]))
    return out


def _lacks(release, path: tuple) -> bool:
    return (path[:1] == ("env_vars",) and not release.HAS_ENV_VARS) or tuple(path[:2]) in release.ABSENT_FIELDS


def drop_absent(cfg, release) -> tuple:
    """(the config without the keys ``release`` lacks, a Note for each). The config itself when it writes
    none of them. What the run leaves unknown under such a key (a recipe read from source: its env_vars) is
    no input of that release either."""
    import copy

    paths = absent_paths(cfg, release)
    unknown = cfg.unknown or {}
    if unknown and any(_lacks(release, p) for p in unknown):
        cfg = copy.copy(cfg)
        cfg.unknown = {p: why for p, why in unknown.items() if not _lacks(release, p)}
    if not paths:
        return cfg, []
    data = dict(cfg.data)
    notes = []
    for path in paths:
        line = cfg.position(path)[0]
        at = f" (line {line})" if line else ""
        if len(path) == 1:
            data.pop(path[0], None)
            what = ("ConfigContainer has no env_vars in this release: the launch environment is what the "
                    "launcher exports, and no env_vars finding applies")
        else:
            data[path[0]] = {k: v for k, v in data[path[0]].items() if k != path[1]}
            what = f"its {path[0]} config has no field {path[1]}"
        notes.append(Note(f"{'.'.join(path)}{at}: Megatron-Bridge {release.BRIDGE_VERSION} (megatron-core "
                          f"{release.CORE_VERSION}) drops it with a warning when it loads the config "
                          f"({release.UNKNOWN_KEY_SKIPPED_AT}); {what}", "warning"))
    out = copy.copy(cfg)
    out.data = data
    return out, notes
