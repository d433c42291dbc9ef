"""``overlap check REPO`` on whole upstream repositories: time, what became of every file, files read.

    python bench/whole_repo.py [--upstream DIR] [--tool-root DIR] [--repos A,B] [--per-file] [--json OUT]

For each repository under ``--upstream`` (default ``../shared/upstream``: Megatron-Bridge, Megatron-LM, NeMo-RL,
verl at the commits of its SOURCES.md) runs ``python -m overlap_cli check REPO --format json --exit-zero`` in a
fresh process with the overlap-cli at ``--tool-root`` on PYTHONPATH (default: this checkout; give an exported
older commit, ``git archive COMMIT | tar -x -C DIR``, to measure "before"), and prints:

- the wall time of the whole run (best of ``--repeat``; measure when ``uptime`` says the machine is quiet) and
  the CPU time of its process (user + system: what the run costs whatever else the machine does);
- files checked (each run of a Python file counted once per file), input errors (each listed), skipped by kind;
- the repository's ``.py`` files the run opened (a ``sys.addaudithook`` on ``open`` in the checking process);
- with ``--per-file``: each file named alone, in this process (discovery + check, as pre-commit runs it), the
  slowest ten and how many take over 300 ms.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT.parent / "shared" / "upstream"
REPOS = ("Megatron-Bridge", "Megatron-LM", "NeMo-RL", "verl")

# Run in the checking process: count the .py files of the repository it opens, then run the CLI.
_RUNNER = """
import os, sys
root = os.path.realpath(sys.argv[1]) + os.sep
opened = set()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith(".py"):
        p = os.path.realpath(args[0])
        if p.startswith(root):
            opened.add(p)
sys.addaudithook(hook)
sys.argv = ["overlap", "check", sys.argv[1], "--format", "json", "--exit-zero", "-o", sys.argv[2]]
from overlap_cli.cli.fast import main
try:
    main()
finally:
    sys.stderr.write("\\npy-files-read %d\\n" % len(opened))
"""


def run_repo(tool_root: Path, repo: Path, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tool_root))
    best, doc, read = None, None, None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        for _ in range(repeat):
            start, used = time.perf_counter(), _children_cpu()
            proc = subprocess.run([sys.executable, "-c", _RUNNER, str(repo), out], capture_output=True, text=True,
                                  env=env, cwd=str(repo))
            took = time.perf_counter() - start
            cpu = _children_cpu() - used
            if "Traceback" in proc.stderr:
                raise SystemExit(f"traceback on {repo}:\n{proc.stderr[-2000:]}")
            if best is None or took < best:
                best, best_cpu = took, cpu
            read = int(proc.stderr.rsplit("py-files-read ", 1)[1].split()[0])
            with open(out) as fh:
                doc = json.load(fh)
    return {"seconds": best, "cpu": best_cpu, "doc": doc, "py_read": read}


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (the check's own, whatever the load)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def skip_kind(reason: str) -> str:
    sys.path.insert(0, str(ROOT))
    from overlap_cli.check.discovery import skip_kind as kind

    return kind(reason)


def account(doc: dict) -> dict:
    checked, errors = set(), []
    for r in doc["results"]:
        if r.get("error"):
            errors.append((r["file"], r["error"]["message"]))
        else:
            checked.add(r["file"].split("::")[0])
    skipped = collections.Counter(skip_kind(s["reason"]) for s in doc.get("skipped", ()))
    return {"checked_files": len(checked), "runs": len(doc["results"]) - len(errors), "errors": errors,
            "skipped": dict(skipped.most_common()), "skipped_total": sum(skipped.values())}


def per_file(repo: Path) -> list:
    """(CPU seconds, path) of each file of a folder run named alone: discovery and check in this process. CPU
    time (time.process_time), so that the neighbours of a shared machine do not inflate it; on a quiet machine
    the wall time is the same."""
    sys.path.insert(0, str(ROOT))
    from overlap_cli.check.discovery import _walk, discover
    from overlap_cli.check.engine import check_file
    from overlap_cli.launch_profile.profile import Target

    target = Target()
    timings = []
    for path in _walk(str(repo)):
        start = time.process_time()
        found = discover([path])
        for spec in found.files:
            check_file(spec, target, [])
        timings.append((time.process_time() - start, os.path.relpath(path, repo)))
    return sorted(timings, reverse=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, default=UPSTREAM)
    ap.add_argument("--tool-root", type=Path, default=ROOT)
    ap.add_argument("--repos", default=",".join(REPOS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--per-file", action="store_true")
    ap.add_argument("--json", type=Path, help="write the numbers (and each error) to this file")
    args = ap.parse_args(argv)
    report = {}
    for name in args.repos.split(","):
        repo = args.upstream / name
        got = run_repo(args.tool_root, repo, args.repeat)
        acc = account(got["doc"])
        report[name] = {"seconds": round(got["seconds"], 2), "cpu_seconds": round(got["cpu"], 2),
                        "py_files_read": got["py_read"], **acc}
        print(f"## {name}: {got['seconds']:.2f} s ({got['cpu']:.2f} s CPU), {acc['checked_files']} files checked ({acc['runs']} runs), "
              f"{len(acc['errors'])} input errors, {acc['skipped_total']} skipped, {got['py_read']} .py files read")
        for kind, n in acc["skipped"].items():
            print(f"    {n:5d}  skipped: {kind}")
        for f, msg in acc["errors"]:
            print(f"    error: {os.path.relpath(f.split('::')[0], repo)}: {msg[:160]}")
        if args.per_file:
            timings = per_file(repo)
            report[name]["per_file_over_300ms"] = [(round(t, 3), p) for t, p in timings if t > 0.3]
            print(f"    per file: {sum(1 for t, _ in timings if t > 0.3)} over 300 ms; slowest:")
            for t, p in timings[:10]:
                print(f"      {t * 1000:7.0f} ms  {p}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
