"""Ground truth of what a Megatron-LM launch hands the training processes, decided by bash itself.

A shell launch is RUN in bash with fake ``torchrun`` / ``python`` / ``python3`` / ``srun`` first on PATH:
``torchrun`` and ``python`` write the words they were given (NUL-separated) and their environment (``env
-0``) and exit; ``srun`` exports the task counts Slurm would (SLURM_NTASKS, SLURM_NNODES, SLURM_PROCID=0)
and runs the command after its options. So which words reach the launcher, and which variables are
exported to it, are bash's answers, not a reader's. (The tool never does this: it parses.)

A functional-test YAML goes through the harness's steps (tests/functional_tests/shell_test_utils/
_run_training.sh of Megatron-LM's ``core_r0.19.0`` branch): the real ``envsubst`` over the file with the
harness's environment, the two yq queries (``.ENV_VARS | to_entries`` -> ``KEY=value``; ``explode(.) |
.MODEL_ARGS | to_entries | with(select(.value == true); .value = "true") | .key + ": " + (select(.value !=
"") | .value | tostring)``, done here on the composed YAML nodes: a scalar's ``tostring`` is its text), and
then in bash the harness's loop — ``xargs`` trim, the ``( )`` / ``[ ]`` / blank-or-metacharacter cases,
``eval "TRAINING_PARAMS_ARRAY=(...)"`` — and ``torchrun --nproc_per_node $GPUS_PER_NODE --nnodes
$NUM_NODES ... $TRAINING_SCRIPT_PATH "${PARAMS[@]}"``.

Each launch runs once per caller environment (mlm_launches.Launch.caller: run A and run B); a launch that
reads nothing from the caller runs once. Result per run: ``{"program", "argv", "env"}`` (the launcher's
words and environment) or ``{"error": text}`` when bash never reached a launcher.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

_DUMPER = """#!/bin/bash
# a stand-in launcher: record the words and the environment of the first launch, start nothing
if [ ! -e "$OVERLAP_DUMP/argv" ]; then
    printf '%s\\0' "${0##*/}" "$@" > "$OVERLAP_DUMP/argv"
    env -0 > "$OVERLAP_DUMP/env"
fi
exit 0
"""

_SRUN = """#!/bin/bash
# a stand-in srun: its options (--opt=value, or the short ones that take a value apart), the task counts
# Slurm exports to the tasks, then the command (task 0 only)
nodes=1; ntasks=; per_node=1
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes=*) nodes="${1#*=}" ;;
        --ntasks=*) ntasks="${1#*=}" ;;
        --ntasks-per-node=*) per_node="${1#*=}" ;;
        -N) nodes="$2"; shift ;;
        -n) ntasks="$2"; shift ;;
        --*=*|--*) ;;
        -*) shift ;;
        *) break ;;
    esac
    shift
done
export SLURM_NNODES="$nodes" SLURM_NTASKS="${ntasks:-$((nodes * per_node))}" SLURM_PROCID=0 SLURM_NODEID=0
exec "$@"
"""

# The harness's loop over yq's lines (see the module docstring), then its torchrun line.
_HARNESS = r"""#!/bin/bash
set -eo pipefail
while IFS= read -r ARGUMENT; do
    [ -z "$ARGUMENT" ] && continue
    KEY=$(echo $ARGUMENT | cut -f1 -d=)
    VALUE="${ARGUMENT:${#KEY}+1}"
    export "$KEY"="$VALUE"
done < "$ENV_LINES"
WORDS=""
while IFS= read -r line; do
    [ -z "$line" ] && continue
    key="${line%%:*}"
    value="${line#*: }"
    value="$(echo "$value" | xargs)"
    if [[ "$value" == "true" ]]; then
        WORDS+="${key} "
    elif echo "$value" | grep -Eq '^\([^)]+\)$'; then
        WORDS+="$key \"$value\" "
    elif echo "$value" | grep -Eq '^\[[^]]+\]$'; then
        WORDS+="$key $(echo "$value" | sed 's/^\[//;s/\]$//') "
    elif [[ "$value" == *" "* || "$value" == *"|"* || "$value" == *"("* || "$value" == *")"* ]]; then
        WORDS+="$key \"$value\" "
    else
        WORDS+="$key $value "
    fi
done < "$ARG_LINES"
WORDS=${WORDS% }
eval "PARAMS=($WORDS)"
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES --master_addr localhost --master_port 29500 \
    --node_rank 0 $TRAINING_SCRIPT_PATH "${PARAMS[@]}"
"""

# Variables of the runner's own shell, not of the launch.
_SHELL_OWN = {"PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "OVERLAP_DUMP", "ENV_LINES", "ARG_LINES", "LANG",
              "LC_ALL", "TMPDIR"}


def available() -> bool:
    return all(shutil.which(p) for p in ("bash", "env", "envsubst", "xargs", "grep", "sed", "cut"))


def _shims(folder: Path) -> Path:
    bin_ = folder / "shim-bin"
    bin_.mkdir(parents=True, exist_ok=True)
    for name, text in (("torchrun", _DUMPER), ("python", _DUMPER), ("python3", _DUMPER), ("srun", _SRUN)):
        p = bin_ / name
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_


def _read_dump(dump: Path) -> dict:
    if not (dump / "argv").exists():
        return {"error": "bash reached no launcher"}
    words = (dump / "argv").read_bytes().decode().split("\0")[:-1]
    env = {}
    for item in (dump / "env").read_bytes().decode().split("\0"):
        if "=" in item:
            k, v = item.split("=", 1)
            if k not in _SHELL_OWN and not k.startswith("BASH_FUNC"):
                env[k] = v
    return {"program": words[0], "argv": words[1:], "env": env}


def _base_env(bin_: Path, dump: Path) -> dict:
    return {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(dump), "OVERLAP_DUMP": str(dump), "LC_ALL": "C"}


def _caller(launch, run: int) -> dict:
    return {k: v[run] for k, v in launch.caller.items() if v[run] is not None}


def runs(launch) -> int:
    return 2 if launch.caller else 1


def ground_truth(launches: list, texts: dict, folder: Path) -> dict:
    """id -> [result of run A, (result of run B)] for each launch (texts: id -> the rendered file)."""
    folder.mkdir(parents=True, exist_ok=True)
    bin_ = _shims(folder)
    harness = folder / "harness.sh"
    harness.write_text(_HARNESS)
    from concurrent.futures import ThreadPoolExecutor

    def one(launch) -> list:
        results = []
        for run in range(runs(launch)):
            dump = folder / "dumps" / f"{launch.id}-{run}"
            shutil.rmtree(dump, ignore_errors=True)
            dump.mkdir(parents=True)
            env = {**_base_env(bin_, dump), **_caller(launch, run)}
            if launch.form == "yaml":
                results.append(_run_yaml(launch, texts[launch.id], env, harness, dump))
                continue
            script = dump / f"{launch.id}.sh"
            script.write_text(texts[launch.id])
            proc = subprocess.run(["bash", str(script)], env=env, cwd=dump, capture_output=True, text=True, timeout=30)
            got = _read_dump(dump)
            if "error" in got:
                got["error"] += f" (bash exit {proc.returncode}: {proc.stderr.strip()[-200:]})"
            results.append(got)
        return results

    with ThreadPoolExecutor(4) as pool:
        return dict(zip([launch.id for launch in launches], pool.map(one, launches)))


def _run_yaml(launch, text: str, env: dict, harness: Path, dump: Path) -> dict:
    env = {**env, "GPUS_PER_NODE": str(launch.nproc), "NUM_NODES": str(launch.nnodes),
           "TRAINING_SCRIPT_PATH": "pretrain_gpt.py"}
    # envsubst "$(env | cut -d= -f1 | sed -e 's/^/$/')": only the variables the harness has are replaced
    shell_format = " ".join(f"${k}" for k in env)
    text = subprocess.run(["envsubst", shell_format], input=text, env=env, capture_output=True, text=True,
                          check=True).stdout
    env_lines, arg_lines = yq_lines(text)
    (dump / "env.lines").write_text("".join(f"{line}\n" for line in env_lines))
    (dump / "args.lines").write_text("".join(f"{line}\n" for line in arg_lines))
    env = {**env, "ENV_LINES": str(dump / "env.lines"), "ARG_LINES": str(dump / "args.lines")}
    proc = subprocess.run(["bash", str(harness)], env=env, cwd=dump, capture_output=True, text=True, timeout=30)
    got = _read_dump(dump)
    if "error" in got:
        got["error"] += f" (harness exit {proc.returncode}: {proc.stderr.strip()[-200:]})"
    return got


def yq_lines(text: str) -> tuple:
    """The harness's two yq queries over the (envsubst'ed) YAML: ENV_VARS as KEY=value lines, MODEL_ARGS
    as "key: value" lines (``true`` kept as the word, empty values dropped, a scalar's tostring is its text)."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        pairs = {}
        for k, v in root.value:
            pairs[k.value] = v
        env_lines, arg_lines = [], []
        env = pairs.get("ENV_VARS")
        if isinstance(env, yaml.MappingNode):
            loader.flatten_mapping(env)
            env_lines = [f"{k.value}={v.value}" for k, v in env.value]
        args = pairs.get("MODEL_ARGS")
        if isinstance(args, yaml.MappingNode):
            loader.flatten_mapping(args)
            seen = {}
            for k, v in args.value:  # explode(.): a key written later replaces a merged one in place
                seen[k.value] = v
            for key, v in seen.items():
                if v.tag == "tag:yaml.org,2002:bool" and v.value == "true":
                    arg_lines.append(f"{key}: true")
                elif v.value != "":
                    arg_lines.append(f"{key}: {v.value}")
        return env_lines, arg_lines
    finally:
        loader.dispose()
