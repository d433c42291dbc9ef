"""UB606-UB609 — whether the userbuffers config fits the run and is read at all: a preset tuned for
another run, the backend Transformer Engine bootstraps userbuffers with, a config TP overlap never reads,
and GEMM names or fields nobody reads. UB601-UB605 are in ``ub``.
"""

from __future__ import annotations

from overlap_cli.results import Edit
from overlap_cli.frameworks.bridge import preset_fit
from overlap_cli.rules.common import finding, set_, unsafe
from overlap_cli.rules.registry import rule
from overlap_cli.rules.ub import CO_KEY, exact_fits, set_preset, several_fit


@rule("UB606", "preset-does-not-fit", "warning", "The userbuffers preset was tuned for a different run", fix="unsafe")
def preset_mismatch(view):
    """
    ## What it does
    Compares the preset a `tp_comm_overlap_cfg` mapping equals with the run: precision (FP8 or not, after
    mixed precision), TP, CP, hidden size, micro-batch size (`train.micro_batch_size`), sequence length
    (`model.seq_length`, else `dataset.seq_length`), GPU (target `--gpu`: h100/h200 use the h100
    presets, b200/b300/gb200/gb300 the b200 ones) and LoRA (a `peft` section). The message names every
    field that differs with both values. When the mapping equals several presets (some hold identical
    values), all are named and the one that fits the run best is used.

    ## Why it matters
    Nothing upstream reads the name: the userbuffers are sized from the model
    (`[seq_length * micro_batch_size / CP, hidden_size]`, initialize.py:355-358), so a preset tuned for
    another shape runs, mis-tuned. Bridge's own recipes do this, e.g. TP2 presets on TP1
    recipes, TP4/seqlen8192 presets on TP8/16k runs. Precision or TP differences are warnings: they change
    what the tuned numbers mean (FP8 buffers, ring length, GEMM width per rank). CP, hidden size,
    micro-batch size and sequence length only change the buffer size, and GPU/LoRA say where the numbers
    were measured: info. CP is info on purpose (it enters only through the buffer's row count, like the
    sequence length); Bridge's `llama3_70b_pretrain_32gpu_h100_bf16_config` pairs the h8192/tp4 preset with
    CP=2, and no CP2 preset exists for that hidden size.

    ## Example
    The values of `userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192` (tuned for TP=4) on a TP=2 run.
    Checked with `--gpu b200`:
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: true, hidden_size: 8192, seq_length: 8192}
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        qkv_fprop: {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: false}
        qkv_dgrad: {method: bulk, num_sm: 4, cga_size: 2, set_sm_margin: false}
        qkv_wgrad: {method: bulk, num_sm: 24, cga_size: 2, set_sm_margin: false}
        proj_fprop: {method: pipeline, num_sm: 24, cga_size: 2, num_splits: 4, set_sm_margin: true}
        proj_dgrad: {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: false}
        fc1_fprop: {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: false}
        fc1_dgrad: {method: bulk, num_sm: 2, cga_size: 2, set_sm_margin: false}
        fc1_wgrad: {method: bulk, num_sm: 4, cga_size: 2, set_sm_margin: false}
        fc2_fprop: {method: pipeline, num_sm: 16, cga_size: 2, num_splits: 4, set_sm_margin: true}
        fc2_dgrad: {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: false}
    ```
    On B200 the TP=2 preset `userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192` fits every known field, so
    the fix is safe; with `--gpu h100` it is only the nearest preset and the fix is unsafe.

    ## Fix
    Replacing it with a preset that fits every known field is **unsafe** too: the name then matches the
    run, but other SM counts and splits replace the ones the file tuned.
    Replacing it with the nearest, still imperfect preset is **unsafe**. With no better preset, none is
    offered: keep it, tune your own, or set null for Transformer Engine's defaults.
    """
    ub = view.ub
    if ub is None or not ub.named or not (ub.tp_effective or (view.tp_requested and view.tp_gate == "sp")):
        return
    current = preset_fit.rank(ub.shape, [ub.preset])[0]
    if current.exact:
        return
    others = [n for n in ub.matches if n != ub.preset]
    same = f" (identical values: {', '.join(others)})" if others else ""
    message = f"preset {ub.preset}{same} was tuned for a different run: " + "; ".join(d.describe() for d in current.diffs)
    fix = None
    exact, every = exact_fits(ub.shape)
    if exact and exact not in ub.matches:
        message += f"; {exact} fits this run"
        fix = unsafe(f"use preset {exact}, which fits this run", set_preset(exact))  # other SM counts and splits
    elif every:
        message += "; " + several_fit(every, ub.shape)
    else:
        nearest = preset_fit.rank(ub.shape)[0]
        if nearest.name not in ub.matches and preset_fit.score(list(nearest.diffs)) < preset_fit.score(list(current.diffs)):
            message += f"; closest shipped preset: {nearest.name} (" + "; ".join(d.describe() for d in nearest.diffs) + ")"
            fix = unsafe(f"use the nearest preset {nearest.name} (still not an exact fit)", set_preset(nearest.name))
        else:
            message += "; no shipped preset fits better (keep it, tune your own, or null for Transformer Engine's defaults)"
    if ub.key != CO_KEY:
        fix = None
    yield finding(view, "UB606", current.severity, message, ub.key, fix)


@rule("UB607", "tp-comm-bootstrap-backend", "error", "tp_comm_bootstrap_backend Transformer Engine rejects or picks by itself", fix="unsafe")
def bootstrap_backend(view):
    """
    ## What it does
    Checks the backend Transformer Engine bootstraps userbuffers with: a value outside `nccl`, `mpi`,
    `gloo` is an error; `mpi`, or an explicit null, is a warning. Only checked when TP overlap is
    effectively on (otherwise userbuffers are never initialised); an invalid value is then a warning.

    ## Why it matters
    `CommOverlapConfig.tp_comm_bootstrap_backend` defaults to "nccl" (comm_overlap.py:386) and Bridge
    passes the value to `initialize_ub` (comm_overlap.py:633, initialize.py:371-377). Transformer Engine
    asserts it is one of gloo/mpi/nccl and that PyTorch was built with it; for `None` it picks MPI when
    PyTorch has it, then Gloo, then NCCL. MPI bootstrapping needs an MPI launch
    environment: `MPI_Init_thread` failures were reported in Megatron-Bridge#650/#665 and Megatron-LM#608.
    An explicit `comm_overlap.tp_comm_bootstrap_backend: null` is copied to the model as None.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true, tp_comm_bootstrap_backend: mpi}
    ```

    ## Fix
    Sets the backend to `nccl`. **Unsafe**: it changes how userbuffers bootstrap (use it unless you launch
    with MPI on purpose).
    """
    if not view.comm_overlap_present and view.get_final("model", "tp_comm_overlap") is not True:
        return
    on = view.get_final("model", "tp_comm_overlap") is True
    key = "comm_overlap.tp_comm_bootstrap_backend" if view.comm_overlap_present else "model.tp_comm_bootstrap_backend"
    if view.comm_overlap_present:
        co = view.cfg.data["comm_overlap"]
        if "tp_comm_bootstrap_backend" not in co:
            return  # the default "nccl"
        value = co["tp_comm_bootstrap_backend"]
    else:
        value = view.get_final("model", "tp_comm_bootstrap_backend")
    fix = unsafe("set tp_comm_bootstrap_backend: nccl", set_(key, "nccl"))
    if value is not None and value not in ("nccl", "mpi", "gloo"):
        yield finding(
            view, "UB607", "error" if on else "warning",
            f"tp_comm_bootstrap_backend {value!r} is not nccl, mpi or gloo: Transformer Engine asserts on it when "
            "it initialises userbuffers" + ("" if on else " (TP overlap is off now, so not yet)"),
            key, fix,
        )  # fmt: skip
    elif on and value == "mpi":
        yield finding(
            view, "UB607", "warning",
            "tp_comm_bootstrap_backend 'mpi' needs a PyTorch build with MPI and an MPI launch (MPI_Init failures are "
            "a known start-up problem); nccl works under torchrun and Slurm alike",
            key, fix,
        )  # fmt: skip
    elif on and value is None:
        yield finding(
            view, "UB607", "warning",
            "tp_comm_bootstrap_backend is null: Transformer Engine then picks MPI when PyTorch has it, else Gloo, "
            "else NCCL -- the launch machine decides (Bridge's default is nccl)",
            key, fix,
        )  # fmt: skip


@rule("UB608", "tp-overlap-cfg-unused", "info", "tp_comm_overlap_cfg set but TP overlap is not requested", fix="unsafe")
def cfg_unused(view):
    """
    ## What it does
    Flags a non-null `tp_comm_overlap_cfg` when TP overlap is not requested (`comm_overlap.tp_comm_overlap:
    false`, or `model.tp_comm_overlap: false` in a config without `comm_overlap`).

    ## Why it matters
    `_apply_cfgs` copies the config onto the model, but userbuffers are only initialised when
    `model.tp_comm_overlap` is true (comm_overlap.py:619, initialize.py:236-237), so the preset does
    nothing. The cases where the TP gate switches a request off are reported by TP101-TP103 instead.

    ## Example
    ```yaml
    comm_overlap:
      tp_comm_overlap: false
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        qkv_fprop: {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: false}
    ```

    ## Fix
    Removes `tp_comm_overlap_cfg`. **Unsafe**: the config does nothing while TP overlap is off,
    but a recipe may switch TP overlap off on purpose and keep its tuned preset for when it is back on.
    The removal leaves a note where the config was. (Turn TP overlap on instead if that was the intent.)
    """
    ub = view.ub
    if ub is None or ub.kind == "null":
        return
    if view.comm_overlap_present:
        if view.tp_requested:
            return
        why = "comm_overlap.tp_comm_overlap is false"
    elif view.get_final("model", "tp_comm_overlap") is True:
        return
    else:
        why = "model.tp_comm_overlap is false"
    what = f"preset {ub.preset}" if ub.named else ("a custom config" if ub.kind == "mapping" else repr(ub.given))
    yield finding(
        view, "UB608", "info",
        f"{ub.key} holds {what} but {why}: userbuffers are never initialised, so it does nothing",
        ub.key, unsafe(f"remove {ub.key} (unused)", Edit("remove", ub.key)),
    )  # fmt: skip


@rule("UB609", "unknown-userbuffers-key", "warning", "A GEMM name or field nobody reads in tp_comm_overlap_cfg")
def unknown_keys(view):
    """
    ## What it does
    Flags keys in a `tp_comm_overlap_cfg` mapping that are not one of the ten GEMMs of
    TransformerLayerTPOverlapCfg, and per-GEMM fields the entry's dataclass (or, without `_target_`,
    Transformer Engine's `add_ub`) does not take.

    ## Why it matters
    The catalogue calls unknown GEMM names a KeyError in Transformer Engine; the source says otherwise:
    TE only iterates over the names it knows, and Bridge never passes an unknown one on. In the lenient
    mode `ConfigContainer.from_yaml` uses, keyword arguments a `_target_` does not take are dropped with a
    log warning (megatron/training/config/instantiate_utils.py, `_filter_kwargs_for_target`); merged
    overrides skip unknown keys the same way. So a typo like `qkv_fpro` silently loses its settings:
    warning. A field in an entry *without* `_target_` reaches `add_ub(**cfg)` unchanged and raises
    TypeError at start-up: error.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 2, sequence_parallel: true}
    comm_overlap:
      tp_comm_overlap: true
      tp_comm_overlap_cfg:
        _target_: megatron.bridge.training.comm_overlap.TransformerLayerTPOverlapCfg
        qkv_fpro: {method: ring_exchange, aggregate: true}   # typo: dropped
    ```

    ## Fix
    None offered: which GEMM or field a typo meant is a guess (the message names the closest one), and
    a wrong guess would apply tuning values to another GEMM. Rename or remove the key yourself.
    """
    ub = view.ub
    if ub is None or ub.kind != "mapping":
        return
    from overlap_cli.frameworks.bridge import te_userbuffers  # only for a userbuffers mapping: start-up time

    for p in te_userbuffers.structure_problems(ub.given, te_reads=ub.tp_effective):
        if p.code == "UB609":
            where = f"{ub.key}.{p.gemm}.{p.field}" if p.gemm else f"{ub.key}.{p.field}"
            yield finding(view, "UB609", p.severity, p.message, where)
