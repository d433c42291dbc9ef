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
