"""``overlap tune``: search the overlap settings of one config for the shortest estimated step.

Candidates are dotlist overrides of the knobs Bridge and Megatron-Core read: the DP overlap flags and
bucket size, VPP (where the layers divide), p2p overlap, TP overlap with sequence parallelism and the
userbuffers presets that fit, MoE all-to-all overlap with delayed wgrad, CUDA_DEVICE_MAX_CONNECTIONS and the
LayerNorm SM margins; with ``reshard`` also TP/PP/CP and the micro-batch size. Each knob is written where
Bridge takes it from: ``comm_overlap.*`` when the file has that section (its values win over ``model``/``ddp``),
else ``model.*`` / ``ddp.*``; launch variables in ``env_vars``.

A candidate whose memory on the most-loaded rank (estimate/memory.py) is above the GPU's capacity and above
the run's own is dropped before ranking (counted in ``dropped_memory``). A change is proposed only when its
estimated gain is at least ``MIN_GAIN`` of the step and larger than its uncertainty (``uncertainty``);
the others are counted in ``weak`` with the best of them, so the CLI can say why nothing was proposed.

Ranking is two-stage: every combination is estimated on the Shape with the knobs applied (microseconds
each), then the best are re-checked through the whole pipeline with their overrides (load -> resolve ->
rules, ``check.engine.check``): a candidate with an error finding (the rules predict a crash) is dropped,
one whose effective settings equal the original's is dropped, and the survivor's estimate is taken from its
re-resolved view.
"""

from __future__ import annotations

import itertools

from overlap_cli.estimate.inputs import Unsupported, shape_from_view
from overlap_cli.estimate.model import estimate

# DDP bucket sizes tried, in parameters; Bridge's own default (its release data, between the second and the
# third) is tried too, see _buckets.
BUCKETS = (10_000_000, 40_000_000, 536_870_912)
CONNECTIONS = ("1", "8", "32")
MARGINS = (0, 16, 20)
# The effective settings that identify a candidate (two candidates with the same ones are the same run).
SIGNATURE = ("tp", "pp", "vp", "cp", "mbs", "sp", "tp_overlap", "ub_sms", "overlap_p2p", "ep_overlap", "delay_wgrad",
             "overlap_grad_reduce", "overlap_param_gather", "bucket_size", "cdmc", "ln_margin_fwd", "ln_margin_bwd")


MIN_GAIN = 0.01  # of the step: smaller gains are below what the calibration can tell apart
# Relative uncertainty of a predicted change of an exposed-communication part: the published A/B pairs'
# predicted changes are within a factor of 2 of the measured ones on most pairs (bench/results.md), i.e. up
# to about half the change either way.
U_COMM = 0.5


def uncertainty(base, est) -> float:
    """Uncertainty (s) of the gain ``base - est``: each part's change times its relative uncertainty, added in
    quadrature -- U_COMM for the exposed communication and bubble, the class interval's half-width for
    compute. A gain made of large movements that cancel is uncertain; one clean saving is not."""
    iv = base.interval
    u_compute = 0.5 * (iv["high_s"] - iv["low_s"]) / base.step_time if iv["low_s"] is not None else 0.25
    total = 0.0
    for part, value in est.parts.items():
        delta = value - base.parts[part]
        total += ((u_compute if part == "compute" else U_COMM) * delta) ** 2
    return total ** 0.5


def _over_memory(shape, limit) -> bool:
    if limit is None:
        return False
    from overlap_cli.estimate.memory import estimate_memory

    return estimate_memory(shape).floor > limit  # the total, or where the vocabulary is unknown what certainly is held


class Candidate:
    def __init__(self, knobs: dict, overrides: list, edits: list, est=None):
        self.knobs, self.overrides, self.edits, self.est = knobs, overrides, edits, est

    def signature(self) -> tuple:
        return tuple(getattr(self.est.shape, k) for k in SIGNATURE)


def _divisors(n: int, limit: int) -> list:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _buckets(view) -> list:
    """BUCKETS with the default bucket of the Bridge release the view was resolved against, in size order."""
    from overlap_cli.frameworks.bridge import releases

    return sorted({*BUCKETS, releases.of(getattr(view, "target", None)).BUCKET_SIZE})


def knob_space(view, shape, reshard: bool) -> dict:
    """knob -> the values to try (the first is the config's own)."""
    s = shape
    space: dict = {}
    if s.dp * s.cp > 1 and not s.fsdp:
        space["overlap_grad_reduce"] = [s.overlap_grad_reduce, not s.overlap_grad_reduce]
        space["bucket_size"] = [s.bucket_size] + [b for b in _buckets(view) if b != s.bucket_size]
        if s.distopt:
            space["overlap_param_gather"] = [s.overlap_param_gather, not s.overlap_param_gather]
    if s.tp > 1:
        space["tp_comm_overlap"] = [s.tp_overlap and s.sp, not (s.tp_overlap and s.sp)]
        preset = _fitting_preset(view)
        if preset is not None:
            space["ub_preset"] = [None, preset]
    if s.ep > 1 and s.kinds["moe"]:
        space["ep_overlap"] = [(s.ep_overlap, s.delay_wgrad)] + [v for v in ((True, True), (True, False), (False, False)) if v != (s.ep_overlap, s.delay_wgrad)]
    space["cdmc"] = [s.cdmc] + [c for c in CONNECTIONS if c != s.cdmc]
    space["ln_margin"] = [s.ln_margin_fwd] + [m for m in MARGINS if m != s.ln_margin_fwd]
    if reshard:
        world = s.world
        space["layout"] = [(s.tp, s.pp, s.cp)] + [
            (tp, pp, cp) for tp in _divisors(world, 8) for pp in _divisors(world // tp, 16) for cp in _divisors(world // (tp * pp), 4)
            if (tp, pp, cp) != (s.tp, s.pp, s.cp) and s.layers % pp == 0 and s.heads % tp == 0
            and (s.gbs % (s.mbs * world // (tp * pp * cp)) == 0)]
        space["mbs"] = [s.mbs] + [b for b in (1, 2, 4) if b != s.mbs]
    space["vp"] = [s.vp]  # VPP values depend on PP: expanded per layout below
    return space


def _fitting_preset(view):
    """The one shipped userbuffers preset tuned for this run (frameworks/bridge/preset_fit.py), when the config
    does not already use it; else None."""
    ub = getattr(view, "ub", None)
    if ub is None:
        return None
    from overlap_cli.frameworks.bridge.preset_fit import single_exact_fit

    name = single_exact_fit(ub.shape)
    return None if name is None or name == ub.preset else name


def _preset_sms(name: str) -> int:
    from overlap_cli.estimate.inputs import ub_sms
    from overlap_cli.frameworks.bridge.presets import serialized_form

    return ub_sms(serialized_form(name))


def _vpp_values(shape, pp: int, microbatches: int) -> list:
    """The config's own VPP (kept when PP is), then those the layer count divides into (Megatron-Core
    needs layers % (PP * VPP) == 0 and, interleaved, micro-batches % PP == 0)."""
    if pp == 1:
        return [1]
    own = [shape.vp] if pp == shape.pp else []
    return own + [v for v in (1, 2, 3, 4, 5, 6, 8, 10, 12) if v not in own and shape.layers % (pp * v) == 0
                  and (v == 1 or microbatches % pp == 0)]


def apply_knobs(shape, knobs: dict):
    """The Shape as the knobs would make it (the fast estimate; the re-check decides what Bridge really does)."""
    ch = {}
    for k, v in knobs.items():
        if k == "tp_comm_overlap":
            ch.update(tp_overlap=v, sp=True if v else shape.sp)
        elif k == "ep_overlap":
            ch.update(ep_overlap=v[0], delay_wgrad=v[1])
        elif k == "ln_margin":
            ch.update(ln_margin_fwd=v, ln_margin_bwd=v)
        elif k == "layout":
            tp, pp, cp = v
            dp = shape.world // (tp * pp * cp)
            ch.update(tp=tp, pp=pp, cp=cp, dp=dp)
        elif k == "mbs":
            ch["mbs"] = v
        elif k == "ub_preset":
            if v is not None:
                ch["ub_sms"] = _preset_sms(v)
        else:
            ch[k] = v
    new = shape.replace(**ch)
    if new.dp * new.mbs and new.gbs % (new.mbs * new.dp) == 0:
        new.microbatches = new.gbs // (new.mbs * new.dp)
    if new.pp == 1:
        new.vp, new.overlap_p2p = 1, False
    else:
        new.overlap_p2p = new.vp > 1
    return new


def overrides_for(view, base, knobs: dict) -> list:
    """(dotlist overrides, edits as (key, value)) that make the config take these knob values."""
    co = view.comm_overlap_present
    pairs = []

    def put(field: str, section: str, value, in_co: bool = True):
        pairs.append((f"comm_overlap.{field}" if co and in_co else f"{section}.{field}", value))

    for k, v in knobs.items():
        if k == "overlap_grad_reduce" and v != base.overlap_grad_reduce:
            put("overlap_grad_reduce", "ddp", v)
        elif k == "overlap_param_gather" and v != base.overlap_param_gather:
            put("overlap_param_gather", "ddp", v)
        elif k == "bucket_size" and v != base.bucket_size:
            put("bucket_size", "ddp", v)
        elif k == "tp_comm_overlap" and v != (base.tp_overlap and base.sp):
            put("tp_comm_overlap", "model", v)
            if v and not base.sp:
                pairs.append(("model.sequence_parallel", True))
        elif k == "ep_overlap" and v != (base.ep_overlap, base.delay_wgrad):
            if v[0] != base.ep_overlap:
                put("overlap_moe_expert_parallel_comm", "model", v[0])
            if v[1] != base.delay_wgrad:
                put("delay_wgrad_compute", "model", v[1])
        elif k == "cdmc" and v != base.cdmc:
            pairs.append(("env_vars.CUDA_DEVICE_MAX_CONNECTIONS", int(v)))
        elif k == "ln_margin" and v != base.ln_margin_fwd:
            pairs.append(("env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN", v))
            pairs.append(("env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN", v))
        elif k == "layout" and v != (base.tp, base.pp, base.cp):
            tp, pp, cp = v
            pairs += [("model.tensor_model_parallel_size", tp), ("model.pipeline_model_parallel_size", pp),
                      ("model.context_parallel_size", cp)]
        elif k == "mbs" and v != base.mbs:
            pairs.append(("train.micro_batch_size", v))
        elif k == "ub_preset" and v is not None:
            from overlap_cli.frameworks.bridge.presets import serialized_form

            put("tp_comm_overlap_cfg", "model", serialized_form(v))
        elif k == "vp" and v != base.vp:
            pairs.append(("model.virtual_pipeline_model_parallel_size", v if v > 1 else None))
    return [(view.cfg.file_key(k), v) for k, v in pairs]  # GPTModelConfig form: model.transformer.X


def _dotlist(pairs: list) -> list:
    def text(v):
        if isinstance(v, dict):
            import json

            return json.dumps(v, separators=(",", ":"))  # a YAML flow mapping
        return "null" if v is None else ("true" if v is True else "false" if v is False else str(v))

    return [("++" if key.startswith("env_vars.") else "") + f"{key}={text(v)}" for key, v in pairs]


def search(path, checked, target, overrides: list, reshard: bool = False, top: int = 5, verify_limit: int = 60,
           lower: tuple = ()) -> dict:
    """{"base": Estimate, "candidates": [Candidate ...] best first, "evaluated": n, "checked": n, "rejected": [...],
    "dropped_memory": n, "weak": [Candidate ...] (faster, but by less than MIN_GAIN or their uncertainty), "memory_limit"}"""
    from overlap_cli.check.engine import check

    view = checked.view
    base_shape = shape_from_view(view)
    base = estimate(base_shape)
    space = knob_space(view, base_shape, reshard)
    structural = [k for k in ("layout", "mbs") if k in space]
    overlap_names = [k for k in space if k not in structural and k != "vp"]
    scored = []
    cap = base.memory.capacity
    limit = None if cap is None else max(cap, base.memory.floor)  # a run over its GPU as written keeps its own budget
    dropped = [0]

    def score(knobs: dict) -> None:
        shape0 = apply_knobs(base_shape, knobs)
        for vp in _vpp_values(base_shape, shape0.pp, shape0.microbatches):
            k2 = dict(knobs, vp=vp)
            try:
                cand_shape = apply_knobs(base_shape, k2)
                t = estimate(cand_shape).step_time
            except (ZeroDivisionError, KeyError, ValueError):
                continue
            if _over_memory(cand_shape, limit):
                dropped[0] += 1
                continue
            changes = sum(1 for k, v in k2.items() if v != space.get(k, [v])[0]) + (vp != base_shape.vp)
            scored.append((t, changes, k2))

    own_structure = {k: space[k][0] for k in structural}
    for combo in itertools.product(*(space[k] for k in overlap_names)):
        score(dict(zip(overlap_names, combo), **own_structure))
    if structural:
        # Resharding: every layout and micro-batch size with the config's own overlap settings and with the
        # best few overlap settings found above (the overlap knobs act nearly independently of the layout).
        ranked = sorted(scored, key=lambda x: x[0])
        best_sets = [{k: space[k][0] for k in overlap_names}]
        for _, _, k2 in ranked:
            cand = {k: k2[k] for k in overlap_names}
            if cand not in best_sets:
                best_sets.append(cand)
            if len(best_sets) >= 4:
                break
        for combo in itertools.product(*(space[k] for k in structural)):
            structure = dict(zip(structural, combo))
            if structure == own_structure:
                continue
            for overlap in best_sets:
                score(dict(overlap, **structure))
    # Shortest first; among (nearly) equal times the fewest changed knobs first, so a knob the model
    # gives no effect is not proposed.
    scored.sort(key=lambda x: (round(x[0] / base.step_time, 3), x[1], x[0]))  # within 0.1 %: fewer edits first
    def prune(knobs: dict) -> dict:
        """The knobs with every change dropped that is worth less than MIN_GAIN of the step on its own (reverted
        to the config's value one at a time, by the fast estimate), so a proposal carries no passenger."""
        k2 = dict(knobs)
        try:
            t = estimate(apply_knobs(base_shape, k2)).step_time
        except (ZeroDivisionError, KeyError, ValueError):
            return k2
        for key in [k for k in k2 if k in space and k2[k] != space[k][0]] + (["vp"] if k2.get("vp") != base_shape.vp else []):
            own = base_shape.vp if key == "vp" else space[key][0]
            trials = [own]
            if key == "ep_overlap" and k2[key][1] != own[1]:
                trials.insert(0, (k2[key][0], own[1]))  # keep the overlap, drop the delayed wgrad
            for value in trials:
                trial = dict(k2, **{key: value})
                try:
                    t2 = estimate(apply_knobs(base_shape, trial)).step_time
                except (ZeroDivisionError, KeyError, ValueError):
                    continue
                if key != "vp" and value != own and trial.get("vp") not in _vpp_values(base_shape, apply_knobs(base_shape, trial).pp, apply_knobs(base_shape, trial).microbatches):
                    continue
                if t2 - t < MIN_GAIN * base.step_time:
                    k2, t = trial, min(t, t2)
                    break
        return k2

    seen = {None}
    base_sig = tuple(getattr(base_shape, k) for k in SIGNATURE)
    seen.add(base_sig)
    out, rejected, n_checked, weak = [], [], 0, []
    accepted_times, accepted_fast = [], []
    pruned_seen = []
    for i, (t, _, knobs) in enumerate(scored):
        if len(out) >= top or n_checked >= verify_limit or i >= 4 * verify_limit:
            break
        knobs = prune(knobs)
        if knobs in pruned_seen:
            continue
        pruned_seen.append(knobs)
        pairs = overrides_for(view, base_shape, knobs)
        if not pairs or any(abs(t - a) < 1e-3 * base.step_time for a in accepted_fast):
            continue  # nothing to change, or (by the fast estimate) the same gain as a candidate already taken
        from overlap_cli.config.overrides import parse_override

        n_checked += 1
        # the words are this module's own (_dotlist): one that does not parse is a bug here, not the user's input
        again = check(path, target, list(overrides) + [parse_override(o) for o in _dotlist(pairs)], lower=lower)
        if again.result.error is not None or again.view is None:
            rejected.append((pairs, again.result.error.one_line() if again.result.error else "no view"))
            continue
        errors = [f for f in again.result.findings if f.severity == "error"]
        if errors:
            rejected.append((pairs, f"{errors[0].code}: {errors[0].message}"))
            continue
        try:
            est = estimate(shape_from_view(again.view))
        except Unsupported as exc:
            rejected.append((pairs, str(exc)))
            continue
        cand = Candidate(knobs, _dotlist(pairs), pairs, est)
        sig = cand.signature()
        if sig in seen or est.step_time >= base.step_time or any(abs(est.step_time - a) < 1e-3 * base.step_time for a in accepted_times):
            continue
        if _over_memory(est.shape, limit):
            dropped[0] += 1
            continue
        seen.add(sig)
        cand.uncertainty_s = uncertainty(base, est)
        gain = base.step_time - est.step_time
        if gain < MIN_GAIN * base.step_time or gain <= cand.uncertainty_s:
            weak.append(cand)
            continue
        accepted_times.append(est.step_time)
        accepted_fast.append(t)
        out.append(cand)
    out.sort(key=lambda c: c.est.step_time)
    weak.sort(key=lambda c: c.est.step_time)
    best_fast = None  # the fastest combination before pruning, for the line that says why nothing is proposed
    if scored and scored[0][0] < base.step_time:
        best_fast = (min(x[0] for x in scored), _dotlist(overrides_for(view, base_shape, min(scored, key=lambda x: x[0])[2])))
    return {"base": base, "candidates": out, "evaluated": len(scored), "checked": n_checked, "rejected": rejected,
            "dropped_memory": dropped[0], "weak": weak, "memory_limit": limit, "best_fast": best_fast}
