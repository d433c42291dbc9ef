"""ENV5xx — the launch environment: CUDA_DEVICE_MAX_CONNECTIONS, LayerNorm SM margins and env_vars itself.

What the target needs comes from launch_env (a pure function of the view); these rules compare it with
what the process gets: the config's ``env_vars`` or, with ``--env-from-shell``, the exported shell value
(Bridge installs ``env_vars`` with ``os.environ.setdefault``, config.py:1832-1850 in megatron-bridge 0.6.2).
A release without ``env_vars`` (before 0.6.0: release.HAS_ENV_VARS) drops the section with a note; the
rules about it (``needs="HAS_ENV_VARS"``) do not apply there, and the environment is what the launcher exports.
"""

from __future__ import annotations

from overlap_cli.frameworks.bridge import launch_env as le
from overlap_cli.results import Edit, Fix
from overlap_cli.rules.registry import rule
from overlap_cli.rules.common import finding
from overlap_cli.rules.env_common import one_is_fatal, one_serialises_dp

_CDMC = le.MAX_CONNECTIONS


def _yaml_value(value: str):
    """env_vars values as Bridge's recipes write them: integers as integers."""
    return int(value) if value.isdigit() else value


def _comment(name: str, need) -> str:
    """The few words the fixer writes next to the new value (as ``# overlap: CODE <this>``)."""
    return need.short or name


def _set_env(name: str, value: str, need, message: str, applicability: str = "unsafe") -> Fix:
    """A fix writing ``env_vars.NAME``. Unsafe unless the caller shows it only adds a missing variable
    that makes a requested overlap take effect: a value the file sets is the recipe's tuning, never a
    safe fix's to change."""
    edit = Edit("set", f"env_vars.{name}", _yaml_value(value), _comment(name, need))
    return Fix(applicability, message, (edit,))


def _anchor(view, name: str) -> str:
    """Where a finding about ``name`` points: its env_vars entry (or the section), else — no env_vars in
    the file — the setting that creates the need, so that the line is useful and can carry a suppression."""
    if isinstance(view.cfg.data.get("env_vars"), dict):
        return f"env_vars.{name}"
    for key in ("comm_overlap.tp_comm_overlap", "model.tensor_model_parallel_size", "comm_overlap", "ddp", "model"):
        if view.cfg.has(tuple(key.split("."))):
            return key
    return f"env_vars.{name}"


def _moved_by_env507(view) -> set:
    """Names written in a wrong section: ENV507 moves them into env_vars, so "missing" rules keep quiet."""
    return {name for _, _, name, _ in le.misplaced(view)}


def _entry(view, name: str):
    for e in le.plan(view):
        if e.name == name:
            return e
    return None


def _effective_string(e):
    if e is None:
        return None
    return e.shell_value if e.shell_value is not None else e.file_value


@rule("ENV501", "max-connections-missing", "warning", "CUDA_DEVICE_MAX_CONNECTIONS is not set, and the target needs it", fix="overlap/unsafe", needs="HAS_ENV_VARS")
def max_connections_missing(view):
    """
    ## What it does
    Flags a config whose `env_vars` has no `CUDA_DEVICE_MAX_CONNECTIONS` when the target needs a value other
    than CUDA's default of 8. Warning when TP overlap is effective (Hopper needs 1 for it to overlap at all);
    info otherwise, and info "depends on GPU" when the target GPU is not known.

    ## Why it matters
    The value is a launch-time setting, not a `CommOverlapConfig` field. Bridge's launcher used to set it
    (`PerfEnvPlugin`, removed from megatron/bridge/recipes/run_plugins.py in Megatron-Bridge cce495373);
    since then only recipe `env_vars` carry it, and Bridge's standard recipes do not (e.g. the H100
    Llama-3 70B pretraining recipe requests TP overlap with `env_vars` = the common five, none of them this).
    On Hopper with TP > 1, communication kernels then queue behind the GEMM they should overlap ("TP
    communication kernels can be scheduled at the end of GEMM", Bridge performance guide). On SM100+ with
    TP/CP > 1 and DP/PP > 1 the launcher used 32 to keep streams from serialising.

    The value follows Bridge's last launcher: 8 by default; 32 with the DeepEP/HybridEP flex dispatcher;
    on SM100+ with (TP > 1 or CP > 1) and (DP > 1 or PP > 1) 32; on Hopper or older with (TP > 1 or CP > 1)
    and no MoE all-to-all overlap 1 — but never 1 with Megatron-FSDP or a UCC pipeline backend, which
    assert against it. Where other implementations disagree (SM100+), the reason says so.

    ## Example
    Checked with `--gpu h100`:
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    # no env_vars
    ```

    ## Fix
    Adds `env_vars.CUDA_DEVICE_MAX_CONNECTIONS` with the needed value and a comment saying why. **Safe (b) — makes the requested overlap take effect** when
    TP overlap is effective and the target is Hopper or older: with 1 the communication kernel is queued
    ahead of the GEMM it overlaps, without it TP overlap does not overlap. It only adds a missing variable,
    and Bridge applies it with setdefault, so a value exported at launch still wins. **Unsafe** for any
    other need (32 on SM100+, or no effective TP overlap): that is throughput tuning, not an overlap the
    file asked for; the finding is then info, and info findings offer no safe fix. No fix while the value depends on an unknown GPU or DP size.
    """
    e = _entry(view, _CDMC)
    if e is None or e.in_file or e.shell_value is not None or e.need is None or _CDMC in _moved_by_env507(view):
        return
    f = le.facts(view)
    need = e.need
    if need.value == le.CUDA_DEFAULT_CONNECTIONS:
        return  # unset is CUDA's 8
    if need.value is None:
        if f.tp > 1 or f.cp > 1 or f.flex:
            yield finding(
                view,
                "ENV501",
                "info",
                f"env_vars has no CUDA_DEVICE_MAX_CONNECTIONS; the value this config needs {need.reason}",
                _anchor(view, _CDMC),
            )
        return
    severity = "warning" if f.tp_overlap or view.tp_requested else "info"
    # (b): on Hopper, 1 is what lets effective TP overlap overlap at all; 32 (SM100+) is throughput tuning.
    makes_overlap_work = severity == "warning" and f.tp_overlap and need.value == "1"
    yield finding(
        view,
        "ENV501",
        severity,
        f"env_vars has no CUDA_DEVICE_MAX_CONNECTIONS (unset = CUDA's 8); the target needs {need.value}: {need.reason}",
        _anchor(view, _CDMC),
        _set_env(_CDMC, need.value, need, f"add env_vars.{_CDMC}: {need.value}", "safe" if makes_overlap_work else "unsafe"),
    )


@rule("ENV502", "max-connections-mismatch", "warning", "env_vars sets CUDA_DEVICE_MAX_CONNECTIONS to a value the target does not want", fix="unsafe", needs="HAS_ENV_VARS")
def max_connections_mismatch(view):
    """
    ## What it does
    Compares `env_vars.CUDA_DEVICE_MAX_CONNECTIONS` (as the string Bridge installs: `str(value)`) with what
    the target needs (see ENV501 for the logic). Warning when 1 is needed and missing, when 1 is set where
    more queues are needed, or when SM100+ needs 32; info for other differences (e.g. 32 where the launcher
    would use 8) and when the answer depends on an unknown GPU or DP size.

    ## Why it matters
    1 on Hopper is what makes TP overlap overlap; anything else lets the communication kernel run after
    the GEMM. 1 where it is not needed serialises every stream (DP collectives, pipeline p2p). Bridge
    reads the value only through the environment, so nothing at launch tells you it is wrong.

    ## Example
    Checked with `--gpu h100`:
    ```yaml
    model: {tensor_model_parallel_size: 8, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 32}   # copied from a B200 recipe
    ```

    ## Fix
    Sets the needed value, with a comment. **Unsafe**: it is the value Bridge's last launcher chose for this
    GPU and parallel layout, but a value the file sets in `env_vars` is the recipe's own tuning (Bridge's
    Blackwell recipes ship 32 on purpose), and a safe fix never changes one. Cases with 1 under Megatron-FSDP/UCC (ENV503) or with DP overlap and TP = CP = 1
    (ENV504) are reported there instead.
    """
    e = _entry(view, _CDMC)
    if e is None or not e.in_file or e.file_value is None or e.shell_value is not None or e.need is None:
        return
    f = le.facts(view)
    need, have = e.need, e.file_value
    if need.value is None:
        yield finding(
            view,
            "ENV502",
            "info",
            f"env_vars sets CUDA_DEVICE_MAX_CONNECTIONS={have}; whether that fits {need.reason}",
            f"env_vars.{_CDMC}",
        )
        return
    if have == need.value:
        return
    if have == "1" and (one_is_fatal(view, f) or one_serialises_dp(f)):
        return  # ENV503 / ENV504 say it better
    serious = need.value in ("1", "32") or have == "1"
    yield finding(
        view,
        "ENV502",
        "warning" if serious else "info",
        f"env_vars sets CUDA_DEVICE_MAX_CONNECTIONS={have}; the target needs {need.value}: {need.reason}",
        f"env_vars.{_CDMC}",
        _set_env(_CDMC, need.value, need, f"set env_vars.{_CDMC}: {need.value}"),
    )


@rule("ENV503", "max-connections-one-asserts", "error", "CUDA_DEVICE_MAX_CONNECTIONS=1 with Megatron-FSDP or a UCC pipeline backend", fix="unsafe")
def max_connections_one_fatal(view):
    """
    ## What it does
    Flags an effective `CUDA_DEVICE_MAX_CONNECTIONS` of "1" (from `env_vars`, or from the shell with
    `--env-from-shell`) together with Megatron-FSDP (`dist.use_megatron_fsdp` or `ddp.use_megatron_fsdp`)
    or `model.pipeline_model_parallel_comm_backend: ucc`.

    ## Why it matters
    Both assert at start-up. Bridge's Megatron-FSDP validation:
    `AssertionError: FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.` (config.py:1102); Megatron-Core's
    UCC setup: `AssertionError: UCC-backend requires CUDA_DEVICE_MAX_CONNECTIONS > 1` (parallel_state.py:1205).
    Hopper recipes with TP > 1 carry 1, so switching such a recipe to FSDP hits this.

    ## Example
    ```yaml
    ddp: {use_megatron_fsdp: true}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 1}
    ```

    ## Fix
    Sets the value the target needs without 1 (8, or 32 where SM100+/DeepEP want it), or removes the entry
    when that depends on an unknown GPU (unset = 8). **Unsafe**, although the run cannot start with 1: a
    value the file sets in `env_vars` is never changed or removed by a safe fix, and which value the run
    should get instead (8, 32) is a tuning choice. Nothing to fix
    in the file when the 1 comes from the shell.
    """
    e = _entry(view, _CDMC)
    f = le.facts(view)
    message = one_is_fatal(view, f)
    if e is None or message is None or _effective_string(e) != "1":
        return
    where = "exported in the shell" if e.shell_value is not None else "set in env_vars"
    what = "Megatron-FSDP" if f.fsdp else "the UCC pipeline backend"
    fix = None
    if e.shell_value is None:
        if e.need is not None and e.need.value is not None:
            fix = _set_env(_CDMC, e.need.value, e.need, f"set env_vars.{_CDMC}: {e.need.value}")
        else:
            fix = Fix("unsafe", f"remove env_vars.{_CDMC} (unset = 8)", (Edit("remove", f"env_vars.{_CDMC}"),))
    yield finding(
        view,
        "ENV503",
        "error",
        f"CUDA_DEVICE_MAX_CONNECTIONS=1 {where} with {what}: the run stops with AssertionError: {message}",
        f"env_vars.{_CDMC}",
        fix,
    )


@rule("ENV504", "max-connections-one-serialises-dp", "warning", "CUDA_DEVICE_MAX_CONNECTIONS=1 serialises DP overlap when TP = CP = 1", fix="unsafe")
def max_connections_one_dp(view):
    """
    ## What it does
    Flags an effective `CUDA_DEVICE_MAX_CONNECTIONS` of "1" when data-parallel overlap is effective
    (`overlap_grad_reduce` or `overlap_param_gather` after Bridge's DP defaults) and TP = CP = 1.

    ## Why it matters
    With one hardware queue, the reduce-scatter/all-gather launched on a side stream waits for the compute
    kernels queued before it: DP overlap becomes serial (traces in NVIDIA/Megatron-LM#1468). 1 helps only
    TP/CP communication on Hopper, and there is none here.

    ## Example
    Checked with `--world-size 8`:
    ```yaml
    model: {tensor_model_parallel_size: 1}
    ddp: {use_distributed_optimizer: true}
    comm_overlap: {tp_comm_overlap: false}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 1}   # DP=8: DP overlap is on
    ```

    ## Fix
    Sets the value the target needs (8, or 32 with DeepEP/HybridEP). **Unsafe**: with TP = CP = 1 no
    implementation asks for 1, but the value is set in `env_vars`, and a safe fix never changes one.
    """
    e = _entry(view, _CDMC)
    f = le.facts(view)
    if e is None or _effective_string(e) != "1" or not one_serialises_dp(f) or one_is_fatal(view, f):
        return
    fix = None
    if e.shell_value is None and e.need is not None and e.need.value is not None:
        fix = _set_env(_CDMC, e.need.value, e.need, f"set env_vars.{_CDMC}: {e.need.value}")
    where = "exported in the shell" if e.shell_value is not None else "in env_vars"
    yield finding(
        view,
        "ENV504",
        "warning",
        f"CUDA_DEVICE_MAX_CONNECTIONS=1 {where} with DP overlap on and TP=CP=1: the DP reduce-scatter/all-gather "
        "queue behind compute and stop overlapping",
        f"env_vars.{_CDMC}",
        fix,
    )


@rule("ENV505", "layernorm-sm-margin-missing", "info", "LayerNorm SM margins are not set while DP or TP overlap is on", fix="unsafe", needs="HAS_ENV_VARS")
def layernorm_margin(view):
    """
    ## What it does
    Notes that `NVTE_FWD_LAYERNORM_SM_MARGIN` / `NVTE_BWD_LAYERNORM_SM_MARGIN` are missing from `env_vars`
    (or are not a positive integer) while DP or TP overlap is effective.

    ## Why it matters
    Transformer Engine's persistent LayerNorm kernels occupy every SM; an overlapped collective launched
    meanwhile has no SM to run on (Bridge performance guide, value 16). Bridge's perf launcher used 16, or
    20 with DeepEP/HybridEP; its flat perf recipes mostly ship 20.

    ## Example
    Checked with `--world-size 16`:
    ```yaml
    ddp: {use_distributed_optimizer: true}
    comm_overlap: {tp_comm_overlap: false}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 8}   # DP=16: DP overlap is on, no margins
    ```

    ## Fix
    Adds the missing margins (16, or 20 with DeepEP/HybridEP). **Unsafe**: a margin reserves SMs during
    LayerNorm, which changes kernel timing, and the finding is info: info findings offer no safe fix. Any
    value you already set is kept.
    """
    plan = {e.name: e for e in le.plan(view)}
    missing = []
    for name in (le.FWD_MARGIN, le.BWD_MARGIN):
        e = plan.get(name)
        if e is None or e.need is None or not e.need.certain or e.shell_value is not None:
            continue
        if name in _moved_by_env507(view):
            continue
        if not e.in_file or (e.file_value is not None and not e.file_ok):
            missing.append(e)
    if not missing:
        return
    need = missing[0].need
    names = " and ".join(e.name for e in missing)
    edits = tuple(Edit("set", f"env_vars.{e.name}", _yaml_value(e.need.value), _comment(e.name, e.need)) for e in missing)
    yield finding(
        view,
        "ENV505",
        "info",
        f"{names} {'is' if len(missing) == 1 else 'are'} not set (or not a positive integer): {need.reason}",
        _anchor(view, missing[0].name),
        Fix("unsafe", f"add {names}: {need.value}", edits),
    )


@rule("ENV506", "nccl-high-priority-missing", "info", "TORCH_NCCL_HIGH_PRIORITY is not set while overlap is on", fix="unsafe", needs="HAS_ENV_VARS")
def high_priority(view):
    """
    ## What it does
    Notes a config without `TORCH_NCCL_HIGH_PRIORITY` (in `env_vars` or, with `--env-from-shell`, the shell)
    while TP or DP overlap is effective.

    ## Why it matters
    It puts NCCL's communicators on high-priority CUDA streams, so overlapped collectives are scheduled
    ahead of queued compute. Every Bridge recipe ships it (`COMMON_RECIPE_ENV_VARS`,
    megatron/bridge/recipes/utils/environment_utils.py:32); hand-written configs lose it.

    ## Example
    ```yaml
    model: {tensor_model_parallel_size: 4, sequence_parallel: true}
    comm_overlap: {tp_comm_overlap: true}
    env_vars: {CUDA_DEVICE_MAX_CONNECTIONS: 1}
    ```

    ## Fix
    Adds `TORCH_NCCL_HIGH_PRIORITY: 1`. **Unsafe**: it changes stream priority, not results, but the
    finding is info, and info findings offer no safe fix.
    """
    e = _entry(view, le.HIGH_PRIORITY)
    f = le.facts(view)
    if e is None or e.in_file or e.shell_value is not None or not (f.tp_overlap or f.dp_overlap is True):
        return
    if le.HIGH_PRIORITY in _moved_by_env507(view):
        return
    yield finding(
        view,
        "ENV506",
        "info",
        f"env_vars has no TORCH_NCCL_HIGH_PRIORITY: {e.need.reason}",
        _anchor(view, le.HIGH_PRIORITY),
        _set_env(le.HIGH_PRIORITY, "1", e.need, f"add env_vars.{le.HIGH_PRIORITY}: 1"),
    )
