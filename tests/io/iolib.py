"""What the reading and writing tests share: the real CLI in a fresh interpreter, with a hang guard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_YAML = ROOT / "examples" / "tp_overlap_without_sp.yaml"
EXAMPLE_LAUNCH = ROOT / "examples" / "megatron-lm" / "gpt_pretrain_tp_overlap.sh"
HANG_GUARD = 60  # seconds: a hang, not a measurement


def overlap(*args, cwd=None, stdin=subprocess.DEVNULL, timeout=HANG_GUARD):
    """(exit code, stdout, stderr) of ``python -m overlap_cli ARGS`` in a fresh interpreter; a hang fails the
    test through the timeout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "overlap_cli", *map(str, args)], capture_output=True,
                          timeout=timeout, cwd=cwd or ROOT, env=env, stdin=stdin)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def assert_one_error_line(code: int, out: str, err: str, *words: str) -> str:
    """Exit 2 with exactly one error line, holding ``words``; no traceback."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def launch_sourcing(folder: Path, sourced: str, name: str = "launch.sh") -> Path:
    """The example launch script with ``source SOURCED`` as its first command."""
    path = folder / name
    path.write_text(f"source {sourced}\n" + EXAMPLE_LAUNCH.read_text())
    return path
