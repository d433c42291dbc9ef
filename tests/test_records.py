"""overlap_cli.records behaves like the standard library's dataclasses for every feature the package uses."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from overlap_cli import records

# The same class bodies, decorated by each implementation.
IMPLEMENTATIONS = {"records": (records.dataclass, records.field), "dataclasses": (dataclasses.dataclass, dataclasses.field)}


def make(impl):
    dataclass, field = IMPLEMENTATIONS[impl]

    @dataclass
    class Plain:
        name: str
        size: int = 3
        tags: list = field(default_factory=list)
        hidden: dict = field(default_factory=dict, repr=False, compare=False)

    @dataclass(frozen=True)
    class Frozen:
        code: str
        items: tuple = ()
        table: dict = field(default_factory=dict, hash=False)
        path: object = field(default=None, compare=False)

    @dataclass(frozen=True, kw_only=True)
    class KwOnly:
        a: int
        b: int = 2

    @dataclass
    class Post:
        x: int
        doubled: int = 0

        def __post_init__(self):
            self.doubled = 2 * self.x

    return Plain, Frozen, KwOnly, Post


def outcome(fn):
    """The value, or the exception type: what the two implementations must agree on."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - comparing behaviour, whatever it is
        return ("raises", type(exc).__mro__[1] if type(exc).__name__ == "FrozenInstanceError" else type(exc))


def warm_up(classes) -> None:
    """Past records.GENERIC_CALLS instances each: the classes then bind arguments with their compiled __init__."""
    Plain, Frozen, KwOnly, Post = classes
    for _ in range(records.GENERIC_CALLS + 1):
        Plain("a"), Frozen("X"), KwOnly(a=1), Post(1)


def behaviour(impl, warm=False):
    Plain, Frozen, KwOnly, Post = classes = make(impl)
    if warm:
        warm_up(classes)
    p = Plain("a")
    f = Frozen("X", (1, 2), {"k": 1}, "somewhere")
    k = KwOnly(a=1)
    return [
        repr(p).split(".")[-1],
        repr(f).split(".")[-1],
        (p.name, p.size, p.tags, p.hidden),
        p == Plain("a", 3, [], {"other": 1}),  # hidden: compare=False
        p == Plain("a", 4),
        p == ("a", 3),
        outcome(lambda: hash(p)),
        f == Frozen("X", (1, 2), {"other": 2}, None),  # table still compared (hash=False only)
        f == Frozen("X", (1, 2), {"k": 1}, None),  # path: compare=False
        hash(f) == hash(Frozen("X", (1, 2), {"different": 1}, None)),
        outcome(lambda: setattr(f, "code", "Y")),
        outcome(lambda: delattr(f, "code")),
        outcome(lambda: setattr(f, "new", 1)),
        (k.a, k.b),
        outcome(lambda: KwOnly(1)),
        outcome(lambda: Plain()),
        outcome(lambda: Plain("a", 1, [], {}, "extra")),
        Post(4).doubled,
        Plain("a").tags is not Plain("a").tags,  # a fresh list each time
        Plain.size,  # class attribute holds the default
        hasattr(Plain, "tags"),
        Plain.__match_args__,
        KwOnly.__match_args__,
        outcome(lambda: Plain("a", name="b")),  # a value given twice
        outcome(lambda: Plain("a", nope=1)),
        outcome(lambda: Frozen()),
        outcome(lambda: KwOnly(b=3)),  # the keyword-only field without a default
        outcome(lambda: KwOnly(a=1, b=2, c=3)),
        repr(Plain(size=5, name="n", hidden={"h": 1})).split(".")[-1],  # positional fields by keyword
        repr(KwOnly(b=5, a=4)).split(".")[-1],
        repr(Frozen("c", table={"t": 1})).split(".")[-1],
        Post(x=5).doubled,
    ]


@pytest.mark.parametrize("warm", [False, True], ids=["first instances", "compiled __init__"])
def test_records_match_dataclasses(warm):
    assert behaviour("records", warm) == behaviour("dataclasses")


def test_a_class_making_many_instances_compiles_its_init():
    classes = make("records")
    assert all(c.__init__.__code__.co_varnames[:2] == ("self", "args") for c in classes)
    warm_up(classes)
    Plain, Frozen, KwOnly, Post = classes
    assert Plain.__init__.__code__.co_varnames[:5] == ("self", "name", "size", "tags", "hidden")
    assert KwOnly.__init__.__code__.co_kwonlyargcount == 2


def test_pickle_and_copy_round_trip():
    """--jobs sends results between processes by pickle."""
    from overlap_cli.results import Edit, FileResult, Finding, Fix, Value
    from overlap_cli.problems import InputProblem

    fix = Fix("safe", "m", (Edit("set", "a.b", 1),))
    result = FileResult("f.yaml", {"world_size": 8}, {"k": Value(1, "user", "r")}, [Finding("TP101", "warning", "x", fix=fix)])
    result.error = InputProblem("f.yaml", "bad", line=3)
    again = pickle.loads(pickle.dumps(result))
    assert again == result and again is not result
    assert copy.deepcopy(fix) == fix and hash(copy.deepcopy(fix)) == hash(fix)
    with pytest.raises(AttributeError):
        again.findings[0].fix.message = "changed"


def test_mistakes_are_refused_as_dataclasses_refuses_them():
    with pytest.raises(ValueError):

        @records.dataclass
        class MutableDefault:
            items: list = []

    with pytest.raises(TypeError):

        @records.dataclass
        class Order:
            a: int = 1
            b: int
