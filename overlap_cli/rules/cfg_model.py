"""CFG007: a model whose shape was never filled in (a template recipe), which megatron-core 0.19.2's
``TransformerConfig.__post_init__`` divides by when Bridge finalizes the model (config.py:1262)."""

from __future__ import annotations

from overlap_cli.rules.common import finding, model_value
from overlap_cli.rules.registry import rule

_HIDDEN_DEFAULT = 0  # TransformerConfig.hidden_size (megatron/core/transformer/transformer_config.py:138)


def _model(view, key, default=None):
    return view.get_final("model", key, model_value(view, key) if default is None else default)


@rule("CFG007", "model-shape-not-set", "error", "A model without attention heads (an unfilled template)", fix="none")
def model_without_heads(view):
    """
    ## What it does
    Flags a model that writes `num_attention_heads: 0` (TransformerConfig's default) with `kv_channels`
    unset, or `num_layers: 0` with no `output_layer_init_method`: a template recipe (`vanilla_gpt_*`)
    whose shape is left to the user. A file that does not write the key is taken as a snippet and not
    flagged.

    ## Why it matters
    `TransformerConfig.__post_init__` computes `kv_channels = hidden_size // num_attention_heads`
    (megatron-core 0.19.2, `megatron/core/transformer/transformer_config.py:1332-1333`) when Bridge
    finalizes the model, so the launch dies with `ZeroDivisionError: integer division or modulo by zero`.
    Given heads but no layers, the default output-layer initializer `scaled_init_method_normal(init_method_std,
    num_layers)` divides by `sqrt(2 * num_layers)` (`transformer_config.py:2263-2277`, `megatron/core/utils.py:833-835`):
    `ZeroDivisionError: float division by zero`. Neither depends on the parallel sizes.

    ## Example
    ```yaml
    model: {num_layers: 0, hidden_size: 0, num_attention_heads: 0}
    ```

    ## Fix
    None offered: the model's shape (`num_layers`, `hidden_size`, `num_attention_heads`, ...) is the user's.
    """
    # Only a written 0: a file that leaves the shape out is a snippet checked for its overlap settings.
    cfg = view.cfg
    if cfg.get(("model", "num_attention_heads")) == 0 and _model(view, "kv_channels") is None:
        yield finding(
            view, "CFG007", "error",
            f"model.num_attention_heads is 0 (hidden_size {_model(view, 'hidden_size', _HIDDEN_DEFAULT)}): Megatron-Core's "
            "kv_channels = hidden_size // num_attention_heads raises \"ZeroDivisionError: integer division or modulo "
            "by zero\" when Bridge finalizes the model",
            "model.num_attention_heads",
        )
    elif cfg.get(("model", "num_layers")) == 0 and _model(view, "output_layer_init_method") is None and not _model(view, "use_mup"):
        yield finding(
            view, "CFG007", "error",
            "model.num_layers is 0 and output_layer_init_method is unset: Megatron-Core's "
            "scaled_init_method_normal(init_method_std, num_layers) divides by sqrt(2 * num_layers) and raises "
            "\"ZeroDivisionError: float division by zero\" when Bridge finalizes the model",
            "model.num_layers",
        )
