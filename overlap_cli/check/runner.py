"""Check many files: in this process, or spread over ``--jobs`` worker processes. Results come back in the
order of the input list whatever the number of workers, so every output format is deterministic.

Processes, not threads: checking is pure-Python CPU work and would serialise on the GIL.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Callable, Optional

# Below this many files per worker, starting processes costs more than it saves: the pool costs ~50 ms of
# CPU (multiprocessing's import, forks, result transfer), about 12 Bridge dumps' worth of checking
# (bench/jobs.py: 12 dumps take 0.14 s with one job, 0.16 s with two; 24 break even; 48: 0.28 s vs 0.24 s).
_MIN_FILES_PER_JOB = 16
# Tasks per worker: enough for an even share when files differ in size, and for results to stream back
# (progress) while workers go on; each task is one list of paths out and one list of results back.
_CHUNKS_PER_JOB = 8

# What every file of a run shares (target, overrides, selection): handed to each worker once, when it starts.
_shared: tuple = ()


def _start_worker(target, overrides, selection, lower=()) -> None:
    global _shared
    _shared = (target, overrides, selection, lower)


def _check_chunk(paths: list) -> tuple:
    """(the results, the files the worker read: an output must not replace one, cli.output)."""
    from overlap_cli.check.engine import check_file
    from overlap_cli.config.safe_read import files_read

    target, overrides, selection, lower = _shared
    text_of = module_texts(target)
    return [check_file(path, target, overrides, text=text_of(path), selection=selection, lower=lower)
            for path in paths], files_read()


def module_texts(target) -> Callable:
    """``text_of(spec)``: the text ``check_file`` is handed for ``spec`` -- the runs of one Python module
    (``FILE.py::FUNCTION``, listed together) share one reading of it, where each run read the file again --,
    None (the form reads the input itself) for anything else or a file that cannot be read (its run then
    reads it, and says why). Scoped to one pass over the files: a later pass (after ``fix --write``) reads
    again."""
    from overlap_cli.frameworks.detect import MEGATRON_LM, split_spec

    last: list = [None, None]

    def text_of(spec) -> Optional[str]:
        if not isinstance(spec, str) or "::" not in spec or target.get("framework") == MEGATRON_LM:
            return None
        file, function = split_spec(spec)
        if function is None:
            return None
        if last[0] != file:
            from overlap_cli.config.safe_read import read_text
            from overlap_cli.problems import InputError

            try:
                text = read_text(file)
            except InputError:
                text = None
            last[:] = [file, text]
        return last[1]

    return text_of


def effective_jobs(jobs: int, n_files: int) -> int:
    if jobs <= 0:
        jobs = os.cpu_count() or 1
    return max(1, min(jobs, n_files // _MIN_FILES_PER_JOB or 1))


def check_files(
    files: list, target, overrides=None, selection=None, jobs: int = 1, on_result: Optional[Callable] = None,
    lower: tuple = (),
) -> list:
    """FileResults for ``files`` in input order. ``on_result`` is called once per finished file (progress).

    Each file's resolved view (the parsed config: tens of KB of objects) is dropped as soon as the file is
    checked, so memory stays flat over thousands of files (1,000 Bridge dumps, measured: 452 MiB peak with
    the views kept, 76 MiB without); ``check_files_with_views`` keeps them."""
    from overlap_cli.check.engine import check_file

    overrides = overrides or []
    workers = effective_jobs(jobs, len(files))
    results = []
    text_of = module_texts(target)
    for path in files[:1] if workers > 1 else files:
        # With workers, the first file is checked here before they start: the modules it imports and
        # the settings it reads (cached per folder) are then inherited by every forked worker, not
        # loaded again in each.
        results.append(check_file(path, target, overrides, text=text_of(path), selection=selection, lower=lower))
        if on_result:
            on_result(results[-1])
    if workers == 1:
        return results

    import multiprocessing

    # fork keeps start-up cheap (no re-import of the package per worker) where the platform has it.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    rest = files[1:]
    size = -(-len(rest) // (workers * _CHUNKS_PER_JOB))
    chunks = [rest[i : i + size] for i in range(0, len(rest), size)]
    with ctx.Pool(workers, initializer=_start_worker, initargs=(target, overrides, selection, lower)) as pool:
        from overlap_cli.config.safe_read import note_read

        for chunk, read in pool.imap(_check_chunk, chunks):  # imap keeps the input order
            note_read(read)
            for result in chunk:
                results.append(result)
                if on_result:
                    on_result(result)
    return results


def check_files_with_views(files: list, target, overrides=None, selection=None, on_result=None, lower: tuple = ()) -> list:
    """A CheckedFile per file, in input order, each with its resolved view (for --annotate). In this
    process: a view does not travel between processes."""
    from overlap_cli.check.engine import check

    checked = []
    for path in files:
        checked.append(check(path, target, overrides or [], selection=selection, lower=lower))
        if on_result:
            on_result(checked[-1].result)
    return checked


def gather(args, configs_only: bool = False, target=None):
    """(files to check, skipped [(path, reason)], FileResults for arguments that are input errors)."""
    from overlap_cli.check.discovery import discover
    from overlap_cli.results import FileResult

    found = discover(args, configs_only=configs_only, target=target)
    problems = [FileResult(file=p.file, error=p) for p in found.problems]
    return found.files, found.skipped, problems


class progress_bar:
    """A transient rich progress bar on stderr, for long runs on a terminal; a no-op otherwise.

    Refreshed by hand (no refresh thread), so ``--jobs`` can fork worker processes safely."""

    SHOW_FROM = 8  # files; below this the run is over before a bar would help

    def __init__(self, total: int, enabled: bool, label: str = "checking"):
        self.total, self.enabled, self._progress = total, enabled and total >= self.SHOW_FROM, None
        self.label = label

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True, auto_refresh=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("check", total=self.total)
        return self

    def advance(self, _result=None) -> None:
        if self._progress is not None:
            import time

            self._done = getattr(self, "_done", 0) + 1
            self._progress.update(self._task, completed=self._done)
            now = time.monotonic()
            if now - getattr(self, "_drawn", 0.0) > 0.1 or self._done == self.total:  # ~10 redraws a second
                self._drawn = now
                self._progress.refresh()

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False
