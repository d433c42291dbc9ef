"""The statements of the Python reader's interpreter: assignments, ``if`` (and the merge of its branches),
``for`` over a sequence it knows (item by item, ``break`` / ``continue``), ``return`` / ``raise``, ``with``,
nested ``def`` / ``class`` and ``import``, and the statements it does not follow (``while`` / ``try``, a loop
over what it does not know...), whose every possible write becomes unknown with ``FILE:LINE``.

``Statements`` is one half of python_interp.Interpreter (python_expressions.Expressions the other): it
calls ``self.eval`` for an expression, and ``self.reader.ctx`` (python_interp.Library) for what the
library being read decides: a write Python refuses (``check_write``), the config path an attribute names
(``config_path``), the fields an object keeps equal (``field_twin``).
"""

from __future__ import annotations

import ast
import copy

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.frameworks.bridge.python_abstract import (
    MISSING,
    CfgRef,
    ClassValue,
    ConfigObject,
    ConfigState,
    Func,
    Instance,
    LoopSignal,
    PyObject,
    Returned,
    RunEnds,
    Site,
    Unknown,
    fork_value,
    is_literal,
    same,
    short,
    span,
    storable,
    words_behind,
    Refusal,
)


class Statements:
    tainted = None  # why what the rest of the function writes may not happen (after a return in an ``if``)
    raised = None  # the ``raise`` that ended the run, for the message when it built no config

    def exec_block(self, stmts) -> None:
        for stmt in stmts:
            self.exec(stmt)

    def exec(self, stmt) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                self.assign(target, value, stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                value = self.eval(stmt.value)
                self.assign(stmt.target, value, stmt.value, stmt)
        elif isinstance(stmt, ast.AugAssign):
            old = self.eval(stmt.target)
            new = self.eval(stmt.value)
            self.assign(stmt.target, self.binop(stmt.op, old, new, self.at(stmt)), None, stmt)
        elif isinstance(stmt, ast.Expr):
            self.eval(stmt.value, statement=True)
        elif isinstance(stmt, ast.If):
            self._if(stmt)
        elif isinstance(stmt, ast.Return):
            raise Returned(self.eval(stmt.value) if stmt.value is not None else None)
        elif isinstance(stmt, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Assert)):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                reader = self.reader
                sub = type(reader)(ast.Module(body=[stmt], type_ignores=[]), self.file, reader.ctx, reader.module)
                self.env.update(sub.names)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.env[stmt.name] = Func(stmt, self.reader, None if self.is_script else self.env)
        elif isinstance(stmt, ast.ClassDef):
            self.env[stmt.name] = ClassValue(stmt, self.reader, None if self.is_script else self.env)
        elif isinstance(stmt, (ast.Break, ast.Continue)):
            raise LoopSignal("break" if isinstance(stmt, ast.Break) else "continue")
        elif isinstance(stmt, ast.Raise):
            raise RunEnds(f"{short(stmt.exc) if stmt.exc is not None else 'raise'} at {self.at(stmt)}")
        elif isinstance(stmt, ast.With):
            self.exec_block(stmt.body)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self._try(stmt)
        elif isinstance(stmt, ast.For):
            self._for(stmt)
        elif isinstance(stmt, (ast.While, ast.AsyncFor)):
            self._opaque(stmt, "a loop")
        else:
            self._opaque(stmt, f"a {type(stmt).__name__} statement")

    def _try(self, stmt) -> None:
        """``try``: the body runs as Python runs it (what an unknown call might raise is not followed: a run
        that raises there never reaches pretrain), then ``else``, and ``finally`` however the block ends. An
        ``except`` clause may run in place of the rest of the body: what it may write is unknown. A ``raise``
        in the body that a clause may catch, or an error of Bridge's a clause catching ``Exception`` may
        catch, leaves what the whole statement may write unknown."""
        handlers = stmt.handlers
        catch_all = any(h.type is None or (isinstance(h.type, ast.Name) and h.type.id in ("Exception", "BaseException"))
                        for h in handlers)
        try:
            try:
                self.exec_block(stmt.body)
            except RunEnds as ends:
                if ends.raised is None or not handlers:  # the config handed to a launch, or nothing catches it
                    raise
                self._opaque(stmt, "a try statement whose raise an except clause may catch")
                return
            except Refusal:
                if not catch_all:
                    raise
                self._opaque(stmt, "a try statement whose error an except clause may catch")
                return
            for handler in handlers:
                self._opaque(handler, "an except clause")
            self.exec_block(stmt.orelse)
        finally:
            self.exec_block(stmt.finalbody)

    def _opaque(self, stmt, what: str) -> None:
        """A statement the reader does not follow: what it may write becomes unknown."""
        reason = f"set in {what} at {self.at(stmt)} that overlap-cli does not follow"
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                for t in targets:
                    for name in ast.walk(t):
                        if isinstance(name, ast.Name) and isinstance(t, ast.Name):
                            self.env[name.id] = Unknown(reason)
                    hit = self.cfg_path(t, lenient=True)
                    if hit is not None:
                        hit[0].forget(hit[1], reason)
            elif isinstance(sub, ast.Call):
                self.call_effects(sub, reason=f"passed to a call in {what} at {self.at(stmt)} that overlap-cli does not follow")
            if isinstance(sub, (ast.For, ast.AsyncFor)):
                for name in ast.walk(sub.target):
                    if isinstance(name, ast.Name):
                        self.env[name.id] = Unknown(reason)

    # -- for -------------------------------------------------------------------------------------
    def _for(self, stmt) -> None:
        """A loop over a sequence the reader knows, run item by item (``break`` / ``continue`` as Python
        takes them); over anything else, or too long, what it may write is unknown."""
        items = self.eval(stmt.iter)
        if isinstance(items, dict) and not isinstance(items, (CfgRef, Instance)):
            items = list(items)
        if isinstance(items, str) or not isinstance(items, list) or len(items) > _MAX_ITEMS:
            self._opaque(stmt, "a loop over a sequence overlap-cli does not know")
            return
        ctx = self.reader.ctx
        ctx.loop_steps += len(items)
        if ctx.loop_steps > _MAX_STEPS:  # loops inside loops: the reading stays quick
            self._opaque(stmt, "a loop nested too deep to follow")
            return
        for item in items:
            self.assign(stmt.target, item, None, stmt)
            try:
                self.exec_block(stmt.body)
            except LoopSignal as signal:
                if signal.kind == "break":
                    return
            except _UndecidedExit:
                self._opaque(stmt, "a loop left by a break or continue under a condition overlap-cli cannot decide")
                return
        self.exec_block(stmt.orelse)

    # -- if --------------------------------------------------------------------------------------
    def _if(self, stmt) -> None:
        test = self.eval(stmt.test)
        if not isinstance(test, Unknown):
            try:
                truth = bool(test)
            except Exception:
                truth = None
            if truth is not None:
                self.exec_block(stmt.body if truth else stmt.orelse)
                return
            test = Unknown(f"the condition at {self.at(stmt)}")
        reason = f"depends on the condition at {self.at(stmt)} ({test.reason})"
        originals = {id(v.state): v.state for v in _refs(self.env.values())}
        if self.cfg is not None:
            originals[id(self.cfg)] = self.cfg
        branches = [self._branch(block, originals) for block in (stmt.body, stmt.orelse)]
        (a, ra, ca), (b, rb, cb) = branches
        sa, sb = (a.cfg.start if a.cfg else None), (b.cfg.start if b.cfg else None)
        if self.cfg is None and (a.cfg is not None or b.cfg is not None):
            # The run's config is built inside the ``if``: by one branch, or differently by each.
            fork = a if a.cfg is not None else b
            self.env, self.cfg = dict(fork.env), fork.cfg
            if a.cfg is None or b.cfg is None or (sa.kind, sa.name) != (sb.kind, sb.name):
                self.cfg.forget((), f"the config is built differently {reason}")
            return
        # Each config both branches saw: what they leave alike stays, the rest is unknown -- written back
        # into the object the caller holds.
        for k, original in originals.items():
            merged = merge_states(ca[k], cb[k], reason)
            original.data, original.unknown, original.written = merged.data, merged.unknown, merged.written
        back = {id(st): originals[k] for k, st in list(ca.items()) + list(cb.items())}
        for name in set(a.env) | set(b.env):
            va, vb = a.env.get(name), b.env.get(name)
            if isinstance(va, CfgRef) and isinstance(vb, CfgRef) and back.get(id(va.state)) is back.get(id(vb.state)) and va.path == vb.path:
                self.env[name] = CfgRef(back[id(va.state)], va.path) if id(va.state) in back else va
            else:  # a value neither branch rebound (an unknown one too) keeps its own reason
                self.env[name] = va if va is vb or same(va, vb) else Unknown(reason)
        if isinstance(ra, LoopSignal) or isinstance(rb, LoopSignal):
            if isinstance(ra, LoopSignal) and isinstance(rb, LoopSignal) and ra.kind == rb.kind:
                raise ra
            raise _UndecidedExit()
        if (ra is None) != (rb is None):
            # One way returns, the other goes on: what the rest of this function writes may not happen.
            self.tainted = f"after a return {reason}"
        elif ra is not None and rb is not None:
            if isinstance(ra, Returned) and isinstance(rb, Returned):
                va, vb = ra.value, rb.value
                if isinstance(va, CfgRef) and isinstance(vb, CfgRef) and va.path == vb.path:
                    raise Returned(CfgRef(back.get(id(va.state), va.state), va.path))
                raise Returned(va if same(va, vb) else Unknown(reason))
            raise RunEnds()

    def _branch(self, block, originals: dict) -> tuple:
        """One branch of an ``if`` run on copies of the configs: (its interpreter, the Returned / RunEnds
        that ended it or None, the copies by the id of their original)."""
        copies = {k: st.copy() for k, st in originals.items()}
        env = {n: fork_value(v, copies) for n, v in self.env.items()}
        fork = type(self)(self.reader, copies.get(id(self.cfg)) if self.cfg is not None else None, env, self.depth, self.in_helper)
        fork.tainted, fork.outer, fork.globals, fork.is_script = self.tainted, self.outer, self.globals, self.is_script
        returned = None
        try:
            fork.exec_block(block)
        except Returned as ret:
            returned = ret
        except RunEnds as ends:
            returned = ends
        except LoopSignal as signal:
            returned = signal
        return fork, returned, copies

    # -- assignment ------------------------------------------------------------------------------
    def site(self, stmt, value_node) -> Optional[Site]:
        """Where ``stmt`` writes (its value's span when a literal); None inside a library's helper."""
        return None if self.in_helper else Site(stmt.lineno, stmt.col_offset + 1, span(value_node), self.file)

    def assign(self, target, value, value_node, stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, CfgRef) and value.path == () and (value.state is not self.cfg or _built_elsewhere(value.state, self)):
                self._bind(value.state, stmt)
            self.env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if isinstance(value, list) and len(starred) == 1 and len(value) >= len(target.elts) - 1:
                i, after = starred[0], len(target.elts) - starred[0] - 1
                parts = value[:i] + [value[i:len(value) - after]] + value[len(value) - after:]
                for elt, v in zip(target.elts, parts):
                    self.assign(elt.value if isinstance(elt, ast.Starred) else elt, v, None, stmt)
                return
            if isinstance(value, list) and len(value) == len(target.elts) and not starred:
                nodes = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else [None] * len(value)
                for elt, v, n in zip(target.elts, value, nodes):
                    self.assign(elt, v, n, stmt)
                return
            for elt in target.elts:
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, Unknown(f"unpacked at {self.at(stmt)}"), None, stmt)
            return
        hit = self.cfg_path(target)
        state, path = hit if hit is not None else (None, None)
        if path is None and isinstance(target, (ast.Attribute, ast.Subscript)) and not self.refers_to_cfg(target):
            self._assign_field(target, value, value_node, stmt)
            return
        if path is None:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and self.refers_to_cfg(target):
                lenient = self.cfg_path(target, lenient=True)
                if lenient is not None:
                    lenient[0].forget(lenient[1], f"written through an expression at {self.at(stmt)} that overlap-cli cannot evaluate")
            return
        self.write_cfg(state, path, value, stmt, value_node)

    def write_cfg(self, state: ConfigState, path: tuple, value, stmt, value_node=None) -> None:
        """``value`` written at ``path`` of the config by the statement (or call) ``stmt``."""
        if isinstance(value, CfgRef):
            value = copy.deepcopy(value.state.read(value.path)) if value.state is state else Unknown(f"another config assigned at {self.at(stmt)}")
        elif not storable(value) and not isinstance(value, ConfigObject):
            value = Unknown(f"{ast.unparse(value_node) if value_node is not None else 'the value'} at {self.at(stmt)} "
                            "is not a value overlap-cli can read")
        value_span = None
        if value_node is not None and is_literal(value_node) and not self.in_helper:
            value_span = (value_node.lineno, value_node.col_offset, value_node.end_lineno, value_node.end_col_offset)
        site = None if self.in_helper else Site(stmt.lineno, stmt.col_offset + 1, value_span, self.file,
                                                words_behind(self, value_node))
        self.reader.ctx.check_write(path, value, stmt.lineno, stmt.col_offset + 1)
        if self.tainted is not None and not isinstance(value, Unknown):
            value = Unknown(f"{'.'.join(map(str, path))} set at {self.at(stmt)}, {self.tainted}")
        if isinstance(value, ConfigObject):
            state.put(path, value, site)
            return
        state.write(path, value, site)

    def _assign_field(self, target, value, value_node, stmt) -> None:
        """A field of a value the run holds (``mp = bf16_mixed(); mp.grad_reduce_in_fp32 = False``)."""
        owner = self.eval(target.value)
        key = target.attr if isinstance(target, ast.Attribute) else self.eval(target.slice)
        if isinstance(owner, PyObject) and owner.set_item(self, key, value, stmt):
            return
        if isinstance(owner, Instance) and isinstance(key, str):
            owner[key] = value
            return
        if isinstance(owner, dict) and isinstance(key, (str, int)) and not isinstance(owner, Unknown):
            owner[key] = value if storable(value) or isinstance(value, ConfigObject) else Unknown(f"{short(value_node)} at {self.at(stmt)}")
            if isinstance(owner, ConfigObject):
                owner.sites[key] = self.site(stmt, value_node)
            twin = self.reader.ctx.field_twin(owner.get("_target_", ""), key)
            if twin is not None:
                owner[twin] = owner[key]
            return
        if isinstance(owner, Unknown):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in self.env:
                # ``model_cfg = bridge.to_megatron_provider(...); model_cfg.tensor_model_parallel_size = 2``:
                # the object is unknown, the field the run sets on it is not.
                known = value if storable(value) or isinstance(value, ConfigObject) else Unknown(f"{short(value_node)} at {self.at(stmt)}")
                self.env[target.value.id] = ConfigObject({target.attr: known}, {target.attr: self.site(stmt, value_node)}, owner.reason)
            # else a value the reader already does not know: nothing else it knows changes

    def _bind(self, state: ConfigState, stmt) -> None:
        """The run's config is (now) ``state``, built by the statement ``stmt``."""
        self.cfg = state
        if state.start is not None and not self.in_helper and (self.depth == 0 or state.start.line is None
                                                               or _built_elsewhere(state, self)):
            # (built inside a function of the module, main() say: placed there unless the caller binds it)
            start = state.start
            start.line, start.column, start.end_line = stmt.lineno, stmt.col_offset + 1, stmt.end_lineno
            start.indent = " " * stmt.col_offset
            start.file = self.file
            targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
            start.var = targets[0].id if isinstance(targets[0], ast.Name) else None

    def refers_to_cfg(self, node) -> bool:
        chain = []
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            chain.append(node.attr if isinstance(node, ast.Attribute) else None)
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        ref = self.lookup(node.id, None)
        for part in reversed(chain):
            if not isinstance(ref, Instance) or part not in ref:
                break
            ref = ref[part]
        return isinstance(ref, CfgRef)

    def cfg_path(self, node, lenient: bool = False) -> Optional[tuple]:
        """(config state, path) that ``node`` names (``cfg.model.x`` -> ("model", "x")), or None.
        ``lenient``: a subscript whose key is not known names its container."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                key = self.eval(node.slice)
                if isinstance(key, Unknown) or not isinstance(key, (str, int)):
                    if not lenient:
                        return None
                    parts.clear()
                else:
                    parts.append(key)
                node = node.value
            else:
                break
        if not isinstance(node, ast.Name):
            return None
        ref = self.lookup(node.id, None)
        rest = list(reversed(parts))
        while isinstance(ref, Instance) and rest and isinstance(rest[0], str) and rest[0] in ref:
            ref = ref[rest.pop(0)]  # ``self.cfg.model.x``: the config an object of the module holds
        if not isinstance(ref, CfgRef):
            return None
        path = self.reader.ctx.config_path(ref.path + tuple(rest))
        return (ref.state, path) if path else None


# ---------------------------------------------------------------------------------------------------
# The merge of an ``if``'s branches.
# ---------------------------------------------------------------------------------------------------


_MAX_ITEMS = 256  # the longest sequence a loop is run over item by item
_MAX_STEPS = 4096  # the items all loops of one reading are run over


class _UndecidedExit(Exception):
    """A ``break`` / ``continue`` taken under a condition the reader cannot decide."""


def _refs(values) -> list:
    """The config references among ``values`` and the attributes of the module's objects among them."""
    out = []
    for v in values:
        if isinstance(v, CfgRef):
            out.append(v)
        elif isinstance(v, Instance):
            out.extend(x for x in v.values() if isinstance(x, CfgRef))
    return out


def merge_states(a: ConfigState, b: ConfigState, reason: str) -> ConfigState:
    """The state after an ``if`` the reader cannot decide: what both branches leave alike stays, the rest
    is unknown (``reason`` names the condition)."""
    out = type(a)({}, {}, a.start)
    out.base_data, out.base_unknown = a.base_data, a.base_unknown
    out.data = _merge_data(a.data, b.data, (), out, reason)
    for src in (a, b):
        for p, why in src.unknown.items():
            if p not in out.unknown:
                out.unknown[p] = why
            # Under an unknown path a branch keeps only what it wrote afterwards (``cfg.model = f();
            # cfg.model.x = 2``); the merge keeps no more than that.
            _keep_only(out.data, p, src.data)
    for p in set(a.written) | set(b.written):
        site = a.written.get(p) or b.written.get(p)
        if out.unknown_reason(p) is None:
            out.written[p] = site
    return out


def _keep_only(data: dict, path: tuple, src: dict) -> None:
    """Drop from ``data`` at ``path`` what ``src`` does not hold there."""
    node, other = data, src
    for part in path[:-1] if path else ():
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
        other = other.get(part) if isinstance(other, dict) else None
    if not path:
        mine, theirs, holder, key = data, src, None, None
    else:
        if not isinstance(node, dict) or path[-1] not in node:
            return
        theirs = other.get(path[-1], MISSING) if isinstance(other, dict) else MISSING
        mine, holder, key = node[path[-1]], node, path[-1]
    if theirs is MISSING:
        del holder[key]
        return
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for k in list(mine):
            if k not in theirs:
                del mine[k]
            else:
                _keep_only(mine, (k,), theirs)


def _merge_data(x: dict, y: dict, path: tuple, out: ConfigState, reason: str) -> dict:
    merged = {}
    for k in set(x) | set(y):
        p = path + (k,)
        if k in x and k in y and isinstance(x[k], dict) and isinstance(y[k], dict) and ("_target_" not in x[k] or x[k].get("_target_") == y[k].get("_target_")):
            merged[k] = _merge_data(x[k], y[k], p, out, reason)
        elif k in x and k in y and same(x[k], y[k]):
            merged[k] = x[k]
        else:
            out.unknown[p] = reason
    return merged


def _built_elsewhere(state: ConfigState, interp) -> bool:
    """The config's start statement is in another module of the user's than the one ``interp`` reads: a
    statement here that binds it is where the run takes it (and where a fix adds a line)."""
    start = state.start
    return start is not None and start.file is not None and start.file != interp.file and interp.reader.own
