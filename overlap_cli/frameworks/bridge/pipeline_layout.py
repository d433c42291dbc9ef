"""Read ``model.pipeline_model_parallel_layout`` the way Megatron-Core does, to count its pipeline stages.

Megatron-Core (0.19.2) turns the layout into ``PipelineParallelLayerLayout`` inside
``TransformerConfig.__post_init__`` (megatron/core/transformer/transformer_config.py:1936-1985) and derives
the virtual pipeline size from it: stages / PP. Bridge's ``CommOverlapConfig`` runs *before* that and
never sees the derived value, which is why the count matters to this tool.

String grammar (megatron/core/transformer/pipeline_parallel_layer_layout.py:283-321): commas are
cosmetic; ``(X)*n`` repeats a group once (not nested), then ``c*n`` repeats one character; ``|``
separates stages (empty pieces are stages too); the only layer characters are E, L, t and m.
A list layout is a list of stages, each a list of layer names.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli import lazyre
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)

LAYER_CHARS = ("E", "L", "t", "m")
_GROUP = lazyre.compile(r"\(([^)]+)\)\*(\d+)")
_CHAR = lazyre.compile(r"(.)\*(\d+)")


@dataclass(frozen=True)
class Layout:
    stages: Optional[int]  # None when the layout cannot be read
    problem: Optional[str] = None  # Megatron-Core's assertion text when it cannot


def expand(text: str) -> str:
    """The layout string with commas removed and every repetition unrolled."""
    text = text.replace(",", "")
    text = _GROUP.sub(lambda m: m.group(1) * int(m.group(2)), text)
    return _CHAR.sub(lambda m: m.group(1) * int(m.group(2)), text)


def read_layout(value: Any) -> Optional[Layout]:
    """Stage count of a layout value; None when no layout is set."""
    if value is None:
        return None
    if isinstance(value, str):
        # Guard against a layout like "t*999999999" before unrolling it (no real model has that many).
        if len(value) > 10_000 or any(int(n) > 100_000 for n in re.findall(r"\*(\d+)", value)):
            return Layout(None, "the layout string is too large to expand here")
        flat = expand(value)
        stages = flat.split("|")
        for stage in stages:
            for ch in stage:
                if ch not in LAYER_CHARS:
                    return Layout(
                        None,
                        f"Invalid layer character: {ch} (stage={stage!r}, layout_str={flat!r}), "
                        f"known layer characters: {list(LAYER_CHARS)}",
                    )
        return Layout(len(stages))
    if isinstance(value, list):
        if not all(isinstance(row, list) for row in value):
            return Layout(None, "pipeline_model_parallel_layout must be a list of lists")
        return Layout(len(value))
    return Layout(None, f"pipeline_model_parallel_layout must be a string or a list of lists, got {type(value).__name__}")


def derived_vpp(layout: Optional[Layout], pp: int) -> Optional[int]:
    """The virtual pipeline size the layout implies for ``pp`` stages, or None when it cannot be derived."""
    if layout is None or layout.stages is None or pp < 1 or layout.stages % pp:
        return None
    return layout.stages // pp


_LAYER_NAMES = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}
# validate_layer_layout's asserts (megatron/core/transformer/pipeline_parallel_layer_layout.py), by line
LAYER_LAYOUT_LINES = (94, 97, 102, 105, 106, 111, 116)


def layer_layout_problem(value: Any, num_layers: Any, mtp_num_layers: Any) -> Optional[tuple]:
    """(line, message) of the first assert of ``validate_layer_layout`` (pipeline_parallel_layer_layout.py:85-119,
    run by TransformerConfig.__post_init__ at transformer_config.py:1984) that a readable layout fails: the
    embedding first and once, the loss last and once, as many decoder layers as ``num_layers``, the MTP layers
    ``mtp_num_layers`` and after every decoder layer. None when it holds or cannot be judged here (an unreadable
    layout is its reader's problem; where MTP sits within a rank's virtual stages is not checked)."""
    if not isinstance(num_layers, int) or isinstance(num_layers, bool):
        return None
    layout = read_layout(value)
    if layout is None or layout.problem is not None:
        return None
    if isinstance(value, str):
        flat = [_LAYER_NAMES[c] for c in expand(value).replace("|", "")]
    else:
        flat = [name for stage in value for name in stage]
        if not all(name in _LAYER_NAMES.values() for name in flat):
            return None
    if not flat:
        return None
    if flat[0] != "embedding":
        return 94, f"The first layer must be embedding, but got LayerType.{flat[0]}"
    if flat[-1] != "loss":
        return 97, f"The last layer must be loss, but got LayerType.{flat[-1]}"
    if flat.count("embedding") != 1:
        return 102, "Embedding must be specified exactly once"
    if flat.count("loss") != 1:
        return 105, "Loss must be specified exactly once"
    if flat.count("decoder") != num_layers:
        return 106, f"Number of decoder layers {flat.count('decoder')}must match num_layers {num_layers}"
    mtp = flat.count("mtp")
    if not (mtp == mtp_num_layers or (mtp_num_layers is None and mtp == 0)):
        return 111, "Number of mtp layers in layout must match mtp_num_layers"
    if "mtp" in flat and "decoder" in flat[flat.index("mtp"):]:
        return 116, "decoder layers must be placed before MTP layers"
    return None
