"""The benchmark's inputs are what it claims: generated configs that really get checked (not refused early),
deterministic for a seed, and bench.py's report states each goal."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.genconfigs import generate
from bench.bench import report


def test_generated_configs_are_deterministic_and_mostly_checkable(tmp_path):
    a = generate(tmp_path / "a", 60)
    b = generate(tmp_path / "b", 60)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", "check", "--format", "json", *map(str, a)],
                          capture_output=True, text=True)
    results = json.loads(proc.stdout)["results"]
    assert len(results) == 60
    checked = [r for r in results if r["error"] is None]
    assert len(checked) >= 45, [r["error"]["message"] for r in results if r["error"]]
    assert sum(len(r["findings"]) for r in checked) > 0
    dumps = [r for r in checked if "_config" in r["file"]]
    assert dumps, "Bridge's full dumps are part of the mix"


def test_report_states_every_goal():
    fake = {"median": 0.05, "min": 0.04, "rss_kb": 30000, "exit": 1, "runs": 3}
    startup = {"python -c pass": {**fake, "median": 0.01}, "overlap check (console script)": fake}
    machine = {k: "x" for k in ("cpus", "cpu", "python", "pyyaml", "typer", "omegaconf", "ruamel", "os", "commit", "date")}
    text = report({**machine, "load": 0.5}, startup, {"mixed": {1000: {**fake, "median": 2.0}}}, None, {"fifo": fake}, None)
    assert "median <= 100 ms: **met**" in text
    assert "<= 7x bare Python: **met** (5.0x)" in text
    assert "1,000 configs <= 3 s: **met**" in text
    assert "within 1 s: **met**" in text
