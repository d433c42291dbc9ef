"""CP8xx — context parallelism: the checks Bridge's ``validate()`` and Megatron-Core make at launch.

Sources: megatron-bridge 0.6.2 ``megatron/bridge/training/config.py`` (``validate()`` at 1435-1459 and
``_validate_cp_comm_type`` at 1526-1558); megatron-core 0.19.2
``megatron/core/transformer/transformer_config.py:2778-2787``.
"""

from __future__ import annotations

import math

from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import as_int, finding, fmt, model_key, model_value

_TYPE = "model.cp_comm_type"
_HCP = "model.hierarchical_context_parallel_sizes"


def _comm_types(view) -> list:
    value = model_value(view, "cp_comm_type")
    if isinstance(value, list):
        return value
    return [value or "p2p"]  # Bridge reads null as "p2p" (config.py:1542)


def _sizes(view):
    """hierarchical_context_parallel_sizes as a list of ints, or None when unset or unreadable."""
    value = model_value(view, "hierarchical_context_parallel_sizes")
    if isinstance(value, list) and value and all(as_int(v) is not None for v in value):
        return value
    return None


@rule("CP801", "a2a-p2p-without-hierarchical-sizes", "error", "cp_comm_type a2a+p2p without hierarchical_context_parallel_sizes")
def a2a_p2p_without_sizes(view):
    """
    ## What it does
    Flags a `cp_comm_type` (a string, or any entry of a per-layer list) containing `a2a+p2p` while
    `hierarchical_context_parallel_sizes` is null. Bridge checks this whatever the CP size.

    ## Why it matters
    Bridge asserts in `validate()` (megatron-bridge 0.6.2, `config.py:1544`):
    `hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'. Without it, CP
    communication is silently disabled and each rank attends only to its local chunk, producing
    artificially high throughput but broken training. Example: for cp=16 across 4 nodes of 8 GPUs, set
    hierarchical_context_parallel_sizes=[8, 2].`

    ## Example
    ```yaml
    model: {context_parallel_size: 16, seq_length: 8192, cp_comm_type: a2a+p2p}
    ```

    ## Fix
    None offered: the sizes follow the node layout (all-to-all inside a node, p2p across nodes), which the
    file does not describe. Set them yourself, e.g. `[8, CP/8]` with 8 GPUs per node; their product must
    equal CP (CP802).
    """
    if any(isinstance(t, str) and "a2a+p2p" in t for t in _comm_types(view)) and model_value(view, "hierarchical_context_parallel_sizes") is None:
        yield finding(
            view, "CP801", "error",
            f"cp_comm_type uses 'a2a+p2p' (context_parallel_size={view.cp}) without hierarchical_context_parallel_sizes: "
            "Bridge asserts \"hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'. "
            "Without it, CP communication is silently disabled ...\"",
            model_key(view, "cp_comm_type", "model"),
        )


@rule("CP802", "hierarchical-sizes-product", "error", "hierarchical_context_parallel_sizes does not multiply to context_parallel_size")
def hierarchical_sizes_product(view):
    """
    ## What it does
    Flags `hierarchical_context_parallel_sizes` whose product differs from `context_parallel_size`. Bridge
    checks this whenever the sizes are set, whatever `cp_comm_type` is.

    ## Why it matters
    Bridge asserts in `validate()` (megatron-bridge 0.6.2, `config.py:1555`):
    `Product of hierarchical_context_parallel_sizes {sizes} (={prod}) must equal context_parallel_size (={cp}).`
    Megatron-Core repeats it as a bare assert when it builds the process groups
    (megatron/core/parallel_state.py:1128).

    ## Example
    ```yaml
    model: {context_parallel_size: 16, seq_length: 8192, cp_comm_type: a2a+p2p,
            hierarchical_context_parallel_sizes: [4, 2]}
    ```

    ## Fix
    None offered: which factor is wrong (or whether CP itself is) depends on the node layout. Choose sizes
    whose product is the CP size.
    """
    sizes = _sizes(view)
    if sizes is None:
        return
    prod = math.prod(sizes)
    if prod != view.cp:
        yield finding(
            view, "CP802", "error",
            f"hierarchical_context_parallel_sizes {sizes} multiply to {prod}, not context_parallel_size={view.cp}: "
            f"Bridge asserts \"Product of hierarchical_context_parallel_sizes {sizes} (={prod}) must equal "
            f"context_parallel_size (={view.cp}).\"",
            _HCP,
        )


@rule("CP803", "seq-length-not-divisible-by-2cp", "error", "seq_length not divisible by 2 x context_parallel_size")
def seq_length_divisible(view):
    """
    ## What it does
    Flags `context_parallel_size > 1` with a `model.seq_length` (default 1024 in Bridge's GPT provider)
    that is not a multiple of 2·CP.

    ## Why it matters
    Context parallelism splits each sequence into 2·CP chunks for load balancing. Bridge asserts in
    `validate()` (megatron-bridge 0.6.2, `config.py:1436`):
    `Sequence length must be divisible by 2 * context parallel size if context parallel is used.`
    The check reads `model.seq_length`; Bridge separately requires the dataset's value to match it.

    ## Example
    ```yaml
    model: {context_parallel_size: 4, seq_length: 4100}
    ```

    ## Fix
    None offered: the sequence length is part of the training (and must match the dataset), so changing it
    is your call. The message names the nearest valid lengths.
    """
    if view.cp <= 1:
        return
    seq = as_int(model_value(view, "seq_length"))
    if seq is None:
        return
    unit = 2 * view.cp
    if seq % unit:
        lower, upper = (seq // unit) * unit, (seq // unit + 1) * unit
        near = f"{lower} or {upper}" if lower else str(upper)
        yield finding(
            view, "CP803", "error",
            f"seq_length={seq} is not a multiple of 2*CP={unit} (e.g. {near}): Bridge asserts "
            "\"Sequence length must be divisible by 2 * context parallel size if context parallel is used.\"",
            model_key(view, "seq_length", "model.context_parallel_size"),
        )


@rule("CP804", "cp-comm-type-per-layer", "error", "Per-layer cp_comm_type list of the wrong length or type")
def cp_comm_type_shape(view):
    """
    ## What it does
    With `context_parallel_size > 1`, flags a `cp_comm_type` list whose length is not `num_layers`, or a
    value that is neither a string nor a list.

    ## Why it matters
    Megatron-Core asserts at model finalize (megatron-core 0.19.2, `transformer_config.py:2780-2785`),
    before Bridge's own copy of the check runs:
    `Length of cp_comm_type ({n}) should equal to the total number of transformer layers ({num_layers})!`
    or `Unsupported communication type for context parallelism!`

    ## Example
    ```yaml
    model: {num_layers: 4, context_parallel_size: 2, seq_length: 8192, cp_comm_type: [a2a, p2p]}
    ```

    ## Fix
    None offered: which communication type each layer should use is a tuning choice. Give one entry per
    transformer layer, or a single string for all of them.
    """
    value = model_value(view, "cp_comm_type")
    if view.cp <= 1 or value is None:
        return
    if isinstance(value, list):
        layers = as_int(view.get_final("model", "num_layers"))
        if layers is not None and len(value) != layers:
            yield finding(
                view, "CP804", "error",
                f"cp_comm_type lists {len(value)} entries for num_layers={layers}: Megatron-Core asserts "
                f"\"Length of cp_comm_type ({len(value)}) should equal to the total number of transformer layers ({layers})!\"",
                _TYPE,
            )
    elif not isinstance(value, str):
        yield finding(
            view, "CP804", "error",
            f"cp_comm_type is {fmt(value)}: Megatron-Core asserts \"Unsupported communication type for context parallelism!\"",
            _TYPE,
        )
