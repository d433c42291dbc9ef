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
import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from overlap_cli.frameworks.bridge.python_abstract import ConfigState

from overlap_cli.frameworks.bridge import python_stdlib as stdlib
from overlap_cli.frameworks.bridge.python_objects import INERT_CALLS, TYPES
from overlap_cli.frameworks.bridge.python_abstract import (
    MISSING,
    NOT_KNOWN,
    BadPython,
    CfgRef,
    ClassValue,
    Func,
    Import,
    Instance,
    LoopSignal,
    OwnModule,
    PyObject,
    Refusal,
    Returned,
    RunEnds,
    Unknown,
    call_name,
    same,
    short,
)



class Expressions:
    def at(self, node) -> str:
        return f"{self.file}:{getattr(node, 'lineno', '?')}"

    def module_names(self):
        """The module's names a function called from here sees: a script's as its body sets them."""
        return self.env if self.is_script else self.globals

    def lookup(self, name: str, missing=MISSING):
        """A name as Python finds it: the function's own names, the functions it is defined in, the module's
        (a script's names as its body sets them, else the module's constants)."""
        if name in self.env:
            return self.env[name]
        if self.outer is not None and name in self.outer:
            return self.outer[name]
        if self.globals is not None and name in self.globals:
            return self.globals[name]
        if name in self.reader.names:
            return self.reader.names[name]
        return missing

    def eval(self, node, statement: bool = False):
        try:
            return self._eval(node, statement)
        except (Refusal, Returned, RunEnds, BadPython, LoopSignal):
            raise
        except RecursionError:
            raise
        except Exception as exc:
            why = f"{short(node)} at {self.at(node)}"
            self._forget_configs_in(node, f"{why}, which overlap-cli could not evaluate ({type(exc).__name__})")
            return Unknown(why)

    def _forget_configs_in(self, node, why: str) -> None:
        """A call that failed midway may have changed a config it was handed: every config the expression
        names is unknown from here (never the values from before the call, as if it had not run)."""
        if not any(isinstance(n, ast.Call) for n in ast.walk(node)):
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                value = self.lookup(n.id, None)
                if isinstance(value, CfgRef):
                    value.state.forget(value.path, why)

    def _eval(self, node, statement: bool = False):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            found = self.lookup(node.id)
            if found is not MISSING:
                return stdlib.name_value(self.reader.ctx.name_value(found), self)
            if node.id in TYPES:  # a builtin type as a value (``type=int``): called, it is the builtin
                return Import("builtins", node.id)
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
                if isinstance(right, PyObject) and isinstance(op, (ast.In, ast.NotIn)):
                    found = right.contains(self, left, node)
                    if found is NOT_KNOWN or isinstance(found, Unknown):
                        return found if isinstance(found, Unknown) else Unknown(f"{short(node)} at {self.at(node)}")
                    if found != isinstance(op, ast.In):
                        return False
                    left = right
                    continue
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
        if isinstance(node, ast.Lambda):
            return Func(node, self.reader, self.env)
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
        if isinstance(base, PyObject):
            value = base.item(self, key, node)
            return Unknown(f"{short(node)} at {self.at(node)}") if value is NOT_KNOWN else value
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
                spec = self.eval(v.format_spec) if v.format_spec else ""
                if isinstance(spec, Unknown) or not isinstance(spec, str):
                    return Unknown(f"the f-string at {self.at(node)}")
                width = _SPEC_WIDTH.match(spec)
                if width and width.group(1) and int(width.group(1)) > MAX_ITEMS:
                    return Unknown(f"the f-string at {self.at(node)}: a field wider than {MAX_ITEMS:,} characters "
                                   "(overlap-cli's evaluation budget)")
                parts.append(format(x, spec))
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
        if isinstance(base, OwnModule):
            value = base.attribute(node.attr)
            if value is MISSING:  # Python raises AttributeError: the run does not start
                return Unknown(f"{short(node)} at {self.at(node)}: {base.name} ({base.reader.file}) binds no {node.attr} overlap-cli can read")
            return value
        if isinstance(base, Import):
            module = f"{base.module}.{base.name}" if base.name else base.module
            value = stdlib.module_attribute(self, module, node.attr)
            if value is None:
                value = self.reader.ctx.module_attribute(module, node.attr)
            if value is not None:
                return value
            return self.reader.ctx.name_value(Import(module, node.attr))
        if isinstance(base, Unknown):
            return base
        if isinstance(base, Instance):
            return self.instance_attribute(base, node.attr, node)
        if isinstance(base, dict) and node.attr in base:
            return base[node.attr]
        if isinstance(base, PyObject):
            value = base.attribute(self, node.attr, node)
            if value is not NOT_KNOWN:
                return value
        if isinstance(base, stdlib.PathValue):
            value = stdlib.path_attribute(base, node.attr)
            if value is not NOT_KNOWN:
                return value
        if isinstance(base, ClassValue):
            attrs = self.class_attributes(base)
            if node.attr in attrs:
                return attrs[node.attr]
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
            elif isinstance(owner, OwnModule):
                func = owner.attribute(node.func.attr)
                if func is MISSING:
                    func = Unknown(f"{short(node.func)} at {self.at(node)}: {owner.name} ({owner.reader.file}) binds no {node.func.attr} overlap-cli can read")
            elif isinstance(owner, Instance):
                func = self.instance_attribute(owner, name, node, bound=True)
            elif isinstance(owner, (PyObject, stdlib.PathValue)):
                args, kwargs = self._arguments(node)
                value = owner.method(self, name, args, kwargs, node) if isinstance(owner, PyObject) else \
                    stdlib.path_method(owner, name, args)
                if value is not NOT_KNOWN:
                    return value
                func = Unknown(f"{short(node.func)} at {self.at(node)}")
            elif isinstance(owner, dict) and name in ("get", "copy", "update", "items", "keys", "values"):
                return self._dict_method(owner, node)
            elif isinstance(owner, str) and name in ("upper", "lower", "strip", "format", "replace", "join", "split", "startswith", "endswith"):
                args = [self.eval(a) for a in node.args]
                if any(isinstance(a, Unknown) for a in args):
                    return Unknown(f"{short(node)} at {self.at(node)}")
                return getattr(owner, name)(*args)
            else:
                func = Unknown(f"{short(node.func)} at {self.at(node)}")
        args, kwargs = self._arguments(node)
        if isinstance(func, tuple):  # a method of an object of the module's classes: (function, the object)
            func, args = func[0], [func[1]] + args
        launched = [a for a in args + list(kwargs.values()) if isinstance(a, CfgRef) and a.path == ()]
        if self.reader.ctx.ends_run(name) and launched:
            if not self.in_helper:
                self.cfg = launched[0].state  # the config the launch is handed is the run's
                raise RunEnds()
        if not launched and self.cfg is None and not self.in_helper and self.reader.ctx.ends_run(name):
            state = self.reader.ctx.launched_unknown(self, func, args, kwargs, node)
            if state is not None:  # the library's launch, handed a config the reader could not follow
                self.cfg = state
                raise RunEnds()
        if isinstance(func, Func):
            return self.call_function(func, args, kwargs, node)
        if isinstance(func, ClassValue):
            return self.instantiate(func, args, kwargs, node)
        if isinstance(func, Import) and func.module == "builtins":
            return self.builtin(func.name, args, node, kwargs)
        if isinstance(func, Import):
            known = stdlib.call(self, func, args, kwargs, node)
            if known is NOT_KNOWN:
                known = self.reader.ctx.call(self, func, args, kwargs, node)
            if known is not NOT_KNOWN:
                return known
        if name in INERT_CALLS and isinstance(node.func, ast.Name) and self.lookup(node.func.id) is MISSING:
            return self.builtin(name, args, node, kwargs)
        if isinstance(func, Unknown) and isinstance(node.func, ast.Subscript) and not any(
                isinstance(a, CfgRef) for a in args + list(kwargs.values())):
            chosen = self._chosen_call(node, func)
            if chosen is not NOT_KNOWN:
                return chosen
        self.call_effects(node, args=args, kwargs=kwargs, reason=None)
        source = f" (imported from {func.module})" if isinstance(func, Import) and func.module else ""
        return Unknown(f"{short(node.func)}(...) at {self.at(node)}{source} is not known to overlap-cli")

    def _dict_method(self, owner: dict, node):
        name = node.func.attr
        args = [self.eval(a) for a in node.args]
        if any(isinstance(a, Unknown) for a in args):
            return Unknown(f"{short(node)} at {self.at(node)}")
        if name == "get":
            return owner.get(*args)
        if name == "copy":
            return dict(owner)
        if name in ("items", "keys", "values") and not args:
            return [[k, v] for k, v in owner.items()] if name == "items" else list(getattr(owner, name)())
        if name == "update":
            if len(args) == 1 and isinstance(args[0], dict):
                owner.update(args[0])
                return None
            return Unknown(f"{short(node)} at {self.at(node)}")
        return Unknown(f"{short(node)} at {self.at(node)}")

    # -- operators -------------------------------------------------------------------------------
    @staticmethod
    def binop(op, a, b, where: str):
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        if isinstance(a, (CfgRef, Import, Func)) or isinstance(b, (CfgRef, Import, Func)):
            return Unknown(f"an expression at {where}")
        past = _past_budget(op, a, b)
        if past:
            return Unknown(f"an expression at {where}: {past}")
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


# The evaluation budget: a value the reader computes holds at most MAX_ITEMS items (characters of a string,
# elements of a list) and an integer at most MAX_BITS bits (Python refuses to print an integer of more than
# 4,300 digits, ~14,000 bits); past it the value is unknown with the reason, never computed.
MAX_ITEMS = 1 << 20
MAX_BITS = 1 << 13
_SPEC_WIDTH = re.compile(r"^(?:.?[<>=^])?[+\- ]?[#]?0?(\d*)")


def _past_budget(op, a, b) -> str:
    """Why ``a OP b`` would exceed the evaluation budget, or "" (checked before Python computes it)."""
    def items(x):
        return len(x) if isinstance(x, (str, bytes, list, tuple)) else None

    def bits(x):
        return x.bit_length() if isinstance(x, int) and not isinstance(x, bool) else None

    n = None
    if isinstance(op, ast.Mult):
        if items(a) is not None and bits(b) is not None:
            n = items(a) * max(b, 0)
        elif items(b) is not None and bits(a) is not None:
            n = items(b) * max(a, 0)
        elif bits(a) is not None and bits(b) is not None and bits(a) + bits(b) > MAX_BITS:
            return f"an integer of more than {MAX_BITS:,} bits (overlap-cli's evaluation budget)"
    elif isinstance(op, ast.Add) and items(a) is not None and items(b) is not None:
        n = items(a) + items(b)
    elif isinstance(op, ast.Pow) and bits(a) is not None and bits(b) is not None and b > 0 and bits(a) * b > MAX_BITS:
        return f"an integer of more than {MAX_BITS:,} bits (overlap-cli's evaluation budget)"
    elif isinstance(op, ast.LShift) and bits(a) is not None and bits(b) is not None and bits(a) + b > MAX_BITS:
        return f"an integer of more than {MAX_BITS:,} bits (overlap-cli's evaluation budget)"
    if n is not None and n > MAX_ITEMS:
        return f"a value of more than {MAX_ITEMS:,} items (overlap-cli's evaluation budget)"
    return ""
