"""``CommOverlapConfig.finalize()`` + ``setup()`` (megatron/bridge/training/comm_overlap.py:376-643 in
megatron-bridge 0.6.2), mirrored on the resolver's view: the TP gate, the PP p2p choice, the DP
defaults, user values winning over every default, and what lands on model / ddp / optimizer."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any

from overlap_cli.frameworks.bridge import facts as bridge
from overlap_cli.results import BRIDGE_AUTO, DEFAULT, FORCED_OFF, UNKNOWN, USER, Value
from overlap_cli.frameworks.bridge.view import Overwrite, Resolved, user_wrote

def setup_comm_overlap(r: Resolved, co: dict, prov: dict) -> None:
    cfg, target = r.cfg, r.target
    from overlap_cli.frameworks.bridge import releases

    release = releases.of(target)
    model, ddp = r.final["model"], r.final["ddp"]
    known = release.COMM_OVERLAP_FIELDS
    if "tp_comm_overlap" not in co:
        r.comm_overlap_missing_required = True
    # finalize(): snapshot of the user's fields. ``None`` means "let Bridge decide" for every field.
    user = {k: v for k, v in co.items() if k in known and k != "data_parallel_size" and v is not None}
    if "tp_comm_bootstrap_backend" not in co:
        user["tp_comm_bootstrap_backend"] = release.TP_COMM_BOOTSTRAP_BACKEND  # the dataclass default is not None
    r.comm_overlap_user = {k: v for k, v in co.items() if k in known and v is not None and k != "_target_"}

    def in_file(key: str) -> str:
        return cfg.where(("comm_overlap", key))

    def layer(key: str):
        """The layer of comm_overlap.KEY in a merged run (Value.layer), else None."""
        if not cfg.layered:
            return None
        return cfg.label(("comm_overlap", key) if ("comm_overlap", key) in cfg.layers else ("model", key))

    # _get_model_comm_overlap_cfgs: defaults, the TP gate, the PP choice, then user values win.
    auto: dict = dict(release.MODEL_OVERLAP_DEFAULTS)
    reasons: dict = {
        "tp_comm_overlap": (BRIDGE_AUTO, "comm_overlap present without tp_comm_overlap: true; Bridge writes false"),
        "tp_comm_overlap_cfg": (BRIDGE_AUTO, "comm_overlap writes its tp_comm_overlap_cfg (none given)"),
        "defer_embedding_wgrad_compute": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
        "wgrad_deferral_limit": (BRIDGE_AUTO, "comm_overlap writes -1 unless set in comm_overlap"),
        "overlap_moe_expert_parallel_comm": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
        "delay_wgrad_compute": (BRIDGE_AUTO, "comm_overlap writes false unless set in comm_overlap"),
    }
    r.tp_requested = co.get("tp_comm_overlap") is True
    if r.tp_requested:
        if r.tp < 2:
            r.tp_gate = "tp"
        elif not model.get("sequence_parallel"):
            r.tp_gate = "sp"
        elif not target.transformer_engine:
            r.tp_gate = "te"
        if r.tp_gate:
            user["tp_comm_overlap"] = False
    if r.pp > 1:
        if r.vp > 1:
            auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = True, False
            why = f"PP={r.pp} > 1 and VPP={r.vp} > 1: Bridge picks overlapped p2p (interleaved schedule)"
        else:
            auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = False, True
            why = f"PP={r.pp} > 1 without VPP: Bridge picks batched p2p; p2p overlap needs VPP > 1"
    else:
        auto["overlap_p2p_comm"], auto["batch_p2p_comm"] = False, False
        why = "PP=1: no pipeline p2p communication"
    reasons["overlap_p2p_comm"] = reasons["batch_p2p_comm"] = (BRIDGE_AUTO, why)

    model_cfg = dict(auto)
    for k, v in user.items():
        model_cfg[k] = v
    for k in bridge.LANDS_ON_MODEL:
        new = model_cfg.get(k)
        key = f"model.{k}"
        if k in user:
            if k == "tp_comm_overlap" and r.tp_gate:
                src = (FORCED_OFF, _gate_reason(r))
            elif k == "tp_comm_bootstrap_backend" and "tp_comm_bootstrap_backend" not in co:
                src = (DEFAULT, f"CommOverlapConfig default {release.TP_COMM_BOOTSTRAP_BACKEND!r}")
            else:
                src = (USER, f"comm_overlap.{k} in {in_file(k)} wins over Bridge's default", layer(k))
        else:
            src = reasons.get(k, (BRIDGE_AUTO, "written by comm_overlap"))
        if user_wrote(cfg, "model", k) and model.get(k) != new and k != "tp_comm_overlap_cfg":
            r.co_overwrites.append(Overwrite("model", k, model.get(k), new, "comm_overlap"))
        model[k] = new
        if key in prov:
            prov[key] = Value(new, *src)

    # setup(): what reaches the model for the userbuffer config and bootstrap backend.
    if model["tp_comm_overlap"]:
        ub = model_cfg.get("tp_comm_overlap_cfg")
        if ub is None:
            prov["model.tp_comm_overlap_cfg"] = Value(
                None, BRIDGE_AUTO, "no userbuffers config given: Transformer Engine's built-in defaults"
            )
        elif isinstance(ub, dict):
            te = {k: _strip_target(v) for k, v in ub.items() if k != "_target_" and v is not None}
            model["tp_comm_overlap_cfg"] = te
            prov["model.tp_comm_overlap_cfg"] = Value(
                te, USER, "comm_overlap.tp_comm_overlap_cfg converted with asdict(), None entries dropped", layer("tp_comm_overlap_cfg")
            )
        else:
            prov["model.tp_comm_overlap_cfg"] = Value(
                ub, USER, "a plain value here makes Bridge's asdict() fail at launch (UB603)", layer("tp_comm_overlap_cfg")
            )
    else:
        ub = model_cfg.get("tp_comm_overlap_cfg")
        if ub is not None:
            prov["model.tp_comm_overlap_cfg"] = Value(
                ub, USER, "copied onto the model, but unused: TP overlap is off", layer("tp_comm_overlap_cfg")
            )

    # DP path: only with Megatron DDP + the distributed optimizer, as the flag stands at setup time.
    r.distopt_at_setup = bool(ddp.get("use_distributed_optimizer"))
    if not r.distopt_at_setup:
        return
    r.dp_path_ran = True
    dp_defaults: dict = dict(release.DP_OVERLAP_DEFAULTS)
    if r.dp is not None and r.dp > 1:
        dp_defaults.update(release.DP_OVERLAP_WHEN_DP)
        if r.pp > 1 and r.vp > 1:
            dp_defaults.update(release.DP_OVERLAP_WHEN_INTERLEAVED)
    r.dp_defaults = dict(dp_defaults)
    dp_cfg = {k: None for k in release.COMM_OVERLAP_FIELDS if k not in ("tp_comm_overlap", "data_parallel_size")}
    dp_cfg.update(dp_defaults)
    for k, v in user.items():
        dp_cfg[k] = v
    for section, fields_ in (("optimizer", bridge.LANDS_ON_OPTIMIZER), ("ddp", bridge.LANDS_ON_DDP)):
        target_sec = r.final[section]
        for k in fields_:
            new = dp_cfg.get(k)
            key = f"{section}.{k}"
            if k in user:
                src = (USER, f"comm_overlap.{k} in {in_file(k)} wins over Bridge's DP default", layer(k))
                unknown = False
            elif k in dp_defaults:
                src, unknown = _dp_reason(r, k, dp_defaults[k])
            else:
                src, unknown = (BRIDGE_AUTO, "written by comm_overlap's DP path (not set in comm_overlap: None)"), False
            if not unknown and user_wrote(cfg, section, k) and target_sec.get(k) != new:
                r.co_overwrites.append(Overwrite(section, k, target_sec.get(k), new, "comm_overlap"))
                if target_sec.get(k) is True and new is False and src[0] == BRIDGE_AUTO:
                    src = (FORCED_OFF, f"{section}.{k}: true in the file is overwritten: {src[1]}")
            target_sec[k] = None if unknown else new
            if key in prov:
                prov[key] = Value(None if unknown else new, *src)


def _strip_target(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_target(v) for k, v in value.items() if k != "_target_"}
    return value


def _gate_reason(r: Resolved) -> str:
    if r.tp_gate == "tp":
        return f"TP overlap requested, but TP={r.tp} < 2: Bridge disables it (one log line)"
    if r.tp_gate == "sp":
        return "TP overlap requested, but sequence_parallel is false: Bridge disables it (one log line)"
    return "TP overlap requested, but Transformer Engine is absent on the target: Bridge disables it"


def _release(r: Resolved):
    from overlap_cli.frameworks.bridge import releases

    return releases.of(r.target)


def _dp_reason(r: Resolved, key: str, value: Any) -> tuple[tuple[str, str], bool]:
    """Provenance of a DP default; ``unknown`` when the world size was not given."""
    if r.dp is None:
        if key == "overlap_param_gather_with_optimizer_step":
            return (BRIDGE_AUTO, "Bridge leaves it off (disabled upstream: checkpointing issue)"), False
        when = {
            "bucket_size": f"{_release(r).BUCKET_SIZE} parameters",
            "overlap_grad_reduce": "true",
            "overlap_param_gather": "true",
            "align_param_gather": "true" if (r.pp > 1 and r.vp > 1) else "false (needs PP > 1 and VPP > 1)",
        }[key]
        off = "null" if key == "bucket_size" else "false"
        why = r.dp_error or "world size not given (--world-size or --nodes/--gpus-per-node)"
        return (UNKNOWN, f"depends on data-parallel size ({why}): {when} when DP > 1, {off} when DP = 1"), True
    if r.dp > 1:
        if value in (None, False):
            if key == "align_param_gather":
                return (BRIDGE_AUTO, f"DP={r.dp} > 1 but align_param_gather needs PP > 1 and VPP > 1"), False
            return (BRIDGE_AUTO, "Bridge leaves it off (disabled upstream: checkpointing issue)"), False
        return (BRIDGE_AUTO, f"DP={r.dp} > 1 with the distributed optimizer: Bridge's DP default"), False
    return (BRIDGE_AUTO, "DP=1: Bridge's DP path forces DP overlap off"), False
