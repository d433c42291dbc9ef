"""Megatron's own per-rank memory formulas on configs, run in an environment with megatron-bridge 0.6.2 and
megatron-core 0.19.2 installed (never imported by overlap-cli). Two kinds of case, read as a JSON list on
stdin:

- ``{"kind": "bridge", "file": DUMP, "world_size": N}``: ``ConfigContainer.from_yaml`` of a recipe dump,
  ``set_data_parallel_size`` with WORLD_SIZE=N (training/config.py:1029-1041), then
  ``estimate_training_memory(cfg, num_microbatches)`` (training/utils/theoretical_memory_utils.py), with
  num_microbatches = GBS / (MBS * DP) as ``get_num_microbatches()`` returns at the report
  (training/utils/train_utils.py:1229-1230);
- ``{"kind": "mlm", "argv": [...], "world_size": N}``: Megatron-LM's ``parse_args`` + ``validate_args`` on the
  launch's arguments, then ``compute_weight_and_optimizer_memory`` and the activation function
  ``report_theoretical_memory`` picks (training/theoretical_memory_usage.py).

Prints a marker line and one JSON list: per case ``{"weights_and_optimizer_bytes", "activation_bytes",
"facts"}`` or ``{"error": "Type: message"}``.

    $OVERLAP_BRIDGE_ENV/bin/python tools/memory_reference.py < cases.json
    $OVERLAP_BRIDGE_ENV/bin/python tools/memory_reference.py --recipes DIR [NAME...] > out.json   # every dump of a
                                                                                          # folder, or those named
"""

import contextlib
import io
import json
import os
import sys
import warnings

MARKER = "@@memory-reference-results@@\n"


def _loadable(path: str) -> str:
    """The dump without ``params_to_save: !!set {}`` (a PEFT field OmegaConf cannot hold; its default is the same
    empty set), as a temporary file."""
    import tempfile

    with open(path) as fh:
        text = fh.read()
    if "!!set" not in text:
        return path
    text = "\n".join(line for line in text.splitlines() if "!!set" not in line) + "\n"
    fd, tmp = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return tmp


def _stub_tensorboard() -> None:
    """training/setup.py imports torch.utils.tensorboard, which needs the tensorboard package (not in the
    reference environment, and nothing here writes a log): an empty stand-in lets setup.py import."""
    import importlib.machinery
    import types

    if "tensorboard" in sys.modules:
        return
    board = types.ModuleType("tensorboard")
    board.__version__ = "2.0.0"
    board.__spec__ = importlib.machinery.ModuleSpec("tensorboard", None)
    writer = types.ModuleType("torch.utils.tensorboard.writer")
    writer.SummaryWriter = object
    package = types.ModuleType("torch.utils.tensorboard")
    package.SummaryWriter, package.writer = object, writer
    sys.modules.update({"tensorboard": board, "torch.utils.tensorboard": package, "torch.utils.tensorboard.writer": writer})


def set_vocab_as_setup_does(cfg) -> dict:
    """What setup() does to the vocabulary before the model is built (training/setup.py:292-298): the tokenizer
    built from cfg.tokenizer, then _validate_and_set_vocab_size (setup.py:681-720) sets model.vocab_size and
    should_pad_vocab. Only a NullTokenizer builds without the tokenizer's files; with another tokenizer the
    model's own vocab_size stands only when setup() would keep it (use_tokenizer_vocab_size off, a size set),
    and setup() then turns padding off. {"rows": padded rows the model allocates, "unknown": why or None}."""
    _stub_tensorboard()
    from megatron.bridge.training.setup import _validate_and_set_vocab_size
    from megatron.bridge.training.tokenizers.tokenizer import build_tokenizer
    from megatron.bridge.training.utils.theoretical_memory_utils import _get_vocab_size

    use = bool(getattr(cfg.tokenizer, "use_tokenizer_vocab_size", False))
    if cfg.tokenizer.tokenizer_type == "NullTokenizer":
        size = build_tokenizer(cfg.tokenizer).vocab_size
    elif not use and cfg.model.vocab_size is not None:
        size = cfg.model.vocab_size  # what the check against the tokenizer would pass (setup.py:707-720)
    else:
        return {"rows": None, "unknown": f"{cfg.tokenizer.tokenizer_type} {cfg.tokenizer.tokenizer_model}: needs its files"}
    cfg.model.vocab_size, cfg.model.should_pad_vocab = _validate_and_set_vocab_size(cfg.model.vocab_size, size, use)
    return {"rows": _get_vocab_size(cfg.model), "unknown": None}


def bridge_case(case: dict) -> dict:
    from megatron.bridge.training import config as bconfig
    from megatron.bridge.training.utils.theoretical_memory_utils import estimate_training_memory

    saved = dict(os.environ)
    os.environ["WORLD_SIZE"] = str(case["world_size"])
    try:
        cfg = bconfig.ConfigContainer.from_yaml(_loadable(case["file"]))
        # What the launch fills in before the report: the sequence length from the dataset, and the vocabulary
        # as setup() sets it (below); a vocabulary only a tokenizer's files give is not known here.
        if cfg.model.seq_length is None:
            cfg.model.seq_length = cfg.dataset.seq_length
        vocab = set_vocab_as_setup_does(cfg)
        if vocab["unknown"]:
            return {"vocabulary": vocab, "facts": {}}
        # TransformerConfig.__post_init__ derives these when the provider is finalized at launch
        # (megatron/core/transformer/transformer_config.py:1329-1333); from_yaml leaves them unset:
        if cfg.model.kv_channels is None:
            cfg.model.kv_channels = cfg.model.hidden_size // cfg.model.num_attention_heads
        if cfg.model.ffn_hidden_size is None:
            cfg.model.ffn_hidden_size = 4 * cfg.model.hidden_size
        cfg.set_data_parallel_size()
        dp = cfg.data_parallel_size
        m = cfg.train.global_batch_size // (cfg.train.micro_batch_size * dp)
        est = estimate_training_memory(cfg, num_microbatches=m)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    model = cfg.model
    act = getattr(model, "activation_func", None)
    # The DDP config takes grad_reduce_in_fp32 from the mixed-precision config at setup
    # (megatron/bridge/training/mixed_precision.py:113-137); a recipe names it or gives it whole.
    mp = cfg.mixed_precision
    if isinstance(mp, str):
        from megatron.bridge.training.mixed_precision import get_mixed_precision_config

        mp = get_mixed_precision_config(mp)
    grad_fp32 = getattr(mp, "grad_reduce_in_fp32", None) if mp is not None else None
    facts = {
        "vocabulary": vocab,
        "quantized_gemms": bool(getattr(mp, "fp8", None) or getattr(mp, "fp4", None)),
        "grad_reduce_in_fp32": bool(cfg.ddp.grad_reduce_in_fp32 if grad_fp32 is None else grad_fp32),
        "data_parallel_size": dp, "num_microbatches": m,
        "activation_func": getattr(act, "__name__", str(act)),
        "gated_linear_unit": bool(getattr(model, "gated_linear_unit", False)),
        "sequence_parallel": bool(model.sequence_parallel),
        "recompute_granularity": model.recompute_granularity,
        "multi_latent_attention": bool(getattr(model, "multi_latent_attention", False)),
        "hybrid": bool(getattr(model, "hybrid_layer_pattern", None) or getattr(model, "hybrid_override_pattern", None)),
        "peft": cfg.peft is not None,
        "megatron_fsdp": bool(getattr(cfg.ddp, "use_megatron_fsdp", False)),
    }
    return {"weights_and_optimizer_bytes": est.weight_and_optimizer_bytes,
            "activation_bytes": est.activation.memory_bytes, "facts": facts}


def mlm_case(case: dict) -> dict:
    from megatron.training import arguments
    from megatron.training import theoretical_memory_usage as tmu

    saved_argv, saved_env = sys.argv, dict(os.environ)
    os.environ.update({"WORLD_SIZE": str(case["world_size"]), "RANK": "0", "LOCAL_RANK": "0", **case.get("env", {})})
    sys.argv = ["pretrain_gpt.py"] + case["argv"]
    try:
        import torch
        from megatron.core.tokenizers.utils.build_tokenizer import vocab_size_with_padding

        arguments.get_device_arch_version = lambda: 9  # Hopper: validate_args asks the device (none here)
        torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
        args = arguments.parse_args()
        arguments.validate_args(args, {})
        # build_tokenizer sets padded_vocab_size at launch (core/tokenizers/utils/build_tokenizer.py:124)
        args.padded_vocab_size = vocab_size_with_padding(args.vocab_size, args, logging_enabled=False)
        m = args.global_batch_size // (args.micro_batch_size * args.data_parallel_size)
        w = tmu.compute_weight_and_optimizer_memory(args)
        if args.sequence_parallel and args.recompute_granularity == "selective":
            a = tmu.compute_activation_memory(args, num_microbatches=m)
            which = "with_sp"
        else:
            a = tmu.compute_activation_memory_without_sp(args, num_microbatches=m)
            which = "without_sp"
    except BaseException as exc:  # validate_args asserts; argparse exits
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    return {"weights_and_optimizer_bytes": w, "activation_bytes": a,
            "facts": {"data_parallel_size": args.data_parallel_size, "num_microbatches": m, "activation_formula": which,
                      "padded_vocab_size": args.padded_vocab_size}}


def main() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.CRITICAL)
    if len(sys.argv) >= 3 and sys.argv[1] == "--recipes":
        folder, only = sys.argv[2], set(sys.argv[3:])
        manifest = [json.loads(line) for line in open(os.path.join(folder, "manifest.jsonl")) if line.strip()]
        cases = [{"kind": "bridge", "file": os.path.join(folder, m["file"]), "world_size": m["world_size"],
                  "recipe": m["recipe"]} for m in manifest if not only or m["recipe"] in only]
    else:
        cases = json.load(sys.stdin)
    results = []
    with contextlib.redirect_stdout(io.StringIO()):
        for c in cases:
            r = bridge_case(c) if c["kind"] == "bridge" else mlm_case(c)
            if "recipe" in c:
                r["recipe"] = c["recipe"]
            results.append(r)
    sys.stdout.write(MARKER + json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
