"""Bridge's override path called inside a script: ``process_config_with_overrides(cfg, config_filepath=None,
cli_overrides=None)`` (megatron/bridge/training/utils/omegaconf_utils.py:105-160 of megatron-bridge 0.6.2),
which the reader applies to the config it follows: the YAML file merged, then the dotlists as Hydra applies
them -- the same merge a command line's dotlists get (config.overrides.apply_overrides). What Bridge refuses
(a file that is not there, a key the config lacks) is the run's refusal at the call's line.
"""

from __future__ import annotations

import copy

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.frameworks.bridge.python_interp import Interpreter

from overlap_cli.frameworks.bridge.python_abstract import CfgRef, ConfigState, Refusal, Site, Unknown


def process_config_with_overrides(interp: Interpreter, args: list, kwargs: dict, node):
    """``process_config_with_overrides(cfg, config_filepath=None, cli_overrides=None)``
    (training/utils/omegaconf_utils.py:105-160): the YAML file merged onto the config, then the dotlists as
    Hydra applies them (config.overrides.apply_overrides, the same merge a command line's dotlists get);
    the config object is changed in place and returned."""
    names = ("config", "config_filepath", "cli_overrides")
    given = dict(zip(names, args))
    given.update({k: v for k, v in kwargs.items() if k in names})
    cfg = given.get("config")
    where = f"process_config_with_overrides(...) at {interp.at(node)}"
    if not isinstance(cfg, CfgRef) or cfg.path != ():
        return Unknown(f"{where}: its config is not one overlap-cli follows")
    state = cfg.state
    path, words = given.get("config_filepath"), given.get("cli_overrides")
    if isinstance(path, Unknown) or isinstance(words, Unknown) or (words is not None and not isinstance(words, list)) \
            or (path is not None and not isinstance(path, str)) or any(not isinstance(w, str) for w in words or ()):
        reason = path.reason if isinstance(path, Unknown) else words.reason if isinstance(words, Unknown) else "its arguments are not known"
        state.forget((), f"{where}: {reason}")
        return cfg
    site = None if interp.in_helper else Site(node.lineno, node.col_offset + 1, None, interp.file)
    if path is not None:
        _merge_yaml(interp, state, path, site, node)
    if words:
        _apply_dotlists(interp, state, words, site, node, where)
    return cfg


def _merge_yaml(interp: Interpreter, state: ConfigState, path: str, site, node) -> None:
    """OmegaConf.merge of the YAML file onto the config (omegaconf_utils.py:150-154): mappings key by key,
    anything else replaced."""
    import os

    from overlap_cli.config.loader import load_config
    from overlap_cli.problems import InputError

    file = path if os.path.isabs(path) or os.path.isfile(path) else os.path.join(os.path.dirname(interp.file), path)
    if not os.path.isfile(file):
        raise Refusal(f"process_config_with_overrides: config file {path} does not exist (Bridge raises FileNotFoundError)", node.lineno)
    try:
        data = load_config(file).data
    except InputError as exc:
        raise Refusal(f"process_config_with_overrides: {exc.problem.one_line()}", node.lineno) from None

    def merge(prefix: tuple, value) -> None:
        current = state.read(prefix, missing=None) if prefix else None
        if isinstance(value, dict) and (not prefix or isinstance(current, dict)):
            for k, v in value.items():
                merge(prefix + (k,), v)
            return
        state.write(prefix, value, site)

    merge((), data)


def _apply_dotlists(interp: Interpreter, state: ConfigState, words: list, site, node, where: str) -> None:
    """The dotlists applied as Hydra applies them (config.overrides.apply_overrides over the config as it is)."""
    from overlap_cli.config.document import Config
    from overlap_cli.config.overrides import apply_overrides, parse_override
    from overlap_cli.frameworks.bridge.dotlist_shape import shape_of
    from overlap_cli.problems import InputError

    temp = Config(file=interp.file, data=copy.deepcopy(state.data), positions={})
    temp.unknown = dict(state.unknown)
    try:
        parsed = [parse_override(w) for w in words]
        apply_overrides(temp, parsed, base_label=f"the config at {interp.at(node)}", shape=shape_of(interp.reader.ctx.release))
    except InputError as exc:
        raise Refusal(f"{where}: {exc.problem.message}", node.lineno, node.col_offset + 1) from None
    for ov in parsed:
        if ov.op == "delete":
            state.forget(ov.path, f"deleted by {ov.raw} at {interp.at(node)}")
            continue
        value = temp.data
        for part in ov.path:
            value = value.get(part) if isinstance(value, dict) else None
        state.write(ov.path, copy.deepcopy(value), site)
