"""Bridge's other model form: ``model: {_target_: megatron.training.models.gpt.GPTModelConfig, transformer:
{...}}`` (``ConfigContainer.model`` accepts it, megatron/bridge/training/config.py:975-981). The wrapper reads
every attribute it does not have itself from ``transformer`` and writes every attribute ``transformer`` has
there (megatron/training/models/gpt.py:183-207; hybrid.py the same), so ``CommOverlapConfig`` and
``validate()`` see the Megatron-Core settings as ``model.X``. Read that way here: the ``transformer``
mapping's keys are lifted to ``model`` with their lines, and ``Config.file_key`` spells a ``model.X`` back as
the file holds it (``model.transformer.X``) for fixes."""

from __future__ import annotations

# The wrappers' own fields (dataclasses.fields of megatron-core 0.19.2's GPTModelConfig, gpt.py:134-182,
# with ModelConfig's, base.py; HybridModelConfig's, hybrid.py:32-60): no TransformerConfig field among them.
_COMMON = frozenset({
    "extra_checkpoint_metadata", "fp16_lm_cross_entropy", "make_vocab_size_divisible_by", "parallel_output",
    "position_embedding_type", "post_wrap_hooks", "pre_wrap_hooks", "restore_modelopt_state", "rotary_base",
    "rotary_percent", "seq_len_interpolation_factor", "seq_length", "share_embeddings_and_output_weights",
    "should_pad_vocab", "transformer", "vocab_size",
})
WRAPPERS = {
    "megatron.training.models.gpt.GPTModelConfig": _COMMON | {
        "rope_scaling", "rope_scaling_factor", "scatter_embedding_sequence_parallel", "tp_comm_overlap_cfg",
        "transformer_layer_spec", "use_arbitrary_attention_mask",
    },
    "megatron.training.models.hybrid.HybridModelConfig": _COMMON | {
        "hybrid_attention_ratio", "hybrid_layer_pattern", "hybrid_mlp_ratio", "hybrid_override_pattern", "hybrid_stack_spec",
    },
}
WRAPPER_OWN = frozenset().union(*WRAPPERS.values())


def lift(cfg) -> None:
    """Read a wrapped model as Bridge's proxy reads it (see the module doc); a no-op for the provider form."""
    model = cfg.data.get("model")
    if not isinstance(model, dict) or model.get("_target_") not in WRAPPERS or not isinstance(model.get("transformer"), dict):
        return
    inner = model.pop("transformer")
    own = WRAPPERS[model["_target_"]]
    lifted = {k for k in inner if k != "_target_" and k not in own}
    for k in lifted:
        model[k] = inner[k]
    cfg.wrapped_model_keys = frozenset(lifted)
    prefix = ("model", "transformer")

    def move(path: tuple) -> tuple:
        if path[:2] == prefix and len(path) > 2 and path[2] in lifted:
            return ("model",) + path[2:]
        return path

    cfg.positions = {move(p): v for p, v in cfg.positions.items()}
    for name in ("override_paths", "interpolated_paths", "unresolved_paths"):
        setattr(cfg, name, {move(p) for p in getattr(cfg, name)})
    cfg.raw_interpolations = {move(p): v for p, v in cfg.raw_interpolations.items()}
