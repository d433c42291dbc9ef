"""Settings consulted for every config file of a run are read once, and again only when they change."""

import os

from overlap_cli.launch_profile.settings import find_settings, path_matches


def test_explicit_settings_are_parsed_once_while_unchanged(tmp_path):
    path = tmp_path / "overlap.toml"
    path.write_text("[tool.overlap]\nworld-size = 8\n")
    first = find_settings(None, str(path))
    assert first.get("world-size") == 8
    assert find_settings(str(tmp_path / "a.yaml"), str(path)) is first
    path.write_text("[tool.overlap]\nworld-size = 16\n")
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 1_000_000))
    assert find_settings(None, str(path)).get("world-size") == 16


def test_path_matches_relative_and_bare_name_patterns(tmp_path):
    cfg = tmp_path / "recipes" / "llama.yaml"
    base = str(tmp_path)
    assert path_matches("recipes/*.yaml", str(cfg), base)
    assert path_matches("./recipes/llama.yaml", str(cfg), base)
    assert path_matches("llama.yaml", str(cfg), base)  # a bare name matches in any folder
    assert not path_matches("other/*.yaml", str(cfg), base)
    assert not path_matches("recipes/*.yml", str(cfg), base)
