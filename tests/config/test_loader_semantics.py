"""The loader reads values as Bridge's ``OmegaConf.load`` does: OmegaConf itself is the oracle here."""

from __future__ import annotations

import pathlib

import pytest
from omegaconf import OmegaConf

from overlap_cli.check.engine import check_file
from overlap_cli.config.loader import load_config
from overlap_cli.launch_profile.profile import Target

SAME_AS_OMEGACONF = {
    "merge_keys": "base: &b {a: 1, b: 2}\nmore: &m {b: 3, c: 4}\nmodel:\n  <<: [*b, *m]\n  a: 5\nagain:\n  <<: *b\n",
    "dates_stay_strings": "model:\n  start: 2024-01-01\n  bad: 2001-02-30\n  stamp: 2001-12-14t21:59:43.10-05:00\n",
    "yaml11_scalars": "model:\n  a: yes\n  b: off\n  c: 3e-4\n  d: 1_000\n  e: 0x10\n  f: ~\n  g: .inf\n  h: 1:30\n",
    "pathlib_tags": "checkpoint:\n  save: !!python/object/apply:pathlib.PosixPath ['/ckpt', 'run1']\n"
                    "  load: !!python/object/apply:pathlib.Path [rel, x]\n",
}


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return str(value) if isinstance(value, pathlib.PurePath) else value


@pytest.mark.parametrize("name", sorted(SAME_AS_OMEGACONF))
def test_values_match_omegaconf_load(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SAME_AS_OMEGACONF[name])
    ours = load_config(str(path)).data
    theirs = _plain(OmegaConf.to_container(OmegaConf.load(path)))
    assert ours == theirs


@pytest.mark.parametrize("text,message", [
    ("model:\n  a: 1\n  a: 2\n", "duplicate key 'a'"),
    ("model:\n  x: !!bool maybe\n", "invalid boolean 'maybe'"),
    ("model:\n  x: !!timestamp nope\n", "invalid timestamp value 'nope'"),
    ("model:\n  x: !!int twelve\n", "invalid int value 'twelve'"),
    ("model:\n  x: !!python/name:os.system ''\n", "never honoured"),
])
def test_bad_values_are_one_line_errors_with_their_line(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    r = check_file(str(path), Target())
    assert r.error is not None and message in r.error.message, r.error
    assert r.error.line is not None and r.error.line >= 2


def test_explicit_timestamp_and_binary_stay_text(tmp_path):
    path = tmp_path / "tagged.yaml"
    path.write_text("model:\n  when: !!timestamp 2024-01-01\n  blob: !!binary aGVsbG8=\n")
    assert load_config(str(path)).data["model"] == {"when": "2024-01-01", "blob": "aGVsbG8="}


def test_pyyaml_imported_without_its_reader_pattern_still_reads_as_pyyaml():
    """``yamlnodes.pyyaml()`` leaves the pure-Python reader's character class uncompiled until used; that
    reader (OmegaConf's loader, the fallback without libyaml) still refuses a control character, and
    ``re.compile`` is the standard one again afterwards. A fresh process: PyYAML must not be imported yet."""
    import subprocess
    import sys

    code = (
        "import re\n"
        "compile_before = re.compile\n"
        "from overlap_cli.config.yamlnodes import pyyaml\n"
        "yaml = pyyaml()\n"
        "assert re.compile is compile_before\n"
        "assert not isinstance(yaml.reader.Reader.__dict__['NON_PRINTABLE'], re.Pattern)\n"
        "assert yaml.load('a: [1, x]', Loader=yaml.SafeLoader) == {'a': [1, 'x']}\n"
        "try:\n"
        "    yaml.load('a: \\x07', Loader=yaml.SafeLoader)\n"
        "except yaml.reader.ReaderError as exc:\n"
        "    print(exc.character == 7, isinstance(yaml.reader.Reader.NON_PRINTABLE.search('\\x07'), re.Match))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=pathlib.Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]



def test_remembered_parse_is_a_fresh_copy_each_time():
    """``overlap fix`` parses its texts inside ``remembered_parses``: a text read again is the values of
    the first read, unchanged by what a caller did to an earlier copy, with the same key positions."""
    from overlap_cli.config.yamlnodes import parse_nodes, remembered_parses

    text = "model:\n  layers: [1, 2, {a: x}]\n  tp: 4\nenv: {A: '1'}\n"
    fresh = parse_nodes(text, "f.yaml")
    with remembered_parses():
        first = parse_nodes(text, "f.yaml")
        first[0]["model"]["layers"][2]["a"] = "changed"
        first[0]["model"]["tp"] = 8
        first[1].clear()
        again = parse_nodes(text, "f.yaml")
        with remembered_parses():  # nested: the same memory
            inner = parse_nodes(text, "other.yaml")
    assert again == inner == fresh
    assert again[0] is not inner[0] and again[0]["model"]["layers"] is not inner[0]["model"]["layers"]
