"""``dataclass`` and ``field`` for overlap-cli's plain data types, at a fraction of the start-up cost.

Why not the standard library's: ``import dataclasses`` pulls in ``inspect`` (with ast, dis, tokenize:
~5 ms), and each decorated class then costs ~0.25 ms (one ``exec`` per generated method); the check path
defines ~35 such classes. ``bench/records_cost.py`` times a whole ``overlap check`` start both ways: with
this module 40.7 ms, with the standard library's 57.4 ms (wall time, medians of 31 interleaved runs on 2
cores, .pyc files used; ``python -c pass`` 8.8 ms): 16.7 ms saved per start. Here one small ``exec``
builds ``__init__`` (the only method on a hot path), once a class has made GENERIC_CALLS instances (before
that a generic one binds the arguments: most classes of a single check never get that far); ``__repr__``,
``__eq__``, ``__hash__`` and the frozen guards are shared functions.

Supported, with the standard library's meaning: ``@dataclass`` and ``@dataclass(frozen=..., kw_only=...,
eq=..., repr=...)``; ``field(default=, default_factory=, repr=, compare=, hash=, kw_only=)``; class-level
defaults; ``__post_init__``; fields inherited from a decorated base. Methods a class defines itself are
kept. Not supported (not used here): ``order``, ``slots``, ``init=False``, ``InitVar``. These classes are
not ``dataclasses.is_dataclass``; their fields are listed in ``__record_fields__``.
"""

from __future__ import annotations

_MISSING = object()
_FACTORY = object()  # the __init__ default of a field with default_factory: "call the factory"


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (same name as the standard library's)."""


class Field:
    __slots__ = ("name", "default", "default_factory", "repr", "compare", "hash", "kw_only")

    def __init__(self, default, default_factory, repr, compare, hash, kw_only):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = None
        self.default, self.default_factory = default, default_factory
        self.repr, self.compare, self.hash, self.kw_only = repr, compare, hash, kw_only

    def __repr__(self) -> str:
        return f"Field(name={self.name!r})"


def field(*, default=_MISSING, default_factory=_MISSING, repr=True, compare=True, hash=None, kw_only=_MISSING) -> Field:
    return Field(default, default_factory, repr, compare, hash, kw_only)


def dataclass(cls=None, /, *, frozen: bool = False, kw_only: bool = False, eq: bool = True, repr: bool = True):
    def wrap(c):
        return _process(c, frozen, kw_only, eq, repr)

    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _process(cls, frozen, kw_only, eq, want_repr):
    fields: dict = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            fields[f.name] = f
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(value, _MISSING, True, True, None, _MISSING)
        f.name = name
        if f.kw_only is _MISSING:
            f.kw_only = kw_only
        if f.default is not _MISSING and type(f.default).__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        # As in the standard library: the class attribute holds the default, or nothing.
        if f.default is _MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, f.default)
        fields[name] = f
    ordered = tuple(fields.values())
    cls.__record_fields__ = ordered
    cls.__match_args__ = tuple(f.name for f in ordered if not f.kw_only)

    if "__init__" not in cls.__dict__:
        _check_order(ordered)
        cls.__init__ = _lazy_init(cls, ordered, frozen, hasattr(cls, "__post_init__"))
    if want_repr and "__repr__" not in cls.__dict__:
        cls.__repr__ = _make_repr(tuple(f.name for f in ordered if f.repr))
    compared = tuple(f.name for f in ordered if f.compare)
    class_hash = cls.__dict__.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    if eq and "__eq__" not in cls.__dict__:
        cls.__eq__ = _make_eq(compared)
    if frozen:
        names = frozenset(fields)
        cls.__setattr__ = _make_frozen_setattr(cls, names)
        cls.__delattr__ = _make_frozen_delattr(cls, names)
    if eq and not explicit_hash:
        if frozen:
            hashed = tuple(f.name for f in ordered if (f.compare if f.hash is None else f.hash))
            cls.__hash__ = _make_hash(hashed)
        else:
            cls.__hash__ = None  # mutable and compared by value: unhashable, as with dataclasses
    return cls


def _check_order(fields):
    """The standard library's decoration-time error, raised here without building ``__init__``."""
    seen_default = False
    for f in fields:
        if f.kw_only:
            continue
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


# Instances built by the generic __init__ before the class gets its compiled one.
GENERIC_CALLS = 64


def _lazy_init(cls, fields, frozen, post_init):
    """``__init__`` without compiling anything, until the class has made GENERIC_CALLS instances.

    Compiling the generated ``__init__`` (``_make_init``, one ``exec``) costs ~0.1-0.4 ms a class, and a
    check of one file makes fewer than a few dozen instances of most of its ~35 record classes; so the
    first instances are bound here, field by field (a few microseconds each), and a class that keeps
    making them then compiles its fast ``__init__`` and puts it on itself. Both bind arguments as the
    generated signature does: positional fields in order, keyword-only ones by name, defaults and
    factories for what is not given, TypeError for a missing, unexpected, repeated or extra argument."""
    positional = tuple(f.name for f in fields if not f.kw_only)
    names = frozenset(f.name for f in fields)
    required = tuple(f.name for f in fields if f.default is _MISSING and f.default_factory is _MISSING)
    steps = tuple((f.name, f.default, f.default_factory) for f in fields)
    assign = object.__setattr__ if frozen else setattr
    qualname = f"{cls.__qualname__}.__init__"
    calls = 0

    def __init__(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > GENERIC_CALLS:
            init = _make_init(cls, fields, frozen, post_init)
            if cls.__dict__.get("__init__") is __init__:
                type.__setattr__(cls, "__init__", init)
            return init(self, *args, **kwargs)
        if len(args) > len(positional):
            raise TypeError(f"{qualname}() takes {len(positional) + 1} positional arguments but {len(args) + 1} were given")
        given = dict(zip(positional, args))
        for name in kwargs:
            if name not in names:
                raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
            if name in given:
                raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
        given.update(kwargs)
        missing = [name for name in required if name not in given]
        if missing:
            raise TypeError(f"{qualname}() missing required arguments: {', '.join(map(repr, missing))}")
        for name, default, factory in steps:
            if name in given:
                value = given[name]
            elif factory is not _MISSING:
                value = factory()
            else:
                value = default
            assign(self, name, value)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = qualname
    return __init__


def _make_init(cls, fields, frozen, post_init):
    positional, keyword, body = [], [], []
    env = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    seen_default = False
    for f in fields:
        if f.default_factory is not _MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            param = f"{f.name}=_FACTORY"
            value = f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"
        elif f.default is not _MISSING:
            env[f"_default_{f.name}"] = f.default
            param, value = f"{f.name}=_default_{f.name}", f.name
        else:
            param, value = f.name, f.name
        if f.kw_only:
            keyword.append(param)
        else:
            if "=" in param:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            positional.append(param)
        body.append(f"    _set(self, {f.name!r}, {value})" if frozen else f"    self.{f.name} = {value}")
    if post_init:
        body.append("    self.__post_init__()")
    params = ["self", *positional] + (["*", *keyword] if keyword else [])
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, env)  # noqa: S102 - source built above from field names only
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _make_repr(names):
    def __repr__(self):
        return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    return __repr__


def _make_eq(names):
    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    return __eq__


def _make_hash(names):
    def __hash__(self):
        return hash(tuple(getattr(self, n) for n in names))

    return __hash__


def _make_frozen_setattr(cls, names):
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _make_frozen_delattr(cls, names):
    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__
