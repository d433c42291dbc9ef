"""How well a userbuffers preset fits a training run, and what ``tp_comm_overlap_cfg`` holds.

A preset's name records the shape it was tuned for (``presets.PresetName``). Nothing upstream reads the
name: Transformer Engine sizes the userbuffers from the model itself -- ``[(seq_length *
micro_batch_size) // context_parallel_size, hidden_size]`` with ``tp_size`` ranks
(megatron/bridge/training/initialize.py:355-358 in megatron-bridge 0.6.2) -- so a preset that does not fit
is mis-tuned (wrong SM counts, splits, FP8 buffers), never a crash.

Severity of a difference (rule UB606): precision and TP change what the tuned numbers mean (FP8
buffers, ring length, per-rank GEMM width) -> warning. CP, hidden size, micro-batch size and sequence
length only change the buffer's size, and the GPU and LoRA fields say where and for what the numbers
were measured -> info. CP is info, not warning, on purpose: it enters userbuffers only through the row
count ``seq_length * micro_batch_size / CP``, exactly like sequence length, and Bridge's own
``llama3_70b_pretrain_32gpu_h100_bf16_config`` pairs the h8192/tp4 preset with CP=2 (no CP2 preset
for that hidden size exists).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.frameworks.bridge import presets
from overlap_cli.records import dataclass, field  # not dataclasses: start-up time (records.py)

#: Target GPUs (``--gpu``) and the preset family tuned on the same generation. H200 is an H100 die
#: with more memory: same SM count, so the H100 tuning carries over. Bridge's own perf recipes use
#: the b200 presets for B300, GB200 and GB300 (megatron/bridge/perf_recipes). A100 has no presets.
GPU_FAMILY = {"h100": "h100", "h200": "h100", "b200": "b200", "b300": "b200", "gb200": "b200", "gb300": "b200"}

FIELDS = ("precision", "tp", "cp", "hidden_size", "micro_batch_size", "seq_length", "gpu", "lora")
LABELS = {
    "precision": "precision",
    "tp": "TP",
    "cp": "CP",
    "hidden_size": "hidden size",
    "micro_batch_size": "micro-batch size",
    "seq_length": "sequence length",
    "gpu": "GPU",
    "lora": "LoRA",
}
WARNING_FIELDS = frozenset({"precision", "tp"})
# Ranking weights: a warning-level difference outweighs any number of info-level ones.
_WEIGHT = {
    "precision": 1000, "tp": 1000, "hidden_size": 100, "cp": 30,
    "seq_length": 10, "micro_batch_size": 10, "gpu": 5, "lora": 3,
}  # fmt: skip
_NUMERIC = ("tp", "cp", "hidden_size", "micro_batch_size", "seq_length")


@dataclass(frozen=True)
class TrainingShape:
    """The run's values for the fields a preset name encodes; None = not known from the file/target."""

    precision: Optional[str] = None  # "fp8" when model.fp8 is set after mixed precision, else "bf16"
    tp: Optional[int] = None
    cp: Optional[int] = None
    hidden_size: Optional[int] = None
    micro_batch_size: Optional[int] = None
    seq_length: Optional[int] = None
    gpu: Optional[str] = None  # the target GPU as given (h200, gb300, ...)
    lora: Optional[bool] = None
    where: dict = field(default_factory=dict, compare=False, hash=False)  # field -> where the value came from

    @property
    def gpu_family(self) -> Optional[str]:
        return GPU_FAMILY.get(self.gpu) if self.gpu else None

    def unknown(self) -> list[str]:
        return [f for f in FIELDS if getattr(self, f) is None]

    def to_json(self) -> dict:
        out = {f: getattr(self, f) for f in FIELDS}
        out["gpu_family"] = self.gpu_family
        out["where"] = dict(self.where)
        return out


def _show(field_name: str, value: Any) -> str:
    if field_name == "lora":
        return "yes" if value else "no"
    return str(value)


@dataclass(frozen=True)
class Difference:
    field: str
    preset: Any
    model: Any

    @property
    def severity(self) -> str:
        return "warning" if self.field in WARNING_FIELDS else "info"

    def describe(self) -> str:
        here = self.model
        if self.field == "gpu":
            family = GPU_FAMILY.get(self.model)
            here = f"{self.model} (no preset family)" if family is None else f"{self.model} ({family} family)"
            if family == self.model:
                here = self.model
        return f"{LABELS[self.field]} {_show(self.field, self.preset)} in the preset vs {_show(self.field, here)} here"

    def to_json(self) -> dict:
        return {"field": self.field, "preset": self.preset, "model": self.model, "severity": self.severity}


def differences(fields: presets.PresetName, shape: TrainingShape) -> list[Difference]:
    """Fields where the preset's name and the run disagree (unknown run values are not compared)."""
    out = []
    for name in FIELDS:
        mine = getattr(shape, name)
        if mine is None:
            continue
        theirs = getattr(fields, name)
        if name == "gpu":
            if shape.gpu_family != theirs:
                out.append(Difference(name, theirs, mine))
        elif theirs != mine:
            out.append(Difference(name, theirs, mine))
    return out


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def score(diffs: list[Difference]) -> tuple:
    """Sort key: weighted count of differences, then how far apart the numbers are."""
    distance = 0.0
    for d in diffs:
        # log2 of each side, not of the ratio: a huge value would overflow the float division, and a
        # zero or negative one (hostile input) has no logarithm; those add no distance.
        if d.field in _NUMERIC and _positive(d.preset) and _positive(d.model):
            distance += abs(math.log2(d.preset) - math.log2(d.model))
    return (sum(_WEIGHT[d.field] for d in diffs), round(distance, 6))


@dataclass(frozen=True)
class Candidate:
    name: str
    fields: presets.PresetName
    diffs: tuple

    @property
    def exact(self) -> bool:
        return not self.diffs

    @property
    def severity(self) -> Optional[str]:
        if not self.diffs:
            return None
        return "warning" if any(d.severity == "warning" for d in self.diffs) else "info"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "exact": self.exact,
            "same_values_as": [n for n in presets.match_presets(presets.get_preset(self.name)) if n != self.name],
            "differences": [d.to_json() for d in self.diffs],
        }


def rank(shape: TrainingShape, names: Optional[list] = None) -> list[Candidate]:
    """Presets (all, or ``names``) from best to worst fit for ``shape``; ties broken by name."""
    out = []
    for name, fields in presets.preset_shapes():  # the names say the shape: no preset file is read here
        if names is not None and name not in names:
            continue
        out.append(Candidate(name, fields, tuple(differences(fields, shape))))
    return sorted(out, key=lambda c: (score(list(c.diffs)), c.name))


def exact_fits(shape: TrainingShape) -> list[str]:
    return [c.name for c in rank(shape) if c.exact]


def single_exact_fit(shape: TrainingShape, fits: Optional[list] = None) -> Optional[str]:
    """The one preset that fits exactly -- or several holding identical values (then the first name).

    None when no preset fits, or when presets with different values all fit (e.g. the GPU is unknown
    and both an h100 and a b200 preset match): then picking one would be a guess. ``fits`` is
    ``exact_fits(shape)`` when the caller has it already.
    """
    if fits is None:
        fits = exact_fits(shape)
    if not fits:
        return None
    if len(fits) == 1:  # decided by the names alone: no preset file needs reading
        return fits[0]
    if all(presets.match_presets(presets.get_preset(n)) == presets.match_presets(presets.get_preset(fits[0])) for n in fits):
        return fits[0]
    return None


# ------------------------------------------------------------------------------------------------
# What tp_comm_overlap_cfg holds
# ------------------------------------------------------------------------------------------------


@dataclass
class UbConfig:
    """The userbuffers config a file gives, recognised against the shipped presets."""

    key: str  # where it is written: comm_overlap.tp_comm_overlap_cfg, or model.* without comm_overlap
    given: Any
    kind: str  # "null" | "mapping" | "string" | "other"
    shape: TrainingShape
    tp_effective: bool  # model.tp_comm_overlap after Bridge's gate: userbuffers are initialised
    matches: list = field(default_factory=list)  # presets holding exactly these values
    preset: Optional[str] = None  # the match that best fits the run, "custom", or None
    has_target: bool = False  # the mapping names Bridge's TransformerLayerTPOverlapCfg via _target_
    te_config: Optional[dict] = None  # what Transformer Engine receives (only when tp_effective)

    @property
    def named(self) -> bool:
        return self.preset not in (None, "custom")

    def effective_value(self) -> Any:
        """The JSON value of ``model.tp_comm_overlap_cfg``: None for TE defaults, else a dict."""
        if self.kind == "null":
            return None
        out: dict = {"preset": self.preset, "matches": list(self.matches), "te_config": self.te_config}
        if self.kind != "mapping":
            out["given"] = self.given
        return out


def describe_cfg(given: Any, key: str, shape: TrainingShape, tp_effective: bool) -> UbConfig:
    if given is None:
        return UbConfig(key, None, "null", shape, tp_effective)
    if isinstance(given, dict):
        matches = presets.match_presets(given)
        if matches:
            preset = min(matches, key=lambda n: (score(differences(presets.get_preset(n).fields, shape)), n))
        else:
            preset = "custom"
        te = None
        if tp_effective:  # what Transformer Engine receives
            te = presets.te_dict(given)
        return UbConfig(key, given, "mapping", shape, tp_effective, matches, preset, "_target_" in given, te)
    kind = "string" if isinstance(given, str) else "other"
    return UbConfig(key, given, kind, shape, tp_effective)


def training_shape(view) -> TrainingShape:
    """The run's preset-relevant values from a resolver view (``final``, ``cfg``, ``target``)."""
    cfg, model = view.cfg, view.final.get("model", {})
    where: dict = {}

    def positive_int(value: Any) -> Optional[int]:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    # Userbuffers use FP8 buffers when model.fp8 is set (initialize.py:363 with TE >= 2.8; `fp8 is not None` before); fp16 and
    # fp4 runs count as "bf16" here: their buffers are not FP8.
    precision = "fp8" if model.get("fp8") else "bf16"
    where["precision"] = f"model.fp8={model.get('fp8')!r} after mixed precision"
    where["tp"], where["cp"] = "model.tensor_model_parallel_size", "model.context_parallel_size"
    hidden = positive_int(model.get("hidden_size"))
    if hidden:
        where["hidden_size"] = "model.hidden_size"
    mbs = positive_int(cfg.get(("train", "micro_batch_size")))
    if mbs:
        where["micro_batch_size"] = "train.micro_batch_size"
    # The buffer uses model.seq_length; Bridge asserts it equals dataset.seq_length (config.py:1503-1508).
    seq = None
    for section in ("model", "dataset"):
        if cfg.has((section, "seq_length")):
            seq = positive_int(cfg.get((section, "seq_length")))
            if seq:
                where["seq_length"] = f"{section}.seq_length"
                break
    gpu = view.target.get("gpu")
    gpu = str(gpu).lower() if gpu else None
    if gpu:
        where["gpu"] = "target --gpu"
    peft = cfg.data.get("peft")
    where["lora"] = "peft section" if peft is not None else "no peft section"
    return TrainingShape(
        precision=precision,
        tp=view.tp,
        cp=view.cp,
        hidden_size=hidden,
        micro_batch_size=mbs,
        seq_length=seq,
        gpu=gpu,
        lora=peft is not None,
        where=where,
    )
