"""The expressions of the Python reader's interpreter: constants, names, containers, operators, comparisons,
conditional expressions, attributes and subscripts (of the config too), f-strings, and calls: a function
whose source the reader holds is followed inline, a few builtins and ``str`` / ``dict`` methods are
evaluated, anything else is unknown with ``FILE:LINE`` -- and what it receives of the config may change.

``Expressions`` is one half of python_interp.Interpreter (python_statements.Statements the other): it runs
a followed function's body with ``self.exec_block``, and asks ``self.reader.ctx`` (python_interp.Library)
about the library's own names: its calls (``call``), the value of a name it exports (``name_value``), a
module's attribute (``module_attribute``), a method of the config (``config_method``), a launch that takes
the config (``ends_run``), the config path an attribute names (``config_path``).
"""

from __future__ import annotations

import ast

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.frameworks.bridge.python_abstract import ConfigState

from overlap_cli.frameworks.bridge.python_abstract import (
    MISSING,
    NOT_KNOWN,
    BadPython,
    CfgRef,
    Func,
    Import,
    Refusal,
    Returned,
    RunEnds,
    Unknown,
    call_name,
    present,
    same,
    short,
)

_INERT_CALLS = ("print", "len", "str", "repr", "isinstance", "getattr", "hasattr", "id", "type", "vars")
_MAX_DEPTH = 12  # calls followed inside calls; deeper, the call is unknown


class Expressions:
    def at(self, node) -> str:
        return f"{self.file}:{getattr(node, 'lineno', '?')}"

    def eval(self, node, statement: bool = False):
        try:
            return self._eval(node, statement)
        except (Refusal, Returned, RunEnds, BadPython):
            raise
        except RecursionError:
            raise
        except Exception:
            return Unknown(f"{short(node)} at {self.at(node)}")

    def _eval(self, node, statement: bool = False):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.reader.ctx.name_value(self.env[node.id])
            if node.id in self.reader.names:
                return self.reader.ctx.name_value(self.reader.names[node.id])
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return Unknown(f"{node.id} at {self.at(node)} is not known to overlap-cli")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(e) for e in node.elts]
            return items if not isinstance(node, ast.Set) else Unknown(f"a set at {self.at(node)}")
        if isinstance(node, ast.Dict):
            return self._dict(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left), self.eval(node.right), self.at(node))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(v, Unknown):
                return v
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            return ~v
        if isinstance(node, ast.BoolOp):
            result = None
            for value_node in node.values:
                v = self.eval(value_node)
                if isinstance(v, Unknown):
                    return v
                result = v
                if isinstance(node.op, ast.And) and not v:
                    return v
                if isinstance(node.op, ast.Or) and v:
                    return v
            return result
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node)
                if isinstance(left, Unknown):
                    return left
                if isinstance(right, Unknown):
                    return right
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = self.eval(node.test)
            if isinstance(test, Unknown):
                a, b = self.eval(node.body), self.eval(node.orelse)
                return a if same(a, b) else Unknown(f"the conditional expression at {self.at(node)} ({test.reason})")
            return self.eval(node.body if test else node.orelse)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node, statement)
        if isinstance(node, ast.JoinedStr):
            return self._f_string(node)
        return Unknown(f"{short(node)} at {self.at(node)}")

    def _subscript(self, node):
        base = self.eval(node.value)
        key = self.eval(node.slice)
        if isinstance(base, CfgRef):
            if isinstance(key, Unknown):
                return key
            return self.read_cfg(base.path + (key,), node, base.state)
        if isinstance(base, Unknown):
            return base
        if isinstance(key, Unknown):
            return key
        return base[key]

    def _f_string(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                x = self.eval(v.value)
                if isinstance(x, Unknown) or not isinstance(x, (str, int, float, bool)):
                    return Unknown(f"the f-string at {self.at(node)}")
                parts.append(format(x, self.eval(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def _dict(self, node):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**X, ...}
                spread = self.eval(v)
                if isinstance(spread, CfgRef):
                    spread = spread.state.read(spread.path)
                if not isinstance(spread, dict):
                    return Unknown(f"{{**{short(v)}, ...}} at {self.at(node)}: {short(v)} is not known")
                out.update(spread)
                continue
            key = self.eval(k)
            if isinstance(key, Unknown) or not isinstance(key, (str, int, float, bool)):
                return Unknown(f"a key of the mapping at {self.at(node)} is not known")
            out[key] = self.eval(v)
        return out

    def read_cfg(self, path: tuple, node, state: ConfigState):
        """The value at ``path`` of the config: a section or config object stays a CfgRef to it."""
        path = self.reader.ctx.config_path(path)
        value = state.read(path, missing=MISSING)
        if value is MISSING:
            return Unknown(f"{'.'.join(map(str, path))} read at {self.at(node)} is not in the config overlap-cli knows")
        if isinstance(value, dict) and not isinstance(value, Unknown) and ("_target_" in value or len(path) == 1):
            return CfgRef(state, path)
        return value

    def _attribute(self, node):
        base = self.eval(node.value)
        if isinstance(base, CfgRef):
            return self.read_cfg(base.path + (node.attr,), node, base.state)
        if isinstance(base, Import):
            module = f"{base.module}.{base.name}" if base.name else base.module
            value = self.reader.ctx.module_attribute(module, node.attr)
            if value is not None:
                return value
            return self.reader.ctx.name_value(Import(module, node.attr))
        if isinstance(base, Unknown):
            return base
        if isinstance(base, dict) and node.attr in base:
            return base[node.attr]
        return Unknown(f"{short(node)} at {self.at(node)}")

    # -- calls -----------------------------------------------------------------------------------
    def _call(self, node, statement: bool):
        func = self.eval(node.func) if not isinstance(node.func, ast.Attribute) else None
        name = call_name(node)
        if isinstance(node.func, ast.Attribute):
            owner = self.eval(node.func.value)
            if isinstance(owner, CfgRef):
                return self.reader.ctx.config_method(self, owner, node)
            if isinstance(owner, Import):
                func = Import(f"{owner.module}.{owner.name}" if owner.name else owner.module, node.func.attr)
            elif isinstance(owner, dict) and name in ("get", "copy", "update", "items", "keys", "values"):
                return self._dict_method(owner, node)
            elif isinstance(owner, str) and name in ("upper", "lower", "strip", "format", "replace", "join", "split", "startswith", "endswith"):
                args = [self.eval(a) for a in node.args]
                if any(isinstance(a, Unknown) for a in args):
                    return Unknown(f"{short(node)} at {self.at(node)}")
                return getattr(owner, name)(*args)
            else:
                func = Unknown(f"{short(node.func)} at {self.at(node)}")
        args = [self.eval(a) if not isinstance(a, ast.Starred) else Unknown(f"*{short(a.value)} at {self.at(node)}") for a in node.args]
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

        if self.reader.ctx.ends_run(name) and any(isinstance(a, CfgRef) and a.path == () for a in args + list(kwargs.values())):
            if not self.in_helper:
                raise RunEnds()
        if isinstance(func, Func):
            return self.call_function(func, args, kwargs, node)
        if isinstance(func, Import):
            known = self.reader.ctx.call(self, func, args, kwargs, node)
            if known is not NOT_KNOWN:
                return known
        if name in _INERT_CALLS and isinstance(node.func, ast.Name) and node.func.id not in self.env and node.func.id not in self.reader.names:
            return self._builtin(name, args, node)
        self.call_effects(node, args=args, kwargs=kwargs, reason=None)
        return Unknown(f"{short(node.func)}(...) at {self.at(node)} is not known to overlap-cli")

    def _builtin(self, name: str, args: list, node):
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
        if any(isinstance(a, (Unknown, CfgRef)) for a in args):
            return Unknown(f"{name}(...) at {self.at(node)}")
        try:
            return {"len": len, "str": str, "repr": repr}.get(name, lambda *a: Unknown(f"{name}(...)"))(*args)
        except Exception:
            return Unknown(f"{name}(...) at {self.at(node)}")

    def _dict_method(self, owner: dict, node):
        name = node.func.attr
        args = [self.eval(a) for a in node.args]
        if any(isinstance(a, Unknown) for a in args):
            return Unknown(f"{short(node)} at {self.at(node)}")
        if name == "get":
            return owner.get(*args)
        if name == "copy":
            return dict(owner)
        if name == "update":
            if len(args) == 1 and isinstance(args[0], dict):
                owner.update(args[0])
                return None
            return Unknown(f"{short(node)} at {self.at(node)}")
        return Unknown(f"{short(node)} at {self.at(node)}")

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
        """A function of the module (or of a library module read from its source), followed inline."""
        if self.depth >= _MAX_DEPTH:
            self.call_effects(node, args, kwargs, reason=f"passed to {func.node.name}() at {self.at(node)} (calls nested too deep to follow)")
            return Unknown(f"{func.node.name}() at {self.at(node)}: calls nested too deep")
        fn = func.node
        env: dict = {}
        interp = type(self)(func.reader, self.cfg, env, self.depth + 1, in_helper=self.in_helper or func.reader is not self.reader)
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        for p, v in zip(positional, args):
            env[p.arg] = v
        for k, v in kwargs.items():
            if k == "**":
                for p in positional + a.kwonlyargs:
                    env.setdefault(p.arg, v)
            else:
                env[k] = v
        for p in positional + a.kwonlyargs:
            if p.arg not in env:
                env[p.arg] = interp.eval(defaults[p.arg]) if p.arg in defaults else Unknown(f"argument {p.arg} of {fn.name}() at {self.at(node)}")
        try:
            interp.exec_block(fn.body)
            result = None
        except Returned as ret:
            result = ret.value
        except RunEnds:
            result = None
        if self.cfg is not None and interp.cfg is not self.cfg and interp.cfg is not None:
            # The function replaced the config it was given (an ``if`` it could not decide, say): follow it.
            for name, v in list(self.env.items()):
                if isinstance(v, CfgRef) and v.state is self.cfg:
                    self.env[name] = CfgRef(interp.cfg, v.path)
            self.cfg = interp.cfg
        return result

    # -- operators -------------------------------------------------------------------------------
    @staticmethod
    def binop(op, a, b, where: str):
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        if isinstance(a, (CfgRef, Import, Func)) or isinstance(b, (CfgRef, Import, Func)):
            return Unknown(f"an expression at {where}")
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
               ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b if abs(b) < 64 else None,
               ast.BitOr: lambda: a | b, ast.BitAnd: lambda: a & b, ast.LShift: lambda: a << b if b < 64 else None}
        f = ops.get(type(op))
        if f is None:
            return Unknown(f"an expression at {where}")
        try:
            out = f()
        except Exception:
            return Unknown(f"an expression at {where} that Python would reject")
        return out if out is not None else Unknown(f"an expression at {where}")


def _compare(op, a, b) -> bool:
    if isinstance(op, ast.Eq):
        return a == b
    if isinstance(op, ast.NotEq):
        return a != b
    if isinstance(op, ast.Is):
        return a is b if a is None or b is None or isinstance(a, bool) else a == b
    if isinstance(op, ast.IsNot):
        return a is not b if a is None or b is None or isinstance(a, bool) else a != b
    if isinstance(op, ast.In):
        return a in b
    if isinstance(op, ast.NotIn):
        return a not in b
    if isinstance(op, ast.Lt):
        return a < b
    if isinstance(op, ast.LtE):
        return a <= b
    if isinstance(op, ast.Gt):
        return a > b
    if isinstance(op, ast.GtE):
        return a >= b
    raise TypeError(op)
