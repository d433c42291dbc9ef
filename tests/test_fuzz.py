"""Fuzz: example configs mutated by hypothesis, through the real CLI (in process).

For every mutated file: no traceback and no exception out of a command (the entry point would report it as
"overlap: internal error"); exit 0, 1 or 2; exit 2 comes with exactly one line naming the file;
``check --format json`` prints valid JSON. ``fix --write``
(with or without --no-comments) never leaves a file that no longer checks (if it checked before), never
loses a comment (not even one on a key it removes; each as often as it was written), and never touches
a file it could not read.

Bounded: 200 examples per property, derandomized so CI sees the same cases every run, and not shrunk
(bench/fuzz_long.py explores further, with fresh randomness).
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from bench.mutate import lost_comments, mutate, seeds
from conftest import run_entry_point

SEEDS = seeds()
FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    # No shrinking: it can take minutes on a failure here. The note() on each case names the seed file and
    # the mutations, which is enough to reproduce it by hand.
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


class HypothesisChooser:
    """bench.mutate's Chooser over hypothesis' data, so failing cases shrink."""

    def __init__(self, data):
        self.data = data

    def int(self, lo, hi):
        return self.data.draw(st.integers(lo, hi))

    def pick(self, seq):
        return self.data.draw(st.sampled_from(list(seq)))

    def raw(self, n):
        return self.data.draw(st.binary(min_size=n, max_size=n))

    def unicode(self, max_len):
        return self.data.draw(st.text(max_size=max_len))


def run(*args):
    return run_entry_point(*args)


def assert_contract(code, out, err, path):
    assert code in (0, 1, 2), (code, out, err)
    assert "Traceback" not in out + err
    assert not any(ln.startswith("overlap: internal error") for ln in err.splitlines()), err
    if code == 2:
        naming = [ln for ln in (out + err).splitlines() if ln.startswith(str(path))]
        assert len(naming) == 1, (out, err)


def _write_case(tmp_path, data):
    seed = data.draw(st.sampled_from(SEEDS), label="seed")
    mutated, applied = mutate(seed.read_bytes(), HypothesisChooser(data))
    note(f"seed={seed.name} mutations={applied}")
    path = tmp_path / "fuzzed.yaml"
    path.write_bytes(mutated)
    return path, mutated


@FUZZ
@given(data=st.data())
def test_check_never_breaks(tmp_path_factory, data):
    path, _ = _write_case(tmp_path_factory.mktemp("fz"), data)
    code, out, err = run("check", path)
    assert_contract(code, out, err, path)
    jcode, jout, jerr = run("check", path, "--format", "json")
    assert jcode == code
    doc = json.loads(jout)
    if not doc["results"]:  # mutated into some other YAML (or a NeMo-RL config without Megatron): skipped, said so
        assert code == 0 and f"{path}: skipped: " in jerr, (jout, jerr)  # with its reason
        return
    assert len(doc["results"]) == 1 and doc["results"][0]["file"] == str(path)
    assert (doc["results"][0]["error"] is not None) == (code == 2)


@FUZZ
@given(data=st.data(), unsafe=st.booleans(), no_comments=st.booleans())
def test_fix_write_keeps_files_valid_and_comments(tmp_path_factory, data, unsafe, no_comments):
    path, before = _write_case(tmp_path_factory.mktemp("fx"), data)
    check_before, _, _ = run("check", path)
    args = ["fix", "--write", path] + (["--unsafe-fixes"] if unsafe else []) + (["--no-comments"] if no_comments else [])
    code, out, err = run(*args)
    assert_contract(code, out, err, path)
    after = path.read_bytes()
    if check_before == 2:
        assert after == before, "fix edited a file it could not check"
        return
    check_after, cout, cerr = run("check", path)
    assert check_after in (0, 1), f"fix --write left a file that no longer checks:\n{cout}{cerr}"
    if after != before:
        lost = lost_comments(before.decode("utf-8-sig"), after.decode("utf-8-sig"))
        assert not lost, f"comments lost: {lost}"
    assert os.access(path, os.R_OK)


# ---------------------------------------------------------------------------------------------------------
# Hostile reading and writing, through the real CLI in a fresh interpreter: special files where inputs are
# read (the checked file, a sourced file, --settings, pyproject.toml, --base, a folder's entries), outputs
# that would block or destroy an input, strange names. For each: exit 0, 1 or 2, no traceback and no internal
# error, within HANG_GUARD seconds (a hang, not a measurement) and bench.fuzz.MEMORY_LIMIT bytes, and no file of the
# case's folder changed or created but the output the case asks for.
# ---------------------------------------------------------------------------------------------------------

import random  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
YAML = (ROOT / "examples" / "tp_overlap_without_sp.yaml").read_bytes()
LAUNCH = (ROOT / "examples" / "megatron-lm" / "gpt_pretrain_tp_overlap.sh").read_bytes()
from bench.fuzz import FORMS, HANG_GUARD, run_case, run_limited  # noqa: E402


def snapshot(folder: Path) -> dict:
    """{relative name: bytes, or the kind of a file that is not regular} of everything in ``folder``."""
    import stat as stat_

    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, folder)
            if stat_.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = ("link", os.readlink(full)) if stat_.S_ISLNK(st.st_mode) else stat_.S_IFMT(st.st_mode)
    return out


def _fifo(folder, name):
    os.mkfifo(folder / name)
    return folder / name


def _write(folder, name, data: bytes):
    path = Path(os.fsdecode(os.path.join(os.fsencode(str(folder)), os.fsencode(name))))
    path.write_bytes(data)
    return path


def _sourcing(folder, sourced: str, name="launch.sh"):
    return _write(folder, name, f"source {sourced}\n".encode() + LAUNCH)


def _link(folder, name, to):
    (folder / name).symlink_to(to)
    return folder / name


# (name, builder(folder) -> (args, outputs the run may write)); every file the builder makes is an input.
HOSTILE_IO = [
    ("fifo named", lambda d: (["check", _fifo(d, "x.yaml")], ())),
    ("fifo named .sh", lambda d: (["check", _fifo(d, "x.sh")], ())),
    ("fifo named .py", lambda d: (["check", _fifo(d, "x.py")], ())),
    ("dev zero named", lambda d: (["check", "/dev/zero"], ())),
    ("proc kmsg named", lambda d: (["check", "/proc/kmsg"], ())),
    ("proc self status named", lambda d: (["check", "/proc/self/status"], ())),
    ("source fifo", lambda d: (["check", _sourcing(d, str(_fifo(d, "env.sh")))], ())),
    ("source dev zero", lambda d: (["check", _sourcing(d, "/dev/zero")], ())),
    ("source dev stdin", lambda d: (["check", _sourcing(d, "/dev/stdin")], ())),
    ("source proc kmsg", lambda d: (["check", _sourcing(d, "/proc/kmsg")], ())),
    ("source itself", lambda d: (["check", _sourcing(d, "./launch.sh")], ())),
    ("source a folder", lambda d: (["check", _sourcing(d, str(d))], ())),
    ("settings fifo", lambda d: (["check", _write(d, "c.yaml", YAML), "--settings", _fifo(d, "s.toml")], ())),
    ("settings dev zero", lambda d: (["check", _write(d, "c.yaml", YAML), "--settings", "/dev/zero"], ())),
    ("settings binary", lambda d: (["check", _write(d, "c.yaml", YAML), "--settings", _write(d, "s.toml", b"\xff\x00[")], ())),
    ("pyproject fifo", lambda d: (["check", _write(d, "c.yaml", YAML), _fifo(d, "pyproject.toml")][:2], ())),
    ("pyproject link to dev zero", lambda d: (["check", _write(d, "c.yaml", YAML), _link(d, "pyproject.toml", "/dev/zero")][:2], ())),
    ("base fifo", lambda d: (["check", "--base", _fifo(d, "b.yaml"), _write(d, "o.yaml", b"model: {}\n")], ())),
    ("base dev zero", lambda d: (["check", "--base", "/dev/zero", _write(d, "o.yaml", b"model: {}\n")], ())),
    ("folder of specials", lambda d: (["check", d, _fifo(d, "p.yaml"), _link(d, "z.yaml", "/dev/zero"),
                                        _link(d, "k.sh", "/proc/kmsg"), _link(d, "loop.yaml", "loop.yaml"),
                                        _write(d, "c.yaml", YAML)][:2], ())),
    ("folder named x.yaml", lambda d: ([ "check", (d / "x.yaml").mkdir() or d / "x.yaml"], ())),
    ("link loop named", lambda d: (["check", _link(d, "loop.yaml", "loop.yaml")], ())),
    ("over the size limit", lambda d: (["check", _write(d, "big.yaml", b"# pad\n" * (2 << 20))], ())),
    ("NUL in yaml", lambda d: (["check", _write(d, "n.yaml", YAML + b"\x00")], ())),
    ("NUL in launch", lambda d: (["check", _write(d, "n.sh", b"\x00" + LAUNCH)], ())),
    ("NUL in python", lambda d: (["check", _write(d, "n.py", b"from megatron.bridge import x\x00\n")], ())),
    ("latin-1 launch", lambda d: (["check", _write(d, "l.sh", LAUNCH.replace(b"GPT-3", b"GPT-\xe9"))], ())),
    ("non-utf8 name sarif", lambda d: (["check", _write(d, b"bad\xff.yaml", YAML), "--format", "sarif"], ())),
    ("escape codes in name", lambda d: (["check", _write(d, "x\x1b[2J\x07.yaml", YAML)], ())),
    ("newline in name", lambda d: (["check", _write(d, "a\nb.yaml", b"model: [\n")], ())),
    ("colons in a python name", lambda d: (["check", _write(d, "a::b.py", YAML)], ())),
    ("output fifo without reader", lambda d: (["check", _write(d, "c.yaml", YAML), "-o", _fifo(d, "out")], ())),
    ("output onto sourced env.sh", lambda d: (["check", _sourcing(d, "./env.sh"), "-o",
                                               _write(d, "env.sh", b"export A=1\n")], ())),
    ("annotate onto pyproject", lambda d: (["check", _write(d, "c.yaml", YAML), "--annotate-output",
                                            _write(d, "pyproject.toml", b"[tool.other]\n")], ())),
    ("output onto settings", lambda d: (["check", _write(d, "c.yaml", YAML), "--settings",
                                         _write(d, "s.toml", b"[tool.overlap]\n"), "-o", d / "s.toml"], ())),
    ("output onto base", lambda d: (["check", "--base", _write(d, "b.yaml", YAML), _write(d, "o.yaml", b"model: {}\n"),
                                     "-o", d / "b.yaml"], ())),
    ("output onto dev null", lambda d: (["check", _write(d, "c.yaml", YAML), "-o", "/dev/null"], ())),
    ("output to a new file", lambda d: (["check", _write(d, "c.yaml", YAML), "-o", d / "report.txt"], ("report.txt",))),
    ("fix without write on a fifo", lambda d: (["fix", _fifo(d, "x.yaml")], ())),
    ("fix on a launch sourcing dev zero", lambda d: (["fix", _sourcing(d, "/dev/zero")], ())),
    ("env sourcing a fifo", lambda d: (["env", _sourcing(d, str(_fifo(d, "env.sh")))], ())),
]


def _assert_survived(case, code, out, err, before, after, outputs):
    assert code is not None, f"{case}: still running after {HANG_GUARD} s"
    assert code in (0, 1, 2), (case, code, out, err)
    assert "Traceback" not in out + err and "internal error" not in out + err, (case, out, err)
    for name in outputs:
        after.pop(name, None)
    assert after == before, f"{case}: the run changed or created files: {sorted(set(after) ^ set(before))}"


@pytest.mark.parametrize("case", [c[0] for c in HOSTILE_IO])
def test_hostile_io_never_hangs_breaks_or_writes(tmp_path, case):
    build = dict(HOSTILE_IO)[case]
    args, outputs = build(tmp_path)
    if any(str(a).startswith("/proc/kmsg") for a in args) and not os.path.exists("/proc/kmsg"):
        pytest.skip("no /proc/kmsg here")
    before = snapshot(tmp_path)
    r, w = os.pipe()  # stdin: a pipe nobody writes to or closes (what `source /dev/stdin` would wait on)
    try:
        code, out, err, *_measured = run_limited(args, tmp_path, stdin=r)
    finally:
        os.close(r)
        os.close(w)
    _assert_survived(case, code, out, err, before, snapshot(tmp_path), outputs)


# Seeded generators: folders of files with hostile names and contents, read as a walk and by name.
_NAME_PARTS = ["a", "run", "x y", "::", "é", "\x1b[1m", "\t", "-o", "--base", ".hidden", "\\", "*", "$(id)", "'", '"']
_SUFFIXES = [".yaml", ".yml", ".sh", ".py", ".slurm", ".toml", ""]


def _hostile_bytes(rng: random.Random) -> bytes:
    pieces = [YAML, LAUNCH, b"source /dev/zero\n", b"source ./env.sh\n", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf",
              b"model:\n  tensor_model_parallel_size: 0\n", b"\r\n", b"{" * 50, b"${oc.env:HOME}", b"#!/bin/bash\n",
              b"torchrun pretrain_gpt.py --tensor-model-parallel-size 0\n", b"from_yaml('env.sh')\n", os.urandom(0)]
    return b"".join(rng.choice(pieces) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
                    for _ in range(rng.randrange(1, 6)))


def _hostile_folder(folder: Path, seed: int) -> list:
    rng = random.Random(seed)
    made = []
    for i in range(8):
        name = "".join(rng.choice(_NAME_PARTS) for _ in range(rng.randrange(1, 3))).replace("/", "_") + f"{i}" + rng.choice(_SUFFIXES)
        kind = rng.random()
        if kind < 0.1:
            _fifo(folder, name)
        elif kind < 0.2:
            _link(folder, name, rng.choice(["/dev/zero", "/proc/self/status", "/proc/kmsg", name, "missing"]))
        else:
            _write(folder, name, _hostile_bytes(rng))
        made.append(folder / name)
    _write(folder, "env.sh", b"export A=1\n")
    return made


@pytest.mark.parametrize("seed", range(6))
def test_seeded_hostile_folders(tmp_path, seed):
    folder = tmp_path / "repo"
    folder.mkdir()
    made = _hostile_folder(folder, seed)
    before = snapshot(folder)
    named = [p for p in made if p.suffix in (".yaml", ".yml", ".sh", ".py")][:4]
    for args in (["check", "."], ["check", "--format", "sarif", "."], ["fix", "."], ["check", *named]):
        code, out, err, *_measured = run_limited(args, folder)
        _assert_survived(f"seed {seed}: {args[:2]}", code, out, err, before, snapshot(folder), ())


# Seeded hostile Python runs, launch scripts and YAML configs (bench/fuzz.py's generators: deep nesting, huge
# literals, long chains of assignments, many functions, wide f-strings, walrus, comprehensions, recursion in
# helpers, huge ranges; loops past the step budget, brace and doubling bombs, backtracking globs; mutated
# YAML): each through the real CLI under the time and memory limit. bench/fuzz.py --cases N is the long run.
@pytest.mark.parametrize("form,seed", [(form, seed) for form in FORMS for seed in range(5)])
def test_seeded_hostile_inputs_of_each_form(tmp_path, form, seed):
    row = run_case(form, seed, tmp_path)
    assert row["problems"] == [], row
