"""A Megatron-LM launch script, read as bash would read it up to the launch line — parsed, never run.

What is understood: comments, backslash-newline continuations, single and double quotes, backslash
escapes, ``VAR=...`` / ``VAR+=...`` / ``ARR=(...)`` / ``ARR+=(...)`` assignments and ``export`` /
``declare -x`` / ``unset`` in the same script, and the expansions ``$VAR``, ``${VAR}``, ``${ARR[@]}``,
``${ARR[*]}``, ``${ARR[N]}``, ``${VAR:-default}`` / ``${VAR-default}`` / ``${VAR:=default}`` with bash's
word splitting (an unquoted expansion splits on blanks; ``"${ARR[@]}"`` gives one word per element).
Everything else is *unknown*, never guessed: ``$(...)``, backticks, ``$((...))``, ``$1``/``$@``, other
``${...}`` operators, variables the script does not set (they come from the caller's environment), and
variables set inside an ``if``/``case``/loop/function body once that block is closed (whether it ran is
not known statically). A ``${VAR:-default}`` of a variable the script never sets takes the default, with
a sentence in ``unknowns`` saying the environment may set it.

The launch line is the first simple command that runs ``torchrun``, ``python -m torch.distributed.run``
(or ``.launch``), or ``python[3] ... pretrain_*.py`` — possibly after ``srun [options]``, ``exec``,
``env [NAME=value...]``, ``nohup``, ``time``, ``numactl [options]`` or ``uv run``. Its environment is what the script
exports before it plus its ``NAME=value`` prefixes. The world size is torchrun's ``--nproc-per-node`` ×
``--nnodes`` when both are known integers (elastic ``MIN:MAX`` and ``gpu``/``auto`` are unknown).

Every word keeps the offset of each character in the file, so a flag reached through ``"${ARGS[@]}"`` is
reported at its line in the array, and a word written literally on the launch line can be edited there.
"""

from __future__ import annotations

import re
from bisect import bisect_right

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.check.results import InputError, InputProblem
from overlap_cli.config.argv import LAUNCH_LINE, UNKNOWN, EnvVar, LaunchText, Token, variable_origin

SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)")
_OPERATORS = ("&&", "||", ";;", "|&", ">>", "<<", "&>", ">&", "<&", "<>", ">|", ";", "&", "|", "<", ">", "(", ")")
_OPEN_BLOCK = frozenset(("if", "for", "while", "until", "case", "select", "{", "function"))
_CLOSE_BLOCK = frozenset(("fi", "done", "esac", "}"))
_KEYWORDS = frozenset(("then", "else", "elif", "do", "in", "!", "[[", "]]", "time", "coproc"))

# torch.distributed.run's options that take no value (torch/distributed/run.py get_args_parser); every
# other option takes one. Its parser allows prefix abbreviations (argparse's default).
_TORCHRUN_NO_VALUE = frozenset((
    "--module", "-m", "--no-python", "--no_python", "--run-path", "--run_path", "--standalone",
    "--virtual-local-rank", "--virtual_local_rank", "-h", "--help",
))
_TORCHRUN_VALUE = (
    "--nnodes", "--nproc-per-node", "--nproc_per_node", "--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint",
    "--rdzv_endpoint", "--rdzv-id", "--rdzv_id", "--rdzv-conf", "--rdzv_conf", "--max-restarts", "--max_restarts",
    "--monitor-interval", "--monitor_interval", "--start-method", "--start_method", "--role", "--log-dir",
    "--log_dir", "-r", "--redirects", "-t", "--tee", "--local-ranks-filter", "--local_ranks_filter", "--node-rank",
    "--node_rank", "--master-addr", "--master_addr", "--master-port", "--master_port", "--local-addr",
    "--local_addr", "--logs-specs", "--logs_specs", "--numa-binding", "--numa_binding", "--event-log-handler",
    "--event_log_handler", "--signals-to-handle", "--signals_to_handle", "--shutdown-timeout", "--shutdown_timeout",
    "--duplicate-stdout-filters", "--duplicate_stdout_filters", "--duplicate-stderr-filters", "--duplicate_stderr_filters",
)
_TORCHRUN_ALL = tuple(sorted(_TORCHRUN_NO_VALUE | set(_TORCHRUN_VALUE)))
# Python's own options that take a value (python -h).
_PYTHON_VALUE = frozenset(("-W", "-X", "-c", "--check-hash-based-pycs"))
# srun options that take a value when written apart (``-N 2``); long ones as ``--opt=value`` are one word.
_SRUN_VALUE = frozenset((
    "-N", "-n", "-c", "-p", "-t", "-J", "-o", "-e", "-A", "-G", "-w", "-x", "-D", "-C", "-d", "-q", "-m", "-i",
    "--nodes", "--ntasks", "--ntasks-per-node", "--cpus-per-task", "--partition", "--time", "--job-name",
    "--output", "--error", "--account", "--gpus", "--gpus-per-node", "--gpus-per-task", "--gres", "--nodelist",
    "--exclude", "--chdir", "--constraint", "--dependency", "--qos", "--distribution", "--mem", "--mem-per-cpu",
    "--mem-per-gpu", "--mpi", "--export", "--cpu-bind", "--gpu-bind", "--reservation", "--container-image",
    "--container-mounts", "--container-workdir", "--container-name", "--container-env", "--input", "--label-format",
    "--signal", "--network", "--overcommit-limit", "--ntasks-per-socket", "--sockets-per-node", "--threads-per-core",
))


class _Word:
    """A word as written: its parts, and where it starts and ends in the text."""

    __slots__ = ("parts", "start", "end")

    def __init__(self, parts: list, start: int, end: int):
        self.parts, self.start, self.end = parts, start, end

    def literal_text(self) -> Optional[str]:
        """The word's text when it has no expansion at all."""
        if all(p[0] == "lit" for p in self.parts):
            return "".join(p[1] for p in self.parts)
        return None


class _Field:
    """An expanded word: text (None = unknown) and the file offset of each character (None: not in the file)."""

    __slots__ = ("chars", "offsets", "unknown", "multi", "what", "origin", "word", "whole")

    def __init__(self, origin: str):
        self.chars: list = []
        self.offsets: list = []
        self.unknown = False
        self.multi = False
        self.what = ""
        self.origin = origin
        self.word: Optional[_Word] = None  # the written word this field is exactly, if any
        self.whole = True  # still exactly one written word (nothing joined or split)

    @property
    def text(self) -> Optional[str]:
        return None if self.unknown else "".join(self.chars)


class _Var:
    __slots__ = ("name", "fields", "array", "line", "blocks", "exported", "export_line", "export_col", "span", "note")

    def __init__(self, name: str, fields: list, array: bool, line: int, blocks: tuple):
        self.name, self.fields, self.array, self.line, self.blocks = name, fields, array, line, blocks
        self.exported = False
        self.export_line = self.export_col = None
        self.span = None
        self.note = ""  # why the value is not known, when it is not


class _Reader:
    def __init__(self, path: str, text: str):
        self.path, self.text = path, text
        self.n = len(text)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.vars: dict = {}
        self.unknowns: list = []
        self.blocks: list = []  # stack of (keyword, id, line)
        self.next_block = 0
        self.case_depth = 0
        self.launch: Optional[dict] = None
        self.extra_launches: list = []
        self.heredocs: list = []

    # --- positions ---------------------------------------------------------------------------------

    def pos(self, offset: int) -> tuple:
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def fail(self, msg: str, offset: Optional[int] = None, key: Optional[str] = None) -> InputError:
        line, col = self.pos(offset) if offset is not None else (None, None)
        return InputError(InputProblem(self.path, msg, key=key, line=line, column=col))

    # --- lexing ------------------------------------------------------------------------------------

    def skip_blanks(self, i: int) -> int:
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c in " \t\r":
                i += 1
            elif c == "\\" and i + 1 < n and text[i + 1] == "\n":
                i += 2
            else:
                break
        return i

    def read_word(self, i: int) -> tuple:
        """(_Word, next offset) for the word starting at i (not blank, not an operator)."""
        text, n = self.text, self.n
        parts: list = []
        start = i
        while i < n:
            c = text[i]
            if c in " \t\r\n;&|<>()":
                if c in "<>(" and parts and parts[-1][0] == "lit" and False:
                    pass
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2  # continuation: the two characters vanish, the word goes on
                    continue
                if i + 1 < n:
                    parts.append(("lit", text[i + 1], [i + 1]))
                    i += 2
                    continue
                i += 1
                continue
            if c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise self.fail("unterminated single quote", i)
                parts.append(("lit", text[i + 1:end], list(range(i + 1, end)), "q"))
                i = end + 1
                continue
            if c == "$" and i + 1 < n and text[i + 1] == "'":  # $'...' (ANSI-C): taken as written
                end = text.find("'", i + 2)
                if end < 0:
                    raise self.fail("unterminated $'...' quote", i)
                body = text[i + 2:end]
                if "\\" in body:
                    parts.append(("unknown", "$'" + body + "'", i, end + 1, True))
                else:
                    parts.append(("lit", body, list(range(i + 2, end)), "q"))
                i = end + 1
                continue
            if c == '"':
                i = self.read_double(i + 1, parts)
                continue
            if c == "$":
                i = self.read_dollar(i, parts, quoted=False)
                continue
            if c == "`":
                end = self.find_backtick(i)
                parts.append(("unknown", text[i:end], i, end, False))
                i = end
                continue
            # an ordinary character; literal runs are kept as one part
            j = i + 1
            while j < n and text[j] not in " \t\r\n;&|<>()\\'\"$`":
                j += 1
            parts.append(("lit", text[i:j], list(range(i, j))))
            i = j
        return _Word(parts, start, i), i

    def find_backtick(self, i: int) -> int:
        j = i + 1
        while j < self.n:
            if self.text[j] == "\\":
                j += 2
                continue
            if self.text[j] == "`":
                return j + 1
            j += 1
        raise self.fail("unterminated backtick command substitution", i)

    def read_double(self, i: int, parts: list) -> int:
        """Parts of a double-quoted string from i (after the quote); returns the offset after the closing quote."""
        text, n = self.text, self.n
        opening = i - 1
        buf, offs = [], []
        count = len(parts)

        def flush():
            if buf:
                parts.append(("lit", "".join(buf), list(offs), "q"))
            buf.clear()
            offs.clear()

        while i < n:
            c = text[i]
            if c == '"':
                flush()
                if len(parts) == count:  # "": an empty word still is a word
                    parts.append(("lit", "", [], "q"))
                return i + 1
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                if nxt == "\n":
                    i += 2
                    continue
                if nxt in '$`"\\':
                    buf.append(nxt)
                    offs.append(i + 1)
                    i += 2
                    continue
                buf.append(c)
                offs.append(i)
                i += 1
                continue
            if c == "$":
                flush()
                i = self.read_dollar(i, parts, quoted=True)
                continue
            if c == "`":
                flush()
                end = self.find_backtick(i)
                parts.append(("unknown", text[i:end], i, end, True))
                i = end
                continue
            buf.append(c)
            offs.append(i)
            i += 1
        raise self.fail("unterminated double quote", opening)

    def matching(self, i: int, open_c: str, close_c: str) -> int:
        """Offset after the bracket closing the one at i, skipping quoted text."""
        text, n = self.text, self.n
        depth, j = 0, i
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "'" :
                k = text.find("'", j + 1)
                j = (k + 1) if k >= 0 else n
                continue
            if c == '"':
                k = j + 1
                while k < n and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
                j = k + 1
                continue
            if c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        raise self.fail(f"unterminated {open_c}", i)

    def read_dollar(self, i: int, parts: list, quoted: bool) -> int:
        text, n = self.text, self.n
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "(":
            end = self.matching(i + 1, "(", ")")
            parts.append(("unknown", text[i:end], i, end, quoted))
            return end
        if nxt == "{":
            end = self.matching(i + 1, "{", "}")
            parts.append(("brace", text[i + 2:end - 1], i, end, quoted))
            return end
        m = _NAME.match(text, i + 1)
        if m:
            parts.append(("var", m.group(0), i, m.end(), quoted, None, None))
            return m.end()
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            parts.append(("unknown", text[i:i + 2], i, i + 2, quoted))
            return i + 2
        parts.append(("lit", "$", [i]) + (("q",) if quoted else ()))
        return i + 1

    # --- commands ----------------------------------------------------------------------------------

    def run(self) -> None:
        i = 0
        text, n = self.text, self.n
        words: list = []
        while i < n:
            i = self.skip_blanks(i)
            if i >= n:
                break
            c = text[i]
            if c == "#" and not words:
                i = self.end_of_line(i)
                continue
            if c == "#" and text[i - 1] in " \t\n;":
                i = self.end_of_line(i)
                continue
            if c == "\n":
                self.command(words)
                words = []
                i = self.skip_heredocs(i + 1)
                continue
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is not None:
                if op in ("<<",):
                    i = self.heredoc(i + 2)
                    continue
                if op in ("<", ">", ">>", "&>", ">&", "<&", "<>", ">|"):
                    # a redirection: drop it and its target (a preceding fd number was read as a word)
                    if words and isinstance(words[-1], _Word) and (words[-1].literal_text() or "").isdigit() and words[-1].end == i:
                        words.pop()
                    j = self.skip_blanks(i + len(op))
                    if j < n and text[j] not in "\n;&|":
                        _, j = self.read_word(j)
                    i = j
                    continue
                if op == "(" and words and isinstance(words[-1], _Word) and words[-1].end == i:
                    assign = self.array_start(words[-1])
                    if assign:
                        i = self.read_array(i + 1, words.pop(), words)
                        continue
                if op == "(" and len(words) >= 1 and text.startswith("()", i):
                    i += 2  # name() { ... }: a function definition
                    words = []
                    continue
                if op == "(" and words and not (self.case_depth and self.blocks and self.blocks[-1][0] == "case"):
                    raise self.fail("syntax error near unexpected token '(' (bash would not run this line; quote the word)", i)
                self.command(words)
                words = []
                if op == "(":
                    self.open_block("(", i)
                elif op == ")":
                    if self.case_depth and self.blocks and self.blocks[-1][0] == "case":
                        pass  # a case pattern's closing parenthesis
                    else:
                        self.close_block(")")
                i += len(op)
                continue
            word, i = self.read_word(i)
            words.append(word)
        self.command(words)

    def end_of_line(self, i: int) -> int:
        j = self.text.find("\n", i)
        return self.n if j < 0 else j

    def heredoc(self, i: int) -> int:
        strip = i < self.n and self.text[i] == "-"
        if strip:
            i += 1
        i = self.skip_blanks(i)
        word, j = self.read_word(i)
        delim = "".join(p[1] for p in word.parts if p[0] == "lit")
        self.heredocs.append((delim, strip))
        return j

    def skip_heredocs(self, i: int) -> int:
        while self.heredocs:
            delim, strip = self.heredocs.pop(0)
            while i < self.n:
                end = self.end_of_line(i)
                line = self.text[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
        return i

    def array_start(self, word: _Word) -> Optional[tuple]:
        text = word.literal_text()
        if text is None:
            return None
        m = _ASSIGN.fullmatch(text)
        return (m.group(1), m.group(3)) if m and not m.group(2) else None

    def read_array(self, i: int, word: _Word, words: list) -> int:
        """Elements of NAME=( ... ) from i (after the parenthesis); the assignment joins the command's words."""
        text, n = self.text, self.n
        elements: list = []
        while True:
            while i < n and (text[i] in " \t\r\n" or text.startswith("\\\n", i)):
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                raise self.fail("unterminated array (no closing parenthesis)", word.start)
            c = text[i]
            if c == ")":
                i += 1
                break
            if c == "#":
                i = self.end_of_line(i)
                continue
            if c in ";&|<>(":
                raise self.fail(f"unexpected {c!r} inside an array assignment", i)
            element, i = self.read_word(i)
            elements.append(element)
        words.append(("array", word, elements))
        return i

    def open_block(self, keyword: str, offset: int) -> None:
        self.next_block += 1
        self.blocks.append((keyword, self.next_block, self.pos(offset)[0]))
        if keyword == "case":
            self.case_depth += 1

    def close_block(self, keyword: str) -> None:
        if not self.blocks:
            return
        kind, block_id, line = self.blocks.pop()
        if kind == "case":
            self.case_depth -= 1
        what = {"if": "an if block", "case": "a case block", "for": "a for loop", "while": "a while loop",
                "until": "an until loop", "{": "a { } group or function", "(": "a subshell", "function": "a function",
                "select": "a select loop"}.get(kind, "a block")
        for var in self.vars.values():
            if block_id in var.blocks and var.note == "":
                var.note = f"${var.name} is set inside {what} (line {line}), which may not run"

    def command(self, words: list) -> None:
        if not words:
            return
        first = words[0]
        head = first.literal_text() if isinstance(first, _Word) else None
        if head in _OPEN_BLOCK:
            if head == "function":
                self.open_block("function", first.start)
                return
            self.open_block(head, first.start)
            if head in ("for", "select") and len(words) > 1 and isinstance(words[1], _Word):
                name = words[1].literal_text()
                if name:
                    self.set_unknown(name, words[1].start, f"${name} is a loop variable")
            return
        if head in _CLOSE_BLOCK:
            self.close_block(head)
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        if head in ("else", "elif"):
            kind = self.blocks[-1][0] if self.blocks else "if"
            self.close_block(kind)
            self.open_block("if", first.start)
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        if head in _KEYWORDS:
            rest = words[1:]
            if rest:
                self.command(rest)
            return
        # NAME=value prefixes
        prefixes: list = []
        k = 0
        while k < len(words):
            w = words[k]
            if isinstance(w, tuple):  # ARR=( ... )
                prefixes.append(w)
                k += 1
                continue
            m = self.assignment(w)
            if m is None:
                break
            prefixes.append(w)
            k += 1
        rest = words[k:]
        if not rest:
            for p in prefixes:
                self.assign(p)
            return
        if self.launch is not None:
            if self.is_launch(rest):
                self.extra_launches.append(self.pos(rest[0].start)[0])
            return
        name = rest[0].literal_text() if isinstance(rest[0], _Word) else None
        if name in ("export", "declare", "typeset", "local", "readonly"):
            self.declare(name, rest[1:])
            return
        if name == "unset":
            for w in rest[1:]:
                t = w.literal_text() if isinstance(w, _Word) else None
                if t and not t.startswith("-"):
                    self.vars.pop(t, None)
            return
        if name in ("source", "."):
            self.unknowns.append(f"line {self.pos(rest[0].start)[0]}: {name} runs another file; what it sets is not known statically")
            return
        if name == "read":
            for w in rest[1:]:
                t = w.literal_text() if isinstance(w, _Word) else None
                if t and _NAME.fullmatch(t):
                    self.set_unknown(t, w.start, f"${t} is read at run time")
            return
        if self.is_launch(rest):
            self.launch = {"prefixes": prefixes, "words": rest, "blocks": self.block_ids()}

    def block_ids(self) -> tuple:
        return tuple(b[1] for b in self.blocks)

    def assignment(self, w) -> Optional[tuple]:
        if not isinstance(w, _Word) or not w.parts or w.parts[0][0] != "lit" or len(w.parts[0]) > 3:
            return None
        m = _ASSIGN.match(w.parts[0][1])
        if not m or m.group(2):
            return None
        return m.group(1), m.group(3), m.end()

    def assign(self, item, exported: bool = False, export_word=None) -> Optional[_Var]:
        line = self.pos(item[1].start if isinstance(item, tuple) else item.start)[0]
        if isinstance(item, tuple):  # ("array", word, elements)
            _, word, elements = item
            name, op = self.array_start(word)
            origin = variable_origin(name, line)
            fields: list = []
            for el in elements:
                fields.extend(self.expand(el, origin, split=True))
            old = self.vars.get(name)
            if op == "+=" and old is not None:
                fields = (old.fields if old.array else old.fields) + fields
            var = _Var(name, fields, True, line, self.block_ids())
            var.span = self.span(word.start, self.end_of_array(word))
        else:
            name, op, cut = self.assignment(item)
            origin = variable_origin(name, line)
            first = item.parts[0]
            value_parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + item.parts[1:]
            value_word = _Word(value_parts, item.start + cut, item.end)
            value = self.join(self.expand(value_word, origin, split=False, keep_empty=True), origin)
            old = self.vars.get(name)
            if op == "+=" and old is not None and old.fields:
                prev = old.fields[-1] if not old.array else old.fields[0]
                value = self.join([prev, value], origin)
            var = _Var(name, [value], False, line, self.block_ids())
            var.span = self.span(item.start, item.end)
        if old is not None and old.exported:
            var.exported, var.export_line, var.export_col = True, old.export_line, old.export_col
        if exported:
            var.exported = True
            var.export_line, var.export_col = self.pos(export_word.start)
        self.vars[name] = var
        return var

    def end_of_array(self, word: _Word) -> int:
        return self.matching(word.end, "(", ")")

    def span(self, start: int, end: int) -> Optional[tuple]:
        l1, c1 = self.pos(start)
        l2, c2 = self.pos(end)
        return (l1, c1, c2) if l1 == l2 else None

    def set_unknown(self, name: str, offset: int, note: str) -> None:
        line = self.pos(offset)[0]
        f = _Field(variable_origin(name, line))
        f.unknown, f.what = True, "$" + name
        var = _Var(name, [f], False, line, self.block_ids())
        var.note = note
        self.vars[name] = var

    def declare(self, builtin: str, words: list) -> None:
        exporting = builtin == "export"
        for w in words:
            if isinstance(w, tuple):
                self.assign(w, exported=exporting, export_word=w[1])
                continue
            t = w.literal_text()
            if t is not None and t.startswith("-"):
                if "x" in t and builtin != "export":
                    exporting = True
                if builtin == "export" and "n" in t:
                    exporting = False
                continue
            if self.assignment(w):
                self.assign(w, exported=exporting, export_word=w)
            elif t and _NAME.fullmatch(t) and exporting:
                var = self.vars.get(t)
                if var is None:
                    continue  # export NAME of a variable from the caller's environment: it stays what it was
                var.exported = True
                var.export_line, var.export_col = self.pos(w.start)

    # --- expansion ---------------------------------------------------------------------------------

    def lookup(self, name: str, offset: int) -> Optional[_Var]:
        return self.vars.get(name)

    def note_unknown_var(self, name: str, offset: int, expr: str) -> None:
        line = self.pos(offset)[0]
        var = self.vars.get(name)
        why = var.note if var is not None and var.note else f"${name} is not set in the script (it comes from the environment)"
        sentence = f"line {line}: {why}" if expr == "$" + name else f"line {line}: {expr}: {why}"
        if sentence not in self.unknowns:
            self.unknowns.append(sentence)

    def values_of(self, part, origin: str) -> tuple:
        """(fields, unknown expression or None, is_array_all) for a var/brace part."""
        kind = part[0]
        start = part[2]
        if kind == "var":
            name, index, op, default = part[1], None, None, None
            expr = "$" + name
        else:
            body = part[1]
            expr = "${" + body + "}"
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]+)\])?(?:(:?[-=+])(.*))?", body, re.S)
            if not m:
                return None, expr, False
            name, index, op, default = m.group(1), m.group(2), m.group(3), m.group(4)
        var = self.vars.get(name)
        known = var is not None and not var.note
        if op:
            if op in (":-", "-", ":=", "="):
                empty = var is None or (op.startswith(":") and known and not var.array and var.fields and var.fields[0].text == "")
                if var is not None and not known:
                    self.note_unknown_var(name, start, expr)
                    return None, expr, False
                if not empty:
                    return list(var.fields if index in ("@", "*") else var.fields[:1]), None, index == "@"
                # the default: a word of its own, expanded in place (offsets inside the ${...})
                if var is None:
                    line = self.pos(start)[0]
                    sentence = f"line {line}: {expr} is {default!r} unless the environment sets {name}"
                    if sentence not in self.unknowns:
                        self.unknowns.append(sentence)
                sub = _Reader(self.path, self.text)
                sub.vars, sub.unknowns, sub.line_starts = self.vars, self.unknowns, self.line_starts
                offset = part[3] - 1 - len(default)
                word, _ = sub.read_default(offset, part[3] - 1)
                fields = self.expand(word, origin, split=False, keep_empty=True)
                if op in (":=", "="):
                    line = self.pos(start)[0]
                    self.vars[name] = _Var(name, [self.join(fields, variable_origin(name, line))], False, line, self.block_ids())
                return fields, None, False
            return None, expr, False  # ${VAR:+alt} and the like: not followed
        if var is None or not known:
            self.note_unknown_var(name, start, expr)
            return None, expr, False
        if index is None:
            return list(var.fields[:1]), None, False
        if index in ("@", "*"):
            return list(var.fields), None, index == "@"
        if index.isdigit():
            i = int(index)
            return (list(var.fields[i:i + 1]) if var.array else (list(var.fields) if i == 0 else [])), None, False
        return None, expr, False

    def read_default(self, start: int, end: int) -> tuple:
        """The default word of ${VAR:-word}: text between start and end, read as a double-quoted-like word."""
        saved = self.n
        self.n = end
        try:
            parts: list = []
            i = start
            while i < end:
                c = self.text[i]
                if c == "$":
                    i = self.read_dollar(i, parts, quoted=False)
                elif c == '"':
                    i = self.read_double(i + 1, parts)
                elif c == "'":
                    j = self.text.find("'", i + 1, end)
                    j = end if j < 0 else j
                    parts.append(("lit", self.text[i + 1:j], list(range(i + 1, j)), "q"))
                    i = j + 1
                else:
                    j = i + 1
                    while j < end and self.text[j] not in "$\"'":
                        j += 1
                    parts.append(("lit", self.text[i:j], list(range(i, j))))
                    i = j
            return _Word(parts, start, end), end
        finally:
            self.n = saved

    def join(self, fields: list, origin: str) -> _Field:
        out = _Field(origin)
        for f in fields:
            if f.unknown:
                out.unknown = True
                out.what = out.what or f.what
            out.chars.extend(f.chars)
            out.offsets.extend(f.offsets)
        if len(fields) == 1:
            out.word, out.whole, out.origin = fields[0].word, fields[0].whole, fields[0].origin
        else:
            out.whole = False
        return out

    def expand(self, word: _Word, origin: str, split: bool, keep_empty: bool = False) -> list:
        """The fields a word expands to (bash: parameter expansion, then word splitting of unquoted results)."""
        out: list = []
        cur = _Field(origin)
        cur.word = word
        started = False  # the current field exists (has a quoted part or text)
        multi_unknown = True
        only_part = len(word.parts) == 1

        for part in word.parts:
            kind = part[0]
            if kind == "lit":
                cur.chars.extend(part[1])
                cur.offsets.extend(part[2])
                started = started or bool(part[1]) or len(part) > 3
                multi_unknown = False
                continue
            quoted = part[4]
            if kind == "unknown":
                cur.unknown = True
                cur.what = cur.what or part[1]
                cur.whole = False
                started = True
                if quoted:
                    multi_unknown = False
                line = self.pos(part[2])[0]
                sentence = f"line {line}: {part[1]} is not known statically"
                if sentence not in self.unknowns:
                    self.unknowns.append(sentence)
                continue
            values, expr, array_all = self.values_of(part, origin)
            if values is None:
                cur.unknown = True
                cur.what = cur.what or expr
                cur.whole = False
                started = True
                if quoted:
                    multi_unknown = False
                continue
            if quoted:
                if array_all:
                    for idx, v in enumerate(values):
                        if idx:
                            out.append(cur)
                            cur = _Field(origin)
                        self.append_field(cur, v, only_part)
                        started = True
                else:
                    joined = self.join(values, origin) if len(values) != 1 else values[0]
                    if len(values) > 1:  # "${ARR[*]}": joined with spaces
                        joined = self.join_with_space(values, origin)
                    self.append_field(cur, joined, only_part)
                    started = True
                multi_unknown = False
                continue
            # unquoted: each value splits on blanks
            for idx, v in enumerate(values):
                if idx and started:
                    out.append(cur)
                    cur = _Field(origin)
                    started = False
                if v.unknown:
                    self.append_field(cur, v, only_part)
                    cur.multi = cur.multi or v.multi
                    started = True
                    continue
                pieces = self.split_field(v) if split else [v]
                if not split:
                    self.append_field(cur, v, only_part)
                    started = True
                    continue
                text = v.text or ""
                leading_blank = bool(text) and text[0] in " \t\n"
                if leading_blank and started:
                    out.append(cur)
                    cur = _Field(origin)
                    started = False
                for pidx, piece in enumerate(pieces):
                    if pidx:
                        out.append(cur)
                        cur = _Field(origin)
                    self.append_field(cur, piece, only_part and len(pieces) == 1)
                    started = True
                if text and text[-1] in " \t\n" and started:
                    out.append(cur)
                    cur = _Field(origin)
                    started = False
            multi_unknown = multi_unknown and True
        if started or keep_empty:
            out.append(cur)
        if len(out) == 1 and out[0].unknown and multi_unknown and split:
            out[0].multi = True
        if not out and not split:
            out.append(_Field(origin))
        for f in out:
            if f.word is word and not all(p[0] == "lit" for p in word.parts):
                f.word = None
        return out

    def append_field(self, cur: _Field, v: _Field, pass_through: bool) -> None:
        if not cur.chars and not cur.unknown and pass_through:
            cur.word, cur.whole, cur.origin = v.word, v.whole, v.origin
        else:
            cur.whole = False
            cur.word = None
        cur.chars.extend(v.chars)
        cur.offsets.extend(v.offsets)
        if v.unknown:
            cur.unknown = True
            cur.what = cur.what or v.what

    def join_with_space(self, values: list, origin: str) -> _Field:
        out = _Field(origin)
        for idx, v in enumerate(values):
            if idx:
                out.chars.append(" ")
                out.offsets.append(None)
            out.chars.extend(v.chars)
            out.offsets.extend(v.offsets)
            if v.unknown:
                out.unknown, out.what = True, out.what or v.what
        out.whole = False
        return out

    def split_field(self, v: _Field) -> list:
        text = v.text or ""
        if not any(c in text for c in " \t\n"):
            return [v] if text else []
        pieces: list = []
        cur: Optional[_Field] = None
        for ch, off in zip(v.chars, v.offsets):
            if ch in " \t\n":
                if cur is not None:
                    pieces.append(cur)
                    cur = None
                continue
            if cur is None:
                cur = _Field(v.origin)
                cur.whole = False
            cur.chars.append(ch)
            cur.offsets.append(off)
        if cur is not None:
            pieces.append(cur)
        return pieces

    # --- the launch --------------------------------------------------------------------------------

    def static_text(self, word) -> Optional[str]:
        """A command word's text when it is known (expanded without splitting)."""
        if not isinstance(word, _Word):
            return None
        lit = word.literal_text()
        if lit is not None:
            return lit
        return None

    def is_launch(self, words: list) -> bool:
        return self.find_program(words) is not None

    def find_program(self, words: list) -> Optional[tuple]:
        """(kind, index of the program word) where kind is "torchrun" or "python"; None: not a launch."""
        i, n = 0, len(words)
        while i < n:
            w = words[i]
            t = self.static_text(w)
            if t is None:
                return None
            base = t.rsplit("/", 1)[-1]
            if base in ("exec", "nohup", "time", "command", "stdbuf") and i + 1 < n:
                i += 1
                while i < n and (self.static_text(words[i]) or "").startswith("-"):
                    i += 1
                continue
            if base == "env":
                i += 1
                while i < n and (self.assignment(words[i]) or (self.static_text(words[i]) or "").startswith("-")):
                    i += 1
                continue
            if base in ("srun", "numactl", "mpirun"):
                i = self.skip_options(words, i + 1, _SRUN_VALUE if base == "srun" else frozenset(("-N", "-n", "-C", "-m", "-p", "-np", "--cpunodebind", "--membind", "--physcpubind", "--preferred")))
                continue
            if base == "uv" and i + 1 < n and self.static_text(words[i + 1]) == "run":
                i += 2
                while i < n and (self.static_text(words[i]) or "").startswith("-"):
                    i += 1
                continue
            if base == "torchrun":
                return ("torchrun", i)
            if re.fullmatch(r"python(?:\d+(?:\.\d+)?)?", base):
                j = i + 1
                while j < n:
                    tj = self.static_text(words[j])
                    if tj is None:
                        return None
                    if tj == "-m":
                        mod = self.static_text(words[j + 1]) if j + 1 < n else None
                        if mod in ("torch.distributed.run", "torch.distributed.launch"):
                            return ("torchrun", j + 1)
                        return None
                    if tj.startswith("-m") and tj[2:] in ("torch.distributed.run", "torch.distributed.launch"):
                        return ("torchrun", j)
                    if tj in _PYTHON_VALUE:
                        j += 2
                        continue
                    if tj.startswith("-"):
                        j += 1
                        continue
                    break
                if j < n and self.script_name(words[j], strict=True):
                    return ("python", j)
                return None
            return None
        return None

    def skip_options(self, words: list, i: int, with_value: frozenset) -> int:
        n = len(words)
        while i < n:
            t = self.static_text(words[i])
            if t is None or not t.startswith("-"):
                return i
            i += 2 if (t in with_value and "=" not in t) else 1
        return i

    def script_name(self, word, strict: bool) -> Optional[str]:
        """The training script's file name, from its literal tail ($DIR/pretrain_gpt.py counts)."""
        if not isinstance(word, _Word) or not word.parts:
            return None
        last = word.parts[-1]
        if last[0] != "lit":
            return None
        tail = last[1].rsplit("/", 1)[-1]
        if "/" not in last[1] and len(word.parts) > 1:
            return None  # $DIR"pretrain_gpt.py"-style joins: the name is still its tail
        if not tail.endswith(".py"):
            return None
        if strict and not re.fullmatch(r"pretrain_\w*\.py", tail):
            return None
        return tail


def read_launch_script(path: str, text: str) -> LaunchText:
    reader = _Reader(path, text)
    reader.run()
    if reader.launch is None:
        raise InputError(InputProblem(
            path, "no Megatron-LM launch line found (torchrun, python -m torch.distributed.run, or python pretrain_*.py)"))
    return _launch(reader)


def has_launch_line(text: str) -> bool:
    """Whether a script has a launch line (folder discovery: other shell scripts are skipped quietly)."""
    if not re.search(r"torchrun|torch\.distributed\.(?:run|launch)|pretrain_\w*\.py", text):
        return False
    try:
        reader = _Reader("<sniff>", text)
        reader.run()
    except InputError:
        return True  # the check reports what is wrong with it
    return reader.launch is not None


def _launch(reader: _Reader) -> LaunchText:
    launch = reader.launch
    words = launch["words"]
    kind, index = reader.find_program(words)
    first_offset = words[0].start
    launch_line = reader.pos(first_offset)[0]
    found = LaunchText(file=reader.path, text=reader.text, kind="shell", script=None, launch_line=launch_line)
    # the launch environment: exported variables, then the command's own prefixes
    for var in reader.vars.values():
        value: object = UNKNOWN if var.note or var.array or var.fields[0].unknown else var.fields[0].text
        line = var.export_line if var.exported else var.line
        how = "export" if var.exported else "assignment"
        if var.array:
            continue
        found.env[var.name] = EnvVar(var.name, value, line, var.export_col if var.exported else 1, how, span=var.span)
    for p in launch["prefixes"]:
        if isinstance(p, tuple):
            continue
        name, _op, cut = reader.assignment(p)
        origin = variable_origin(name, reader.pos(p.start)[0])
        first = p.parts[0]
        parts = ([("lit", first[1][cut:], first[2][cut:])] if len(first[1]) > cut else []) + p.parts[1:]
        field_ = reader.join(reader.expand(_Word(parts, p.start + cut, p.end), origin, split=False, keep_empty=True), origin)
        line, col = reader.pos(p.start)
        found.env[name] = EnvVar(name, UNKNOWN if field_.unknown else field_.text, line, col, "prefix", span=reader.span(p.start, p.end))
    if reader.extra_launches:
        found.unknowns.append(
            "line(s) " + ", ".join(map(str, reader.extra_launches)) + f": more launch lines; only the first (line {launch_line}) is checked")
    # expand the launch words
    fields: list = []
    word_of: list = []
    for w in words:
        for f in reader.expand(w, LAUNCH_LINE, split=True):
            fields.append(f)
            word_of.append(w)
    # locate the program and the script among the expanded fields
    prog_word = words[index]
    start = next(k for k, w in enumerate(word_of) if w is prog_word)
    script_pos = None
    if kind == "python":
        script_pos = start  # find_program gave the script word itself
        found.script = reader.script_name(prog_word, True)
    else:
        script_pos = _torchrun(reader, found, fields, start + 1)
        if script_pos is not None and script_pos < len(fields):
            found.script = reader.script_name(word_of[script_pos], False) if fields[script_pos].text is not None or True else None
            if found.script is None:
                f = fields[script_pos]
                if f.text is not None and f.text.rsplit("/", 1)[-1].endswith(".py"):
                    found.script = f.text.rsplit("/", 1)[-1]
                else:
                    found.unknowns.append(f"line {reader.pos(word_of[script_pos].start)[0]}: the training script "
                                          f"{f.text or f.what or 'word'} is not known statically")
    found.unknowns[:0] = reader.unknowns
    if script_pos is None:
        return found
    end_word = word_of[script_pos]
    found.insert_at = reader.pos(end_word.end)
    for f, w in zip(fields[script_pos + 1:], word_of[script_pos + 1:]):
        found.tokens.append(_token(reader, f, w))
    return found


def _token(reader: _Reader, f: _Field, written: _Word) -> Token:
    # a whole written word is placed where it starts (its opening quote); a piece of one, at its first character
    first = f.word.start if (f.whole and f.word is not None) else next((o for o in f.offsets if o is not None), None)
    if first is None:
        first = written.start
    line, col = reader.pos(first) if first is not None else (None, None)
    if f.unknown:
        return Token(None, line, col, f.origin, multi=f.multi, what=f.what)
    literal = f.whole and f.word is not None
    span = reader.span(f.word.start, f.word.end) if literal else None
    return Token(f.text, line, col, f.origin, literal=literal and span is not None, span=span)


def _torchrun(reader: _Reader, found: LaunchText, fields: list, i: int) -> Optional[int]:
    """Read torchrun's own options from field i; returns the index of the training script's field."""
    values: dict = {}
    unknown_opts = False
    n = len(fields)
    while i < n:
        f = fields[i]
        t = f.text
        if t is None:
            if f.multi:
                unknown_opts = True
                i += 1
                continue
            break  # an unknown single word where the script goes
        if not t.startswith("-"):
            break
        name, eq, val = t.partition("=")
        full = _torchrun_option(name)
        if full is None:
            found.unknowns.append(f"line {_line(reader, f)}: torchrun option {name} is not one torchrun knows")
            i += 1
            continue
        if full in _TORCHRUN_NO_VALUE:
            i += 1
            if full in ("--no-python", "--no_python", "-m", "--module"):
                pass
            continue
        if eq:
            values[full.replace("_", "-")] = (val, f, len(name) + 1)
            i += 1
            continue
        if i + 1 < n:
            values[full.replace("_", "-")] = (fields[i + 1].text, fields[i + 1], 0)
        i += 2
    _world_size(reader, found, values, unknown_opts)
    return None if i >= n else i


def _world_size(reader: _Reader, found: LaunchText, values: dict, unknown_opts: bool) -> None:
    """torchrun's --nproc-per-node x --nnodes (torch/distributed/run.py: determine_local_world_size,
    parse_min_max_nnodes), when both are known integers."""
    sizes: list = []
    lines: list = []
    for option, default in (("--nproc-per-node", None), ("--nnodes", "1")):
        got = values.get(option)
        if got is None:
            if unknown_opts:
                found.unknowns.append(f"{option}: not on the launch line; an expansion not known statically may give it, so the world size is unknown")
                return
            if default is None:
                found.unknowns.append("torchrun has no --nproc-per-node: one process per node unless PET_NPROC_PER_NODE is set; world size unknown")
                return
            sizes.append(int(default))
            continue
        text, f, skip = got
        first = next((o for o in f.offsets if o is not None), None)
        offset = None if first is None else first + skip
        line = reader.pos(offset)[0] if offset is not None else None
        if text is None:
            found.unknowns.append(f"line {line}: {option} {f.what or 'value'} is not known statically; world size unknown")
            return
        text = text[skip:] if skip and f.text == text else text
        if option == "--nnodes" and ":" in text:
            low, _, high = text.partition(":")
            if low.isdigit() and high.isdigit() and low == high:
                text = low
            elif low.isdigit() and high.isdigit():
                found.unknowns.append(f"line {line}: --nnodes {text} is elastic (MIN:MAX); world size unknown")
                return
        if option == "--nproc-per-node" and text in ("gpu", "cpu", "auto", "xpu"):
            found.unknowns.append(f"line {line}: --nproc-per-node {text} is the machine's device count; world size unknown")
            return
        try:
            size = int(text)
        except ValueError:
            raise reader.fail(f"not an integer: {text!r} (torchrun exits: unsupported value)", offset, key=option) from None
        if size < 1:
            raise reader.fail(f"must be a positive integer, got {size}", offset, key=option)
        sizes.append(size)
        lines.append(line)
    found.world_size = sizes[0] * sizes[1]
    found.world_size_line = lines[0] if lines else None


def _line(reader: _Reader, f: _Field) -> Optional[int]:
    first = next((o for o in f.offsets if o is not None), None)
    return reader.pos(first)[0] if first is not None else None


def _torchrun_option(name: str) -> Optional[str]:
    if name in _TORCHRUN_ALL:
        return name
    if name.startswith("--"):
        hits = [o for o in _TORCHRUN_ALL if o.startswith(name)]
        canonical = {h.replace("_", "-") for h in hits}
        if len(canonical) == 1:
            return hits[0]
    return None
