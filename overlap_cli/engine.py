"""The pipeline for one file: load -> resolve -> rules. Returns a FileResult; never raises on bad input."""

from __future__ import annotations

from typing import Optional

from .model import SEVERITY_RANK, FileResult, InputError, InputProblem
from .target import Target


def check_file(path: str, target: Target, overrides: Optional[list] = None, text: Optional[str] = None) -> FileResult:
    from .loader import load_config
    from .resolver import resolve
    from .rules import run_rules

    result = FileResult(file=path, target=target.to_json(None))
    try:
        cfg = load_config(path, overrides, text=text)
        view = resolve(cfg, target)
    except InputError as exc:
        result.error = exc.problem
        return result
    except RecursionError:
        result.error = InputProblem(path, "config nesting is too deep to check")
        return result
    result.target = target.to_json(view.dp)
    result.effective = view.effective
    result.findings = sorted(
        run_rules(view),
        key=lambda f: (f.line or 0, f.column or 0, -SEVERITY_RANK[f.severity], f.code),
    )
    if cfg.uses_env_resolver:
        result.notes.append(
            "${oc.env:...} was resolved with this machine's environment; the launch machine's value may differ"
        )
    if target.world_size is None:
        result.notes.append("world size not given: data-parallel-dependent values are reported as unknown")
    if target.source("transformer_engine") == "default":
        result.notes.append("Transformer Engine assumed present on the target (use --no-te to model its absence)")
    result._view = view  # type: ignore[attr-defined]  # kept for annotate/fix in the same process
    return result
