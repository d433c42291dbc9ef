"""What Transformer Engine's ``initialize_ub`` does with the dict Bridge hands it -- facts for the UB rules.

The dict itself is ``presets.te_dict`` (Bridge's per-GEMM dataclasses instantiated, ``asdict()``, ``None``
entries dropped). Source read, never imported:
- Transformer Engine ``transformer_engine/pytorch/module/base.py``, ``initialize_ub`` (2.8+; the same
  checks since 1.x, base.py:336-536 at TE d0067d0): per-GEMM defaults (``get_default_config``), then the user's keys
  are ``update``d over them and passed to ``add_ub(**cfg)``.

Pure functions over plain mappings; nothing here touches the view.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.frameworks.bridge import presets
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

# TE's default placement of Bridge's ten GEMMs (get_default_config). The all-gather GEMMs take an
# all-gather overlap; the others a reduce-scatter one.
TE_DEFAULT_METHOD = {
    "qkv_fprop": "ring_exchange", "fc1_fprop": "ring_exchange", "proj_dgrad": "ring_exchange",
    "fc2_dgrad": "ring_exchange", "proj_fprop": "pipeline", "fc2_fprop": "pipeline",
    "qkv_dgrad": "bulk", "qkv_wgrad": "bulk", "fc1_dgrad": "bulk", "fc1_wgrad": "bulk",
}  # fmt: skip
ALL_GATHER_ONLY = ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad")  # never turned into reduce-scatter
DGRAD_TO_WGRAD = {"qkv_dgrad": "qkv_wgrad", "fc1_dgrad": "fc1_wgrad"}
AG_RS_PAIRS = (("qkv_fprop", "proj_fprop"), ("fc1_fprop", "fc2_fprop"))
METHODS = ("ring_exchange", "pipeline", "bulk")
# TE's own names without a Bridge field: the external wgrad overlaps.
TE_ONLY_GEMMS = ("proj_wgrad", "fc2_wgrad")
# Keyword arguments add_ub accepts; a plain-dict entry with any other key makes it raise TypeError.
TE_ENTRY_KEYS = frozenset({
    "method", "is_reduce_scatter", "num_sm", "cga_size", "set_sm_margin", "num_splits", "aggregate",
    "atomic_gemm", "use_ce", "fp8_buf", "comm_priority", "gemm_priority", "pipeline_rs_overlap_first_gemm",
})  # fmt: skip


@dataclass(frozen=True)
class Problem:
    code: str  # the UB rule that reports it
    severity: str
    gemm: Optional[str]  # None: the mapping as a whole
    message: str
    field: Optional[str] = None  # the per-GEMM key the problem is about


def _method(gemm: str, entry: Any) -> Any:
    return entry.get("method", TE_DEFAULT_METHOD[gemm]) if isinstance(entry, dict) else None


def structure_problems(mapping: dict, *, te_reads: bool = True) -> list[Problem]:
    """UB603 (Bridge cannot build it / TE fails on it) and UB609 (keys nobody reads).

    Instantiation problems (a ``_target_`` entry missing required fields or naming an unknown class)
    fail when the config is loaded, always. Problems only Transformer Engine trips over (an entry that
    is not a mapping, a field ``add_ub`` does not take) count only when ``te_reads`` (TP overlap is on).
    """
    out: list[Problem] = []
    for key in mapping:
        if key == "_target_" or key in presets.GEMM_NAMES:
            continue
        if key in TE_ONLY_GEMMS:
            why = "Transformer Engine's external wgrad overlaps are not configurable through Bridge"
        else:
            import difflib

            close = difflib.get_close_matches(str(key), presets.GEMM_NAMES, n=1)
            why = f"did you mean {close[0]}?" if close else f"the GEMMs are {', '.join(presets.GEMM_NAMES)}"
        out.append(
            Problem(
                "UB609", "warning", None,
                f"unknown GEMM name {key!r}: TransformerLayerTPOverlapCfg has no such field and Bridge's "
                f"loader drops it with a log warning ({why})",
                str(key),
            )
        )  # fmt: skip
    for gemm in presets.GEMM_NAMES:
        entry = mapping.get(gemm)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            if not te_reads:
                continue
            out.append(
                Problem(
                    "UB603", "error", gemm,
                    f"{gemm} must be a mapping (BulkOverlapCfg, RingExchangeOverlapCfg or PipelineOverlapCfg) "
                    f"or null, not {type(entry).__name__} {entry!r}: Transformer Engine fails on it at start-up",
                )
            )  # fmt: skip
            continue
        target = entry.get("_target_")
        cls = presets.class_for_target(target)
        if target is not None and cls is None:
            out.append(
                Problem("UB603", "error", gemm, f"{gemm}: _target_ {target!r} is not one of Bridge's overlap classes "
                        f"({', '.join(presets.OVERLAP_CLASSES)}); Bridge cannot build it", "_target_")
            )  # fmt: skip
            continue
        if cls is not None:
            spec = presets.OVERLAP_CLASSES[cls]
            missing = [k for k, d in spec.items() if d is presets.REQUIRED and k not in entry]
            if missing:
                out.append(
                    Problem("UB603", "error", gemm, f"{gemm}: {cls} needs {', '.join(missing)} (no default): "
                            "instantiating it fails when the config is loaded")
                )  # fmt: skip
            extra = sorted((k for k in entry if k != "_target_" and k not in spec), key=str)
            for k in extra:
                out.append(
                    Problem("UB609", "warning", gemm, f"{gemm}.{k}: {cls} has no field {k!r}; Bridge's loader drops "
                            "it with a log warning, so it never reaches Transformer Engine", k)
                )  # fmt: skip
        elif te_reads:
            for k in sorted((k for k in entry if k not in TE_ENTRY_KEYS), key=str):
                out.append(
                    Problem("UB609", "error", gemm, f"{gemm}.{k}: Transformer Engine's add_ub() takes no {k!r} "
                            "(the entry has no _target_, so the mapping reaches it unchanged): TypeError at start-up", k)
                )  # fmt: skip
    return out


def wgrad_problems(te: dict) -> list[Problem]:
    """UB602: a wgrad entry beside a dgrad that is not bulk -- TE asserts it is absent."""
    out = []
    for dgrad, wgrad in DGRAD_TO_WGRAD.items():
        entry = te.get(dgrad)
        if isinstance(entry, dict) and "method" in entry and entry["method"] != "bulk" and te.get(wgrad) is not None:
            out.append(
                Problem(
                    "UB602", "error", wgrad,
                    f"{wgrad} is set while {dgrad} uses method {entry['method']!r}: Transformer Engine turns a "
                    f"non-bulk {dgrad} into a reduce-scatter overlap and asserts that {wgrad} is absent "
                    f"(AssertionError in initialize_ub); set {wgrad}: null, as the LoRA presets do",
                )
            )  # fmt: skip
    return out


def method_problems(te: dict, *, fp8: bool, bf16_layer_buffers: bool) -> list[Problem]:
    """UB605: methods and atomic GEMM as ``initialize_ub`` / ``add_ub`` check them.

    ``bf16_layer_buffers``: Bridge also creates non-FP8 communicators for the BF16 first/last layers
    of an FP8 run (initialize.py:364-369, TE >= 2.8), and atomic GEMM fails there too.
    """
    out = []
    for gemm in presets.GEMM_NAMES:
        entry = te.get(gemm)
        if not isinstance(entry, dict):
            continue
        method = _method(gemm, entry)
        if method not in METHODS:
            if method == "external":
                why = "Transformer Engine uses 'external' only for proj_wgrad/fc2_wgrad"
            else:
                why = f"the methods are {', '.join(METHODS)}"
            # A dgrad with a method TE has no list for fails on ``methods[new_method]``; anywhere else TE
            # silently builds a non-ring overlap.
            crash = "initialize_ub fails looking it up (KeyError)" if gemm in DGRAD_TO_WGRAD and method != "external" else (
                "Transformer Engine then silently builds an overlap nobody chose"
            )
            out.append(Problem("UB605", "error", gemm, f"{gemm}: unknown method {method!r} ({why}; {crash})", "method"))
            continue
        if method == "pipeline" and gemm in ALL_GATHER_ONLY:
            out.append(
                Problem("UB605", "error", gemm, f"{gemm}: method 'pipeline' on an all-gather GEMM: Transformer Engine "
                        "raises ValueError (\"`pipeline` overlap method is not supported for AllGather\")", "method")
            )  # fmt: skip
        if bool(entry.get("atomic_gemm")):
            if not fp8:
                out.append(
                    Problem("UB605", "error", gemm, f"{gemm}: atomic_gemm in a run without FP8: Transformer Engine "
                            "asserts \"Atomic GEMM overlap supported only for FP8 GEMM\"", "atomic_gemm")
                )  # fmt: skip
            elif bf16_layer_buffers:
                out.append(
                    Problem("UB605", "error", gemm, f"{gemm}: atomic_gemm with BF16 first/last layers in an FP8 run: "
                            "Bridge also builds non-FP8 userbuffers for those layers and Transformer Engine's "
                            "atomic-GEMM assertion fails on them", "atomic_gemm")
                )  # fmt: skip
            elif method == "bulk":
                out.append(
                    Problem("UB605", "warning", gemm, f"{gemm}: atomic_gemm with method 'bulk' is ignored: Transformer "
                            "Engine warns and turns it off", "atomic_gemm")
                )  # fmt: skip
    if fp8 and not bf16_layer_buffers:
        for ag, rs in AG_RS_PAIRS:
            a, r = _atomic_ring(te.get(ag)), _atomic_ring(te.get(rs))
            if a != r:
                one, other = (ag, rs) if a else (rs, ag)
                out.append(
                    Problem("UB605", "error", other, f"{one} uses atomic GEMM with ring_exchange but its pair {other} "
                            "does not: Transformer Engine asserts that both GEMMs of a TP block use atomic ring-exchange "
                            "or neither does (one shuffles the GEMM chunks, the other un-shuffles them)", "atomic_gemm")
                )  # fmt: skip
    return out


def _atomic_ring(entry: Any) -> bool:
    return isinstance(entry, dict) and bool(entry.get("atomic_gemm")) and entry.get("method") == "ring_exchange"


def defaulted_fp8_buf(mapping: dict, te: dict) -> list[str]:
    """GEMMs whose ``fp8_buf`` is PipelineOverlapCfg's ``(False,)`` default (or ``[false]``) where TE reads it.

    TE reads the user's ``fp8_buf`` only for GEMMs in its pipeline list: proj_fprop, fc2_fprop, and a
    dgrad switched to 'pipeline'; all-gather GEMMs get an FP8 buffer anyway. ``(False,)`` is truthy.
    An entry without ``_target_`` and without ``fp8_buf`` reaches TE as a plain dict: TE's own default
    (False) applies, so it is not listed.
    """
    out = []
    for gemm in presets.GEMM_NAMES:
        raw = mapping.get(gemm)
        if not isinstance(raw, dict):
            continue
        reads = gemm in ("proj_fprop", "fc2_fprop") or (gemm in DGRAD_TO_WGRAD and _method(gemm, te.get(gemm)) == "pipeline")
        if not reads:
            continue
        if "fp8_buf" in raw:
            value = raw["fp8_buf"]
            if isinstance(value, (list, tuple)) and len(value) == 1 and value[0] is False:
                out.append(gemm)
        elif presets.class_for_target(raw.get("_target_")) == "PipelineOverlapCfg":
            out.append(gemm)
    return out
