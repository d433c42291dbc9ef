"""The mirrored releases are data (overlap_cli/frameworks/*/releases/): selected by the target's
bridge_version / core_version through one accessor, an absent release an error (never 0.6.2's facts in
its place), and no fact of a release written as a literal anywhere else in the package."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "overlap_cli"
RELEASE_PACKAGES = ("frameworks/bridge/releases", "frameworks/megatron_lm/releases")


# -- the scan: a release's facts written outside its data -----------------------------------------


def _docstrings(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _int_value(node):
    """The value of an integer literal or a product / power of integer literals (``128 * 1024 * 1024``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow, ast.LShift)):
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None or (isinstance(node.op, (ast.Pow, ast.LShift)) and right > 64):
            return None
        return left * right if isinstance(node.op, ast.Mult) else left**right if isinstance(node.op, ast.Pow) else left << right
    return None


def _table(node):
    """A collection literal as comparable entries: a dict's (key, value source) pairs, a tuple / list / set's
    strings; None for anything else."""
    if isinstance(node, ast.Dict):
        return ("dict", frozenset((k.value, ast.dump(v)) for k, v in zip(node.keys, node.values)
                                  if isinstance(k, ast.Constant) and isinstance(k.value, str)))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return ("seq", frozenset(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)))
    return None


# Units of size and count (a kilo, a kibi and their powers): a default that is one of them (a loss-scale
# window of 1000, a sequence length of 1024) cannot be told from the unit it shares a spelling with.
_UNITS = frozenset(base ** k for base in (1000, 1024) for k in range(1, 5))


def release_facts(paths) -> dict:
    """What the release modules at ``paths`` state: their version strings, their integers of 1,000 and more
    but units (a default such as the bucket size: small numbers are everywhere), and their tables of 5 or
    more entries."""
    versions, numbers, tables = set(), set(), []
    for path in paths:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        inside: set = set()  # the operands of a product already taken
        for node in ast.walk(tree):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                # a numbered release: a branch snapshot's name (main) is a word of prose, not a fact
                if any(isinstance(t, ast.Name) and t.id.endswith("VERSION") for t in node.targets) and \
                        node.value.value[:1].isdigit():
                    versions.add(node.value.value)
            value = _int_value(node)
            if value is not None:
                inside.update(id(n) for n in ast.walk(node))
                if value >= 1000 and value not in _UNITS:
                    numbers.add(value)
            table = _table(node)
            if table is not None and len(table[1]) >= 5:
                tables.append(table)
    return {"versions": versions, "numbers": numbers, "tables": tables}


def leaks(files, facts: dict) -> list:
    """[(file, line, what)] where ``files`` write a release fact as a literal: a string holding a release
    version (docstrings and comments are citations of the upstream source and do not count), an integer
    fact, or a collection holding every entry of a release table (a dict: every key with the same value)."""
    out = []
    for path in files:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        inside: set = set()  # the operands of a product already reported
        for node in ast.walk(tree):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                for v in facts["versions"]:
                    if re.search(rf"(?<![\w.]){re.escape(v)}(?!\w|\.\d)", node.value):
                        out.append((str(path), node.lineno, f"release version {v}"))
            value = _int_value(node)
            if value is not None:
                inside.update(id(n) for n in ast.walk(node))
                if value in facts["numbers"]:
                    out.append((str(path), node.lineno, f"release default {value}"))
            table = _table(node)
            if table is not None and any(kind == table[0] and entries <= table[1] for kind, entries in facts["tables"]):
                out.append((str(path), node.lineno, "a release table"))
    return sorted(out)


def _release_files(package: Path) -> list:
    return sorted(p for d in RELEASE_PACKAGES for p in (package / d).glob("v*.py"))


def test_no_fact_of_a_release_is_written_outside_its_data():
    facts = release_facts(_release_files(PACKAGE))
    assert {"0.6.2", "0.19.2"} <= facts["versions"] and 128 * 1024 * 1024 in facts["numbers"]
    assert len(facts["tables"]) >= 3  # the effective keys of both frameworks, the comm_overlap defaults
    others = [p for p in sorted(PACKAGE.rglob("*.py")) if not any(d in p.as_posix() for d in RELEASE_PACKAGES)]
    assert leaks(others, facts) == []


def test_the_scan_finds_a_planted_copy(tmp_path):
    release = tmp_path / "v9_9_9.py"
    release.write_text('BRIDGE_VERSION = "9.9.9"\nBUCKET = 64 * 1024 * 1024\nKEYS = ("a", "b", "c", "d", "e")\n'
                       'DEFAULTS = {"a": 1, "b": None, "c": False, "d": "x", "e": -1}\n')
    code = tmp_path / "code.py"
    code.write_text(
        '"""Mirrors Megatron-Bridge 9.9.9 (a citation: fine)."""\n'
        "# megatron-bridge 9.9.9, co.py:577 (a comment: fine)\n"
        'size = 64 * 1024 * 1024\n'
        'also = 67108864\n'
        'msg = f"not a preset of Megatron-Bridge 9.9.9"\n'
        'keys = ["e", "d", "c", "b", "a", "f"]\n'
        'fine = ("a", "b")\n'
        'other = {"a": 1, "b": None, "c": False, "d": "x", "e": 0}\n'
        'copied = {"z": 2, "a": 1, "b": None, "c": False, "d": "x", "e": -1}\n'
    )
    found = leaks([code], release_facts([release]))
    assert [(line, what) for _, line, what in found] == [
        (3, "release default 67108864"), (4, "release default 67108864"), (5, "release version 9.9.9"),
        (6, "a release table"), (9, "a release table"),
    ]


# -- the accessor -----------------------------------------------------------------------------------

# The megatron-core each Bridge release is mirrored with: the core its NeMo container pins
# (Megatron-Bridge docs/versions1.json at 067f987, lines 7-45) or, for the pip release, the wheel's own
# requirement; main is Bridge's main branch at 067f987 on the newest core.
PINS = {"0.4.2": "0.17.1", "0.5.1": "0.18.2", "0.6.0": "0.19.2", "0.6.2": "0.19.2", "main": "0.19.2"}


def _bridge():
    from overlap_cli.frameworks.bridge import releases

    return releases


def _core():
    from overlap_cli.frameworks.megatron_lm import releases

    return releases


def _held_bridge() -> list:
    return _bridge().BRIDGE.versions()


def _held_core() -> list:
    return _core().CORE.versions()


def test_the_newest_release_is_the_default_and_a_named_one_is_selected():
    from overlap_cli.frameworks.target_release import DEFAULT_NOTE, checked_against, notes
    from overlap_cli.launch_profile.profile import build_target

    bridge, core = _bridge(), _core()
    t = build_target({})
    assert bridge.of(t) is bridge.BRIDGE.get(bridge.BRIDGE.newest())
    assert core.of(t).CORE_VERSION == core.CORE.newest()
    named = build_target({"bridge_version": bridge.BRIDGE.newest()})
    assert bridge.of(named) is bridge.of(t)
    said = notes(t, "bridge", checked_against(t, "bridge"))
    assert [n.kind for n in said] == [DEFAULT_NOTE] and bridge.BRIDGE.newest() in said[0]
    assert notes(named, "bridge", checked_against(named, "bridge")) == []


def test_main_is_a_name_never_the_default():
    from overlap_cli.frameworks.releases import Releases

    table = Releases("X", "bridge_version", {"v0_4_2": lambda: "old", "v0_10_0": lambda: "new", "main": lambda: "branch"})
    assert table.versions() == ["0.4.2", "0.10.0", "main"]  # numbers compare as numbers; the branch last
    assert table.newest() == "0.10.0" and table.get() == "new" and table.get("main") == "branch"


@pytest.mark.parametrize("version", _held_bridge())
def test_each_bridge_release_module_is_the_release_its_name_says(version):
    release = _bridge().BRIDGE.get(version)
    assert release.BRIDGE_VERSION == version
    assert release.CORE_VERSION == PINS[version]


@pytest.mark.parametrize("version", _held_core())
def test_each_core_release_module_is_the_release_its_name_says(version):
    assert _core().CORE.get(version).CORE_VERSION == version


def test_every_release_has_its_own_catalog_built_from_that_release():
    from overlap_cli.frameworks.bridge import recipes

    for v in _bridge().BRIDGE.versions():
        release = _bridge().BRIDGE.get(v)
        built = recipes.versions(v)
        assert (built["megatron-bridge"], built["megatron-core"]) == (v, release.CORE_VERSION), v


# -- a release named alone decides the other -----------------------------------------------------------

# core -> the newest numbered Bridge release mirrored with it, among the releases held
_NEWEST_PINNING = {core: max((v for v in PINS if v != "main" and PINS[v] == core and v in _held_bridge()),
                             key=lambda v: tuple(int(p) for p in v.split(".")), default=None)
                   for core in set(PINS.values())}


@pytest.mark.parametrize("core", sorted(c for c, v in _NEWEST_PINNING.items() if v is not None))
def test_a_core_alone_picks_the_newest_bridge_release_that_pins_it(core):
    from overlap_cli.frameworks.target_release import PINNED, checked_against
    from overlap_cli.launch_profile.profile import build_target

    t = build_target({"core_version": core})
    assert _bridge().of(t).BRIDGE_VERSION == _NEWEST_PINNING[core]
    release = checked_against(t, "bridge")
    assert release["megatron-bridge"] == _NEWEST_PINNING[core] and release["megatron-core"] == core
    assert release["sources"] == {"megatron-bridge": PINNED, "megatron-core": "flag"}


@pytest.mark.parametrize("version", [v for v in _held_bridge() if PINS[v] in _held_core()])
def test_a_bridge_release_alone_picks_its_core_for_megatron_lm(version):
    from overlap_cli.frameworks.target_release import PINNED, checked_against
    from overlap_cli.launch_profile.profile import build_target

    t = build_target({"bridge_version": version})
    assert _core().of(t).CORE_VERSION == PINS[version]
    assert checked_against(t, "megatron-lm") == {"megatron-core": PINS[version], "sources": {"megatron-core": PINNED}}


def test_a_pair_no_release_is_stays_an_error():
    from overlap_cli.frameworks.target_release import checked_against
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.problems import InputError

    newest = _bridge().BRIDGE.newest()
    other = "0.0.1"  # a core no release pins
    t = build_target({"bridge_version": newest, "core_version": other})
    with pytest.raises(InputError) as err:
        checked_against(t, "bridge")
    assert err.value.problem.key == "--core-version" and newest in err.value.problem.message
    with pytest.raises(InputError):  # and a Megatron-LM launch reads that core, which is not held either
        checked_against(t, "megatron-lm")


@pytest.mark.parametrize("flags", [{"bridge_version": "0.0.1"}, {"core_version": "0.0.1"}, {"bridge_version": "nightly"}])
def test_a_release_without_data_is_an_error_not_a_fallback(flags):
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.problems import InputError

    with pytest.raises(InputError) as err:
        _bridge().of(build_target(flags))
    key, version = next(iter(flags.items()))
    assert err.value.problem.key == "--" + key.replace("_", "-") and version in err.value.problem.message
    assert all(v in err.value.problem.message for v in _held_bridge()) or "->" in err.value.problem.message


@pytest.mark.parametrize("spelt, read", [("0.6.2", "0.6.2"), ("v0.6.2", "0.6.2"), ("V0.5.1", "0.5.1"), (" main ", "main"),
                                         ("MAIN", "main")])
def test_a_release_is_spelt_as_a_number_or_a_branch_name(spelt, read):
    from overlap_cli.launch_profile.profile import check_release

    assert check_release(spelt, "--bridge-version") == read


@pytest.mark.parametrize("spelt", ["", "0.6.x", "0.6.2rc0", "1..2", "-main", 0.6, "main branch"])
def test_a_release_misspelt_is_refused_naming_the_flag(spelt):
    from overlap_cli.launch_profile.profile import check_release

    with pytest.raises(ValueError, match="--bridge-version must be a release"):
        check_release(spelt, "--bridge-version")


# -- where a release was named: the problem is placed there ---------------------------------------------


def test_a_release_problem_is_placed_where_the_release_was_named(tmp_path):
    from overlap_cli.frameworks.target_release import checked_against
    from overlap_cli.launch_profile.per_file import Directive, Table
    from overlap_cli.launch_profile.profile import CONFIG_FILE, build_target
    from overlap_cli.launch_profile.settings import Settings
    from overlap_cli.problems import InputError

    def problem(t):
        with pytest.raises(InputError) as err:
            checked_against(t, "bridge")
        return err.value.problem

    settings = Settings(str(tmp_path / "pyproject.toml"), {"bridge_version": "0.0.1"})
    p = problem(build_target({}, settings))
    assert (p.file, p.key, p.line) == (settings.path, "tool.overlap.bridge_version", None)
    per_file = (("configs/*.yaml", Table({"bridge_version": "0.0.1"})),)
    p = problem(build_target({}, Settings(settings.path, {"world_size": 8}), per_file=per_file))
    assert (p.file, p.key) == (settings.path, "tool.overlap.per-file-target.configs/*.yaml.bridge-version")
    directive = Directive("run.yaml", 3, Table({"bridge_version": "0.0.1"}))
    p = problem(build_target({}, settings, directive=directive))  # the directive outranks [tool.overlap]
    assert (p.file, p.key, p.line) == (CONFIG_FILE, "# overlap: target bridge-version", 3)


# -- --detect reads the installed releases from package metadata -----------------------------------------


def _installed(site, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path that holds distributions' metadata only (what pip leaves in site-packages)."""
    from overlap_cli.launch_profile import detect

    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    detect.detect.cache_clear()
    yield folder
    detect.detect.cache_clear()


def test_detect_reads_the_installed_bridge_and_core_from_metadata_without_importing_them(site):
    import sys

    from overlap_cli.launch_profile.detect import detect

    _installed(site, "megatron-bridge", "0.5.1")
    _installed(site, "megatron-core", "0.18.2")
    found = detect()
    assert (found.bridge_version, found.core_version) == ("0.5.1", "0.18.2")
    assert "Megatron-Bridge 0.5.1" in found.found and "megatron-core 0.18.2" in found.found
    assert "megatron" not in sys.modules  # metadata only: the package itself is not even present


def test_detected_releases_rank_below_every_named_release(site):
    from overlap_cli.launch_profile.detect import detect
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.launch_profile.settings import Settings

    _installed(site, "megatron-bridge", "0.5.1")
    _installed(site, "megatron-core", "0.18.2")
    t = build_target({}, detection=detect())
    assert (t.bridge_version, t.core_version, t.source("bridge_version")) == ("0.5.1", "0.18.2", "detected")
    # a release named anywhere takes the place of the installed pair, both halves of it
    for named in (build_target({"bridge_version": "0.6.2"}, detection=detect()),
                  build_target({}, Settings("p.toml", {"bridge_version": "0.6.2"}), detection=detect())):
        assert (named.bridge_version, named.core_version) == ("0.6.2", None)


def test_an_installed_release_without_data_is_an_error_naming_the_releases_held(site):
    from overlap_cli.frameworks.target_release import checked_against
    from overlap_cli.launch_profile.detect import detect
    from overlap_cli.launch_profile.profile import build_target
    from overlap_cli.problems import InputError

    _installed(site, "megatron-bridge", "0.7.0")  # Bridge main's own number (package_info.py at 067f987)
    t = build_target({}, detection=detect())
    with pytest.raises(InputError) as err:
        checked_against(t, "bridge")
    p = err.value.problem
    assert p.file == "--detect" and "0.7.0 is installed" in p.message and "--bridge-version" in p.message
    assert all(v in p.message for v in _held_bridge())
    named = build_target({"bridge_version": _bridge().BRIDGE.newest()}, detection=detect())
    assert checked_against(named, "bridge")["megatron-bridge"] == _bridge().BRIDGE.newest()


@pytest.mark.parametrize("release", ["0.4.2", "0.5.1", "0.6.0", "0.6.2"])
def test_detect_in_a_real_bridge_environment_reads_its_release(release):
    import subprocess

    from differential import reference_python

    python = reference_python(release)
    if python is None:
        pytest.skip(f"no Megatron-Bridge {release} environment (tests/differential.py reference_python)")
    code = ("import sys; from overlap_cli.launch_profile.detect import detect; d = detect(); "
            "print(d.bridge_version, d.core_version, 'megatron.bridge' in sys.modules, 'megatron.core' in sys.modules)")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout.split()
    assert out == [release, PINS[release], "False", "False"]


# -- no fallback: every release module stands alone (frameworks/releases.py's docstring) --------------------

RELEASE_PACKAGE_NAMES = ("overlap_cli.frameworks.bridge.releases", "overlap_cli.frameworks.megatron_lm.releases")

# The values each release module takes from another by an explicit, named import, listed for review in
# tests/snapshots/release_shared_names.json: {"bridge/v0_5_1": {"v0_6_2": [names]}}. A change there is a
# decision that two releases hold those facts unchanged upstream (tests/frameworks/bridge/ proves each
# module against its own release's source). After an intended change:
#     OVERLAP_UPDATE_SNAPSHOTS=1 python -m pytest tests/frameworks/test_releases.py
SHARED_SNAPSHOT = ROOT / "tests" / "snapshots" / "release_shared_names.json"


def _listing_key(module) -> str:
    parts = module.__name__.split(".")
    return f"{parts[-3]}/{parts[-1]}"  # bridge/v0_5_1, megatron_lm/v0_19_2


def shared_by_import() -> dict:
    """The listing of every release module held: {module: {source module: sorted names}} (none: {})."""
    out = {}
    for _table, _version, module in _modules():
        _, shared = reaches(module.__file__, module.__name__.rsplit(".", 1)[0])
        out[_listing_key(module)] = {source: sorted(names) for source, names in sorted(shared.items())}
    return out


def _listed() -> dict:
    import os

    now = shared_by_import()
    if os.environ.get("OVERLAP_UPDATE_SNAPSHOTS") == "1":
        SHARED_SNAPSHOT.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return json.loads(SHARED_SNAPSHOT.read_text(encoding="utf-8"))


def _tables():
    return {"bridge": _bridge().BRIDGE, "core": _core().CORE}


def _modules():
    """[(table, version, module)] of every release module held."""
    return [(name, v, table.get(v)) for name, table in _tables().items() for v in table.versions()]


def public_names(path) -> set:
    """The public names a module binds at its top level (``from __future__`` aside)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return {n for n in names if not n.startswith("_")}


def reaches(path, package: str) -> tuple:
    """(implicit, shared): the ways the module at ``path`` of release ``package`` could read another release's
    data without naming it, as (line, what); and {source module: names} it imports by name."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    implicit, shared = [], {}
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            implicit += [(node.lineno, f"import {a.name}") for a in node.names
                         if a.name.startswith(RELEASE_PACKAGE_NAMES) and a.name not in RELEASE_PACKAGE_NAMES]
        elif isinstance(node, ast.ImportFrom):
            source = package + ("." + node.module if node.module else "") if node.level else node.module or ""
            if source in RELEASE_PACKAGE_NAMES:
                implicit += [(node.lineno, f"the module {source}.{a.name}") for a in node.names if a.name.startswith("v")
                             or a.name == "main"]
            elif source.startswith(RELEASE_PACKAGE_NAMES):
                if any(a.name == "*" for a in node.names) or id(node) not in top:
                    implicit.append((node.lineno, f"from {source} import {', '.join(a.name for a in node.names)}"))
                else:
                    shared.setdefault(source.rsplit(".", 1)[1], set()).update(a.name for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.Assign)) and "__getattr__" in (
                [node.name] if isinstance(node, ast.FunctionDef) else [getattr(t, "id", "") for t in node.targets]):
            implicit.append((node.lineno, "a module __getattr__"))
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if called in ("globals", "vars", "__import__", "import_module", "setattr"):
                implicit.append((node.lineno, f"{called}()"))
    return implicit, shared


@pytest.mark.parametrize("table", ["bridge", "core"])
def test_every_release_module_defines_the_same_public_names(table):
    releases = _tables()[table]
    names = {v: public_names(releases.get(v).__file__) for v in releases.versions()}
    newest = names[releases.newest()]
    assert {"CORE_VERSION", "EFFECTIVE_KEYS"} <= newest
    differ = {v: {"missing": sorted(newest - n), "extra": sorted(n - newest)} for v, n in names.items() if n != newest}
    assert differ == {}, f"each release defines every name of {releases.newest()}, and no other"


@pytest.mark.parametrize("table, version, module", _modules(), ids=lambda x: x if isinstance(x, str) else "")
def test_no_release_module_reads_another_release_implicitly(table, version, module):
    package = module.__name__.rsplit(".", 1)[0]
    implicit, shared = reaches(module.__file__, package)
    assert implicit == []
    listed = _listed().get(_listing_key(module), {})
    assert {source: sorted(names) for source, names in shared.items()} == listed, (
        f"{SHARED_SNAPSHOT.name} lists every name a release takes from another; if the change is intended: "
        "OVERLAP_UPDATE_SNAPSHOTS=1 python -m pytest tests/frameworks/test_releases.py")


def test_the_scan_finds_each_implicit_way_in(tmp_path):
    module = tmp_path / "v9_9_9.py"
    module.write_text(
        "from overlap_cli.frameworks.bridge.releases.v0_6_2 import DDP_DEFAULTS\n"
        "from overlap_cli.frameworks.bridge.releases.v0_6_2 import *\n"
        "import overlap_cli.frameworks.bridge.releases.v0_6_2\n"
        "from overlap_cli.frameworks.bridge.releases import v0_6_2\n"
        "from .v0_6_2 import MP_RECIPES\n"
        "def __getattr__(name):\n    return getattr(v0_6_2, name)\n"
        "globals().update(vars(v0_6_2))\n", encoding="utf-8")
    implicit, shared = reaches(module, "overlap_cli.frameworks.bridge.releases")
    assert [line for line, _ in implicit] == [2, 3, 4, 6, 8, 8]
    assert shared == {"v0_6_2": {"DDP_DEFAULTS", "MP_RECIPES"}}


@pytest.mark.parametrize("table, version, module", _modules(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_name_a_release_lacks_raises(table, version, module):
    assert _tables()[table].get(version) is module  # the module itself: nothing stands between a name and it
    assert "__getattr__" not in vars(module)
    with pytest.raises(AttributeError):
        getattr(module, "A_FACT_NO_RELEASE_HOLDS")


def test_releases_share_a_table_object_only_by_a_listed_import():
    """A dict or list object seen in two release modules is the same fact read twice: allowed only as an
    import SHARED_BY_IMPORT lists (a copy made at import time is a new object, and fine)."""
    modules = {(table, v): m for table, v, m in _modules()}
    seen: dict = {}
    for (table, v), module in modules.items():
        for name in public_names(module.__file__):
            value = getattr(module, name)
            if isinstance(value, (dict, list, set)):
                seen.setdefault(id(value), []).append((module.__name__.rsplit(".", 1)[1], name))
    listed = {(importer.split("/")[1], source): names for importer, by_source in _listed().items()
              for source, names in by_source.items()}

    def imported(importer, source, name) -> bool:
        """``importer`` holds ``name`` from ``source``, directly or through a release it imports it from."""
        if name in listed.get((importer, source), ()):
            return True
        return any(name in names and imported(middle, source, name) for (imp, middle), names in listed.items()
                   if imp == importer and middle != source)

    for holders in (h for h in seen.values() if len(h) > 1):
        for (a, name_a), (b, name_b) in ((x, y) for x in holders for y in holders if x < y):
            assert (imported(a, b, name_a) or imported(b, a, name_b)
                    or any(imported(a, c, name_a) and imported(b, c, name_b) for c, _ in holders)), holders


# -- the release named is the release read -------------------------------------------------------------------

_DISTINCT_BUCKET = 7 * 1000 * 1000 + 1  # no release's bucket: shows only if the module named is the one read


@pytest.fixture(params=_held_bridge())
def release_copy(request, tmp_path, monkeypatch):
    """A release registered as 9.9.9: a copy of a held release's module (the parameter) whose DP bucket
    default is _DISTINCT_BUCKET. The engine, resolver and CLI run unchanged; only the data differs."""
    import importlib.util

    from overlap_cli.frameworks.bridge.releases import BRIDGE

    base = BRIDGE.get(request.param)
    source = Path(base.__file__).read_text(encoding="utf-8")
    source += ('\nBRIDGE_VERSION = "9.9.9"\n'
               f'DP_OVERLAP_WHEN_DP = {{**DP_OVERLAP_WHEN_DP, "bucket_size": {_DISTINCT_BUCKET}}}\n'
               f"BUCKET_SIZE = {_DISTINCT_BUCKET}\n")
    path = tmp_path / "v9_9_9.py"
    path.write_text(source, encoding="utf-8")

    def load():
        spec = importlib.util.spec_from_file_location(f"{base.__name__}_copy", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    loaded = load()
    monkeypatch.setitem(BRIDGE._loaders, "9.9.9", lambda: loaded)
    return request.param


def test_check_with_a_release_named_reads_that_release(release_copy, run_cli, root):
    config = str(root / "examples/llama3_70b_tuned.yaml")
    buckets = {}
    for named in (release_copy, "9.9.9"):
        code, out, err = run_cli("check", config, "--world-size", "64", "--bridge-version", named, "-f", "json")
        assert code in (0, 1), err
        result = json.loads(out)["results"][0]
        assert result["release"]["megatron-bridge"] == named and result["release"]["sources"]["megatron-bridge"] == "flag"
        buckets[named] = result["effective"]["ddp.bucket_size"]["value"]
    from overlap_cli.frameworks.bridge.releases import BRIDGE

    assert buckets == {release_copy: BRIDGE.get(release_copy).DP_OVERLAP_WHEN_DP["bucket_size"], "9.9.9": _DISTINCT_BUCKET}


@pytest.mark.parametrize("version", _held_bridge())
def test_a_release_named_answers_with_its_own_mixed_precision_recipes(version, run_cli, root):
    """A real difference between releases: a mixed-precision recipe one release has and another lacks (0.6.2
    alone has nemotron_3_ultra_bf16_with_nvfp4_mixed) is Bridge's ValueError (MP402) exactly where the
    release named lacks it."""
    bridge = _bridge().BRIDGE
    tables = {v: set(bridge.get(v).MP_RECIPES) for v in bridge.versions()}
    everywhere = set.intersection(*tables.values())
    asked = sorted(set.union(*tables.values()) - everywhere) + sorted(tables[version])[:1]
    config = str(root / "examples/llama3_70b_tuned.yaml")
    for name in asked:
        code, out, err = run_cli("check", config, f"mixed_precision={name}", "--bridge-version", version, "-f", "json")
        (result,) = json.loads(out)["results"]
        refused = "MP402" in {f["code"] for f in result["findings"]}
        assert refused is (name not in tables[version]), (version, name)
        assert result["release"]["megatron-bridge"] == version
