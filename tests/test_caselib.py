"""The case-header reader of tests/caselib.py: a key it does not know is an error, not a silent no-op."""

from __future__ import annotations

import re

import pytest

from caselib import HeaderError, read_header


def test_unknown_header_key_is_an_error_naming_file_line_and_key(tmp_path):
    case = tmp_path / "tp101_typo.yaml"
    case.write_text("# TP overlap with TP=1: disabled.\n# args: --world-size 8\n# expct: TP101\nmodel: {}\n")
    with pytest.raises(HeaderError, match=re.escape(f"{case}:3: unknown case header key 'expct'")):
        read_header(case)


def test_unknown_key_after_the_header_is_no_header(tmp_path):
    case = tmp_path / "ok.yaml"
    case.write_text("# expect: TP101\nmodel: {}\n# expct: a comment in the body, not the header\n")
    assert read_header(case)["expect"] == ["TP101"]


def test_prose_lines_and_known_keys_are_read(tmp_path):
    case = tmp_path / "ok.sh"
    case.write_text(
        "#!/bin/bash\n"
        "# Context parallelism splits each sequence into 2 x CP chunks: 4094 tokens do not split.\n"
        "# args: --gpu h100 --world-size 8\n"
        "# quote: LM801 some message\n"
        "# exit: 1\n"
        "torchrun pretrain_gpt.py\n"
    )
    h = read_header(case)
    assert (h["args"], h["exit"]) == (["--gpu", "h100", "--world-size", "8"], 1)

