"""The launch environment a config wants on its target — a pure function of the resolved view.

``CUDA_DEVICE_MAX_CONNECTIONS`` and the LayerNorm SM margins are launch-time settings, not
``CommOverlapConfig`` fields. Bridge used to set them in its launcher (``PerfEnvPlugin``, removed from
megatron/bridge/recipes/run_plugins.py in NVIDIA-NeMo/Megatron-Bridge cce495373); since then recipes carry
them in ``env_vars``, which ``apply_environment_variables`` installs with ``os.environ.setdefault``
(megatron/bridge/training/config.py:1832-1850 in megatron-bridge 0.6.2): a variable already exported in
the shell wins. Values are stringified as Bridge does (``str(value)``: ``True`` -> "True", ``1.0`` -> "1.0");
only the exact string "1" counts as 1 for the checks that read it (config.py:1102, parallel_state.py:1205).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Any, Optional

from overlap_cli.results import Value
from overlap_cli.records import dataclass  # not dataclasses: start-up time (records.py)
from overlap_cli.launch_profile.profile import HOPPER_OR_OLDER, SM100_OR_NEWER

MAX_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"
FWD_MARGIN = "NVTE_FWD_LAYERNORM_SM_MARGIN"
BWD_MARGIN = "NVTE_BWD_LAYERNORM_SM_MARGIN"
HIGH_PRIORITY = "TORCH_NCCL_HIGH_PRIORITY"
P2P_CHUNKSIZE = "NCCL_P2P_NET_CHUNKSIZE"
TRACKED = (MAX_CONNECTIONS, FWD_MARGIN, BWD_MARGIN, HIGH_PRIORITY, P2P_CHUNKSIZE)

# Launch variables this tool recognises when they are written in the wrong section (any spelling case).
KNOWN_LAUNCH_VARIABLES = TRACKED + (
    "NCCL_NVLS_ENABLE",
    "NCCL_CTA_POLICY",
    "NCCL_GRAPH_REGISTER",
    "NCCL_IGNORE_CPU_AFFINITY",
    "TORCH_NCCL_AVOID_RECORD_STREAMS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "UB_SKIPMC",
    "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN",
    "NVLINK_DOMAIN_SIZE",
)
# Sections whose dataclasses have no such field: Bridge fails constructing them (TypeError).
MISPLACED_SECTIONS = ("comm_overlap", "ddp", "model")

# The value CUDA uses when the variable is unset (CUDA programming guide: 8 hardware work queues).
CUDA_DEFAULT_CONNECTIONS = "8"
# Bridge's old perf launcher (perf_plugins.py, MB 0e7ffb79) set this chunk for Llama 70B/405B with PP > 1.
TYPICAL_P2P_CHUNKSIZE = "2097152"

@dataclass(frozen=True)
class Need:
    """What the target needs for one variable. ``value`` None: it depends on something unknown."""

    name: str
    value: Optional[str]
    reason: str
    certain: bool = True  # False: depends on the GPU or the data-parallel size
    strict: bool = False  # another value defeats the purpose (CUDA_DEVICE_MAX_CONNECTIONS only)
    suggestion: bool = False  # a typical value, not a requirement
    short: str = ""  # a few words, for the comment next to a fixed value


@dataclass(frozen=True)
class Facts:
    """Everything the launch environment depends on, read once from the view."""

    tp: int
    cp: int
    pp: int
    dp: Optional[int]
    generation: Optional[str]
    gpu_label: str  # for sentences: "h100", "NVIDIA L40S" or "unknown GPU"
    tp_overlap: bool  # effective model.tp_comm_overlap
    dp_overlap: Optional[bool]  # effective ddp overlap_grad_reduce/overlap_param_gather; None = depends on DP
    a2a_overlap: bool  # effective model.overlap_moe_expert_parallel_comm
    flex: Optional[str]  # "deepep" | "hybridep" when the MoE flex dispatcher uses one, else None
    fsdp: bool  # Megatron-FSDP (dist or ddp use_megatron_fsdp)
    ucc: bool  # model.pipeline_model_parallel_comm_backend == "ucc"


def bridge_string(value: Any) -> Optional[str]:
    """The string Bridge installs for an env_vars value (``str(value)``), or None when it raises."""
    if isinstance(value, bool) or isinstance(value, (str, int, float)):
        return str(value)
    return None


def facts(view) -> Facts:
    model, ddp = view.final.get("model", {}), view.final.get("ddp", {})
    overlaps = [ddp.get("overlap_grad_reduce"), ddp.get("overlap_param_gather")]
    dp_overlap: Optional[bool] = True if True in overlaps else (None if None in overlaps else False)
    dispatcher = model.get("moe_token_dispatcher_type")
    backend = model.get("moe_flex_dispatcher_backend", view.release.LAUNCH_MODEL_DEFAULTS["moe_flex_dispatcher_backend"])
    flex = None
    if model.get("moe_enable_deepep") is True:
        flex = "deepep"  # deprecated switch: MCore turns it into the flex dispatcher's DeepEP backend
    elif dispatcher == "flex" and backend in ("deepep", "hybridep"):
        flex = backend
    cfg = view.cfg
    return Facts(
        tp=view.tp,
        cp=view.cp,
        pp=view.pp,
        dp=view.dp,
        generation=view.target.gpu_generation,
        gpu_label=view.target.gpu_label(),
        tp_overlap=model.get("tp_comm_overlap") is True,
        dp_overlap=dp_overlap,
        a2a_overlap=model.get("overlap_moe_expert_parallel_comm") is True,
        flex=flex,
        fsdp=cfg.get(("dist", "use_megatron_fsdp")) is True or ddp.get("use_megatron_fsdp") is True,
        ucc=model.get("pipeline_model_parallel_comm_backend") == "ucc",
    )


# ----------------------------------------------------------------------------------------------
# CUDA_DEVICE_MAX_CONNECTIONS
# ----------------------------------------------------------------------------------------------

_SM100_DISAGREE = (
    "implementations disagree on SM100+ (ENV-001): Bridge's perf scripts and flat perf recipes use 32 on every "
    "B200/B300/GB200/GB300 run, NeMo's launcher 32 whenever TP or CP > 1"
)


def _max_connections_on(f: Facts, generation: str, dp_above_one: bool) -> tuple[str, str, str]:
    """(value, reason, short reason) by Bridge's last launcher logic (PerfEnvPlugin.
    _set_num_cuda_device_max_connections, megatron/bridge/recipes/run_plugins.py at 0e7ffb79, lines 639-664)
    for one GPU generation."""
    tp_or_cp = f.tp > 1 or f.cp > 1
    split = f"TP={f.tp}, CP={f.cp}"
    value, short = CUDA_DEFAULT_CONNECTIONS, "default"
    why = "Bridge's launcher default, which is also CUDA's own (NeMo's launcher leaves it unset)"
    if f.flex:
        value, short = "32", f"{f.flex} dispatcher"
        why = f"the {f.flex} MoE dispatcher wants more concurrent hardware queues: Bridge's launcher used 32"
    if generation == SM100_OR_NEWER:
        if tp_or_cp and (dp_above_one or f.pp > 1):
            other = f"PP={f.pp}" if f.pp > 1 else "DP > 1"
            value, short = "32", "SM100+ with TP/CP and DP/PP streams"
            why = (
                f"SM100+ with {split} and {other}: 32 queues keep the TP/CP and DP/PP streams from serialising "
                f"(Bridge's last launcher; {_SM100_DISAGREE})"
            )
        elif tp_or_cp:
            why += f"; {_SM100_DISAGREE}"
    elif tp_or_cp:
        if f.a2a_overlap:
            why += (
                f"; not 1 although {split}: MoE all-to-all overlap is on and wants several queues, TP overlap wants "
                "one (Megatron-LM calls the needs conflicting: pick 1 or 32)"
            )
        else:
            purpose = "TP overlap" if f.tp_overlap else "TP/CP communication"
            value, short = "1", f"{purpose} on Hopper queues comm ahead of GEMM"
            why = (
                f"Hopper or older with {split}: {purpose} needs 1 so each communication kernel is queued ahead of "
                "the GEMM it overlaps, else it runs at the GEMM's end (Bridge performance guide; every launcher "
                "agrees, Megatron-LM asserts it)"
            )
    if value == "1" and (f.fsdp or f.ucc):
        what = "Megatron-FSDP" if f.fsdp else "the UCC pipeline backend"
        value, short = ("32" if f.flex else CUDA_DEFAULT_CONNECTIONS), f"{what} forbids 1"
        why = (
            f"{what} asserts CUDA_DEVICE_MAX_CONNECTIONS != 1, so {value} although {split} on Hopper or older "
            "(TP communication then cannot be ordered ahead of the GEMMs)"
        )
    return value, why, short


def max_connections_need(f: Facts) -> Need:
    generations = [f.generation] if f.generation else [HOPPER_OR_OLDER, SM100_OR_NEWER]
    dp_cases = [f.dp > 1] if f.dp is not None else [True, False]
    outcomes = {(g, d): _max_connections_on(f, g, d) for g in generations for d in dp_cases}
    values = {o[0] for o in outcomes.values()}
    if len(values) == 1:
        value, why, short = next(iter(outcomes.values()))
        where = f"{f.gpu_label}: " if f.generation else ""
        return Need(MAX_CONNECTIONS, value, where + why, strict=True, short=short)
    if f.generation is None:
        hop = outcomes[(HOPPER_OR_OLDER, dp_cases[0])]
        sm = [outcomes[(SM100_OR_NEWER, d)] for d in dp_cases]
        sm_text = " / ".join(sorted({o[0] for o in sm}, key=int))
        reason = (
            f"depends on GPU: {hop[0]} on Hopper or older ({hop[2]}), {sm_text} on SM100+"
            + (" (32 when DP > 1)" if len({o[0] for o in sm}) > 1 else f" ({sm[0][2]})")
            + "; give --gpu or [tool.overlap] gpu"
        )
    else:
        big, small = outcomes[(f.generation, True)], outcomes[(f.generation, False)]
        reason = (
            f"depends on data-parallel size on {f.gpu_label}: {big[0]} when DP > 1 ({big[2]}), {small[0]} when "
            "DP = 1; give --world-size"
        )
    return Need(MAX_CONNECTIONS, None, reason, certain=False, strict=True)


# ----------------------------------------------------------------------------------------------
# The other variables
# ----------------------------------------------------------------------------------------------


def margin_needs(f: Facts) -> list:
    """LayerNorm SM margins: TE's persistent LayerNorm kernels occupy every SM and block overlapped
    collectives (Bridge performance guide; 16 documented). Bridge's perf launcher used 20 with DeepEP/HybridEP."""
    if not f.tp_overlap and f.dp_overlap is False:
        return []
    value = "20" if f.flex else "16"
    overlap = " and ".join(w for w, on in (("TP overlap", f.tp_overlap), ("DP overlap", f.dp_overlap)) if on)
    certain = True
    if not overlap:
        overlap, certain = "DP overlap (on when DP > 1: the data-parallel size is not known)", False
    source = f"20 with {f.flex}, as Bridge's perf launcher used" if f.flex else "16, as in Bridge's performance guide"
    why = (
        f"{overlap} {'are' if ' and ' in overlap else 'is'} on: keep {value} SMs free of TE's persistent LayerNorm kernels so the overlapped "
        f"collectives get SMs ({source})"
    )
    short = "SMs kept free of TE LayerNorm for overlapped collectives"
    return [Need(name, value, why, certain=certain, short=short) for name in (FWD_MARGIN, BWD_MARGIN)]


def needs(view) -> dict:
    """name -> Need for every launch variable the target wants set."""
    f = facts(view)
    out = {MAX_CONNECTIONS: max_connections_need(f)}
    for n in margin_needs(f):
        out[n.name] = n
    out[HIGH_PRIORITY] = Need(
        HIGH_PRIORITY,
        "1",
        "NCCL on high-priority CUDA streams, so overlapped collectives are scheduled ahead of compute; every "
        "Bridge recipe ships it (recipes/utils/environment_utils.py:32)",
        short="NCCL on high-priority streams (every Bridge recipe sets it)",
    )
    if f.pp > 1:
        out[P2P_CHUNKSIZE] = Need(
            P2P_CHUNKSIZE,
            TYPICAL_P2P_CHUNKSIZE,
            f"PP={f.pp} > 1: typical chunk for pipeline sends over the network (Bridge's perf launcher used "
            "2097152 for Llama 70B/405B); a suggestion, tune it for your fabric",
            suggestion=True,
            short="typical p2p chunk with PP > 1",
        )
    return out


# ----------------------------------------------------------------------------------------------
# The plan: what the file says, what the shell says, what the target needs
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvEntry:
    name: str
    need: Optional[Need]
    in_file: bool
    file_value: Optional[str]  # Bridge's string, None when the value is not a scalar
    file_raw: Any
    shell_value: Optional[str]  # with --env-from-shell, the exported value

    @property
    def file_ok(self) -> bool:
        """Whether the file's value serves the need (non-strict needs accept any sensible value)."""
        if self.need is None or self.file_value is None or self.need.value is None:
            return True
        return serves(self.need, self.file_value)

    def effective(self) -> Value:
        """What the process gets: shell > env_vars > (nothing: the recommendation is shown)."""
        need = self.need
        if self.shell_value is not None:
            why = "exported in the shell: Bridge installs env_vars with os.environ.setdefault, so it wins"
            if self.in_file and self.file_value != self.shell_value:
                why += f" over env_vars {self.file_value}"
            return Value(self.shell_value, "shell", why + _against(need, self.shell_value))
        if self.in_file:
            if self.file_value is None:
                return Value(None, "env_vars", f"not a scalar ({type(self.file_raw).__name__}): Bridge raises TypeError")
            return Value(self.file_value, "env_vars", "set in env_vars" + _against(need, self.file_value))
        if need is None:
            return Value(None, "unknown", "not set")
        if need.value is None:
            return Value(None, "unknown", "not in env_vars; " + need.reason)
        # what the process gets is nothing (the caller's shell aside): the value the target wants is advice,
        # given in the reason and by `overlap env` (wanted), never printed in the value's place
        return Value(None, "default", f"not in env_vars: unset at launch unless exported (to export: "
                     f"{need.value}; {need.reason})")

    def wanted(self) -> Value:
        """What to export at launch (``overlap env``), with a reason written for that listing."""
        need = self.need
        if self.shell_value is not None:
            return self.effective()
        if self.in_file and self.file_value is None:
            return Value(None, "env_vars", f"not exported: the env_vars value is a {type(self.file_raw).__name__}, "
                         "not a scalar (Bridge raises TypeError, ENV508)")
        if need is not None and need.value is not None and self.in_file and not self.file_ok:
            return Value(
                need.value,
                "recommended",
                f"{need.reason}; env_vars has {self.file_value}: exporting this wins over it (setdefault)",
            )
        if self.in_file:
            if need is None:
                return Value(self.file_value, "env_vars", "from env_vars")
            if need.value is None:
                return Value(self.file_value, "env_vars", f"from env_vars; {need.reason}")
            fits = "" if self.file_value == need.value else f" (the target's usual value is {need.value})"
            return Value(self.file_value, "env_vars", f"from env_vars{fits}: {need.reason}")
        if need is None:
            return Value(None, "unknown", "not set")
        if need.value is None:
            return Value(None, "unknown", need.reason)
        return Value(need.value, "recommended", need.reason)


def serves(need: Need, value: str) -> bool:
    if need.strict:
        return value == need.value
    if need.name in (FWD_MARGIN, BWD_MARGIN):
        return value.isdigit() and int(value) > 0
    return True  # a suggestion, or a user's deliberate choice (e.g. TORCH_NCCL_HIGH_PRIORITY=0)


def _against(need: Optional[Need], value: str) -> str:
    if need is None:
        return ""
    if need.value is None:
        return f"; {need.reason}"
    if serves(need, value):
        return f"; fits the target ({need.reason})" if value == need.value else ""
    return f"; the target needs {need.value}: {need.reason}"


def env_vars_items(view) -> list:
    """(name, raw value) pairs of env_vars with a usable name, in file order."""
    section = view.cfg.data.get("env_vars")
    if not isinstance(section, dict):
        return []
    return [(k, v) for k, v in section.items() if isinstance(k, str) and k]


def plan(view, all_variables: bool = False) -> list:
    """EnvEntry per tracked variable that has a need or a value; with ``all_variables`` also every other
    env_vars entry (the full launch environment for ``overlap env``)."""
    cached = view.launch_env_plan
    if cached is None:
        cached = view.launch_env_plan = _plan(view)  # a pure function of the view: computing it once is enough
    return [e for e in cached if all_variables or e.name in TRACKED]


def _plan(view) -> list:
    wanted = needs(view)
    in_file = dict(env_vars_items(view))
    shell = view.target.shell_env
    names = [n for n in TRACKED if n in wanted or n in in_file or (shell is not None and n in shell)]
    names += [n for n in in_file if n not in names]
    out = []
    for name in names:
        raw = in_file.get(name)
        out.append(
            EnvEntry(
                name=name,
                need=wanted.get(name),
                in_file=name in in_file,
                file_value=bridge_string(raw) if name in in_file else None,
                file_raw=raw,
                shell_value=shell.get(name) if shell is not None else None,
            )
        )
    return out


def effective_entries(view) -> dict:
    """``env.NAME`` -> Value for check's ``effective``: the overlap-related launch variables."""
    return {f"env.{e.name}": e.effective() for e in plan(view)}


def misplaced(view) -> list:
    """(section, key, canonical name, raw value) for launch variables written where Bridge has no field."""
    cached = getattr(view, "launch_env_misplaced", None)
    if cached is None:
        cached = tuple(_misplaced(view))
        if hasattr(view, "launch_env_misplaced"):  # Bridge's Resolved keeps it (a pure function of view.cfg)
            view.launch_env_misplaced = cached
    return list(cached)


def _misplaced(view) -> list:
    out = []
    for section in MISPLACED_SECTIONS:
        sec = view.cfg.data.get(section)
        if not isinstance(sec, dict):
            continue
        for key, name in _launch_keys(tuple(sec)):
            out.append((section, key, name, sec[key]))
    return out


_LAUNCH_KEYS: dict = {}  # a section's keys -> its (key, variable name) pairs, the last few (runs share a recipe's keys)


def _launch_keys(keys: tuple) -> tuple:
    """(key, the variable it names) of each key that is a launch variable (CFG003 skips exactly these)."""
    hit = _LAUNCH_KEYS.get(keys)
    if hit is None:
        hit = tuple((key, key.upper() if key.upper() in KNOWN_LAUNCH_VARIABLES else key) for key in keys
                    if isinstance(key, str) and (key.isupper() or key.upper() in KNOWN_LAUNCH_VARIABLES))
        _LAUNCH_KEYS[keys] = hit
        while len(_LAUNCH_KEYS) > 16:
            del _LAUNCH_KEYS[next(iter(_LAUNCH_KEYS))]
    return hit


def misplaced_names(cfg) -> tuple:
    """Keys under comm_overlap that the ENV family reports (CFG003 leaves them alone)."""
    sec = cfg.data.get("comm_overlap")
    if not isinstance(sec, dict):
        return ()
    return tuple(k for k in sec if isinstance(k, str) and k.upper() in KNOWN_LAUNCH_VARIABLES)
