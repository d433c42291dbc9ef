"""The pipeline for one NeMo-RL config whose policy trains with Megatron: load (the ``defaults:`` chain and
the launch's dotlist words) -> resolve -> the RL rules, filling the same FileResult as a Bridge config
(engine.check dispatches here)."""

from __future__ import annotations

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.results import finding_order


def nemo_rl_verdict(path, text, target):
    """recognise()'s verdict for this input, or None (not a NeMo-RL config, or a framework forced)."""
    if path is None or not path.lower().endswith((".yaml", ".yml")):
        return None
    if target is not None and target.get("framework") in ("bridge", "megatron-lm"):
        return None
    from overlap_cli.frameworks.nemo_rl.recognise import looks_like_nemo_rl, recognise, sniff

    head = text if text is not None else sniff(path)
    if head is None or not looks_like_nemo_rl(head):
        return None  # not NeMo-RL's shape (or unreadable: the Bridge reader reports what is wrong)
    if text is None:
        from overlap_cli.config.safe_read import read_text

        try:
            text = read_text(path)
        except InputError:
            return "run", None  # the NeMo-RL check reports what is wrong with the file
    return recognise(path, text)


def base_problem(target):
    """The problem of ``--base FILE`` naming a NeMo-RL config (its values are not a Bridge dump's: NeMo-RL
    builds the ConfigContainer itself), or None."""
    base = target.get("base") if target is not None else None
    if not base or nemo_rl_verdict(base, None, target) is None:
        return None
    return InputProblem(base, "is a NeMo-RL config, not a Megatron-Bridge dump: --base would read it as Bridge's "
                              f"ConfigContainer (class defaults where NeMo-RL sets its own); check it as a file: "
                              f"overlap check {base}", key="--base")


def check_nemo_rl(result, path, target, text, selection, overrides):
    """Fill ``result``; return the view (frameworks.nemo_rl.resolver.NemoRLView), or None on an input error."""
    from overlap_cli.check.selection import filter_findings
    from overlap_cli.frameworks.nemo_rl.loader import load
    from overlap_cli.frameworks.nemo_rl.recognise import verdict
    from overlap_cli.frameworks.nemo_rl.resolver import resolve
    from overlap_cli.rules import run_rules

    try:
        if text is None:
            from overlap_cli.config.safe_read import read_text

            text = read_text(path)
        target = target.for_file(path, text)
        if target.get("recipe") or target.get("base"):
            raise InputError(InputProblem(path, "a NeMo-RL config starts from its own `defaults:` chain; --recipe / "
                                                "--base name Megatron-Bridge runs"))
        cfg = load(path, text, tuple(overrides or ()))
        kind, reason = verdict(cfg)
        if kind == "skip":  # the dotlist words turned the Megatron backend off
            raise InputError(InputProblem(path, f"not checked: {reason}"))
        view = resolve(cfg, target)
        findings = filter_findings(run_rules(view), path, text, selection)
    except InputError as exc:
        result.error = exc.problem
        return None
    except RecursionError:
        result.error = InputProblem(path, "config nesting is too deep to check")
        return None
    result.target = target.to_json(view.dp)
    result.target["world_size"] = view.world_size
    result.target.setdefault("sources", {})["world_size"] = "cluster" if view.world_size is not None and \
        view.world_reason.startswith("cluster") else target.source("world_size")
    result.target["framework"] = "nemo-rl"
    result.effective = dict(view.effective)
    result.findings = sorted(findings, key=finding_order)
    if view.world_size is None:
        result.notes.append(f"world size not known: {view.world_reason}")
    result.notes.extend(view.notes)
    return view
