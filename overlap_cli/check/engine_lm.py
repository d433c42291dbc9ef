"""The pipeline for one Megatron-LM launch (a shell script or a functional-test YAML): load -> resolve ->
the Megatron-LM rules, filling the same FileResult as a Bridge config (engine.check dispatches here)."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.check.results import SEVERITY_RANK, FileResult, InputError

LAUNCH_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
_MODEL_ARGS = re.compile(r"^MODEL_ARGS\s*:", re.M)


def framework_of(path: Optional[str], text: Optional[str], target) -> str:
    """"megatron-lm" for a launch script or a YAML with a top-level MODEL_ARGS mapping (Megatron-LM's
    functional tests), else "bridge"; a framework forced on the target (``--framework``) wins."""
    forced = target.get("framework") if target is not None else None
    if forced in ("bridge", "megatron-lm"):
        return forced
    if path is None:
        return "bridge"
    low = path.lower()
    if low.endswith(LAUNCH_SUFFIXES):
        return "megatron-lm"
    if low.endswith((".yaml", ".yml")):
        if text is None:
            try:
                with open(path, "rb") as fh:
                    text = fh.read(1 << 20).decode("utf-8", "replace")
            except OSError:
                return "bridge"  # the Bridge loader reports the unreadable file
        if _MODEL_ARGS.search(text):
            return "megatron-lm"
    return "bridge"


def check_launch(result: FileResult, path: str, target, text, selection):
    """Fill ``result`` for a launch; return the resolved view, or None on an input error."""
    from overlap_cli.check.selection import filter_findings
    from overlap_cli.frameworks.megatron_lm.args import load_launch
    from overlap_cli.frameworks.megatron_lm.resolver import resolve
    from overlap_cli.rules import run_rules

    try:
        if text is None:
            from overlap_cli.config.safe_read import read_text

            text = read_text(path)
        target = target.for_file(path, text)
        result.target = target.to_json(None)
        launch = load_launch(path, text)
        view = resolve(launch, target)
    except InputError as exc:
        result.error = exc.problem
        return None
    result.target = view.target.to_json(view.dp)
    result.effective = dict(view.effective)
    try:
        findings = filter_findings(run_rules(view), path, text, selection)
    except InputError as exc:
        result.error = exc.problem
        return None
    result.findings = sorted(findings, key=lambda f: (f.line or 0, f.column or 0, -SEVERITY_RANK[f.severity], f.code))
    if view.world_source == "launch":
        where = f" (line {launch.world_size_line})" if launch.world_size_line else ""
        result.notes.append(f"world size {view.world_size} from the launch's torchrun sizes{where}")
    elif view.world_size is None:
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    if view.target.gpu_generation is None and view.max_conn_needs_one is None and view.tp and view.cp \
            and (view.tp > 1 or view.cp > 1):
        result.notes.append("GPU not given: whether CUDA_DEVICE_MAX_CONNECTIONS must be 1 depends on it (--gpu)")
    note = view.target.provenance_note()
    if note:
        result.notes.append(note)
    return view
