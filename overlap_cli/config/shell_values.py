"""What one path through a launch script holds (``config.shell``): the values and the path's state.

``Field`` is an expanded word: its characters, each with the file offset it came from (None for a
character the script did not write, such as the blank ``${ARR[*]}`` joins with), and ``Hole`` entries for
what is not known statically. ``Var`` is a variable the script sets (a list of fields; an array has
several). ``State`` is one way through the script: its variables, functions, positional parameters, the
decisions that led to it and the sentences it has gathered. Every module of the reader works on a
``State`` it is given; nothing here knows the script's text.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

    from overlap_cli.config.shell_lex import Word

from overlap_cli.config.argv import variable_origin


class Hole:
    """A stretch of a word that is not known statically (``$CKPT``, ``$(nproc)``). ``constant``: it is a
    variable the script never sets (the caller's environment, or the script's own arguments), which has
    the same value wherever the script reads it; ``$(...)`` and script-assigned unknowns are not."""

    __slots__ = ("what", "constant")

    def __init__(self, what: str, constant: bool = False):
        self.what, self.constant = what, constant


class Field:
    """An expanded word: its characters (``Hole`` for an unknown stretch) and the file offset of each
    character (None where the script did not write it)."""

    __slots__ = ("chars", "offsets", "multi", "origin", "word", "whole", "sig")

    def __init__(self, origin: str):
        self.chars: list = []
        self.offsets: list = []
        self.multi = False  # only an unquoted unknown expansion: it may be any number of words
        self.origin = origin
        self.word: Optional[Word] = None  # the written word this field is exactly, if any
        self.whole = True  # still exactly one written word (nothing joined or split)
        self.sig: Optional[tuple] = None  # field_signature, once asked (a field in a variable is not changed)

    @property
    def unknown(self) -> bool:
        for c in self.chars:  # a loop, not any(<genexpr>): asked for every word of every command
            if c.__class__ is Hole:
                return True
        return False

    @property
    def what(self) -> str:
        return next((c.what for c in self.chars if c.__class__ is Hole), "")

    @property
    def text(self) -> Optional[str]:
        try:
            return "".join(self.chars)
        except TypeError:  # a Hole among the characters
            return None

    def hole(self, what: str, constant: bool = False) -> None:
        self.sig = None
        self.chars.append(Hole(what, constant))
        self.offsets.append(None)
        self.whole = False
        self.word = None

    def extend(self, other: "Field") -> None:
        self.sig = None
        self.chars.extend(other.chars)
        self.offsets.extend(other.offsets)


def text_field(origin: str, text: str) -> Field:
    """A field of known text the script did not write character by character (an integer it computed, a
    value from the caller's environment)."""
    f = Field(origin)
    f.chars, f.offsets = list(text), [None] * len(text)
    f.whole = False
    return f


class Var:
    """A variable the script sets. Treated as immutable once stored: the evaluator's paths share them."""

    __slots__ = ("name", "fields", "array", "line", "exported", "export_line", "export_col", "span", "note", "unset",
                 "_signature")

    def __init__(self, name: str, fields: list, array: bool, line: int):
        self.name, self.fields, self.array, self.line = name, fields, array, line
        self.exported = False
        self.export_line = self.export_col = None
        self.span = None
        self.note = ""  # why the value is not known, when it is not
        self.unset = False  # ``unset NAME``: known to be unset (not the caller's value)
        self._signature: Optional[tuple] = None

    def copy(self) -> "Var":
        v = Var(self.name, self.fields, self.array, self.line)
        v.exported, v.export_line, v.export_col = self.exported, self.export_line, self.export_col
        v.span, v.note, v.unset = self.span, self.note, self.unset
        return v

    def keep_export(self, old: "Optional[Var]") -> "Var":
        """A new value of an exported variable stays exported (bash keeps the attribute), from where it was."""
        if old is not None and old.exported:
            self.exported, self.export_line, self.export_col = True, old.export_line, old.export_col
        return self

    def signature(self) -> tuple:
        """What the value is, wherever it was written (two paths that set the same value agree). Computed
        once: a Var is not changed after it is stored."""
        if self._signature is None:
            self._signature = (self.array, self.exported, self.note, self.unset,
                               tuple(field_signature(f) for f in self.fields))
        return self._signature


def field_signature(f: Field) -> tuple:
    sig = f.sig
    if sig is None or len(sig) != len(f.chars):  # (a field still being built has grown since)
        sig = f.sig = tuple(c if c.__class__ is str else ("?", c.what) for c in f.chars)
    return sig


def unknown_var(name: str, line: int, note: str) -> Var:
    """A variable whose value is not known statically from ``line`` on, ``note`` saying why."""
    f = Field(variable_origin(name, line))
    f.hole("$" + name)
    var = Var(name, [f], False, line)
    var.note = note
    return var


class VarMap(dict):
    """A path's variables (name -> Var) that keep a fingerprint of their values: the sum of each entry's hash,
    brought up to date for the names set since it was last asked (``settle`` compares many paths after every
    command, and most commands change one variable or none)."""

    __slots__ = ("_contrib", "_sum", "_dirty")

    def __init__(self, *args):
        dict.__init__(self, *args)
        self._contrib = None  # name -> the hash its entry added to _sum; None: not computed yet
        self._sum = 0
        self._dirty: set = set()

    def __setitem__(self, name, var) -> None:
        dict.__setitem__(self, name, var)
        if self._contrib is not None:
            self._dirty.add(name)

    def __delitem__(self, name) -> None:
        dict.__delitem__(self, name)
        if self._contrib is not None:
            self._dirty.add(name)

    def pop(self, name, *default):
        if self._contrib is not None:
            self._dirty.add(name)
        return dict.pop(self, name, *default)

    def update(self, *args, **kwargs) -> None:
        dict.update(self, *args, **kwargs)
        self._contrib = None

    def setdefault(self, name, default=None):
        if name not in self:
            self[name] = default
        return dict.__getitem__(self, name)

    def clear(self) -> None:
        dict.clear(self)
        self._contrib = None

    def copy(self) -> "VarMap":
        if self._contrib is None and len(self) >= _SHARED_ENTRIES:
            self._entries()  # worked out once here, not again by each copy (a fork of a path with many variables)
        m = VarMap(self)
        if self._contrib is not None:
            m._contrib, m._sum, m._dirty = dict(self._contrib), self._sum, set(self._dirty)
        return m

    def _entries(self) -> dict:
        """name -> (its value's signature, the hash that entry adds to the fingerprint), brought up to date."""
        contrib = self._contrib
        if contrib is None:
            contrib = self._contrib = {}
            total = 0
            for name, var in self.items():
                sig = var.signature()
                h = hash((name, sig))
                contrib[name] = (sig, h)
                total += h
            self._sum, self._dirty = total, set()
        elif self._dirty:
            total = self._sum
            for name in self._dirty:
                old = contrib.pop(name, None)
                if old is not None:
                    total -= old[1]
                var = dict.get(self, name)
                if var is not None:
                    sig = var.signature()
                    h = hash((name, sig))
                    contrib[name] = (sig, h)
                    total += h
            self._sum, self._dirty = total, set()
        return contrib

    def fingerprint(self) -> int:
        """A hash of every (name, value signature): equal maps have equal fingerprints."""
        self._entries()
        return self._sum

    def same_values(self, other: "VarMap") -> bool:
        """Every name has a value of the same signature in both (one comparison of the two entry maps)."""
        return self._entries() == other._entries()


_SHARED_ENTRIES = 64  # from this many variables, a map works out its entries before it is copied


class State:
    """One path: its variables, functions, positional parameters and the decisions that led here."""

    __slots__ = ("vars", "funcs", "positional", "notes", "choices", "memo", "status", "key", "flow", "launched",
                 "done", "frames", "sourced", "env_complete")

    def __init__(self):
        self.vars: dict = VarMap()
        self.funcs: dict = {}
        self.positional: Optional[list] = None  # $1 ... inside a function call; None: the script's own
        self.notes: list = []  # the sentences this path has gathered (what is not known, and why)
        self.choices: tuple = ()
        self.memo: dict = {}  # condition key -> its value on this path (a constant unknown, decided once)
        self.status: Optional[bool] = True  # the last command succeeded (None: not known)
        self.key: Optional[tuple] = None  # the condition the status is the value of, when it can be memoized
        self.flow: Optional[tuple] = None  # ("break", n) | ("continue", n) | ("return",)
        self.launched = False
        self.done = False  # exit ran
        self.frames: list = []  # per function call: {name: the Var before ``local`` (None: unset)}
        # after a ``source`` whose file is not read (or a command given up, shell_budget): why any variable the
        # script has not set since may come from it ("may be set by the file sourced on line 4"), not the
        # caller's environment, not a default
        self.sourced: Optional[str] = None
        # the caller's environment is known whole (--env-from-shell): a variable neither it nor the script
        # sets is unset, not unknown (but for what bash and the job's scheduler set: shell_expand.lookup)
        self.env_complete = False

    def copy(self) -> "State":
        s = State()
        s.vars, s.funcs, s.positional = self.vars.copy(), dict(self.funcs), self.positional
        s.notes, s.choices, s.memo = list(self.notes), self.choices, dict(self.memo)
        s.status, s.key, s.flow, s.launched, s.done = self.status, self.key, self.flow, self.launched, self.done
        s.frames = [dict(f) for f in self.frames]
        s.sourced, s.env_complete = self.sourced, self.env_complete
        return s

    def signature(self) -> tuple:
        return (tuple(sorted((k, v.signature()) for k, v in self.vars.items())),
                tuple(sorted((k, id(v)) for k, v in self.funcs.items())),
                None if self.positional is None else tuple(field_signature(f) for f in self.positional),
                self.flow, self.launched, tuple(tuple(sorted(f)) for f in self.frames), self.sourced)

    def same(self, other: "State") -> bool:
        """``self.signature() == other.signature()``, without building either (the variables compared as
        maps of their signatures: a path with thousands of variables is compared in one C-level pass)."""
        return (self.flow == other.flow and self.launched == other.launched and self.sourced == other.sourced
                and {k: id(v) for k, v in self.funcs.items()} == {k: id(v) for k, v in other.funcs.items()}
                and (self.positional is None) == (other.positional is None)
                and (self.positional is None or [field_signature(f) for f in self.positional]
                     == [field_signature(f) for f in other.positional])
                and [sorted(f) for f in self.frames] == [sorted(f) for f in other.frames]
                and self.vars.same_values(other.vars))

    def quick_key(self) -> tuple:
        """What ``signature`` says, cheaply and up to hash collisions: paths with different keys differ
        (``settle`` compares whole signatures only between paths whose keys are equal)."""
        return (self.vars.fingerprint(), tuple(sorted((k, id(v)) for k, v in self.funcs.items())),
                None if self.positional is None else tuple(field_signature(f) for f in self.positional),
                self.flow, self.launched, tuple(tuple(sorted(f)) for f in self.frames), self.sourced)

    def note(self, sentence: str) -> None:
        """Add a sentence once."""
        if sentence not in self.notes:
            self.notes.append(sentence)
