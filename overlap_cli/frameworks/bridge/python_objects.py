"""The calls the Python reader follows and the objects beyond the config: a function of the module (or a
``lambda``, or a library helper read from source) run inline on its arguments (``call_function``: its own
names, then its closure's, then the module's; ``@hydra.main``'s config; a launch inside it ends its caller's
run), a call it does not know (``call_effects``: what it receives of the config may change), a mapping of
functions called by a key it does not know; the classes of the module being read (their instances,
a ``@dataclass``'s fields, ``__init__`` / ``__post_init__``, methods, ``@property``) and the builtins it
evaluates (``int`` / ``float`` / ``bool`` / ``str``, ``min`` / ``max`` / ``sorted`` / ``range`` /
``enumerate`` / ``zip``, ``getattr`` / ``setattr`` / ``hasattr`` / ``isinstance`` / ``vars`` on the config
and on objects). A third part of python_interp.Interpreter, beside python_statements.Statements and
python_expressions.Expressions, whose ``eval`` / ``call_function`` / ``read_cfg`` / ``write_cfg`` it uses.
"""

from __future__ import annotations

import ast

from overlap_cli.frameworks.bridge import python_stdlib as stdlib
from overlap_cli.frameworks.bridge.python_abstract import (
    MISSING,
    NOT_KNOWN,
    BadPython,
    CfgRef,
    ClassValue,
    Func,
    Import,
    Instance,
    Refusal,
    Returned,
    RunEnds,
    Unknown,
    present,
    short,
)

MAX_DEPTH = 12  # calls followed inside calls; deeper, the call is unknown

# Builtins a call evaluates when the module does not bind the name; TYPES are also values (``type=int``).
INERT_CALLS = ("print", "len", "str", "repr", "isinstance", "getattr", "hasattr", "id", "type", "vars", "int",
                "float", "bool", "min", "max", "abs", "round", "list", "tuple", "dict", "sorted", "range",
                "enumerate", "zip", "setattr", "reversed", "any", "all", "sum")
TYPES = ("int", "float", "str", "bool", "list", "dict", "tuple")
_PLAIN = {"len": len, "str": str, "repr": repr, "int": int, "float": float, "bool": bool, "min": min, "max": max,
          "abs": abs, "round": round, "list": list, "tuple": list, "sorted": sorted, "any": any, "all": all,
          "sum": sum, "reversed": lambda x: list(reversed(x)), "enumerate": lambda *a: [list(p) for p in enumerate(*a)],
          "zip": lambda *a: [list(p) for p in zip(*a)], "range": lambda *a: list(range(*a)) if len(range(*a)) <= 4096 else None}


class Objects:
    def _arguments(self, node) -> tuple:
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                spread = self.eval(a.value)
                if isinstance(spread, list):
                    args.extend(spread)
                else:
                    args.append(Unknown(f"*{short(a.value)} at {self.at(node)}"))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                spread = self.eval(kw.value)
                if isinstance(spread, dict):
                    kwargs.update(spread)
                else:
                    kwargs["**"] = Unknown(f"**{short(kw.value)} at {self.at(node)}")
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return args, kwargs

    def _chosen_call(self, node, func: Unknown):
        """``CHOICES[key]()`` with a key not known, from a mapping of functions: what it builds is the
        library's to say (a config whose start is one of them, not known which: ``Library.chosen_call``)."""
        table = self.eval(node.func.value)
        if not isinstance(table, dict) or not table:
            return NOT_KNOWN
        if not all(isinstance(v, (Func, Import, ClassValue)) for v in table.values()):
            return NOT_KNOWN
        return self.reader.ctx.chosen_call(self, f"{short(node)} at {self.at(node)} calls one of "
                                           f"{', '.join(map(str, list(table)[:6]))} by a key not known ({func.reason})")

    def call_effects(self, node, args=None, kwargs=None, reason=None) -> None:
        """A call overlap-cli does not know: what it receives of the config may change."""
        values = list(args or []) + list((kwargs or {}).values())
        if args is None:
            values = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
        for v in values:
            if isinstance(v, CfgRef):
                why = reason or f"passed to {short(node.func)}(...) at {self.at(node)}, which overlap-cli does not know"
                v.state.forget(v.path, why)

    def call_function(self, func: Func, args: list, kwargs: dict, node):
        """A function of the module (or of a library module read from its source), followed inline: its
        names are its arguments, then those of the functions it is defined in (``Func.closure``), then the
        module's. A launch inside it (``pretrain(cfg)``) ends the run of its caller too."""
        if self.depth >= MAX_DEPTH:
            self.call_effects(node, args, kwargs, reason=f"passed to {_fname(func)}() at {self.at(node)} (calls nested too deep to follow)")
            return Unknown(f"{_fname(func)}() at {self.at(node)}: calls nested too deep")
        fn = func.node
        env: dict = {}
        # A library's function read from its source writes what the library does (no site of the user's); a
        # function of a module of the user's own writes at its own lines.
        helper = self.in_helper or (func.reader is not self.reader and not func.reader.own)
        interp = type(self)(func.reader, self.cfg, env, self.depth + 1, in_helper=helper)
        interp.outer = func.closure
        interp.globals = self.module_names() if func.reader is self.reader else None
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        hydra = stdlib.is_hydra_main(fn)
        if hydra is not None and not args and not kwargs and positional:
            args = [stdlib.hydra_config(self, hydra, fn)]
        for p, v in zip(positional, args):
            env[p.arg] = v
        if a.vararg is not None:
            env[a.vararg.arg] = list(args[len(positional):])
        named = {p.arg for p in positional + a.kwonlyargs}
        if a.kwarg is not None:
            env[a.kwarg.arg] = {k: v for k, v in kwargs.items() if k not in named and k != "**"}
            if "**" in kwargs:
                env[a.kwarg.arg] = kwargs["**"]
        for k, v in kwargs.items():
            if k == "**":
                for p in positional + a.kwonlyargs:
                    env.setdefault(p.arg, v)
            elif k in named or a.kwarg is None:
                env[k] = v
        for p in positional + a.kwonlyargs:
            if p.arg not in env:
                env[p.arg] = interp.eval(defaults[p.arg]) if p.arg in defaults else Unknown(f"argument {p.arg} of {_fname(func)}() at {self.at(node)}")
        ended = None
        try:
            if isinstance(fn, ast.Lambda):
                result = interp.eval(fn.body)
            else:
                interp.exec_block(fn.body)
                result = None
        except Returned as ret:
            result = ret.value
        except RunEnds as ends:
            result, ended = None, ends
        except (Refusal, BadPython) as exc:
            if exc.file is None and func.reader.file != self.reader.file and func.reader.own:
                exc.file = func.reader.file  # the line is in that module of the user's
            raise
        if interp.cfg is not None and interp.cfg is not self.cfg:
            # The function replaced the config it was given (an ``if`` it could not decide, say), or built the
            # run's config (``main()`` of a script, launching it or not): follow it.
            for name, v in list(self.env.items()):
                if isinstance(v, CfgRef) and v.state is self.cfg:
                    self.env[name] = CfgRef(interp.cfg, v.path)
            self.cfg = interp.cfg
        if ended is not None and ended.raised is None and not interp.in_helper:
            raise ended  # the config was handed to a launch inside the function: the run ends there
        return result

    # -- the module's classes ----------------------------------------------------------------------
    def class_attributes(self, cls: ClassValue) -> dict:
        """The names a class body binds: its methods and its constants (evaluated each time: cheap)."""
        out: dict = {}
        interp = type(self)(cls.reader, self.cfg, {}, self.depth + 1, self.in_helper)
        interp.globals, interp.outer = self.module_names() if cls.reader is self.reader else None, cls.closure
        for stmt in cls.node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[stmt.name] = Func(stmt, cls.reader, cls.closure)
            elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                value = interp.eval(stmt.value)
                for t in stmt.targets:
                    out[t.id] = value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                out[stmt.target.id] = interp.eval(stmt.value) if stmt.value is not None else MISSING
        return out

    def instance_attribute(self, obj: Instance, name: str, node, bound: bool = False):
        if name in obj:
            return obj[name]
        attrs = self.class_attributes(obj.cls)
        value = attrs.get(name, MISSING)
        if isinstance(value, Func):
            decorators = [short(d) for d in getattr(value.node, "decorator_list", ())]
            if "staticmethod" in decorators:
                return value
            if "property" in decorators and not bound:
                return self.call_function(value, [obj], {}, node)
            return (value, obj) if bound else Unknown(f"the method {name} of {obj.cls.node.name} at {self.at(node)}")
        if value is MISSING or value is None and name not in attrs:
            return Unknown(f"{short(node)} at {self.at(node)}: {obj.cls.node.name} has no attribute {name} overlap-cli knows")
        return value

    def instantiate(self, cls: ClassValue, args: list, kwargs: dict, node):
        """``Cls(...)``: a dataclass's fields from its arguments and defaults, or ``__init__`` run on it."""
        attrs = self.class_attributes(cls)
        obj = Instance(cls)
        is_dataclass = any(short(d).split("(")[0].split(".")[-1] == "dataclass" for d in cls.node.decorator_list)
        if cls.node.bases and not is_dataclass and "__init__" not in attrs:
            return Unknown(f"{cls.node.name}(...) at {self.at(node)}: a class with base classes overlap-cli does not follow")
        if is_dataclass:
            fields = [s.target.id for s in cls.node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            for name, value in zip(fields, args):
                obj[name] = value
            for name in fields:
                if name in kwargs:
                    obj[name] = kwargs[name]
                elif name not in obj:
                    default = attrs.get(name, MISSING)
                    obj[name] = default if default is not MISSING else Unknown(f"{cls.node.name}.{name} at {self.at(node)} is not given")
            if "__post_init__" in attrs and isinstance(attrs["__post_init__"], Func):
                self.call_function(attrs["__post_init__"], [obj], {}, node)
            return obj
        init = attrs.get("__init__")
        if isinstance(init, Func):
            self.call_function(init, [obj] + list(args), kwargs, node)
        return obj

    def builtin(self, name: str, args: list, node, kwargs=None):
        if name == "setattr" and len(args) == 3 and isinstance(args[1], str):
            owner, key, value = args
            if isinstance(owner, CfgRef):
                self.write_cfg(owner.state, owner.path + (key,), value, node)
                return None
            if isinstance(owner, dict) and not isinstance(owner, Unknown):
                owner[key] = value
                return None
            return None
        if name == "getattr" and len(args) == 2 and isinstance(args[0], Import) and isinstance(args[1], str):
            module = f"{args[0].module}.{args[0].name}" if args[0].name else args[0].module  # getattr(recipes, NAME)
            return self.reader.ctx.name_value(Import(module, args[1]))
        if name == "getattr" and len(args) >= 2 and isinstance(args[0], dict) and not isinstance(args[0], CfgRef) and isinstance(args[1], str):
            if isinstance(args[0], Instance):
                return self.instance_attribute(args[0], args[1], node)
            return args[0].get(args[1], args[2]) if len(args) > 2 else args[0].get(args[1], Unknown(f"getattr(...) at {self.at(node)}"))
        if name == "vars" and len(args) == 1 and isinstance(args[0], dict):
            return dict(args[0])
        if name == "dict" and not args and kwargs is not None:
            return dict(kwargs)
        if name == "dict" and len(args) == 1 and isinstance(args[0], dict):
            return dict(args[0], **(kwargs or {}))
        if name == "getattr" and len(args) >= 2 and isinstance(args[0], CfgRef) and isinstance(args[1], str):
            value = self.read_cfg(args[0].path + (args[1],), node, args[0].state)
            if isinstance(value, Unknown) and len(args) >= 3 and args[0].state.unknown_reason(args[0].path + (args[1],)) is None:
                return args[2]
            return value
        if name == "hasattr" and len(args) == 2 and isinstance(args[0], CfgRef) and isinstance(args[1], str):
            path = args[0].path + (args[1],)
            reason = args[0].state.unknown_reason(path)
            if reason is not None:
                return Unknown(reason)
            return present(args[0].state.data, path)
        if name == "isinstance" and len(args) == 2:
            value = args[0]
            if isinstance(value, Unknown):
                return value
            if isinstance(value, CfgRef):
                value = value.state.read(value.path)
                if isinstance(value, Unknown):
                    return value
            builtins = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list}
            if any(isinstance(a, ast.Name) and a.id in builtins for a in ast.walk(node.args[1])):
                types = tuple(builtins[a.id] for a in ast.walk(node.args[1]) if isinstance(a, ast.Name) and a.id in builtins)
                return isinstance(value, types)
            return Unknown(f"isinstance(...) at {self.at(node)}")
        if name == "print":
            return None
        unknown = next((a for a in args if isinstance(a, Unknown)), None)
        if unknown is not None:
            return unknown  # its reason names where it is not known
        if any(isinstance(a, CfgRef) for a in args):
            return Unknown(f"{name}(...) at {self.at(node)}")
        if any(isinstance(a, (list, dict)) and any(isinstance(x, (Unknown, CfgRef)) for x in (a.values() if isinstance(a, dict) else a)) for a in args):
            return Unknown(f"{name}(...) at {self.at(node)}")
        try:
            out = _PLAIN.get(name, lambda *a: Unknown(f"{name}(...)"))(*args)
        except Exception:
            return Unknown(f"{name}(...) at {self.at(node)}")
        return Unknown(f"{name}(...) at {self.at(node)}") if out is None else out


def _fname(func: Func) -> str:
    return getattr(func.node, "name", "<lambda>")
