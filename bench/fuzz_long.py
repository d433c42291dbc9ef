"""Long fuzz run: 10,000+ mutated configs through the real CLI (in process), by hand or in a nightly job.

    python bench/fuzz_long.py                      # 10,000 cases, check + json; fix --write on every 4th
    python bench/fuzz_long.py -n 50000 --jobs 2 --seed 7 --keep /tmp/fuzz-failures

Seeds: the small examples and rule cases, and every recipe of Megatron-Bridge's corpus when it is beside
the repository (bench/mutate.py CORPUS): real dumps take wrong-typed values, sizes that do not divide,
removed sections and keys moved into other sections, and run under no target, their own launch, or a
random one (with or without a Transformer Engine version); a third of the cases are merged as an override
file onto a random catalog recipe (``--recipe``). An internal error counts as a failure.

Every case must hold what tests/test_fuzz.py asserts: no traceback; exit 0, 1 or 2; exit 2 with exactly
one line naming the file; valid JSON; ``fix --write`` (with or without --unsafe-fixes and --no-comments)
leaves a file that still checks, loses no comment (not even one on a key it removes; a comment written
twice must stay twice), and does not touch a file it cannot check. It also counts how often a second ``fix --write`` would change
the file again (fix should be idempotent). Failures are grouped by where they happen; with --keep each
group's first case is saved to replay (``overlap check FILE``). Prints the number of cases run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mutate import RandomChooser, corpus_seeds, lost_comments, mutate, seeds  # noqa: E402


def _invoke(app, args):
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)
    exc = res.exception if res.exception is not None and not isinstance(res.exception, SystemExit) else None
    return res.exit_code, res.stdout, res.stderr, exc


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "overlap_cli" in f.filename] or traceback.extract_tb(exc.__traceback__)
    f = frames[-1]
    return f"{type(exc).__name__} at {os.path.relpath(f.filename, ROOT)}:{f.lineno} ({f.name})"


_KEPT_NOTE = re.compile(rb"# overlap: [A-Z]{2,4}\d{3} (removed|moved|replaced) ")


def target_flags(rng: random.Random, launch) -> list:
    """The target of one case: none, the recipe's own launch, or a random one (sizes that may not divide),
    sometimes with a Transformer Engine version or without Transformer Engine."""
    kind = rng.randrange(4)
    flags: list = []
    if kind == 1 and launch:
        flags = ["--world-size", launch[0]] + (["--gpu", launch[1]] if launch[1] else [])  # some recipes name no GPU
    elif kind == 2:
        flags = ["--world-size", rng.choice([1, 2, 7, 8, 24, 64, 96, 1000, 1024]), "--gpu", rng.choice(["h100", "b200", "gb300", "vr200", "r100", "a100"])]
    roll = rng.randrange(4)
    if roll == 0:
        flags += ["--te-version", rng.choice(["2.6", "2.12", "1.13", "2.8.0.dev0"])]
    elif roll == 1:
        flags += ["--no-te"]
    return flags


def one_case(app, seed_path: Path, rng: random.Random, folder: Path, do_fix: bool,
             stats: collections.Counter, launch=None, recipe=None) -> tuple[list[tuple[str, str]], bytes]:
    """Run one mutated case: ([(problem kind, detail)] (empty when everything held), the mutated bytes).
    ``stats`` counts what the fix runs did (ran, changed the file, refused it, kept a removed key's comment).
    ``launch``: (world size, gpu) of a corpus recipe, for its own target. ``recipe``: run the mutated file as
    an override file on top of that catalog recipe (check, fix and the re-checks all get --recipe)."""
    mutated, applied = mutate(seed_path.read_bytes(), RandomChooser(rng))
    path = folder / "case.yaml"
    path.write_bytes(mutated)
    problems = []
    target = target_flags(rng, launch)
    stats["cases with a target"] += bool(target)
    if recipe is not None:
        target += ["--recipe", recipe]
        stats["cases layered on a recipe"] += 1

    def contract(tag, code, out, err, exc, text_output=True):
        if exc is not None:
            problems.append((f"{tag}: traceback", _where(exc)))
            return False
        if "internal error" in out + err:  # caught, but a bug all the same
            line = next(ln for ln in (out + err).splitlines() if "internal error" in ln)
            problems.append((f"{tag}: internal error", line.split("internal error", 1)[1][:200]))
        if code not in (0, 1, 2):
            problems.append((f"{tag}: exit {code}", (out + err)[-200:]))
        elif text_output and code == 2 and sum(1 for ln in (out + err).splitlines() if ln.startswith(str(path))) != 1:
            problems.append((f"{tag}: exit 2 without one line naming the file", (out + err)[-200:]))
        return True

    code, out, err, exc = _invoke(app, ["check", path] + target)
    contract("check", code, out, err, exc)
    jcode, jout, jerr, jexc = _invoke(app, ["check", path, "--format", "json"] + target)
    if contract("check --format json", jcode, jout, jerr, jexc, text_output=False):
        try:
            json.loads(jout)
        except ValueError:
            problems.append(("check --format json: invalid JSON", jout[:200]))
    if do_fix and exc is None:
        unsafe = rng.random() < 0.5
        flags = (["--unsafe-fixes"] if unsafe else []) + (["--no-comments"] if rng.random() < 0.25 else [])
        flags += target
        fcode, fout, ferr, fexc = _invoke(app, ["fix", "--write", path] + flags)
        stats["fix runs"] += 1
        refusal = next((ln for ln in ferr.splitlines() if "left untouched" in ln), None)
        if refusal:  # why, without the file name and the quoted details
            why = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", refusal.split(": ", 1)[-1].split(";")[0])
            stats[f"refused ({why})"] += 1
        if contract("fix --write", fcode, fout, ferr, fexc):
            after = path.read_bytes()
            if after != mutated:
                stats["changed the file"] += 1
            if len(_KEPT_NOTE.findall(after)) > len(_KEPT_NOTE.findall(mutated)):
                stats["kept the comments of a removed key (note line)"] += 1
            if code == 2 and after != mutated:
                problems.append(("fix --write: edited a file it could not check", ""))
            elif code != 2:
                acode, aout, aerr, aexc = _invoke(app, ["check", path] + target)
                if aexc is not None or acode not in (0, 1):
                    problems.append(("fix --write: left a file that no longer checks", (aout + aerr)[-200:]))
                elif after != mutated:
                    lost = lost_comments(mutated.decode("utf-8-sig", "replace"), after.decode("utf-8-sig", "replace"))
                    if lost:
                        problems.append(("fix --write: lost comments", repr(lost[:2])))
                    _invoke(app, ["fix", "--write", path] + flags)
                    if path.read_bytes() != after:
                        problems.append(("fix --write: not idempotent (a second run changed the file)", ""))
    where = f" [seed {seed_path.name}, {'+'.join(applied)}]"
    return [(kind, " ".join(detail.split()) + where) for kind, detail in problems], mutated


def worker(args) -> tuple[int, dict, dict, dict]:
    start, count, seed, fix_every, keep = args
    from overlap_cli.cli.app import app

    from overlap_cli.frameworks.bridge.recipes import names

    launches = corpus_seeds()
    sources = seeds() + sorted(launches)  # real Bridge dumps outnumber the small cases when present
    recipes = names("0.6.2")  # the catalog the fuzzed recipes come from
    rng = random.Random(seed * 1_000_003 + start)
    groups: dict = collections.defaultdict(int)
    examples: dict = {}
    stats: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="overlap-fuzz-") as tmp:
        folder = Path(tmp)
        for i in range(start, start + count):
            seed_path = sources[rng.randrange(len(sources))]
            # Fix on a full dump costs ~100x a check: on real dumps it runs on a quarter as many cases.
            every = fix_every * (4 if seed_path in launches else 1)
            do_fix = fix_every > 0 and i % every == 0
            # A third of the cases are override files merged onto a random catalog recipe.
            recipe = rng.choice(recipes) if rng.random() < 1 / 3 else None
            problems, mutated = one_case(app, seed_path, rng, folder, do_fix, stats, launches.get(seed_path), recipe)
            stats["cases on real Bridge dumps"] += seed_path in launches
            for kind, detail in problems:
                key = f"{kind}: {detail.split(' [seed')[0]}"
                groups[key] += 1
                if key not in examples:
                    examples[key] = detail
                    if keep:
                        Path(keep).mkdir(parents=True, exist_ok=True)
                        (Path(keep) / f"case_{i:06d}.yaml").write_bytes(mutated)  # as generated, before any fix
    return count, dict(groups), examples, dict(stats)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--fix-every", type=int, default=4, help="run fix --write on every Nth case (0: never)")
    ap.add_argument("--keep", help="folder to save the first case of each failure group")
    a = ap.parse_args()
    t0 = time.perf_counter()
    per = -(-a.cases // a.jobs)
    tasks = [(j * per, min(per, a.cases - j * per), a.seed, a.fix_every, a.keep) for j in range(a.jobs) if a.cases - j * per > 0]
    if a.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(len(tasks)) as pool:
            parts = pool.map(worker, tasks)
    else:
        parts = [worker(t) for t in tasks]
    total = sum(p[0] for p in parts)
    groups: collections.Counter = collections.Counter()
    examples: dict = {}
    stats: collections.Counter = collections.Counter({"fix runs": 0, "changed the file": 0})
    for _, g, ex, st in parts:
        groups.update(g)
        stats.update(st)
        for k, v in ex.items():
            examples.setdefault(k, v)
    elapsed = time.perf_counter() - t0
    print(f"fuzz: {total} cases (seed {a.seed}, fix --write on every {a.fix_every or 'no'} case) in {elapsed:.0f} s "
          f"({total / elapsed:.0f} cases/s, {a.jobs} job(s))")
    if stats["fix runs"]:
        print("fuzz: fix --write " + ", ".join(f"{k}: {v}" for k, v in stats.items() if not k.startswith("refused")))
        for k, v in sorted(stats.items()):
            if k.startswith("refused"):
                print(f"fuzz: fix --write {k}: {v} (file left untouched)")
    if not groups:
        print("fuzz: no problem found")
        return 0
    print(f"fuzz: {sum(groups.values())} problem(s) in {len(groups)} group(s):")
    for key, n in groups.most_common():
        print(f"  {n:6d}  {key}\n          e.g. {examples[key][-160:]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
