"""LM3xx — Megatron-LM launches: data-parallel overlap, the distributed optimizer, FSDP, DDP buckets.

Megatron-LM never turns DP overlap on by itself (Bridge does, with the distributed optimizer): every
overlap is a flag, and ``validate_args`` (megatron-core 0.19.2, ``megatron/training/arguments.py:990-1145``)
asserts the combinations it cannot run.
"""

from __future__ import annotations

from overlap_cli.results import Fix
from overlap_cli.rules.lm import LM, add_flag, assertion_findings, lm_finding, remove_flag
from overlap_cli.rules.registry import rule


@rule("LM301", "overlap-param-gather-needs-distopt", "error", "--overlap-param-gather without the distributed optimizer",
      fix="unsafe", frameworks=LM)
def opg_needs_distopt(view):
    """
    ## What it does
    Flags `--overlap-param-gather` without `--use-distributed-optimizer` (nor Megatron-FSDP nor the
    `dist_muon` optimizer).

    ## Why it matters
    Parameters are all-gathered only by the distributed optimizer; `validate_args` asserts (megatron-core
    0.19.2, `megatron/training/arguments.py:991`): `--overlap-param-gather only supported with
    distributed optimizer, megatron fsdp, or dist_muon`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --overlap-grad-reduce: true
      --overlap-param-gather: true
    ```

    ## Fix
    Adds `--use-distributed-optimizer`. **Unsafe**: it shards the optimizer state, changing memory and
    checkpoints.
    """
    yield from assertion_findings(
        view, "LM301", ("opg-distopt",),
        Fix("unsafe", "add --use-distributed-optimizer (param gather overlap needs it)", (add_flag(view, "use_distributed_optimizer"),)),
    )


@rule("LM302", "overlap-param-gather-needs-grad-reduce", "error", "--overlap-param-gather without --overlap-grad-reduce",
      fix="crash", frameworks=LM)
def opg_needs_ogr(view):
    """
    ## What it does
    Flags `--overlap-param-gather` without `--overlap-grad-reduce`.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:994`): `Must use
    --overlap-param-gather with --overlap-grad-reduce`. The job dies at start-up.

    ## Example
    ```yaml
    MODEL_ARGS:
      --use-distributed-optimizer: true
      --overlap-param-gather: true
    ```

    ## Fix
    Adds `--overlap-grad-reduce` beside `--use-distributed-optimizer`. **Safe (a) — removes a launch
    crash**: the param-gather overlap the launch asked for runs only with it.
    """
    yield from assertion_findings(
        view, "LM302", ("opg-ogr",),
        Fix("safe", "add --overlap-grad-reduce (--overlap-param-gather needs it)", (add_flag(view, "overlap_grad_reduce"),)),
    )


@rule("LM303", "dp-overlap-off", "info", "DP > 1 without --overlap-grad-reduce: gradients are reduced after the backward pass",
      fix="unsafe", frameworks=LM)
def dp_overlap_off(view):
    """
    ## What it does
    Reports a launch with more than one data-parallel rank and no `--overlap-grad-reduce`.

    ## Why it matters
    Megatron-LM never turns DP overlap on by itself: without the flag the gradient reduce-scatter /
    all-reduce runs after the backward pass, and `resolve_ddp_bucket_size` returns no bucket size
    (megatron-core 0.19.2, `megatron/training/training.py:1552-1567`). With it the default bucket is
    max(40,000,000, 1,000,000 · DP · CP) parameters.

    ## Example
    Checked with `--world-size 8`:
    ```yaml
    MODEL_ARGS:
      --use-distributed-optimizer: true
    ```

    ## Fix
    Adds `--overlap-grad-reduce`. **Unsafe**: it changes what runs (communication during the backward
    pass, bucketed gradients).
    """
    args = view.args
    if args.get("overlap_grad_reduce") is not False or args.get("use_torch_fsdp2") is True or view.inference:
        return
    if view.dp is not None and view.dp <= 1:
        return
    dp = f"DP={view.dp}" if view.dp is not None else f"if DP > 1 ({view.dp_unknown_why or 'DP not known'})"
    distopt = args.get("use_distributed_optimizer") is True
    yield lm_finding(
        view, "LM303", "info",
        f"{dp}: no --overlap-grad-reduce, so gradients are reduced after the backward pass and ddp.bucket_size "
        f"is None (Megatron-LM never turns DP overlap on by itself)"
        + ("; the distributed optimizer's --overlap-param-gather needs it too" if distopt else ""),
        "use_distributed_optimizer" if view.given("use_distributed_optimizer") else None,
        Fix("unsafe", "add --overlap-grad-reduce (overlap the gradient reduction with the backward pass)",
            (add_flag(view, "overlap_grad_reduce"),)),
    )


@rule("LM304", "optimizer-step-overlap-prerequisites", "error",
      "--overlap-param-gather-with-optimizer-step outside its supported setup", frameworks=LM)
def ops_prerequisites(view):
    """
    ## What it does
    Flags `--overlap-param-gather-with-optimizer-step` without the distributed optimizer,
    `--overlap-param-gather`, a virtual pipeline, or with distributed checkpointing.

    ## Why it matters
    `validate_args` asserts each in turn (megatron-core 0.19.2, `megatron/training/arguments.py:1032-1040`),
    e.g. `--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline parallelism`.
    Distributed checkpointing is every `--ckpt-format` but `torch` (`update_use_dist_ckpt`), so the
    default `torch_dist` asserts `--overlap-param-gather-with-optimizer-step not supported with distributed
    checkpointing yet`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --use-distributed-optimizer: true
      --overlap-grad-reduce: true
      --overlap-param-gather: true
      --overlap-param-gather-with-optimizer-step: true
    ```

    ## Fix
    None offered.
    """
    yield from assertion_findings(view, "LM304", ("ops",))


@rule("LM305", "num-buckets-with-bucket-size", "error", "--ddp-num-buckets together with --ddp-bucket-size", frameworks=LM)
def num_buckets_with_size(view):
    """
    ## What it does
    Flags `--ddp-num-buckets` and `--ddp-bucket-size` on the same launch.

    ## Why it matters
    `get_megatron_ddp_config` passes both to Megatron-Core's `DistributedDataParallelConfig`, whose
    `__post_init__` asserts (megatron-core 0.19.2,
    `megatron/core/distributed/distributed_data_parallel_config.py:270`): `Cannot specify both num_buckets
    and bucket_size`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --overlap-grad-reduce: true
      --ddp-num-buckets: 8
      --ddp-bucket-size: 50000000
    ```

    ## Fix
    None offered: keep one of the two.
    """
    yield from assertion_findings(view, "LM305", ("num-buckets",))


@rule("LM306", "fsdp2-with-distopt", "error", "--use-torch-fsdp2 with the distributed optimizer", fix="unsafe", frameworks=LM)
def fsdp2_with_distopt(view):
    """
    ## What it does
    Flags `--use-torch-fsdp2` together with `--use-distributed-optimizer`.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:1004`): `--use-torch-fsdp2
    is not supported with MCore's distributed optimizer`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --use-torch-fsdp2: true
      --use-distributed-optimizer: true
    ```

    ## Fix
    Removes `--use-distributed-optimizer`. **Unsafe**: which sharding runs is your choice.
    """
    yield from assertion_findings(
        view, "LM306", ("fsdp2-distopt",),
        Fix("unsafe", "remove --use-distributed-optimizer (Torch-FSDP2 shards by itself)",
            (remove_flag(view, "use_distributed_optimizer"),)),
    )


@rule("LM307", "settings-turned-off", "warning", "validate_args turns the distributed optimizer or param-gather overlap off",
      frameworks=LM)
def settings_turned_off(view):
    """
    ## What it does
    Reports flags `validate_args` overrides: `--use-megatron-fsdp` turns the distributed optimizer on
    (info), `--freeze-all-layers` turns `--use-distributed-optimizer` and `--overlap-param-gather` off.

    ## Why it matters
    megatron-core 0.19.2, `megatron/training/arguments.py:1107-1112` prints `Megatron-FSDP is only
    compatible with --use-distributed-optimizer. Using DistributedOptimizer...`; `arguments.py:1759-1768`
    prints `--freeze-all-layers incompatible with overlap_param_gather. Disabling overlap_param_gather.`
    The run then differs from what the flags say.

    ## Example
    ```yaml
    MODEL_ARGS:
      --freeze-all-layers: true
      --use-distributed-optimizer: true
      --overlap-grad-reduce: true
      --overlap-param-gather: true
    ```

    ## Fix
    None offered.
    """
    for f in view.forced("mfsdp-distopt"):
        yield lm_finding(view, "LM307", "info", f"validate_args prints \"{f.printed}\" ({f.at})", "use_megatron_fsdp")
    for f in view.forced("freeze"):
        yield lm_finding(view, "LM307", "warning", f"validate_args prints \"{f.printed}\" ({f.at})", f.dest)


@rule("LM308", "fp8-param-gather-needs-distopt", "error", "--fp8-param-gather without the distributed optimizer or FSDP",
      fix="unsafe", frameworks=LM)
def fp8_param_gather_needs_distopt(view):
    """
    ## What it does
    Flags `--fp8-param-gather` without `--use-distributed-optimizer`, `--use-torch-fsdp2` or
    `--use-megatron-fsdp`.

    ## Why it matters
    FP8 parameters are all-gathered in FP8 by the sharded optimizer; plain DDP has nothing to gather.
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:1061`): `--fp8-param-gather
    only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --fp8-format: hybrid
      --fp8-param-gather: true
    ```

    ## Fix
    Adds `--use-distributed-optimizer`. **Unsafe**: it shards the optimizer state.
    """
    yield from assertion_findings(
        view, "LM308", ("fp8-param-gather",),
        Fix("unsafe", "add --use-distributed-optimizer (FP8 parameter gather needs it)", (add_flag(view, "use_distributed_optimizer"),)),
    )


@rule("LM309", "delay-wgrad-launch-checks", "error", "--delay-wgrad-compute outside what validate_args allows",
      frameworks=LM)
def delay_wgrad_launch_checks(view):
    """
    ## What it does
    Flags `--delay-wgrad-compute` without Transformer Engine layers (`--transformer-impl local`), and with
    `--overlap-grad-reduce` on a Transformer Engine older than 2.8.0 (`--te-version`; unknown: info).

    ## Why it matters
    Before Megatron-Core's own checks (EP704), `validate_args` asserts (megatron-core 0.19.2,
    `megatron/training/arguments.py:1822-1828`): `Delaying wgrad compute is only supported with
    transformer_engine implementation`, and `overlap_grad_reduce is only supported with TE >= 2.8.0 when
    enabling delay_wgrad_compute` — the delayed weight gradients must reach the overlapped grad reduce.

    ## Example
    Checked with `--te-version 2.7`:
    ```yaml
    MODEL_ARGS:
      --expert-model-parallel-size: 8
      --num-experts: 8
      --overlap-moe-expert-parallel-comm: true
      --delay-wgrad-compute: true
      --overlap-grad-reduce: true
      --bf16: true
    ```

    ## Fix
    None offered: a newer Transformer Engine, or no delayed wgrad.
    """
    yield from assertion_findings(view, "LM309", ("delay-wgrad",))
    if not view.delay_wgrad_ogr_te:
        return
    from overlap_cli.frameworks.megatron_lm import facts as lm
    from overlap_cli.frameworks.megatron_lm.cites import cite
    from overlap_cli.rules.common import te_version, unknown_version_text
    from overlap_cli.launch_profile import versions

    have = te_version(view)
    status = versions.status(have, "2.8.0")
    if status == "too-old":
        yield lm_finding(view, "LM309", "error", f"Transformer Engine {have} is older than 2.8.0: validate_args asserts "
                         f"\"{lm.DELAY_WGRAD_OGR_TE}\" ({cite(lm.DELAY_WGRAD_OGR_TE_AT, view.launch.core_version)})",
                         "overlap_grad_reduce")
    elif status == "unknown":
        yield lm_finding(view, "LM309", "info", f"--delay-wgrad-compute with --overlap-grad-reduce needs Transformer "
                         f"Engine >= 2.8.0 ({unknown_version_text(have, 'Transformer Engine', '--te-version')})",
                         "overlap_grad_reduce")
