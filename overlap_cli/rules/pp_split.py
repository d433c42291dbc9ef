"""PP209 — a pipeline split the real code refuses: how ``num_layers`` falls over the pipeline stages (even,
uneven first / last stage, the embedding and loss counted as layers) and the virtual pipeline chunks.

A table of ``frameworks.raises.Raise`` records in the order a Bridge run meets them: megatron-core 0.19.2's
``TransformerConfig.__post_init__`` (transformer_config.py:1922-2110), which Bridge runs at validate() through
``model.finalize()`` (megatron-bridge 0.6.2 config.py:1262); the GPTModelConfig form's own ``finalize``
(megatron/training/models/gpt.py:222-235, at validate); the provider's ``provide()``
(megatron/bridge/models/gpt_provider.py:250-254) and ``get_num_layers_to_build``
(megatron/core/transformer/transformer_block.py:159-171), at model build. How a layout is read (its
characters, its stages over PP, the VPP it implies) is PP208's; whether its layers are the model's is here.
Megatron-LM's launch meets the same TransformerConfig checks after validate_args (frameworks/megatron_lm/
assertions.py, LM203).
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge.pipeline_layout import LAYER_LAYOUT_LINES, layer_layout_problem, read_layout
from overlap_cli.frameworks.raises import MODEL_BUILD, VALIDATE, Raise, failing
from overlap_cli.rules.cfg_validate import UNKNOWN, value
from overlap_cli.rules.common import finding
from overlap_cli.rules.registry import rule

_TC = "megatron/core/transformer/transformer_config.py"
_CHUNKS = "Make sure the number of model chunks is the same across all pipeline stages."
_READS = ("num_layers", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
          "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
          "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
          "pipeline_model_parallel_layout", "mtp_num_layers")


class Split:
    """The model's split as TransformerConfig reads it; ``known`` False when a value it reads is not known."""

    def __init__(self, view):
        got = {k: value(view, "model", k) for k in _READS}
        self.known = all(v is not UNKNOWN for v in got.values()) and isinstance(got["num_layers"], int) \
            and isinstance(got["pipeline_model_parallel_size"], int) and got["pipeline_model_parallel_size"] >= 1
        self.layers, self.pp, self.vpp = got["num_layers"], got["pipeline_model_parallel_size"], \
            got["virtual_pipeline_model_parallel_size"]
        self.first, self.last = got["num_layers_in_first_pipeline_stage"], got["num_layers_in_last_pipeline_stage"]
        self.embedding, self.loss = bool(got["account_for_embedding_in_pipeline_split"]), \
            bool(got["account_for_loss_in_pipeline_split"])
        self.layout, self.mtp = got["pipeline_model_parallel_layout"], got["mtp_num_layers"]
        target = view.cfg.get(("model", "_target_"))
        self.model_class = target.rsplit(".", 1)[-1] if isinstance(target, str) else ""

    @property
    def uneven(self) -> bool:
        return self.first is not None or self.last is not None

    @property
    def accounted(self) -> bool:
        return self.embedding or self.loss

    @property
    def gpt_model_config(self) -> bool:
        return self.model_class == "GPTModelConfig"

    @property
    def gpt_provider(self) -> bool:
        """A GPT provider (GPTModelProvider and the model providers built on it; a model section without
        ``_target_`` is read as GPTModelProvider, frameworks/bridge/facts.py); Mamba / hybrid stacks and the
        GPTModelConfig form build otherwise."""
        name = self.model_class
        return (not name or name.endswith("Provider") or name.startswith("GPTModelProvider")) and not any(
            w in name for w in ("Mamba", "Hybrid", "NemotronH", "T5"))


_READING: list = [None, None]  # (view, its Split) while pipeline_split walks the table: read once, not per record


def _split(fn):
    def fails(view):
        s = _READING[1] if _READING[0] is view else Split(view)
        return fn(s) if s.known else None
    return fails


def _uneven_split(s: Split):
    """(stage, fields) of the first raise of transformer_config.py:1989-2064, or None."""
    if s.layout is not None or not s.uneven or s.accounted:
        return None
    layers, pp = s.layers, s.pp
    for name, n in (("first", s.first), ("last", s.last)):
        if n is None:
            continue
        if not isinstance(n, int) or n <= 0:
            return f"{name}-positive", {}
        if s.vpp is not None and n % s.vpp:
            return f"{name}-vpp", {"n": n, "vpp": s.vpp}
        layers, pp = layers - n, pp - 1
    if bool(layers) != bool(pp):
        return "mismatch", {"layers": layers, "pp": pp}
    if pp and layers % pp:
        return "middle", {"layers": layers, "pp": pp}
    if pp and s.vpp is not None and (layers // pp) % s.vpp:
        return "middle-vpp", {"per_rank": layers // pp, "vpp": s.vpp}
    return None


def _uneven(stage: str):
    def fn(s):
        got = _uneven_split(s)
        return got[1] if got is not None and got[0] == stage else None
    return _split(fn)


def _layout_layers(line: int):
    """validate_layer_layout's assert at ``line`` (pipeline_parallel_layer_layout.py), for a layout the checks
    before it accept (PP208 reports those: other split arguments, an unreadable layout, stages PP does not
    divide, a VPP that conflicts)."""
    def fn(s):
        if s.layout is None or s.uneven or s.accounted:
            return None
        layout = read_layout(s.layout)
        if layout is None or layout.stages is None or layout.stages % s.pp or \
                s.vpp is not None and s.vpp != layout.stages // s.pp:
            return None
        got = layer_layout_problem(s.layout, s.layers, s.mtp)
        return {"problem": got[1]} if got is not None and got[0] == line else None
    return _split(fn)


def _accounted_layers(s: Split):
    if s.layout is not None or s.uneven or not s.accounted:
        return None
    return s.layers + int(s.embedding) + int(s.loss)


def _chunks_differ(s: Split) -> bool:
    """gpt.py:222-235 / gpt_provider.py:240-254: with a VPP and no flexible layout, each rank's layers must split
    into VPP chunks (``num_layers // PP``: the remainder is transformer_block.py's)."""
    flexible = s.accounted or s.uneven or s.layout is not None
    return bool(s.vpp) and not flexible and (s.layers // s.pp) % s.vpp != 0


TABLE = (
    Raise(id="uneven-with-accounting", at=f"{_TC}:1929", kind="ValueError",
          key="model.account_for_embedding_in_pipeline_split",
          message="num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same "
                  "time with account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split",
          fails=_split(lambda s: {} if s.uneven and s.accounted else None)),
    *(Raise(id=f"layout-layers-{line}", at=f"megatron/core/transformer/pipeline_parallel_layer_layout.py:{line}",
            key="model.pipeline_model_parallel_layout", message="{problem}", fails=_layout_layers(line))
      for line in LAYER_LAYOUT_LINES),
    *(Raise(id=f"uneven-{stage}", at=f"{_TC}:{line}", kind="ValueError", key=key, message=message, fails=_uneven(stage))
      for stage, line, key, message in (
          ("first-positive", 1998, "model.num_layers_in_first_pipeline_stage",
           "num_layers_in_first_pipeline_stage must be larger than 0"),
          ("first-vpp", 2006, "model.num_layers_in_first_pipeline_stage",
           "number of layers at first stage: {n}must be divisible by virtual pipelineparallel degree {vpp}"),
          ("last-positive", 2017, "model.num_layers_in_last_pipeline_stage",
           "num_layers_in_last_pipeline_stage must be larger than 0"),
          ("last-vpp", 2025, "model.num_layers_in_last_pipeline_stage",
           "number of layers at last stage: {n}must be divisible by virtual pipelineparallel degree {vpp}"),
          ("mismatch", 2036, "model.pipeline_model_parallel_size",
           "Mismatch: {layers} middle layers remaining but {pp} middle PP stages available."),
          ("middle", 2044, "model.pipeline_model_parallel_size",
           "number of layers at middle stage: {layers} must be divisible bythe middle pipeline model parallel size {pp}"),
          ("middle-vpp", 2058, "model.virtual_pipeline_model_parallel_size",
           "number of layers on each middle pipeline rank:{per_rank} must be divisible by virtualpipeline parallel "
           "degree {vpp}"))),
    Raise(id="accounted-pp", at=f"{_TC}:2076", kind="ValueError", key="model.pipeline_model_parallel_size",
          message="number of middle layers: {layers} must be divisible by middle pipeline_model_parallel_size {pp}",
          fails=_split(lambda s: {"layers": _accounted_layers(s), "pp": s.pp} if _accounted_layers(s) is not None
                       and s.vpp is None and _accounted_layers(s) % s.pp else None)),
    Raise(id="accounted-vpp-pp", at=f"{_TC}:2090", kind="ValueError", key="model.pipeline_model_parallel_size",
          message="num_layers: {layers} after enableaccount_for_embedding_in_pipeline_split or "
                  "account_for_loss_in_pipeline_split must be divisibleby pipeline_model_parallel_size {pp}",
          fails=_split(lambda s: {"layers": _accounted_layers(s), "pp": s.pp} if _accounted_layers(s) is not None
                       and s.vpp is not None and _accounted_layers(s) % s.pp else None)),
    Raise(id="accounted-vpp-per-rank", at=f"{_TC}:2103", kind="ValueError",
          key="model.virtual_pipeline_model_parallel_size",
          message="number of layers on each pipeline rank: {per_rank}(after enable account_for_embedding_in_pipeline_split "
                  "or account_for_loss_in_pipeline_split) must be divisible byvirtual_pipeline_model_parallel_size{vpp}",
          fails=_split(lambda s: {"per_rank": _accounted_layers(s) // s.pp, "vpp": s.vpp}
                       if _accounted_layers(s) is not None and s.vpp is not None and not _accounted_layers(s) % s.pp
                       and (_accounted_layers(s) // s.pp) % s.vpp else None)),
    Raise(id="gpt-config-chunks", at="megatron/training/models/gpt.py:233", message=_CHUNKS,
          key="model.virtual_pipeline_model_parallel_size",
          fails=_split(lambda s: {} if s.gpt_model_config and _chunks_differ(s) else None)),
    Raise(id="provider-chunks", at="megatron/bridge/models/gpt_provider.py:252", message=_CHUNKS, stage=MODEL_BUILD,
          key="model.virtual_pipeline_model_parallel_size",
          fails=_split(lambda s: {} if s.gpt_provider and _chunks_differ(s) else None)),
    Raise(id="even-split", at="megatron/core/transformer/transformer_block.py:159", stage=MODEL_BUILD,
          key="model.pipeline_model_parallel_size",
          message="num_layers={layers} should be divisible by config.pipeline_model_parallel_size={pp}",
          fails=_split(lambda s: {"layers": s.layers, "pp": s.pp} if (s.gpt_provider or s.gpt_model_config)
                       and s.layout is None and not s.uneven and not s.accounted and s.layers % s.pp
                       and not _chunks_differ(s) else None)),
)
assert all(r.stage in (VALIDATE, MODEL_BUILD) for r in TABLE)

_WHEN = {VALIDATE: "at validate()", MODEL_BUILD: "when the model is built"}


@rule("PP209", "pipeline-split-rejected", "error", "A layer split over the pipeline stages that the real code refuses",
      fix="none")
def pipeline_split(view):
    """
    ## What it does
    Checks how `num_layers` falls over `pipeline_model_parallel_size` stages and
    `virtual_pipeline_model_parallel_size` chunks, as the real code does, in its order:
    - megatron-core 0.19.2 `TransformerConfig.__post_init__` (`transformer_config.py:1929-2110`, ValueError),
      run by Bridge's `validate()`: a `pipeline_model_parallel_layout` whose layers are not the model's
      (`validate_layer_layout`, `pipeline_parallel_layer_layout.py:94-116`: the embedding first and once, the
      loss last and once, `num_layers` decoder layers, `mtp_num_layers` MTP layers after them); an uneven first / last stage (`num_layers_in_first_pipeline_stage`,
      `num_layers_in_last_pipeline_stage`) together with `account_for_*_in_pipeline_split`; a first / last
      stage of no layers or not a multiple of VPP; middle layers that the middle stages or VPP do not divide;
      with `account_for_embedding_in_pipeline_split` / `account_for_loss_in_pipeline_split`, the layers plus
      the embedding and loss not divisible by PP (and by VPP per rank);
    - with a VPP and an even split, `(num_layers // PP) % VPP != 0`: `Make sure the number of model chunks is the
      same across all pipeline stages.` — at `validate()` for the GPTModelConfig form
      (`megatron/training/models/gpt.py:222-235`, its `finalize`), when the model is built for a GPT provider
      (`megatron/bridge/models/gpt_provider.py:250-254`, `provide()`);
    - an even split whose layers PP does not divide: `num_layers=N should be divisible by
      config.pipeline_model_parallel_size=P` (`megatron/core/transformer/transformer_block.py:159`, when the
      model is built).

    Each only when every value it reads is known. How a layout string is read (its characters, its stages over
    PP, its VPP) is PP208's.

    ## Why it matters
    VPP is what turns p2p overlap on (PP201), so a run that asks for it needs a split that builds. The
    validate() checks stop the launch before training; the model-build ones after every rank started,
    initialised its process groups and began building the model.

    ## Example
    Bridge's own unit test `test_get_model_comm_overlap_cfgs_pp_with_vp` (12 layers over PP 4 × VPP 2: 3 layers
    per rank do not make 2 chunks), checked with `--world-size 8`:
    ```yaml
    model: {num_layers: 12, pipeline_model_parallel_size: 4, virtual_pipeline_model_parallel_size: 2}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    None offered: which split the model should have (the VPP, uneven first / last stages, a layout) is the
    run's choice; PP201's VPP suggestion only offers a VPP that divides the layers.
    """
    _READING[:] = [view, Split(view)]
    try:
        failed = list(failing(TABLE, view))
    finally:
        _READING[:] = [None, None]
    for check, fields in failed:
        yield finding(view, "PP209", "error",
                      f"{check.kind} {_WHEN[check.stage]}: \"{check.text(fields)}\" ({check.at})", check.key)
