"""DP3xx — data-parallel overlap, the distributed optimizer and gradient buckets."""

from __future__ import annotations

from overlap_cli import lazyre
from overlap_cli.frameworks.bridge import facts as bridge
from overlap_cli.results import Edit
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding, fmt, remove, unsafe


def _human_bytes(n: int) -> str:
    units = ("B", "KiB", "MiB", "GiB")
    i = 0
    while i < len(units) - 1 and n >= 1024 ** (i + 1):
        i += 1
    if i == 0:
        return f"{n:.0f} B"
    whole = n // 1024**i
    if whole >= 10**15:  # past what a float divides (a 400-digit bucket_size is still a valid int)
        return f"{whole:,} {units[i]}"
    return f"{n / 1024**i:.1f} {units[i]}".replace(".0 ", " ")


@rule("DP301", "dp-defaults-applied", "info", "Bridge's data-parallel overlap defaults apply")
def dp_defaults(view):
    """
    ## What it does
    Reports the data-parallel settings Bridge computes when `comm_overlap` is present and the distributed
    optimizer is on: with DP > 1 `bucket_size = 128·1024·1024 = 134,217,728` **parameters**,
    `overlap_grad_reduce` and `overlap_param_gather` on, and `align_param_gather` on with PP > 1 and VPP > 1.
    With DP = 1 they are forced off. Values set in `comm_overlap` win.

    ## Why it matters
    `bucket_size` counts parameters, not bytes. A bucket's gradient buffer is `bucket_size × 4` bytes with
    `grad_reduce_in_fp32` (the default of every bf16 recipe) and `× 2` with bf16 gradients. The message
    gives the byte size for the effective gradient dtype. Without a world size, DP is unknown and so are
    these values; the effective table says what they become.

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: true}
    comm_overlap: {tp_comm_overlap: false}   # DP=16: bucket 134,217,728 parameters, both overlaps on
    ```

    ## Fix
    None offered: this is a report of what Bridge picks, not a problem. To change a value, set it in
    `comm_overlap` (e.g. `comm_overlap.bucket_size`), where it wins over Bridge's default.
    """
    if not view.dp_path_ran:
        return
    # Every value the message names is read from the effective table, and a value the file sets in
    # comm_overlap is reported as the file's, never as Bridge's default (comm_overlap.py:563-577: the
    # user's comm_overlap fields replace the DP defaults after they are computed).
    decided = [k for k in _DP301_KEYS if k not in view.comm_overlap_user]
    if view.dp is None:
        if view.dp_error:  # the world size was given; DP is undefined, Bridge stops at start-up (DP307)
            head = f"data-parallel size undefined ({view.dp_error}; DP307): the DP-dependent values are unknown"
        else:
            head = "data-parallel size unknown (give --world-size)"
        named = [k for k in decided if k != "align_param_gather" or (view.pp > 1 and view.vp > 1)]
        if named:
            # "key=value" in a message states an effective value; a conditional one is written "key to value".
            what = _and([("bucket_size to 134,217,728 parameters" if k == "bucket_size" else k) for k in named])
            if "align_param_gather" in named:
                what = what.replace("align_param_gather", "align_param_gather (PP>1, VPP>1)")
            yield finding(
                view, "DP301", "info",
                f"{head}: with DP > 1 Bridge sets {what}; with DP = 1 it forces them off" + _user_part(view),
                "ddp.use_distributed_optimizer",
            )
        else:
            yield finding(view, "DP301", "info", head + _user_part(view).replace("; ", ": ", 1), "ddp.use_distributed_optimizer")
        return
    if view.dp > 1:
        bucket = view.value("ddp.bucket_size")
        fp32 = bool(view.value("ddp.grad_reduce_in_fp32"))
        size = ""
        if isinstance(bucket, int) and not isinstance(bucket, bool):
            width = 4 if fp32 else 2
            size = f" = {_human_bytes(bucket * width)} of {'fp32' if fp32 else 'bf16/fp16'} gradients per bucket"
        yield finding(
            view,
            "DP301",
            "info",
            f"DP={view.dp}: bucket_size={fmt(bucket)} parameters{size}; overlap_grad_reduce="
            f"{fmt(view.value('ddp.overlap_grad_reduce'))}, overlap_param_gather={fmt(view.value('ddp.overlap_param_gather'))}, "
            f"align_param_gather={fmt(view.value('ddp.align_param_gather'))}",
            "ddp.use_distributed_optimizer",
        )
        return
    # DP = 1: Bridge's DP path turns the overlaps off and bucket_size to null -- unless comm_overlap sets
    # them, or validate() syncs overlap_param_gather back on from the optimizer (config.py:1969-1981).
    forced = [k for k in decided if k != "bucket_size" and view.value(f"ddp.{k}") is not True]
    others = [
        f"{k}={fmt(view.value(f'ddp.{k}'))} ({view.effective[f'ddp.{k}'].reason})"
        for k in decided
        if k != "bucket_size" and k not in forced
    ]
    parts = []
    if forced:
        parts.append("Bridge forces " + _and(forced) + " off")
    if "bucket_size" in decided and view.value("ddp.bucket_size") is None:
        parts.append("bucket_size to null" if forced else "Bridge sets bucket_size to null")
    msg = "DP=1: " + (" and ".join(parts) if parts else "Bridge's DP defaults do not apply")
    if others:
        msg += "; " + "; ".join(others)
    yield finding(view, "DP301", "info", msg + _user_part(view), "ddp.use_distributed_optimizer")


_DP301_KEYS = ("bucket_size", "overlap_grad_reduce", "overlap_param_gather", "align_param_gather")


def _and(names: list) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _user_part(view) -> str:
    """'; comm_overlap sets overlap_grad_reduce=true' for the DP301 keys the file sets in comm_overlap."""
    mine = [f"{k}={fmt(view.value(f'ddp.{k}'))}" for k in _DP301_KEYS if k in view.comm_overlap_user]
    return "; comm_overlap sets " + ", ".join(mine) if mine else ""


@rule("DP302", "dp-overlap-ignored-no-distopt", "warning", "DP overlap set in comm_overlap is ignored without the distributed optimizer", fix="unsafe")
def ignored_without_distopt(view):
    """
    ## What it does
    Flags `comm_overlap.{overlap_grad_reduce, overlap_param_gather, align_param_gather, bucket_size,
    overlap_param_gather_with_optimizer_step}` when `ddp.use_distributed_optimizer` is false at setup.

    ## Why it matters
    Bridge applies its DP path only with Megatron's DDP **and** `ddp.use_distributed_optimizer: true`
    (comm_overlap.py `setup`). Otherwise these fields are silently ignored; plain DDP gets no overlap
    unless `ddp.overlap_grad_reduce` is set by hand.

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: false}
    comm_overlap: {tp_comm_overlap: false, overlap_grad_reduce: true}
    ```

    ## Fix
    Sets `ddp.use_distributed_optimizer: true` and `optimizer.use_distributed_optimizer: true`.
    **Unsafe**: the distributed optimizer shards optimizer state, changes memory use and the checkpoint
    format. The other way out, `ddp.overlap_grad_reduce: true` with plain DDP, overlaps only the gradient
    reduction and drops the rest of what `comm_overlap` asks for; the fix prefers making the request in
    `comm_overlap` work. Set `ddp.overlap_grad_reduce: true` yourself if you want plain DDP.
    """
    if not view.comm_overlap_present or view.distopt_at_setup:
        return
    ignored = [k for k in bridge.DP_FIELDS if view.cfg.get(("comm_overlap", k)) is not None]
    if ignored:
        yield finding(
            view,
            "DP302",
            "warning",
            f"comm_overlap.{', '.join(ignored)} ignored: Bridge applies DP overlap only with "
            "ddp.use_distributed_optimizer: true",
            f"comm_overlap.{ignored[0]}",
            unsafe(
                "enable the distributed optimizer in ddp and optimizer (Bridge's DP overlap needs it)",
                Edit("set", "ddp.use_distributed_optimizer", True),
                Edit("set", "optimizer.use_distributed_optimizer", True),
            ),
        )


@rule("DP303", "distopt-out-of-sync", "warning", "optimizer.use_distributed_optimizer true but ddp's false: DP defaults skipped", fix="unsafe")
def distopt_out_of_sync(view):
    """
    ## What it does
    Flags `optimizer.use_distributed_optimizer: true` with `ddp.use_distributed_optimizer: false` (or
    missing) while `comm_overlap` is present.

    ## Why it matters
    comm_overlap reads the ddp flag, sees false, and skips every DP default. Later `validate()` turns the
    distributed optimizer on for both with a warning ("Distributed optimizer settings were not in sync").
    The run uses the distributed optimizer without Bridge's bucket size and overlap flags. Bridge's own
    `llama31_405b_sft_128gpu_h100_bf16_config` recipe has this shape.

    ## Example
    ```yaml
    optimizer: {use_distributed_optimizer: true}
    comm_overlap: {tp_comm_overlap: false}   # ddp.use_distributed_optimizer left at false
    ```

    ## Fix
    Sets `ddp.use_distributed_optimizer: true`. **Unsafe**: validate() turns it on anyway, but
    comm_overlap then applies Bridge's DP defaults (bucket size; overlapped grad reduce and param gather
    on at DP > 1, off at DP = 1), which today's run does not get: a change of the run's tuning.
    """
    if not view.comm_overlap_present:
        return
    if view.cfg.get(("optimizer", "use_distributed_optimizer")) is True and not view.distopt_at_setup:
        yield finding(
            view,
            "DP303",
            "warning",
            "optimizer.use_distributed_optimizer: true but ddp.use_distributed_optimizer: false in the file: comm_overlap skips "
            "the DP defaults, then validate() turns the distributed optimizer on anyway",
            "ddp.use_distributed_optimizer" if view.cfg.has(("ddp", "use_distributed_optimizer")) else "optimizer.use_distributed_optimizer",
            unsafe(  # comm_overlap then applies Bridge's DP defaults, which today's run does not get
                "set ddp.use_distributed_optimizer: true (comm_overlap reads the ddp flag)",
                Edit("set", "ddp.use_distributed_optimizer", True),
            ),
        )


_UNIT = lazyre.compile(r"^\s*[0-9.]+\s*([kKmMgGtT]i?[bB]?|[bB]|bytes?)\s*$")


@rule("DP304", "bad-bucket-size", "error", "bucket_size is not a positive integer count of parameters")
def bad_bucket_size(view):
    """
    ## What it does
    Flags `bucket_size` in `comm_overlap` or `ddp` that is not a positive integer: a string with a unit
    (`512MB`), a float, zero, a negative number, a boolean.

    ## Why it matters
    `bucket_size` is the maximum number of **parameters** per bucket (Megatron-Core
    `DistributedDataParallelConfig`), not a byte count. A string or float reaches the bucketing code and
    fails or misbehaves at start-up; a unit shows the value was meant as bytes.

    ## Example
    ```yaml
    ddp: {use_distributed_optimizer: true}
    comm_overlap: {tp_comm_overlap: false, bucket_size: 512MB}
    ```

    ## Fix
    None offered: which count was meant is a guess (a byte size becomes a different parameter count
    for fp32 and for bf16 gradients). Write a parameter count yourself (e.g. 134217728 = Bridge's
    default), or remove the key to get Bridge's default.
    """
    for section in ("comm_overlap", "ddp"):
        if not view.cfg.has((section, "bucket_size")):
            continue
        value = view.cfg.get((section, "bucket_size"))
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            continue
        if isinstance(value, str) and _UNIT.match(value):
            why = "given with a unit; bucket_size counts parameters, not bytes"
        else:
            why = f"{fmt(value)} is not a positive integer (a number of parameters)"
        yield finding(view, "DP304", "error", f"{section}.bucket_size: {why}", f"{section}.bucket_size")


@rule("DP305", "num-buckets-with-bucket-size", "error", "ddp.num_buckets together with an effective bucket_size", fix="unsafe")
def num_buckets_conflict(view):
    """
    ## What it does
    Flags `ddp.num_buckets` when the effective `ddp.bucket_size` is set (by the file or by Bridge's DP
    default with DP > 1).

    ## Why it matters
    `DistributedDataParallelConfig.__post_init__` asserts "Cannot specify both num_buckets and
    bucket_size" at `ddp.finalize()` inside `validate()` — after comm_overlap wrote 134,217,728. Setting
    `comm_overlap.bucket_size: null` does not help (null means "auto").

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: true, num_buckets: 8}
    comm_overlap: {tp_comm_overlap: false}   # DP=16: Bridge writes bucket_size=134,217,728
    ```

    ## Fix
    Removes `ddp.num_buckets`. **Unsafe**: bucketing then follows `bucket_size`, which changes how
    gradients are grouped for communication.
    """
    nb = view.cfg.get(("ddp", "num_buckets"))
    if nb is None:
        return
    bucket = view.value("ddp.bucket_size")
    if bucket is not None:
        yield finding(
            view,
            "DP305",
            "error",
            f"ddp.num_buckets={fmt(nb)} together with bucket_size={fmt(bucket)}: Megatron-Core asserts "
            "'Cannot specify both num_buckets and bucket_size'",
            "ddp.num_buckets",
            unsafe("remove ddp.num_buckets (cannot be combined with bucket_size)", remove("ddp.num_buckets")),
        )
    elif view.dp is None and view.dp_path_ran and view.cfg.get(("comm_overlap", "bucket_size")) is None:
        yield finding(
            view,
            "DP305",
            "warning",
            f"ddp.num_buckets={fmt(nb)}: with DP > 1 Bridge sets bucket_size=134,217,728 and Megatron-Core then asserts "
            "'Cannot specify both num_buckets and bucket_size'",
            "ddp.num_buckets",
            unsafe("remove ddp.num_buckets (cannot be combined with bucket_size)", remove("ddp.num_buckets")),
        )


@rule("DP306", "dp-without-overlap", "warning", "DP > 1 without the distributed optimizer and without overlap_grad_reduce")
def dp_without_overlap(view):
    """
    ## What it does
    Flags DP > 1 with `comm_overlap` present, the distributed optimizer off, and
    `ddp.overlap_grad_reduce` false.

    ## Why it matters
    Bridge's DP defaults never run without the distributed optimizer, so the gradient all-reduce runs
    after the backward pass with nothing overlapped. Megatron-Core supports an overlapped all-reduce
    without the distributed optimizer; it just has to be asked for.

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: false}
    comm_overlap: {tp_comm_overlap: false}
    ```

    ## Fix
    None offered: both ways out change the run, and which one fits is your call. Set
    `ddp.overlap_grad_reduce: true` (overlapped all-reduce with plain DDP), or use the distributed
    optimizer (sharded optimizer state, a different checkpoint format; see DP302).
    """
    if view.comm_overlap_present and view.dp is not None and view.dp > 1 and not view.distopt_at_setup:
        if not view.value("ddp.overlap_grad_reduce") and view.value("ddp.use_distributed_optimizer") is not True:
            yield finding(
                view,
                "DP306",
                "warning",
                f"DP={view.dp} without the distributed optimizer and without ddp.overlap_grad_reduce: gradient "
                "reduction is not overlapped",
                "ddp.use_distributed_optimizer" if view.cfg.has(("ddp", "use_distributed_optimizer")) else "ddp",
            )


@rule("DP307", "world-size-not-divisible", "error", "World size not divisible by TP·PP·CP")
def not_divisible(view):
    """
    ## What it does
    Flags a target world size that is not a multiple of `tensor × pipeline × context` parallel sizes.

    ## Why it matters
    `ConfigContainer.get_data_parallel_size` asserts the world size is divisible by TP·PP·CP before
    comm_overlap runs; the job dies at start-up.

    ## Example
    Checked with `--world-size 10`:
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    ```

    ## Fix
    None offered: both the world size (the launch) and the parallel sizes (the model's sharding) are
    your decisions. Change one of them so that TP·PP·CP divides the world size.

    A world size nobody gave — the GPU count a catalog recipe's name states, under a run that reshards
    the recipe — is no launch: there the world size is reported unknown with the reason instead.
    """
    if view.dp_error:
        yield finding(view, "DP307", "error", view.dp_error + ": Bridge asserts at start-up", "model.tensor_model_parallel_size")
