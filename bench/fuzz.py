"""Seeded hostile generators for the three forms a check reads — Python runs, launch scripts, YAML configs —
and the long run over them: each case through the real CLI in a fresh process, under a time and a memory
limit (``run_limited``). tests/test_fuzz.py runs a seeded sample of each in CI.

    python bench/fuzz.py --cases 300            # 300 cases per form, seed 0
    python bench/fuzz.py --cases 50 --seed 7 --forms python,bash

Every case must hold: exit 0, 1 or 2; no traceback, no internal error; no hang (``HANG_GUARD``) and no
memory past ``MEMORY_LIMIT``; exit 2 with one line naming the file; every input byte for byte as before (the
case's folder is compared before and after). Prints per form: cases, seconds and peak RSS per case
(median / max), hangs, internal errors, broken contracts, overwritten inputs.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD = 60  # seconds: a hang, not a measurement
MEMORY_LIMIT = 1 << 31  # address space of one run: reading /dev/zero into memory reached 5.9 GiB


def run_limited(args, cwd, stdin=subprocess.DEVNULL, guard: float = HANG_GUARD) -> tuple:
    """(exit code, stdout, stderr, seconds, peak RSS in KiB, CPU seconds) of ``python -m overlap_cli ARGS`` under
    the hang guard and the memory limit; a run past the guard is killed and reported as exit None. CPU seconds
    (user + system) are what to compare on a shared machine."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out_path, err_path = Path(cwd, ".fuzz-stdout"), Path(cwd, ".fuzz-stderr")
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "overlap_cli", *map(os.fsdecode, args)], cwd=cwd, env=env,
                                stdin=stdin, stdout=out, stderr=err, preexec_fn=limit)
        timer = threading.Timer(guard, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    seconds = time.monotonic() - start
    code = None if proc.returncode == -9 else proc.returncode
    texts = out_path.read_bytes().decode("utf-8", "replace"), err_path.read_bytes().decode("utf-8", "replace")
    out_path.unlink()
    err_path.unlink()
    return code, *texts, seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


# --- Python runs -----------------------------------------------------------------------------------------

PY_HEAD = "from megatron.bridge.recipes.llama import llama32_1b_pretrain_config\n"


def _py_value(rng: random.Random, names: list) -> str:
    """An expression: hostile more often than not, sometimes one of the names made before."""
    big = rng.choice([10, 63, 10**3, 10**6, 10**9, 10**18])
    choices = [
        lambda: _nested(rng.choice([10, 200, 900, 3000]), rng.choice("([{")),
        lambda: "9" * rng.choice([10, 1000, 4299]),
        lambda: f"10**{big} ** {rng.choice([2, 63, 10**6])}",
        lambda: f"len([0] * {big})",
        lambda: f"len('x' * {big})",
        lambda: f"len(f'{{1:>{big}}}')",
        lambda: f"len(f\"{{'ab' * {big}}}\")",
        lambda: f"sum(range({big}))",
        lambda: f"len(range({big}))",
        lambda: f"len([i for i in range({big})])",
        lambda: f"len({{i: [j for j in range({big})] for i in range({big})}})",
        lambda: f"max((y := {big}), 1)",
        lambda: f"int('{'7' * rng.choice([5, 4299, 5000])}')",
        lambda: f"{rng.choice([-1, 0, 2, 4, 2**31, 2**63, 1.5])}",
        lambda: f"'{rng.choice(['8', 'x', ''])}'",
    ]
    if names:
        choices.append(lambda: rng.choice(names))
        choices.append(lambda: " + ".join(rng.choice(names) for _ in range(rng.randint(2, 50))))
    return rng.choice(choices)()


def _nested(depth: int, bracket: str) -> str:
    close = {"(": ")", "[": "]", "{": "}"}[bracket]
    return bracket * depth + "1" + close * depth


def _py_fragment(rng: random.Random, k: int, names: list) -> str:
    """One hostile statement (or a few), defining the name ``v{k}``."""
    name = f"v{k}"
    kind = rng.randrange(10)
    if kind == 0:  # a long chain of assignments
        n = rng.choice([10, 1_000, 5_000])
        text = f"{name}_0 = 1\n" + "".join(f"{name}_{i} = {name}_{i - 1} + 1\n" for i in range(1, n))
        text += f"{name} = {name}_{n - 1}\n"
    elif kind == 1:  # many functions
        n = rng.choice([5, 200, 800])
        text = "".join(f"def {name}_f{i}():\n    return {i}\n\n" for i in range(n)) + f"{name} = {name}_f{n - 1}()\n"
    elif kind == 2:  # recursion in a helper
        text = (f"def {name}_h(n):\n    return {name}_h(n + 1) if n < {rng.choice([10, 10**4, 10**9])} else n\n\n"
                f"{name} = {name}_h(0)\n")
    elif kind == 3:  # mutual recursion through the config
        text = (f"def {name}_a(c, n):\n    c.model.tensor_model_parallel_size = n\n    return {name}_b(c, n * 2)\n\n"
                f"def {name}_b(c, n):\n    return {name}_a(c, n + 1)\n\n{name} = {name}_a(cfg, 1)\n")
    elif kind == 4:  # a loop that never ends, or a huge one
        loop = rng.choice(["while True:\n    {n} = {n} + 1\n", "for i in range(10**12):\n    {n} = i\n",
                           "while {n} < 10**100:\n    {n} = {n} * 2\n"])
        text = f"{name} = 1\n" + loop.format(n=name)
    elif kind == 5:  # walrus and a comprehension with a side
        text = (f"if ({name} := {_py_value(rng, names)}) is not None:\n"
                f"    cfg.model.tensor_model_parallel_size = {name}\n")
    elif kind == 6:  # deep nesting of blocks
        depth = rng.choice([5, 50, 99])
        text = "".join("    " * d + "if True:\n" for d in range(depth)) + "    " * depth + f"{name} = 2\n"
        text += f"{name} = {name} if '{name}' in dir() else 2\n" if rng.random() < 0.2 else ""
    elif kind == 7:  # a long elif chain
        n = rng.choice([10, 500, 2000])
        text = f"{name} = 0\nif {name} == -1:\n    pass\n" + "".join(f"elif {name} == {i}:\n    {name} = {i + 1}\n"
                                                                     for i in range(n))
    else:
        text = f"{name} = {_py_value(rng, names)}\n"
    names.append(name)
    return text


def python_case(rng: random.Random) -> str:
    """A Bridge Python run (a script body or run functions) built from hostile fragments."""
    names: list = []
    body = "".join(_py_fragment(rng, k, names) for k in range(rng.randint(1, 5)))
    sets = "".join(f"cfg.{key} = {_py_value(rng, names)}\n" for key in
                   rng.sample(["model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                               "model.context_parallel_size", "train.global_batch_size", "model.tp_comm_overlap"],
                              rng.randint(1, 3)))
    if rng.random() < 0.5:
        return PY_HEAD + "cfg = llama32_1b_pretrain_config()\n" + body + sets
    indent = lambda text: "".join("    " + ln + "\n" for ln in text.splitlines())  # noqa: E731
    return (PY_HEAD + "\ndef run():\n    cfg = llama32_1b_pretrain_config()\n" + indent(body) + indent(sets)
            + "    return cfg\n")


# --- launch scripts --------------------------------------------------------------------------------------

SH_LAUNCH = ("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size "
             "${PP:-1} --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
             "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8\n")


def _sh_fragment(rng: random.Random) -> str:
    n = rng.choice([3, 30, 300])
    return rng.choice([
        lambda: "A=x\n" + "A=$A$A\n" * rng.choice([5, 20, 40]) + ("TP=$TP$A\n" if rng.random() < 0.3 else ""),
        lambda: "B=(x)\n" + 'B=("${B[@]}" "${B[@]}")\n' * rng.choice([5, 25]),
        lambda: "x=" + "a" * n + f"\n[[ $x == {'*a' * rng.randint(1, 9)}*b ]] && TP=4\n",
        lambda: "case $1 in\n" + "".join(f"  *{i}*|[z-a]{i}) TP={i % 4 + 1} ;;\n" for i in range(n * 10)) + "esac\n",
        lambda: "# overlap: ignore[LM501]\n" * (n * 30),
        lambda: rng.choice(["fi\n", "done\n", "esac\n", "}\n", "then\n", "'\n", '"\n', "$(\n", "((\n"]),
        lambda: "f() { TP=8; f; f; }\nf\n",
        lambda: f"for ((i=0;i<{n * 1000};i++)); do for ((j=0;j<{n};j++)); do TP=$j; done; done\n",
        lambda: "while true; do A=$A$A; done\n",
        lambda: f"TP={rng.choice(['0', '-4', '99999999999', '2', '{1..8}', 'x'])}\n",
        lambda: f"for t in {{1..{rng.choice([4, 10**5, 10**9])}}}; do TP=$t; done\n",
        lambda: f"A=({{a,b}}{{1..{n}}}{{x,y,z}})\nTP=${{A[{n}]}}\n",
        lambda: "".join(f'if [ -n "$E{i}" ]; then V{i}=1; fi\n' for i in range(rng.choice([3, 8]))),
        lambda: "".join(f"W{i}={i}\n" for i in range(n * 30)),
        lambda: "source /dev/zero\n" if rng.random() < 0.5 else "source ./env.sh\n",
        lambda: "eval \"$(printf 'TP=%s' 4)\"\n" + "bash -c 'torchrun pretrain_gpt.py --tensor-model-parallel-size 2'\n",
        lambda: "X=\x00\n" if rng.random() < 0.2 else "X=\xe9\u202e\n",
    ])()


def bash_case(rng: random.Random) -> str:
    return "#!/bin/bash\nTP=2\n" + "".join(_sh_fragment(rng) for _ in range(rng.randint(1, 5))) + SH_LAUNCH


# --- YAML configs ----------------------------------------------------------------------------------------

def yaml_case(rng: random.Random) -> bytes:
    from bench.mutate import RandomChooser, mutate, seeds

    seed = rng.choice(seeds())
    mutated, _applied = mutate(seed.read_bytes(), RandomChooser(rng), max_steps=rng.randint(1, 8))
    if rng.random() < 0.3:  # a hostile block of its own
        mutated += rng.choice([b"\nmodel:\n  tensor_model_parallel_size: 0\n", b"\n" + b"a: [" * 5000,
                               b"\nx: &a [1]\ny: [*a, *a, *a, *a]\n", b"\n" + b"k: " + b"9" * 5000 + b"\n",
                               b"\n\x00", b"\n${oc.env:HOME}\n"])
    return mutated


FORMS = {"python": ("run.py", python_case), "bash": ("train.sh", bash_case), "yaml": ("config.yaml", yaml_case)}


def snapshot(folder: Path) -> dict:
    """{relative name: bytes} of the regular files in ``folder`` (what a run must not change)."""
    out = {}
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as fh:
                    out[os.path.relpath(full, folder)] = fh.read()
    return out


def run_case(form: str, seed: int, folder: Path) -> dict:
    """One case of ``form`` (seeded): ``check FILE --format json -o report.json`` in ``folder``; what it did."""
    name, make = FORMS[form]
    content = make(random.Random(f"{form}-{seed}"))
    data = content if isinstance(content, bytes) else content.encode("utf-8", "surrogateescape")
    (folder / name).write_bytes(data)
    (folder / "env.sh").write_bytes(b"export A=1\n")
    before = snapshot(folder)
    code, out, err, seconds, rss, cpu = run_limited(["check", name, "--format", "json", "-o", "report.json"], folder)
    after = snapshot(folder)
    report = after.pop("report.json", b"")
    both = out + err + report.decode("utf-8", "replace")
    problems = []
    if code is None:
        problems.append("hang")
    elif code not in (0, 1, 2):
        problems.append(f"exit {code}")
    if "Traceback" in both or "internal error" in both:
        problems.append("internal error")
    if code == 2 and sum(1 for ln in (out + err).splitlines() if ln.startswith(name)) != 1 and not report:
        problems.append("exit 2 without one line naming the file")
    if after != before:
        problems.append("overwritten input")
    return {"form": form, "seed": seed, "code": code, "seconds": seconds, "cpu": cpu, "rss_kib": rss,
            "problems": problems, "size": len(data)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per form")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--keep", type=Path, help="a folder to copy each failing case into")
    a = parser.parse_args()
    print(f"{'form':7} {'cases':>6} {'s median':>9} {'s max':>7} {'CPU s med':>9} {'CPU s max':>9} {'MiB median':>10} "
          f"{'MiB max':>8} {'hangs':>6} {'internal':>9} {'contract':>9} {'overwritten':>11}")
    for form in a.forms.split(","):
        rows = []
        for k in range(a.cases):
            with tempfile.TemporaryDirectory() as tmp:
                row = run_case(form, a.seed * 1_000_000 + k, Path(tmp))
                if row["problems"] and a.keep:
                    a.keep.mkdir(parents=True, exist_ok=True)
                    name = FORMS[form][0]
                    (a.keep / f"{form}-{row['seed']}-{name}").write_bytes((Path(tmp) / name).read_bytes())
            rows.append(row)
            if row["problems"]:
                print(f"  {form} seed {row['seed']}: {', '.join(row['problems'])}", file=sys.stderr)
        secs = [r["seconds"] for r in rows]
        cpus = [r["cpu"] for r in rows]
        mib = [r["rss_kib"] / 1024 for r in rows]
        count = lambda what: sum(1 for r in rows if any(p.startswith(what) for p in r["problems"]))  # noqa: E731
        contract = sum(1 for r in rows if any(p.startswith(("exit", "exit 2")) for p in r["problems"]))
        print(f"{form:7} {len(rows):6} {statistics.median(secs):9.2f} {max(secs):7.2f} {statistics.median(cpus):9.2f} "
              f"{max(cpus):9.2f} {statistics.median(mib):10.1f} {max(mib):8.1f} {count('hang'):6} {count('internal'):9} "
              f"{contract:9} {count('overwritten'):11}")
        slowest = max(rows, key=lambda r: r["cpu"])
        print(f"        slowest: seed {slowest['seed']} ({slowest['cpu']:.2f} CPU s, {slowest['size']:,} bytes)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
