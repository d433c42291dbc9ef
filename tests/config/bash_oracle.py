"""Ground truth for the launch-script reader: bash itself runs a script, with every launcher shimmed.

The script runs in ``bash --restricted`` (no output redirections to files, no ``/`` in command names, no
``exec``; restrictions start after the startup file) with ``PATH`` holding only the shims, so no program of
the machine can run: a shim (``torchrun``, ``python``, ``srun``, ``nsys``, ``uv``, ...) writes how it was
called — its argv and its exported environment — and exits 0; any other command is "not found" and
``command_not_found_handle`` (defined in the startup file, ``BASH_ENV``) makes it succeed without doing
anything; ``cd``, ``pushd``, ``popd`` and ``kill`` are functions that do nothing. The working directory
is a temporary one holding the training scripts a script may test for (``[ -f pretrain_gpt.py ]``).
Only generated scripts and the vendored upstream ones under tests/data/upstream are run this way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

BASH = shutil.which("bash")
SHIMS = ("torchrun", "python", "python3", "srun", "nsys", "uv", "numactl", "mpirun", "env", "nohup", "stdbuf",
         "debugpy-run")
_SHIM = r"""#!/bin/bash
# Records how it was called and exits: nothing is launched.
{
  printf 'ARGV\0'
  printf '%s\0' "${0##*/}" "$@"
  printf 'ENV\0'
  for n in $(compgen -e); do
    case "$n" in SHIM_LOG|PATH|HOME|BASH_ENV|PWD|OLDPWD|SHLVL|_|SHIM_IGNORE|LC_ALL) continue;; esac
    case " $SHIM_IGNORE " in *" $n "*) continue;; esac
    printf '%s=%s\0' "$n" "${!n}"
  done
  printf 'END\0'
} >> "$SHIM_LOG"
exit 0
"""
_PRELUDE = """command_not_found_handle() { return 0; }
cd() { return 0; }
pushd() { return 0; }
popd() { return 0; }
kill() { return 0; }
"""
TRAINING_SCRIPTS = ("pretrain_gpt.py", "pretrain_hybrid.py", "pretrain_mamba.py", "pretrain_bert.py", "pretrain_t5.py")


class Oracle:
    """Runs scripts in bash with the shims of a temporary directory."""

    def __init__(self, root: Path):
        self.root = root
        self.bin = root / "shims"
        self.bin.mkdir(parents=True, exist_ok=True)
        for name in SHIMS:
            p = self.bin / name
            p.write_text(_SHIM)
            p.chmod(0o755)
        self.prelude = root / "prelude.sh"
        self.prelude.write_text(_PRELUDE)
        self.work = root / "work"
        self.work.mkdir(exist_ok=True)
        for name in TRAINING_SCRIPTS:
            (self.work / name).write_text("")
        self.runs = 0

    def run(self, script: Path, env: dict, args: tuple = (), dirs: tuple = ()) -> list:
        """The launches bash makes running ``script`` with the caller's environment ``env`` (NAME -> value)
        and the arguments ``args``, with the directories ``dirs`` present: a list of (argv, exported
        environment)."""
        for d in dirs:
            (self.work / d).mkdir(parents=True, exist_ok=True)
        self.runs += 1
        log = self.root / f"log{self.runs}"
        log.write_bytes(b"")
        base = {"PATH": str(self.bin), "HOME": str(self.work), "BASH_ENV": str(self.prelude), "SHIM_LOG": str(log),
                "SHIM_IGNORE": " ".join(env), "LC_ALL": "C"}
        base.update(env)
        subprocess.run([BASH, "--restricted", str(script), *args], cwd=self.work, env=base, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, check=False)
        return parse_log(log.read_bytes())


def parse_log(data: bytes) -> list:
    out = []
    items = data.split(b"\0")
    i = 0
    while i < len(items):
        if items[i] != b"ARGV":
            i += 1
            continue
        i += 1
        argv = []
        while items[i] != b"ENV":
            argv.append(items[i].decode())
            i += 1
        i += 1
        env = {}
        while items[i] != b"END":
            name, _, value = items[i].decode().partition("=")
            env[name] = value
            i += 1
        i += 1
        if argv and argv[0] == "env":  # the env program puts its NAME=value words into the command's environment
            k = 1
            while k < len(argv) and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argv[k]):
                name, _, value = argv[k].partition("=")
                env[name] = value
                k += 1
        out.append((argv, env))
    return out


def split_launch(argv: list) -> tuple:
    """(training script file name, the words after it, torchrun's world size or None) of a recorded launch,
    read independently of the tool: the script is the first ``*.py`` word; torchrun's sizes are the
    ``--nproc[-_]per[-_]node`` and ``--nnodes`` words before it (None without torchrun: the process's
    WORLD_SIZE then decides)."""
    k = next(i for i, w in enumerate(argv) if w.endswith(".py") and i > 0)
    before = argv[:k]
    sizes: dict = {}
    j = 0
    while j < len(before):
        w = before[j]
        name, eq, value = w.partition("=")
        if name in ("--nproc_per_node", "--nproc-per-node", "--nnodes", "-N", "--ntasks-per-node", "--nodes"):
            if not eq:
                value = before[j + 1] if j + 1 < len(before) else ""
                j += 1
            sizes[name.replace("_", "-")] = value
        j += 1
    world = None
    if any(w in ("torchrun", "torch.distributed.run") for w in before):
        nproc, nnodes = sizes.get("--nproc-per-node"), sizes.get("--nnodes", "1")
        if nproc and nproc.isdigit() and nnodes.isdigit():
            world = int(nproc) * int(nnodes)
    # srun starting python itself: Megatron-LM reads WORLD_SIZE from the environment (arguments.py:144), which
    # srun does not set; the caller (Run) takes it from the recorded environment
    return os.path.basename(argv[k]), argv[k + 1:], world
