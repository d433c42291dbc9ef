"""Simple commands of a launch script as ``config.shell`` runs them, statically: assignments (``NAME=``,
``NAME+=``, arrays), ``export`` / ``declare`` / ``local`` / ``readonly`` / ``unset``, ``test`` / ``[ ]`` /
``[[ ]]`` / ``(( ))`` / ``let`` (config.shell_cond, config.shell_arith), ``exit`` / ``return`` / ``break`` /
``continue`` / ``shift``, ``source`` (a file at a path known statically is read in the same shell, config.shell.read_sourced; any other: any variable may be what it sets), ``read``,
calls of the script's functions (with their arguments as ``$1`` ...; ``local`` undone on return), and the
launch line itself (``launchers.find_program`` on the command's expanded words). Any other command is run
by nobody: its exit status is not known, unless it is one that always succeeds (``echo``)."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional


from overlap_cli.config.argv import variable_origin
from overlap_cli.config.shell_expand import Field, Var, field_signature
from overlap_cli.config.shell_lex import NAME, Word

CALL_DEPTH = 16
# A template's placeholder value: ``<some dir>``, ``<PATH_OF_VOCAB_FILE>``, ``<path to docker image>``.
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
# Builtins whose status is 0 whatever they are given (as scripts use them); cd and mkdir fail when the
# directory is not there.
_SUCCEED = frozenset(("true", ":", "echo", "printf", "sleep", "set", "shopt", "trap", "ulimit", "umask", "alias",
                      "wait", "hash", "type", "shift", "cd", "pushd", "popd", "mkdir", "export", "declare", "typeset",
                      "local", "readonly", "unset"))
_SUCCEED_MAYBE = frozenset(("cd", "pushd", "popd", "mkdir"))


class Commands:
    """Mixed into ``config.shell.Reader``."""

    def exec_arith(self, expr: str, start: int, st):
        from overlap_cli.config.shell_arith import evaluate

        self.bind(st)
        value, assigned, ok = evaluate(expr, self.arith_lookup)
        line = self.pos(start)[0]
        for name, v in assigned.items():
            if v is None:
                self.set_unknown(name, start, f"${name} is computed from values not known statically (line {line})")
            else:
                self.set_integer(name, v, line)
        st.status = None if value is None and ok else (value != 0 if ok else False)
        return st

    def set_integer(self, name: str, value: int, line: int) -> None:
        f = Field(variable_origin(name, line))
        f.chars, f.offsets = list(str(value)), [None] * len(str(value))
        f.whole = False
        old = self.vars.get(name)
        var = Var(name, [f], False, line)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        self.vars[name] = var

    def expand_command(self, words: list) -> tuple:
        """(fields, the written word of each field, the sentences each written word added) of a simple
        command's words."""
        fields: list = []
        word_of: list = []
        added: dict = {}
        for w in words:
            if isinstance(w, tuple):  # declare X=( ... ): not a word of the command line
                continue
            mark = len(self.unknowns)
            for f in self.expand(w, "launch line", split=True):
                fields.append(f)
                word_of.append(w)
            added[id(w)] = self.unknowns[mark:]
        return fields, word_of, added

    def exec_simple(self, node, st) -> list:
        self.bind(st)
        words = node.words
        if not words:
            for p in node.prefix:
                self.assign(p)
            st.status = True
            return [st]
        mark = len(st.notes)
        fields, word_of, added = self.expand_command(words)
        found = self.find_program(fields) if fields else None
        if found is not None:
            if st.launched:
                self.extra_launches.append(node.line)
            else:
                st.launched = True
                self.records.append((node, st.copy(), fields, word_of, found, added))
            st.status = None
            if (fields[0].text or "").rsplit("/", 1)[-1] == "exec":
                st.done = True
            return [st]
        at = self.find_shell_c(fields) if fields and not st.launched else None
        if at is not None and self.read_shell_c(node, st, fields, at):
            st.status = None
            return [st]
        if fields and node.heredocs and not st.launched and self.read_heredoc(node, st, fields):
            st.status = None
            return [st]
        if not (fields and fields[0].text == ":"):  # `: ${X:=default}` is there for what its words assign
            del st.notes[mark:]
        if not fields:
            for p in node.prefix:  # nothing to run: the assignments stay (bash)
                self.assign(p)
            st.status = True
            return [st]
        name = fields[0].text
        if name is None:
            st.status = None
            return [st]
        return self.builtin(name, node, words, fields, st)

    def builtin(self, name: str, node, words: list, fields: list, st) -> list:
        st.status = None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            self.declare(name, words[1:], st)
            st.status = True
        elif name == "unset":
            for f in fields[1:]:
                t = f.text
                if t and NAME.fullmatch(t):
                    var = Var(t, [], False, node.line)
                    var.unset = True
                    self.remember_local(t, st)
                    st.vars[t] = var
            st.status = True
        elif name in ("source", "."):
            outs = self.read_sourced(node, name, fields, st)
            if outs is not None:
                return outs
            # the file is not read: every variable may be what it sets, from here on
            st.notes.append(f"line {node.line}: {name} runs another file; what it sets is not known statically")
            why = f"may be set by the file sourced on line {node.line}"
            for var_name, var in list(st.vars.items()):
                self.set_unknown(var_name, node.start, f"${var_name} {why}")
                if var.exported:
                    new = st.vars[var_name]
                    new.exported, new.export_line, new.export_col = True, var.export_line, var.export_col
            st.sourced = node.line
            st.memo = {}
        elif name == "read" and self.read_heredoc_into(node, fields, st):
            st.status = None  # read -d '' reaches the end of its input without a NUL: status 1 (bash)
        elif name == "read":
            for f in fields[1:]:
                t = f.text
                if t and NAME.fullmatch(t):
                    self.set_unknown(t, node.start, f"${t} is read at run time")
        elif name == "exit" or (name == "exec" and len(fields) > 1):
            st.done = True
        elif name == "return":
            if self.depth:
                st.flow = ("return",)
            else:
                st.done = True
        elif name in ("break", "continue"):
            n = fields[1].text if len(fields) > 1 else "1"
            st.flow = (name, int(n) if n and n.isdigit() and int(n) > 0 else 1)
        elif name in ("[", "test"):
            self.exec_test(name, fields[1:], st)
        elif name == "let":
            for f in fields[1:]:
                if f.text is None:
                    st.status = None
                    break
                self.exec_arith(f.text, node.start, st)
        elif name == "false":
            st.status = False
        elif name == "shift":
            n = fields[1].text if len(fields) > 1 else "1"
            if st.positional is not None and n and n.isdigit():
                st.positional = st.positional[int(n):]
            st.status = True
        elif name in st.funcs:
            return self.call(st.funcs[name], fields, st)
        elif name in _SUCCEED:
            st.status = None if name in _SUCCEED_MAYBE else True
        return [st]

    def read_heredoc_into(self, node, fields: list, st) -> bool:
        """``read -r -d '' NAME <<'EOF'``: NAME is the whole here-document (``-d ''`` reads to the end; ``-r``
        keeps backslashes), blanks and newlines at its ends trimmed unless ``IFS=`` precedes it. True when
        the command is exactly that form; else the variables are read at run time (not known)."""
        words = [self.static_text(f) for f in fields[1:]]
        if not node.heredocs or not node.heredocs[0] or None in words:
            return False
        names = [w for w in words if not w.startswith("-")]
        opts = [w for w in words if w.startswith("-")]
        # the empty word after -d is its argument: -r -d '' NAME, -rd '' NAME
        if len(names) != 2 or names[0] != "" or words.index("") == 0 or not words[words.index("") - 1].endswith("d"):
            return False
        if not all(set(o[1:]) <= {"r", "d"} for o in opts) or not any("r" in o for o in opts) or not NAME.fullmatch(names[1]):
            return False
        body = self.join(self.expand(node.heredocs[0][0], "here-document", split=False, keep_empty=True), "here-document")
        ifs_empty = any((self.assignment(p) or (None,))[0] == "IFS" and p.literal_text() in ("IFS=", "IFS=''", 'IFS=""')
                        for p in node.prefix if isinstance(p, Word))
        chars, offsets = list(body.chars), list(body.offsets)
        if not ifs_empty:
            while chars and chars[0].__class__ is str and chars[0] in " \t\n":
                chars.pop(0)
                offsets.pop(0)
            while chars and chars[-1].__class__ is str and chars[-1] in " \t\n":
                chars.pop()
                offsets.pop()
        f = Field(variable_origin(names[1], node.line))
        f.chars, f.offsets, f.whole = chars, offsets, False
        old = st.vars.get(names[1])
        var = Var(names[1], [f], False, node.line)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        st.vars[names[1]] = var
        return True

    def call(self, func, fields: list, st) -> list:
        if self.depth >= CALL_DEPTH:
            st.status = None
            return [st]
        saved = st.positional
        st.positional = list(fields[1:])
        st.frames.append({})
        self.depth += 1
        try:
            outs = self.exec(func.body, st)
        finally:
            self.depth -= 1
        for s in outs:
            s.positional = saved
            frame = s.frames.pop() if s.frames else {}
            for name, old in frame.items():
                if old is None:
                    s.vars.pop(name, None)
                else:
                    s.vars[name] = old
            if s.flow is not None and s.flow[0] == "return":
                s.flow = None
        return outs

    def remember_local(self, name: str, st) -> None:
        """Inside a function, ``local NAME``: the value before it comes back when the function returns."""
        if st.frames and name not in st.frames[-1]:
            st.frames[-1][name] = st.vars.get(name)

    def exec_test(self, name: str, args: list, st) -> None:
        from overlap_cli.config.shell_cond import Operand, evaluate_test

        if name == "[":
            if not args or args[-1].text != "]":
                st.status = False  # bash: [: missing `]' (status 2)
                return
            args = args[:-1]
        if any(f.multi for f in args):
            st.status = None  # an unquoted unknown: any number of words
            return
        operands = [Operand(f.text, any(c.__class__ is str for c in f.chars)) for f in args]
        st.status = evaluate_test(operands, self.is_set)
        if st.status is None and all(self.constant(f) for f in args):
            st.key = ("test", tuple(field_signature(f) for f in args))

    def exec_double_test(self, node, st):
        from overlap_cli.config.shell_cond import Operand, evaluate_double

        self.bind(st)
        mark = len(st.notes)
        operands = []
        fields = []
        words = node.words
        for k, w in enumerate(words):
            f = self.join(self.expand(w, "", split=False, keep_empty=True), "")
            fields.append(f)
            pattern = None
            prev = words[k - 1].literal_text() if k else None
            if prev in ("==", "=", "!=") and k >= 2:
                pattern = self.pattern_regex(w)
                if pattern is None:
                    f = Field("")
                    f.hole("pattern")
            operands.append(Operand(f.text, any(c.__class__ is str for c in f.chars), pattern))
        del st.notes[mark:]
        st.status = evaluate_double(operands, self.is_set, self.arith_value)
        if st.status is None and all(self.constant(f) for f in fields):
            st.key = ("[[", tuple(field_signature(f) for f in fields))
        return st

    def arith_value(self, text: Optional[str]) -> Optional[int]:
        from overlap_cli.config.shell_arith import evaluate

        if text is None:
            return None
        value, _, _ = evaluate(text, self.arith_lookup)
        return value

    def is_set(self, name: str) -> Optional[bool]:
        var = self.lookup(name)
        if var is None:
            return None
        return not var.unset

    # --- assignments ---------------------------------------------------------------------------------

    def assignment(self, w) -> Optional[tuple]:
        if not isinstance(w, Word) or not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
            return None
        m = _ASSIGN.match(w.parts[0][1])
        if not m or m.group(2):
            return None
        return m.group(1), m.group(3), m.end()

    def array_start(self, word: Word) -> Optional[tuple]:
        text = word.literal_text()
        if text is None:
            return None
        m = _ASSIGN.fullmatch(text)
        return (m.group(1), m.group(3)) if m and not m.group(2) else None

    def assign(self, item, exported: bool = False, export_word=None) -> Optional[Var]:
        line = self.pos(item[1].start if isinstance(item, tuple) else item.start)[0]
        if isinstance(item, tuple):  # ("array", word, elements, end)
            _, word, elements, end = item
            name, op = self.array_start(word)
            origin = variable_origin(name, line)
            fields: list = []
            for el in elements:
                fields.extend(self.expand(el, origin, split=True))
            old = self.vars.get(name)
            if op == "+=" and old is not None and not old.unset:
                fields = list(old.fields) + fields
            var = Var(name, fields, True, line)
            var.span = self.span(word.start, end)
            if op == "+=" and old is not None and old.note and not old.array:
                var.note = old.note
        else:
            name, op, cut = self.assignment(item)
            origin = variable_origin(name, line)
            first = item.parts[0]
            value_parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + item.parts[1:]
            value_word = Word(value_parts, item.start + cut, item.end)
            value = self.join(self.expand(value_word, origin, split=False, keep_empty=True), origin)
            old = self.vars.get(name)
            array = False
            fields = [value]
            if op == "+=" and old is not None and old.fields and not old.unset:
                if old.array:  # ARR+=x appends to element 0
                    fields = [self.join([old.fields[0], value], origin)] + list(old.fields[1:])
                    array = True
                else:
                    fields = [self.join([old.fields[0], value], origin)]
            var = Var(name, fields, array, line)
            var.span = self.span(item.start, item.end)
            if op == "+=" and old is not None and old.note:
                var.note = old.note
            if op == "=" and not array:
                self.placeholder(var, value, value_word, line)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        if exported:
            var.exported = True
            var.export_line, var.export_col = self.pos(export_word.start)
        self.vars[name] = var
        return var

    def placeholder(self, var: Var, value: Field, written: Word, line: int) -> None:
        """A template's placeholder (``WORKSPACE="<some dir>"``; with ``empty_placeholders``, a value left
        empty for the user to fill in, ``CONTAINER_IMAGE=""``) is a value the script does not know: only
        what uses it is unknown."""
        text = value.text
        if text is None:
            return
        if _PLACEHOLDER.fullmatch(text.strip()):
            why = f"${var.name} is a placeholder to fill in ({text.strip()!r}, line {line})"
        elif self.empty_placeholders and text == "" and written.end > written.start:
            why = f"${var.name} is left empty for the user to fill in (line {line})"
        else:
            return
        f = Field(variable_origin(var.name, line))
        f.hole("$" + var.name)
        var.fields = [f]
        var.note = why
        self.placeholders.append(why)

    def declare(self, builtin: str, words: list, st) -> None:
        exporting = builtin == "export"
        local = builtin == "local" or (builtin in ("declare", "typeset") and bool(st.frames))
        for w in words:
            if isinstance(w, tuple):
                if local:
                    self.remember_local(self.array_start(w[1])[0], st)
                self.assign(w, exported=exporting, export_word=w[1])
                continue
            t = w.literal_text()
            if t is not None and t.startswith("-"):
                if "x" in t and builtin != "export":
                    exporting = True
                if builtin == "export" and "n" in t:
                    exporting = False
                if "g" in t:
                    local = False
                continue
            m = self.assignment(w)
            if m:
                if local:
                    self.remember_local(m[0], st)
                self.assign(w, exported=exporting, export_word=w)
            elif t and NAME.fullmatch(t):
                if local and st.frames:  # declared in the function, empty
                    self.remember_local(t, st)
                    line = self.pos(w.start)[0]
                    self.vars[t] = Var(t, [Field(variable_origin(t, line))], False, line)
                if exporting:
                    var = self.vars.get(t)
                    if var is None:
                        continue  # export NAME of a variable from the caller's environment: it stays what it was
                    var = var.copy()
                    var.exported = True
                    var.export_line, var.export_col = self.pos(w.start)
                    self.vars[t] = var
