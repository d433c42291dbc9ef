"""Every functional-test config of Megatron-LM (core_r0.19.0) reads without an input error: all its flags are
recognised. The tree is the fetched mirror, or OVERLAP_MLM_TESTS (a checkout, or GITDIR@REF); skipped without it."""

from __future__ import annotations

import pytest

from bench import mlm_corpus

pytestmark = pytest.mark.skipif(not mlm_corpus.available(), reason=f"no Megatron-LM tree at {mlm_corpus.source()} (set OVERLAP_MLM_TESTS)")


@pytest.fixture(scope="module")
def stats():
    return mlm_corpus.run()


def test_every_scheduled_config_parses(stats):
    assert stats["scheduled_configs"] > 200
    assert stats["scheduled_problems"] == []


def test_no_flag_is_unknown_in_any_config(stats):
    assert stats["ok"] > 300
    # What remains are values argparse itself rejects (a config no CI recipe schedules), never a flag.
    assert not [p for p in stats["problems"] if "no such" in p or "has no such flag" in p]
    assert len(stats["problems"]) <= 1
