"""Megatron-Bridge's side of the Python reader: ``Context``, the python_interp.Library that answers the
interpreter's questions about Bridge's names, and the config state of a ConfigContainer.

- a run's start: a catalog recipe called (``Context.recipe``), ``ConfigContainer.from_yaml("path")``
  (``Context.from_yaml``), ``ConfigContainer(...)`` built from its fields, or an unknown start;
- Bridge's objects as values (python_values): ``CommOverlapConfig(...)``, the userbuffers presets by name,
  the mixed-precision recipes, ``MixedPrecisionConfig(...)`` and the config classes built field by field,
  torch dtypes;
- Bridge's helpers, followed from their source (``Context.sources``; cached in SOURCE_READERS);
- ``pretrain(cfg)`` / ``finetune(cfg)``: the run ends there;
- what a ConfigContainer's own methods do (``validate()``, ``env_vars.update(...)``...), and what Python
  or Bridge refuses when the run is built (python_abstract.Refusal with the line).
"""

from __future__ import annotations

import ast
import copy

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

    from overlap_cli.frameworks.bridge.python_interp import Interpreter

from overlap_cli.frameworks.bridge.python_abstract import (
    NOT_KNOWN,
    BadPython,
    CfgRef,
    ConfigObject,
    ConfigState,
    Func,
    Import,
    Refusal,
    Site,
    Start,
    Unknown,
    is_literal,
    short,
    storable,
    words_behind,
)
from overlap_cli.frameworks.bridge.python_interp import Library, ModuleReader, parse
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

RUN_CALLS = ("pretrain", "finetune")
# Methods of a ConfigContainer (or its sections) that change nothing the tool reads.
_INERT_METHODS = ("to_yaml", "print_yaml", "to_dict", "__repr__", "get", "keys", "items", "values", "copy")
# The ModuleReader of each Bridge module read from its source, by (module, id(Context)).
SOURCE_READERS: dict = {}


def is_bridge_module(name: Optional[str]) -> bool:
    return bool(name) and (name == "megatron.bridge" or name.startswith("megatron.bridge."))


def names_a_recipe_module(bound: Import) -> bool:
    """A public ``*_config`` imported from Bridge's recipe packages: a recipe call even when the catalog
    has no such name (the reader then says so, with the closest names)."""
    top = bound.module.split(".")[2:3]
    return top in (["recipes"], ["perf_recipes"]) and bound.name.endswith("_config") and not bound.name.startswith("_")


class ContainerState(ConfigState):
    """A ConfigContainer a run builds."""

    def _stored(self, path: tuple) -> tuple:
        # GPTDatasetConfig of Bridge 0.4 / 0.5 keeps Megatron-Core's field sequence_length and spells
        # seq_length as a property over it (training/config.py:384-390 in 0.4.2, 410-416 in 0.5.1): its
        # dump holds sequence_length alone, and cfg.dataset.seq_length reads and writes that field.
        if path == ("dataset", "seq_length"):
            dataset = self.data.get("dataset")
            if isinstance(dataset, dict) and "sequence_length" in dataset and "seq_length" not in dataset:
                return ("dataset", "sequence_length")
        return path

    def read(self, path: tuple, missing=None):
        return super().read(self._stored(path), missing)

    def write(self, path: tuple, value, site: Optional[Site]) -> None:
        super().write(self._stored(path), value, site)

    def twin(self, path: tuple) -> Optional[tuple]:
        # MixedPrecisionConfig.__setattr__ keeps fp8_param == fp8_param_gather, fp4 likewise
        # (training/mixed_precision.py:81-95).
        if len(path) == 2 and path[0] == "mixed_precision":
            other = _mixed_precision_twin(path[1])
            return None if other is None else (path[0], other)
        return None

    def put(self, path: tuple, value, site: Optional[Site]) -> None:
        if len(path) == 1:
            value = _for_field(path[0], value)
        super().put(path, value, site)


def _mixed_precision_twin(key) -> Optional[str]:
    for a, b in (("fp8_param_gather", "fp8_param"), ("fp4_param_gather", "fp4_param")):
        if key in (a, b):
            return b if key == a else a
    return None


def _for_field(field_name: str, value):
    """A known config class given for another ConfigContainer field than its own is an object overlap-cli
    holds no defaults for there."""
    if not isinstance(value, ConfigObject) or value.rest is not None or not isinstance(value.get("_target_"), str):
        return value
    from overlap_cli.frameworks.bridge.python_values import CLASS_FIELD

    cls = value["_target_"].rsplit(".", 1)[-1]
    if CLASS_FIELD.get(cls, field_name) == field_name:
        return value
    return ConfigObject(value, value.sites, f"a {cls} given as ConfigContainer.{field_name}: its other fields are not known")


@dataclass
class Context(Library):
    """``recipe(name)`` -> (catalog name, data, unknown) or None when ``name`` is no catalog recipe (``data``
    the catalog's own, read only: shared by every run that starts from it);
    ``from_yaml(path, line)`` -> data (InputError when unreadable); ``sources``: module name -> source
    text of Bridge modules (helpers read from Bridge itself); ``module``: this file's module name."""

    recipe: Callable
    is_recipe: Callable
    from_yaml: Optional[Callable] = None
    sources: Optional[Callable] = None
    module: Optional[str] = None
    closest: Optional[Callable] = None
    invocation: Optional[object] = None  # python_stdlib.Invocation: the script's words and environment
    release: Optional[object] = None  # frameworks.bridge.releases' module: the classes' fields and defaults
    own_modules: Optional[Callable] = None  # (importer, dotted module) -> the reader of a module of the user's, or None

    def chosen_call(self, interp: Interpreter, reason: str):
        """A config built by one of a mapping's functions, not known which: every key unknown, for the reason."""
        return start_unknown(f"the config {reason}")

    # -- the interpreter's questions (python_interp.Library) ---------------------------------------
    def ends_run(self, name: Optional[str]) -> bool:
        return name in RUN_CALLS

    def config_path(self, path: tuple) -> tuple:
        if path[:2] == ("model", "transformer"):  # cfg.model.transformer.X is the provider's field X
            return ("model",) + path[2:]
        return path

    def field_twin(self, target: str, key) -> Optional[str]:
        return _mixed_precision_twin(key) if target.endswith("MixedPrecisionConfig") else None

    def name_value(self, value):
        """A userbuffers preset imported by name is its value (comm_overlap.py's module constants)."""
        if isinstance(value, Import) and value.name.startswith("userbuffers_") and is_bridge_module(value.module):
            from overlap_cli.frameworks.bridge import python_values as pv

            if pv.is_preset_name(value.name):
                return pv.preset_value(value.name)
            from overlap_cli.frameworks.bridge.releases import BRIDGE

            return Unknown(f"{value.name}: not a userbuffers preset of Megatron-Bridge {BRIDGE.get().BRIDGE_VERSION}")
        return value

    def launched_unknown(self, interp: Interpreter, func, args: list, kwargs: dict, node):
        """``pretrain(cfg, ...)`` / ``finetune(config=cfg, ...)`` of Megatron-Bridge handed a config the reader
        does not know (built by a function it cannot follow): the run is that launch's, every key unknown."""
        if not (isinstance(func, Import) and is_bridge_module(func.module) and func.name in RUN_CALLS):
            return None
        config = args[0] if args else kwargs.get("config")
        if not isinstance(config, Unknown):
            return None
        return start_unknown(f"the config {func.name}(...) at {interp.at(node)} is handed: {config.reason}").state

    def own_module(self, importer, module: str):
        return self.own_modules(importer, module) if self.own_modules is not None else None

    def module_attribute(self, module: str, attr: str):
        if module == "torch":
            from overlap_cli.frameworks.bridge.python_values import torch_dtype

            return torch_dtype(attr)
        return None

    def check_write(self, path: tuple, value, line: int, column: int) -> None:
        """What Python raises when the run is built (before Bridge sees it)."""
        if path[:2] == ("comm_overlap", "tp_comm_overlap_cfg") and len(path) == 2 and isinstance(value, str):
            # Bridge keeps the string; CommOverlapConfig.setup then reads its attributes (comm_overlap.py:
            # 620-632 asdict()s a dataclass): a preset's *name* where the preset object belongs fails there.
            from overlap_cli.frameworks.bridge.python_values import is_preset_name

            hint = f" (import {value} from megatron.bridge.training.comm_overlap and assign it)" if is_preset_name(value) else ""
            raise Refusal(f"comm_overlap.tp_comm_overlap_cfg is the string {value!r}: Bridge needs the preset "
                          f"object, not its name{hint}", line, column)

    def config_method(self, interp: Interpreter, owner: CfgRef, node):
        """``cfg.X.method(...)``: the dict methods of env_vars, and the inert ones of a ConfigContainer."""
        name = node.func.attr
        value = owner.state.read(owner.path)
        args = [interp.eval(a) for a in node.args]
        if owner.path == ("env_vars",) and name in ("update", "setdefault", "pop", "get"):
            if isinstance(value, Unknown):
                return value
            if any(isinstance(a, Unknown) for a in args) or node.keywords:
                owner.state.forget(owner.path, f"env_vars.{name}(...) at {interp.at(node)} with values overlap-cli cannot read")
                return None
            env = dict(value or {})
            site = None if interp.in_helper else Site(node.lineno, node.col_offset + 1, None, interp.file)
            if name == "update" and len(args) == 1 and isinstance(args[0], dict):
                for k, v in args[0].items():
                    owner.state.write(("env_vars", k), v, site)
                return None
            if name == "setdefault" and args:
                if args[0] not in env:
                    owner.state.write(("env_vars", args[0]), args[1] if len(args) > 1 else None, site)
                return env.get(args[0], args[1] if len(args) > 1 else None)
            if name == "pop" and args:
                out = env.get(args[0], args[1] if len(args) > 1 else None)
                node_env = owner.state.data.get("env_vars")
                if isinstance(node_env, dict):
                    node_env.pop(args[0], None)
                owner.state.written.pop(("env_vars", args[0]), None)
                return out
            if name == "get" and args:
                return env.get(*args)
        if name in _INERT_METHODS:
            return Unknown(f"{short(node)} at {interp.at(node)}")
        if name == "validate" and owner.path == ():
            return None  # runtime_config_update runs validate() again at launch (config.py:1888): modelled there
        return super().config_method(interp, owner, node)

    def call(self, interp: Interpreter, func: Import, args: list, kwargs: dict, node):
        """A function imported from Megatron-Bridge: a recipe (a start), ConfigContainer.from_yaml, the
        classes and functions python_values knows, or a helper whose source the catalog build reads."""
        from overlap_cli.frameworks.bridge import python_values as pv

        name = func.name
        if not is_bridge_module(func.module) and func.module not in ("", "torch"):
            target = pv.config_class_target(func.module, name)
            if target is not None or pv.looks_like_config_class(func.module, name):  # Megatron-Core's configs
                return _config_object(interp, func, target, args, kwargs, node)
            return NOT_KNOWN
        if name == "process_config_with_overrides" and is_bridge_module(func.module):
            from overlap_cli.frameworks.bridge.python_overrides import process_config_with_overrides

            return process_config_with_overrides(interp, args, kwargs, node)
        if name == "from_yaml" and func.module.endswith("ConfigContainer"):
            return self._from_yaml(interp, args, node)
        if name == "ConfigContainer" and is_bridge_module(func.module):
            return _container(interp, args, kwargs, node, self.release)
        if name == "MixedPrecisionConfig" and is_bridge_module(func.module):
            if args or "**" in kwargs or any(isinstance(v, Unknown) for v in kwargs.values()):
                return Unknown(f"MixedPrecisionConfig(...) at {interp.at(node)} with arguments overlap-cli cannot read")
            return pv.mixed_precision_object(kwargs, self.release)
        if name == "CommOverlapConfig":
            if "tp_comm_overlap" not in kwargs and not args and "**" not in kwargs:
                raise Refusal("CommOverlapConfig(...) without tp_comm_overlap: the dataclass has no default for it "
                              "(megatron/bridge/training/comm_overlap.py:384) and Python raises TypeError", node.lineno, node.col_offset + 1)
            if args or "**" in kwargs or any(isinstance(v, Unknown) for v in kwargs.values()):
                return Unknown(f"CommOverlapConfig(...) at {interp.at(node)} with arguments overlap-cli cannot read")
            for k, v in kwargs.items():
                if k == "tp_comm_overlap_cfg" and isinstance(v, str):
                    self.check_write(("comm_overlap", "tp_comm_overlap_cfg"), v, node.lineno, node.col_offset + 1)
            return pv.comm_overlap_config(kwargs, self.release)
        if pv.is_preset_name(name) if name.startswith("userbuffers_") else False:
            return Unknown("a preset called as a function")
        if name in pv.mixed_precision_names(self.release) and not args:
            return pv.mixed_precision_value(name, self.release)
        if name == "get_mixed_precision_config" and len(args) == 1:
            if isinstance(args[0], Unknown):
                return args[0]
            value = pv.mixed_precision_value(args[0], self.release) if isinstance(args[0], str) else None
            return value if value is not None else Unknown(f"get_mixed_precision_config({args[0]!r}) at {interp.at(node)}: not a recipe overlap-cli knows")
        target = pv.config_class_target(func.module, name)
        if target is not None or (pv.looks_like_config_class(func.module, name) and not self.is_recipe(name, func.module)):
            return _config_object(interp, func, target, args, kwargs, node)
        return self._recipe_or_helper(interp, func, args, kwargs, node)

    # -- the starts and helpers ------------------------------------------------------------------
    def _recipe_or_helper(self, interp: Interpreter, func: Import, args: list, kwargs: dict, node):
        name = func.name
        hit = self.recipe(name, func.module) if self.is_recipe(name, func.module) else None
        if hit is not None and args:
            return start_unknown(f"{name}(...) at {interp.at(node)} is called with positional arguments")
        if hit is not None and not args:
            if any(isinstance(v, Unknown) for v in kwargs.values()):
                return start_unknown(f"{name}(...) at {interp.at(node)} takes arguments overlap-cli cannot read")
            return _recipe_start(interp, hit, kwargs, node)
        source = self._bridge_source(func)
        if source is not None:
            return interp.call_function(source, args, kwargs, node)
        if names_a_recipe_module(func) and not self.is_recipe(name, func.module):
            near = self.closest(name) if self.closest is not None else []
            hint = f"; did you mean {', '.join(near)}?" if near else " (overlap recipes list shows them all)"
            raise BadPython(f"unknown recipe {name!r} imported from {func.module}: not a recipe of the catalog{hint}",
                            node.lineno, node.col_offset + 1)
        return NOT_KNOWN

    def _bridge_source(self, func: Import) -> Optional[Func]:
        if self.sources is None:
            return None
        found = self.sources(func.module, func.name)
        if found is None:
            return None
        module, text = found
        reader = SOURCE_READERS.get((module, id(self)))
        if reader is None:
            reader = ModuleReader(parse(text, module), module, self, module, own=False)
            SOURCE_READERS[(module, id(self))] = reader
        target = reader.names.get(func.name)
        if isinstance(target, Import) and (target.module, target.name) != (func.module, func.name):
            return self._bridge_source(target)
        return target if isinstance(target, Func) else None

    def _from_yaml(self, interp: Interpreter, args: list, node):
        if len(args) != 1 or not isinstance(args[0], str):
            return start_unknown(f"ConfigContainer.from_yaml(...) at {interp.at(node)}: the path is not a literal")
        if self.from_yaml is None:
            return start_unknown(f"ConfigContainer.from_yaml({args[0]!r}) at {interp.at(node)}")
        data = self.from_yaml(args[0], node.lineno)
        if data is None:
            return start_unknown(f"ConfigContainer.from_yaml({args[0]!r}) at {interp.at(node)}: no such file")
        state = ContainerState(copy.deepcopy(data), {}, Start("yaml", args[0]))
        return CfgRef(state, ())


def start_unknown(reason: str) -> CfgRef:
    """A config whose start the reader cannot know: every key is unknown, for ``reason``."""
    state = ContainerState({}, {(): reason}, Start("unknown", None, reason=reason))
    return CfgRef(state, ())


def _recipe_start(interp: Interpreter, hit: tuple, kwargs: dict, node) -> CfgRef:
    from overlap_cli.config.yamlnodes import copy_values

    name, data, unknown = hit
    # Context.recipe hands the catalog's values, read only: the run writes into one copy of them, and keeps
    # them unchanged as its base (what the recipe itself holds).
    state = ContainerState(copy_values(data), unknown, base_data=data)
    if kwargs:
        # A recipe's keyword arguments change what it builds; the catalog holds the recipe as called
        # without them.
        reason = f"{name}({', '.join(kwargs)}=...) at {interp.at(node)}: the catalog holds the recipe as called without arguments"
        state.unknown[()] = reason
    state.start = Start("recipe", name, kwargs=dict(kwargs))
    return CfgRef(state, ())


def _site_of(interp: Interpreter, node) -> Optional[Site]:
    """Where a keyword argument (or an assignment's value) writes its field; None inside a Bridge helper."""
    if interp.in_helper:
        return None
    value = node.value if isinstance(node, ast.keyword) else node
    span = (value.lineno, value.col_offset, value.end_lineno, value.end_col_offset) if is_literal(value) else None
    return Site(node.lineno, node.col_offset + 1, span, interp.file, words_behind(interp, value))


def _config_object(interp: Interpreter, func: Import, target: Optional[str], args: list, kwargs: dict, node):
    """``SomeConfig(field=..., ...)``: the fields given (each at its keyword's line); with ``target`` (a
    class python_values.CONFIG_CLASSES knows) the rest are the class defaults overlap-cli holds,
    otherwise unknown -- never a guessed default."""
    where = f"{func.name}(...) at {interp.at(node)}"
    if args or "**" in kwargs:
        return Unknown(f"{where} takes arguments overlap-cli cannot read (positional or **)")
    rest = None if target is not None else (
        f"{func.name} (imported from {func.module}) is a class overlap-cli holds no defaults for: the fields "
        f"{where} leaves out are unknown")
    sites = {kw.arg: _site_of(interp, kw) for kw in node.keywords if kw.arg is not None}
    fields = {"_target_": target} if target is not None else {}
    for key, value in kwargs.items():
        fields[key] = value if storable(value) or isinstance(value, ConfigObject) else Unknown(
            f"{func.name}({key}=...) at {interp.at(node)} is not a value overlap-cli can read")
    return ConfigObject(fields, sites, rest)


def _container(interp: Interpreter, args: list, kwargs: dict, node, release) -> CfgRef:
    """``ConfigContainer(model=..., train=TrainingConfig(...), ...)`` as a run's start: each section the
    value its keyword gives (a config object field by field, None, a recipe name...), each field at the
    line that wrote it; a section it leaves out keeps its class default (config.py:965-1003), which is
    what overlap-cli reads for a key a config does not hold."""
    from overlap_cli.frameworks.bridge import python_values as pv

    where = f"ConfigContainer(...) at {interp.at(node)}"
    if args:
        raise Refusal("ConfigContainer takes keyword arguments only (@dataclass(kw_only=True), "
                      "megatron/bridge/training/config.py:961): Python raises TypeError", node.lineno, node.col_offset + 1)
    if "**" in kwargs:
        return start_unknown(f"{where} takes **arguments overlap-cli cannot read")
    from overlap_cli.frameworks.bridge.recipes import config_fields

    # the init fields of 0.6.2's class, less those the release's own class lacks (env_vars before 0.6.0)
    held = config_fields(release.BRIDGE_VERSION, "megatron.bridge.training.config.ConfigContainer")
    for key in kwargs:
        if key not in pv.CONTAINER_FIELDS or key not in held:
            raise Refusal(f"ConfigContainer() got an unexpected keyword argument {key!r}: not a field of "
                          f"Megatron-Bridge {release.BRIDGE_VERSION}'s ConfigContainer (megatron/bridge/training/config.py)",
                          node.lineno, node.col_offset + 1)
    missing = [f for f in pv.CONTAINER_REQUIRED if f not in kwargs]
    if missing:
        raise Refusal(f"ConfigContainer(...) without {', '.join(missing)}: the dataclass has no default for "
                      f"{'it' if len(missing) == 1 else 'them'} (megatron/bridge/training/config.py:965-1003) "
                      "and Python raises TypeError", node.lineno, node.col_offset + 1)
    state = ContainerState({}, {}, Start("container", "ConfigContainer(...)"))
    sites = {kw.arg: _site_of(interp, kw) for kw in node.keywords if kw.arg is not None}
    for key, value in kwargs.items():
        if isinstance(value, CfgRef):
            value = copy.deepcopy(value.state.read(value.path))
        if isinstance(value, Unknown):
            state.unknown[(key,)] = value.reason
            continue
        if not (storable(value) or isinstance(value, ConfigObject)):
            state.unknown[(key,)] = f"ConfigContainer({key}=...) at {interp.at(node)} is not a value overlap-cli can read"
            continue
        state.put((key,), value, sites.get(key))  # ContainerState.put: a class given for another field
    # What the start itself holds: nothing but what the run wrote (every field is the run's, at its line).
    state.base_data, state.base_unknown = {}, {}
    return CfgRef(state, ())
