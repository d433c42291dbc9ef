"""The published A/B measurements of overlap settings (bench/data/overlap_ab.jsonl, each with its citation and
configuration) through ``overlap diff``: the estimated change of the step has the measured sign. A model
change that flips a sign fails here; a pair the model gets wrong is listed in KNOWN_WRONG with why, and
fixing it fails too (so the list stays true)."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))
from bench import overlap_ab as AB  # noqa: E402

PAIRS = AB.pairs()
KNOWN_WRONG: dict = {}  # id -> why the model gets its sign wrong


def test_at_least_twelve_cited_pairs():
    assert len(PAIRS) >= 12
    for p in PAIRS:
        assert p["citation"] and p["config"]["recipe"] and p["config"]["old"] != p["config"]["new"], p["id"]
        assert p["measured"]["old"] is not None and p["measured"]["new"] is not None


@pytest.mark.parametrize("pair", PAIRS, ids=[p["id"] for p in PAIRS])
def test_predicted_sign_matches_the_measurement(pair, tmp_path, run_cli):
    r = AB.predict(pair, str(tmp_path), cli=run_cli)
    if pair["id"] in KNOWN_WRONG:
        assert not r["sign_right"], f"{pair['id']} is right now: remove it from KNOWN_WRONG"
    else:
        assert r["sign_right"], (f"{pair['id']}: measured {100 * r['measured']:+.1f} %, "
                                 f"estimated {100 * r['predicted']:+.1f} %")
