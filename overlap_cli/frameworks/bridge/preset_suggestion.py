"""Which userbuffers preset to use for a resolved config: ``overlap presets suggest`` and the preset list.

A preset only does something when TP overlap is effective: otherwise Bridge sets ``tp_comm_overlap_cfg``
to None with the switch (megatron/bridge/training/comm_overlap.py:434-435 in megatron-bridge 0.6.2), and
only ``setup`` with ``model_config.tp_comm_overlap`` on hands the preset to Transformer Engine (:619-631).
Then the presets are ranked by ``preset_fit`` and the verdict says whether one fits (``fit``), several
with different values fit what is known (``ambiguous``), or none does (``none``). The document is what
``presets suggest --format json`` prints; the text report is drawn from it.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import preset_fit

VERDICTS = ("fit", "ambiguous", "none", "tp-overlap-off")
GPU_NAMES = "h100|h200|b200|b300|gb200|gb300"


def suggestion(view) -> dict:
    """The ranking of the presets for one resolved config (its ``view``), with the verdict."""
    ub = view.ub
    shape = ub.shape
    tp = view.effective["model.tp_comm_overlap"]
    doc: dict = {
        "tp_overlap_effective": bool(ub.tp_effective),
        "tp_overlap_reason": tp.reason,
        "run": shape.to_json(),
        "not_compared": shape.unknown(),
        "current": view.effective["model.tp_comm_overlap_cfg"].value,
        "candidates": [],
        "fits": [],
    }
    if not ub.tp_effective:
        doc["verdict"] = "tp-overlap-off"
        return doc
    ranked = preset_fit.rank(shape)
    doc["candidates"] = [c.to_json() for c in ranked]
    doc["fits"] = [c.name for c in ranked if c.exact]
    if preset_fit.single_exact_fit(shape):
        doc["verdict"] = "fit"
    elif doc["fits"]:
        doc["verdict"] = "ambiguous"
    else:
        doc["verdict"] = "none"
    return doc


def is_fit(doc: dict) -> bool:
    """A preset fits every known field (one, or several: then the fields left to give decide)."""
    return doc["verdict"] in ("fit", "ambiguous")


def near_preset(doc: dict):
    """The best candidate of a suggestion without a fit when it differs only in info-level fields (TP and
    precision match: ``preset_fit.WARNING_FIELDS``) -- a start to benchmark, not a fit; else None."""
    if doc["verdict"] != "none" or not doc["candidates"]:
        return None
    best = doc["candidates"][0]
    if best["differences"] and all(d["severity"] == "info" for d in best["differences"]):
        return best
    return None


def preset_family(gpu: str) -> str:
    """The preset family (``PresetName.gpu``) tuned for a target GPU; "none" for A100, which has none.
    An unknown GPU: ValueError."""
    name = gpu.strip().lower()
    if name not in preset_fit.GPU_FAMILY and name != "a100":
        raise ValueError(f"unknown GPU {gpu!r}: expected {GPU_NAMES} (or a100, which has no presets)")
    return preset_fit.GPU_FAMILY.get(name, "none")
