"""``overlap tune CONFIG``: the overlap settings that shorten the estimated step, each as the edit that makes
it, never one the rules predict would crash. Options: ``cli.options.TUNE``. ``--write`` applies the best
(unsafe by definition: it changes how the run trains). Exit 0, or 2 on bad input."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.cli.check import (
    EXIT_CLEAN, EXIT_INPUT, UsageError, layered_inputs, parse_overrides, split_args, target_from_options,
)


def tune_command(opts) -> int:
    """Search the overlap knobs (DP overlap and bucket size, VPP, p2p, TP overlap, userbuffers, EP overlap,
    CUDA_DEVICE_MAX_CONNECTIONS, LayerNorm SM margins) for the shortest estimated step; print the best few
    with their gain and the edits, or apply the best with --write."""
    from overlap_cli.check.engine import check
    from overlap_cli.estimate.inputs import Unsupported
    from overlap_cli.estimate.tune import search

    files, raw = split_args(opts.args or [], script=True)
    stack = layered_inputs(opts, files)  # --recipe/--base: the files are one merged run, the last on top
    if stack is not None:
        path, lower = stack
    elif len(files) == 1:
        path, lower = files[0], ()
    else:
        raise UsageError("overlap tune takes exactly one config file" if files else "no config file given")
    overrides = parse_overrides(raw)
    if opts.write and overrides:
        raise UsageError("--write edits the file: give the settings in it, not as overrides")
    if opts.write and path is None:
        raise UsageError("--write edits the top override file: give one after --recipe/--base")
    target = target_from_options(opts, path)
    checked = check(path, target, overrides, lower=lower)
    if checked.result.error is not None:
        sys.stderr.write(checked.result.error.one_line() + "\n")
        return EXIT_INPUT
    name = checked.result.file
    framework = checked.form.FRAMEWORK
    if framework != "bridge":
        # The candidates are Bridge dotlist overrides (comm_overlap.*, model.*, ddp.*, env_vars.*); a launch
        # script's flags are not searched yet.
        sys.stderr.write(f"{name}: overlap tune searches Megatron-Bridge configs; this is a {framework} launch "
                         "(overlap estimate reads it)\n")
        return EXIT_INPUT
    try:
        found = search(path, checked, target, overrides, reshard=opts.allow_reshard, top=opts.top, lower=lower)
    except Unsupported as exc:
        sys.stderr.write(f"{name}: cannot estimate: {exc}\n")
        return EXIT_INPUT
    base, cands = found["base"], found["candidates"]
    if opts.format == "json":
        import json

        from overlap_cli.results import json_document

        doc = json_document(file=name, base=base.to_json(), evaluated=found["evaluated"], checked=found["checked"],
                            dropped_memory=found["dropped_memory"], memory_limit_bytes=found["memory_limit"],
                            candidates=[_cand_json(c, base) for c in cands],
                            not_worth_it=[_cand_json(c, base) for c in found["weak"][:3]],
                            nothing_worth_changing=None if cands else _nothing_line(found, base), written=None)
    if opts.write and cands:
        not_written = _write(path, checked, cands[0])
        if not_written is not None:
            sys.stderr.write(f"{name}: candidate 1 not written: {not_written}\n")
            return EXIT_INPUT
    if opts.format == "json":
        if opts.write and cands:
            doc["written"] = 0
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return EXIT_CLEAN
    from overlap_cli.estimate.memory import gib

    limit = found["memory_limit"]
    dropped = (f", {found['dropped_memory']} dropped above {gib(limit)} of memory per GPU" if limit is not None else
               ", memory not checked (GPU capacity unknown)")
    out = [f"{name}: estimated step {base.step_time:.3f} s as written; {found['evaluated']} candidates estimated{dropped}, "
           f"{found['checked']} re-checked against the rules\n"]
    warning = base.memory.warning(base.shape.gpu)
    if warning:
        out.append(f"warning: {warning}\n")
    note = base.memory.note(base.shape.gpu)  # over the GPU only at a world size or GPU nobody stated
    if note:
        out.append(f"note: {note}\n")
    if not cands:
        out.append(_nothing_line(found, base) + "\n")
    for i, c in enumerate(cands, 1):
        gain = base.step_time - c.est.step_time
        out.append(f"{i}. {c.est.step_time:.3f} s  (-{gain:.3f} s +- {c.uncertainty_s:.3f} s, {100 * gain / base.step_time:.1f} % faster)\n")
        for key, value in c.edits:
            if isinstance(value, dict) and c.knobs.get("ub_preset"):
                value = f"the userbuffers preset {c.knobs['ub_preset']} (overlap presets show {c.knobs['ub_preset']})"
            out.append(f"     set {key} = {_show(value)}\n")
        out.append(f"     as overrides: {' '.join(c.overrides)}\n")
    if opts.write and cands:
        out.append(f"wrote candidate 1 to {path}\n")
    sys.stdout.write("".join(out))
    return EXIT_CLEAN


def _nothing_line(found: dict, base) -> str:
    """One line saying that nothing in reach is worth changing, and why."""
    from overlap_cli.estimate.tune import MIN_GAIN

    weak = found["weak"]
    if not weak and found.get("best_fast"):
        t, overrides = found["best_fast"]
        gain = base.step_time - t
        return (f"nothing in reach is worth changing: no change gains {100 * MIN_GAIN:.0f} % of the step on its own "
                f"(the fastest combination, {' '.join(overrides) or 'none'}, gains {gain:.3f} s, {100 * gain / base.step_time:.1f} %)")
    if not weak:
        return "nothing in reach is worth changing: no candidate is estimated faster without a rule predicting a crash"
    best = weak[0]
    gain = base.step_time - best.est.step_time
    why = (f"below {100 * MIN_GAIN:.0f} % of the step" if gain < MIN_GAIN * base.step_time
           else f"within its uncertainty of {best.uncertainty_s:.3f} s")
    return (f"nothing in reach is worth changing: the best candidate ({' '.join(best.overrides)}) gains {gain:.3f} s "
            f"({100 * gain / base.step_time:.1f} % of the step), {why}")


def _show(value) -> str:
    from overlap_cli.results import show_value

    return show_value(value)


def _cand_json(c, base) -> dict:
    return {"step_time_s": c.est.step_time, "gain_s": base.step_time - c.est.step_time, "uncertainty_s": c.uncertainty_s,
            "edits": [{"op": "set", "key": k, "value": v} for k, v in c.edits], "overrides": c.overrides,
            "estimate": c.est.to_json()}


def _write(path: str, checked, cand) -> Optional[str]:
    """Write the candidate's edits into the file as ``overlap fix`` writes (placed by the file's form,
    proven, atomically, the file's byte-order mark kept); None, or why nothing was written."""
    from overlap_cli.config.safe_read import read_head
    from overlap_cli.fix.loop import apply_edits
    from overlap_cli.fix.write import atomic_write
    from overlap_cli.forms import file_of
    from overlap_cli.results import Edit

    edits = [Edit("set", k, v, comment="overlap tune") for k, v in cand.edits]
    new, why = apply_edits(checked, edits, "overlap tune: the estimated fastest candidate")
    if new is None:
        return why
    file = file_of(path)
    bom = read_head(file, 3) == b"\xef\xbb\xbf"
    atomic_write(file, ("\ufeff" if bom else "") + new)
    return None
