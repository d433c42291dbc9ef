"""Seeded Megatron-LM launches for the differential test: what a launch asks for (flags, torchrun sizes,
CUDA_DEVICE_MAX_CONNECTIONS, the GPU), written out in the forms users write launches in.

``generate(n, seed)`` draws ``n`` launches with ``random.Random(seed)`` (deterministic: the same ids and texts
on every machine) over precisions, TP / SP / TP overlap, PP with both virtual-pipeline forms and layouts,
CP, MoE / EP / ETP / dispatchers / EP overlap, DP overlaps, buckets, the distributed optimizer,
Megatron-FSDP and Torch-FSDP2, the launch environment and world sizes; ``FIXED`` adds hand-written
launches kept from the first version of the test. Each launch is rendered in one FORM:

- ``plain``        torchrun line with the flags on continuation lines
- ``array``        flags in bash arrays, ``"${ARR[@]}"`` (and ``ARR+=(...)``)
- ``string``       flags in string variables expanded unquoted (bash splits them)
- ``script-var``   the training script's path in a variable
- ``srun``         ``srun [options] torchrun ...``
- ``srun-python``  ``srun`` starting ``python pretrain_gpt.py`` itself (one process per task; WORLD_SIZE exported
                   by the script, or from the job's environment)
- ``python-m``     ``python -m torch.distributed.run ...``
- ``yaml``         Megatron-LM functional-test YAML (``ENV_VARS:`` / ``MODEL_ARGS:``)

Some launches take values from the caller's environment on purpose (``${TP:-2}``, ``$PP``, ``$EXTRA_ARGS``,
``${GPUS_PER_NODE:-8}``, ``CUDA_DEVICE_MAX_CONNECTIONS`` assigned without ``export`` or defaulted from the
caller): ``caller`` lists each such variable with the two values (``None``: unset) the ground truth runs
the launch under. Nothing here runs anything: mlm_shim.py does, with bash.
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, field

FORMS = ("plain", "array", "string", "script-var", "srun", "srun-python", "python-m", "yaml")
MAX_CONN = "CUDA_DEVICE_MAX_CONNECTIONS"


@dataclass
class Launch:
    id: str
    form: str
    flags: list  # [(flag, value or None)], in order; a value may hold a caller-variable reference
    nproc: int
    nnodes: int = 1
    arch: int = 9  # GPU architecture major: 9 Hopper, 10 Blackwell
    conn: object = None  # CUDA_DEVICE_MAX_CONNECTIONS the launch sets (None: it does not)
    conn_how: str = "export"  # export | prefix | env | assigned | caller-default | ENV_VARS
    caller: dict = field(default_factory=dict)  # NAME -> (value in run A, value in run B); None: unset
    extra_args: bool = False  # an unquoted $EXTRA_ARGS on the launch line (shell forms)
    gpus_var: bool = False  # --nproc_per_node ${GPUS_PER_NODE:-N}
    world_export: bool = False  # srun-python: the script exports WORLD_SIZE (else the job's environment may)
    te_version: str = "2.12"

    @property
    def world_size(self) -> int:
        return self.nproc * self.nnodes

    @property
    def gpu(self) -> str:
        return "h100" if self.arch < 10 else "b200"

    @property
    def suffix(self) -> str:
        return ".yaml" if self.form == "yaml" else ".sh"


BASE = [("--num-layers", "8"), ("--hidden-size", "128"), ("--num-attention-heads", "8"), ("--seq-length", "128"),
        ("--max-position-embeddings", "128"), ("--micro-batch-size", "1")]


# Each dimension is drawn coherent with the others most of the time (the launch should run) and
# incoherent now and then (P_MISTAKE: the launch should be refused, or a value be forced), so both
# outcomes stay well represented.
P_MISTAKE = 0.06


def _ok(rng: random.Random) -> bool:
    return rng.random() >= P_MISTAKE


def _sizes(rng: random.Random, world: int) -> tuple:
    """(tp, pp, cp): their product divides the world size unless a mistake is drawn."""
    for _ in range(50):
        tp = rng.choice([1, 1, 2, 2, 4, 8])
        pp = rng.choice([1, 1, 2, 2, 4, 3])
        cp = rng.choice([1, 1, 1, 1, 2, 4])
        if world % (tp * pp * cp) == 0 or not _ok(rng):
            return tp, pp, cp
    return 1, 1, 1


def _base(rng: random.Random, layers: int, dp: int) -> list:
    mbs = rng.choice([1, 1, 2])
    flags = [("--num-layers", str(layers)), ("--hidden-size", rng.choice(["128", "256"])),
             ("--num-attention-heads", "8"), ("--seq-length", "128"), ("--max-position-embeddings", "128"),
             ("--micro-batch-size", str(mbs))]
    if rng.random() < 0.2:
        gbs = mbs * max(dp, 1) * rng.choice([2, 4]) if _ok(rng) else 3
        flags.append(("--global-batch-size", str(gbs)))
    if rng.random() < 0.15:
        flags.append(("--swiglu", None))
    return flags


def _precision(rng: random.Random, f: list, distopt: bool) -> None:
    p = rng.random()
    if p < 0.6:
        f.append(("--bf16", None))
    elif p < 0.75:
        f.append(("--fp16", None))
    elif p < 0.78:
        f += [("--bf16", None), ("--fp16", None)]  # asserts, without a message
    fp8 = rng.random() < 0.25
    if fp8:
        f.append(("--fp8-format", rng.choice(["e4m3", "hybrid"])))
        if rng.random() < 0.7:
            f.append(("--fp8-recipe", rng.choice(["delayed", "tensorwise", "mxfp8", "blockwise"])))
    if rng.random() < 0.12 and (fp8 and distopt or not _ok(rng)):
        f.append(("--fp8-param-gather", None))
    if rng.random() < 0.15:
        f.append(("--grad-reduce-in-bf16", None))
    if rng.random() < 0.12:
        dtype = rng.choice(["fp32", "bf16"])
        f.append(("--main-grads-dtype", dtype))
        if dtype == "bf16" and _ok(rng):
            f.append(("--use-precision-aware-optimizer", None))  # needs the distributed optimizer
    if rng.random() < 0.15:
        f.append(("--accumulate-allreduce-grads-in-fp32", None))


def _tensor(rng: random.Random, f: list, tp: int) -> None:
    if tp > 1 or rng.random() < 0.2:
        f.append(("--tensor-model-parallel-size", str(tp)))
    sp = rng.random() < (0.8 if tp > 1 else 0.15)
    if sp:
        f.append(("--sequence-parallel", None))
    if rng.random() < 0.3 and (sp and tp > 1 or not _ok(rng)):
        f.append(("--tp-comm-overlap", None))
        if rng.random() < 0.2:
            f.append(("--tp-comm-overlap-cfg", "/workspace/ub_cfg.yaml"))


def _pipeline(rng: random.Random, f: list, layers: int, pp: int) -> bool:
    """The PP flags; returns whether a virtual pipeline was asked for."""
    if pp > 1 or rng.random() < 0.1:
        f.append(("--pipeline-model-parallel-size", str(pp)))
    vpp = rng.random() < (0.5 if pp > 1 else 0.04)
    per_stage = layers // pp
    if vpp:
        v = rng.random()
        if v < 0.4:
            f.append(("--num-virtual-stages-per-pipeline-rank", rng.choice(["1", "2", "2", "4"])))
        elif v < 0.7:
            choices = [n for n in (1, 2, 3) if per_stage % n == 0 and n < per_stage] or [1]
            f.append(("--num-layers-per-virtual-pipeline-stage", str(rng.choice(choices) if _ok(rng) else 3)))
        elif v < 0.93:
            stages = pp * rng.choice([1, 2, 2]) if _ok(rng) else pp + 1
            inner = ["t" * max(1, layers // stages)] * stages
            inner[0], inner[-1] = "E" + inner[0], inner[-1] + "L"
            f.append(("--pipeline-model-parallel-layout", "|".join(inner)))
        else:
            f += [("--num-virtual-stages-per-pipeline-rank", "2"), ("--num-layers-per-virtual-pipeline-stage", "1")]
    no_p2p = rng.random() < 0.12 and (pp > 2 or not vpp or not _ok(rng))
    if no_p2p:
        f.append(("--no-overlap-p2p-communication", None))
    if rng.random() < 0.08 and (vpp and not no_p2p or not _ok(rng)):
        f.append(("--overlap-p2p-communication-warmup-flush", None))
    if rng.random() < 0.04:
        f.append(("--decoder-first-pipeline-num-layers", "2"))
    if rng.random() < 0.04:
        f.append(("--account-for-embedding-in-pipeline-split", None))
    if rng.random() < 0.08:
        f.append(("--no-align-param-gather", None))
    return vpp


def _moe(rng: random.Random, f: list, tp: int, pp: int, vpp: bool) -> None:
    if rng.random() > 0.3:
        if rng.random() < 0.03:
            f.append(("--overlap-moe-expert-parallel-comm", None))  # without experts
        if rng.random() < 0.03:
            f.append(("--delay-wgrad-compute", None))
        return
    experts = rng.choice([4, 8, 8, 16])
    f.append(("--num-experts", str(experts)))
    ep = rng.choice([e for e in (1, 2, 4, 8) if experts % e == 0] if _ok(rng) else [8, 16])
    if ep > 1 or rng.random() < 0.2:
        f.append(("--expert-model-parallel-size", str(ep)))
    etp = tp  # --expert-tensor-parallel-size defaults to TP
    if rng.random() < 0.2:
        etp = rng.choice([1, 2])
        f.append(("--expert-tensor-parallel-size", str(etp)))
    if etp > 1 and _ok(rng):
        f.append(("--disable-bias-linear", None))  # MoE bias only with ETP 1
    dispatcher = rng.choice(["alltoall", "alltoall", "allgather", "flex"]) if rng.random() < 0.85 else "allgather"
    if dispatcher != "allgather" or rng.random() < 0.3:
        f.append(("--moe-token-dispatcher-type", dispatcher))
    if rng.random() < 0.4 and (ep > 1 and dispatcher != "allgather" and (pp == 1 or vpp) or not _ok(rng)):
        f.append(("--overlap-moe-expert-parallel-comm", None))
        if rng.random() < 0.4:
            f.append(("--delay-wgrad-compute", None))
    elif rng.random() < 0.03:
        f.append(("--delay-wgrad-compute", None))
    if rng.random() < 0.3:
        f.append(("--moe-grouped-gemm", None))
    if rng.random() < 0.12:
        f.append(("--moe-shared-expert-intermediate-size", "256"))
        if rng.random() < 0.5 and (dispatcher != "allgather" or not _ok(rng)):
            f.append(("--moe-shared-expert-overlap", None))


def _data_parallel(rng: random.Random, f: list, kind: str, distopt: bool, vpp: bool) -> None:
    """The DP flags of a launch with FSDP ``kind`` ('' / 'mfsdp' / 'fsdp2')."""
    if kind == "mfsdp":
        f.append(("--use-megatron-fsdp", None))
        if _ok(rng):
            f.append(("--ckpt-format", "fsdp_dtensor"))
        if rng.random() < 0.3:
            f.append(("--data-parallel-sharding-strategy", rng.choice(["optim", "optim_grads", "optim_grads_params"])))
    elif kind == "fsdp2":
        f.append(("--use-torch-fsdp2", None))
        if _ok(rng):
            f.append(("--untie-embeddings-and-output-weights", None))
        if _ok(rng):
            f.append(("--no-gradient-accumulation-fusion", None))
    if distopt:
        f.append(("--use-distributed-optimizer", None))
    ogr = rng.random() < 0.6
    if ogr:
        f.append(("--overlap-grad-reduce", None))
    opg = rng.random() < 0.4 and ((ogr and (distopt or kind == "mfsdp")) or not _ok(rng))
    if opg:
        f.append(("--overlap-param-gather", None))
    if rng.random() < 0.15 and (opg and distopt and vpp or not _ok(rng)):
        f.append(("--overlap-param-gather-with-optimizer-step", None))
        if _ok(rng):
            f.append(("--ckpt-format", "torch"))
    b = rng.random()
    if b < 0.15:
        f.append(("--ddp-bucket-size", rng.choice(["12345678", "50000000"])))
    elif b < 0.2:
        f.append(("--ddp-num-buckets", "4"))
    elif b < 0.22:
        f += [("--ddp-num-buckets", "4"), ("--ddp-bucket-size", "100")]
    if rng.random() < 0.08:
        f.append(("--ddp-average-in-collective", None))


def _others(rng: random.Random, f: list, pp: int) -> None:
    if rng.random() < 0.07 and (pp > 1 or not _ok(rng)):
        f.append(("--defer-embedding-wgrad-compute", None))
        if rng.random() < 0.5:
            f.append(("--wgrad-deferral-limit", rng.choice(["2", "4"])))
    if rng.random() < 0.04:
        f.append(("--freeze-all-layers", None))
    if rng.random() < 0.04:
        f.append(("--deterministic-mode", None))
    if rng.random() < 0.05:
        f.append(("--optimizer", rng.choice(["sgd", "muon"])))
    if rng.random() < 0.04:
        f.append(("--transformer-impl", "local"))


def _launch(rng: random.Random, index: int) -> Launch:
    form = rng.choices(FORMS, [0.2, 0.18, 0.14, 0.1, 0.1, 0.04, 0.09, 0.15])[0]
    nproc = rng.choices([8, 4, 2, 1, 6], [0.6, 0.15, 0.1, 0.05, 0.1])[0]
    nnodes = rng.choices([1, 2, 4], [0.6, 0.3, 0.1])[0]
    arch = rng.choices([9, 10], [0.65, 0.35])[0]
    tp, pp, cp = _sizes(rng, nproc * nnodes)
    dp = (nproc * nnodes) // (tp * pp * cp)
    layers = pp * rng.choice([2, 4, 4, 6, 8]) if _ok(rng) else rng.choice([5, 7, 9])
    kind = rng.choices(["", "mfsdp", "fsdp2"], [0.8, 0.1, 0.1])[0]
    if kind == "fsdp2" and _ok(rng):
        pp = 1  # Torch-FSDP2 runs without pipeline parallelism
    distopt = rng.random() < (0.6 if kind != "fsdp2" else 0.1)
    f = _base(rng, layers, dp)
    _precision(rng, f, distopt or kind != "")
    _tensor(rng, f, tp)
    vpp = _pipeline(rng, f, layers, pp)
    if cp > 1 or rng.random() < 0.05:
        f.append(("--context-parallel-size", str(cp)))
    if kind != "fsdp2" or not _ok(rng):
        _moe(rng, f, tp, pp, vpp)
    _data_parallel(rng, f, kind, distopt, vpp)
    _others(rng, f, pp)
    # the launch environment: CUDA_DEVICE_MAX_CONNECTIONS=1 where Megatron-LM asks for it, unless a mistake
    needs_one = arch < 10 and (tp > 1 or cp > 1) and not kind and ("--overlap-moe-expert-parallel-comm", None) not in f
    wants_more = bool(kind)  # FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1
    if _ok(rng):
        conn = "1" if needs_one else rng.choice([None, None, "32"]) if wants_more else rng.choice(["1", None, "8"])
    else:
        conn = rng.choice([None, "8", "1"])
    c = rng.random()
    how = "export" if c < 0.7 else rng.choice(["prefix", "env"]) if c < 0.9 else "assigned"
    if conn is None:
        how = "export"
    if form == "yaml" and conn is not None:
        how = "ENV_VARS"
    launch = Launch(id="", form=form, flags=f, nproc=nproc, nnodes=nnodes, arch=arch, conn=conn, conn_how=how)
    if how == "assigned":  # stays in the script's shell unless the caller exported it
        launch.caller[MAX_CONN] = (None, "32")
    _caller_unknowns(rng, launch)
    launch.id = f"g{index:03d}-{form}"
    if form == "srun-python":
        # Megatron-LM's world size is WORLD_SIZE (arguments.py:144), which srun does not set: the script
        # exports it, or the job's environment holds it or not (a seed of its own: the other launches stay)
        if random.Random(launch.id + "/WORLD_SIZE").random() < 0.5:
            launch.world_export = True
        else:
            launch.caller["WORLD_SIZE"] = (None, str(launch.world_size))
    return launch


def _caller_unknowns(rng: random.Random, launch: Launch) -> None:
    """Now and then a value from the caller's environment (about one launch in eight)."""
    if rng.random() > 0.13:
        return
    kind = rng.choice(["tp", "pp", "extra", "gpus", "conn-default"])
    flags = launch.flags
    yaml = launch.form == "yaml"
    if kind == "tp":
        flags[:] = [p for p in flags if p[0] != "--tensor-model-parallel-size"]
        flags.append(("--tensor-model-parallel-size", "${TP}" if yaml else "${TP:-2}"))
        launch.caller["TP"] = ("2", "4") if yaml else (None, "4")
    elif kind == "pp":
        flags[:] = [p for p in flags if p[0] != "--pipeline-model-parallel-size"]
        flags.append(("--pipeline-model-parallel-size", "${PP}" if yaml else "$PP"))
        launch.caller["PP"] = ("1", "2")
    elif kind == "extra" and not yaml:
        launch.extra_args = True
        launch.caller["EXTRA_ARGS"] = (None, rng.choice(["--overlap-grad-reduce", "--use-distributed-optimizer",
                                                         "--tensor-model-parallel-size 2 --sequence-parallel"]))
    elif kind == "gpus" and launch.form not in ("yaml", "srun-python"):
        launch.gpus_var = True
        launch.caller["GPUS_PER_NODE"] = (None, "4")
    elif kind == "conn-default" and not yaml:
        launch.conn, launch.conn_how = "1", "caller-default"
        launch.caller[MAX_CONN] = (None, "8")


# Hand-written launches of the first version of this test: (id, extra flags, world size, arch, env).
_FSDP2 = "--use-torch-fsdp2 --untie-embeddings-and-output-weights --no-gradient-accumulation-fusion"
_OPG = "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather"
_FIXED = [
    ("plain", "", 8, 9, None),
    ("tp2-sp", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 9, "1"),
    ("tp2-no-conn-hopper", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 9, None),
    ("tp2-no-conn-blackwell", "--tensor-model-parallel-size 2 --sequence-parallel", 8, 10, None),
    ("tp2-conn8-hopper", "--tensor-model-parallel-size 2", 8, 9, "8"),
    ("tp-overlap-no-sp", "--tensor-model-parallel-size 2 --tp-comm-overlap", 8, 9, "1"),
    ("tp-overlap-sp", "--tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap", 8, 9, "1"),
    ("pp4-vpp-layers", "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1", 8, 9, None),
    ("pp2-vpp-stages", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2", 8, 9, None),
    ("pp2-vpp-no-p2p", "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication", 8, 9, None),
    ("layout", "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Ett|tt|tt|ttL", 8, 9, None),
    ("dp-overlap", _OPG, 8, 9, None),
    ("ops-ok", _OPG + " --overlap-param-gather-with-optimizer-step --pipeline-model-parallel-size 2 "
     "--num-virtual-stages-per-pipeline-rank 2 --ckpt-format torch", 8, 9, None),
    ("bucket-dp64", "--overlap-grad-reduce", 64, 9, None),
    ("bucket-dp-cp", "--overlap-grad-reduce --context-parallel-size 2", 128, 9, "1"),
    ("buckets-both", "--overlap-grad-reduce --ddp-num-buckets 4 --ddp-bucket-size 100", 8, 9, None),
    ("world-not-divisible", "--tensor-model-parallel-size 4", 6, 9, "1"),
    ("mfsdp", "--use-megatron-fsdp --ckpt-format fsdp_dtensor", 8, 9, None),
    ("fsdp2-distopt", _FSDP2 + " --use-distributed-optimizer", 8, 9, None),
    ("fsdp2-tp2-hopper", _FSDP2 + " --tensor-model-parallel-size 2 --sequence-parallel", 8, 9, None),
    ("freeze", "--freeze-all-layers " + _OPG, 8, 9, None),
    ("defer-wgrad-pp2", "--defer-embedding-wgrad-compute --pipeline-model-parallel-size 2", 8, 9, None),
    ("ep-overlap", "--expert-model-parallel-size 8 --num-experts 8 --moe-token-dispatcher-type alltoall "
     "--overlap-moe-expert-parallel-comm --bf16", 8, 9, None),
    ("fp8-param-gather-distopt", "--fp8-format hybrid --fp8-param-gather --use-distributed-optimizer", 8, 9, None),
    ("bf16-grad-reduce", "--bf16 --use-distributed-optimizer --overlap-grad-reduce", 8, 9, None),
    ("hybrid-vpp", "--hybrid-layer-pattern M*|M*|M*|M* --pipeline-model-parallel-size 2", 8, 9, None),
    ("gbs-derived", "--tensor-model-parallel-size 2 --sequence-parallel --micro-batch-size 2", 16, 10, None),
]


def _pairs(words: list) -> list:
    out: list = []
    for w in words:
        if w.startswith("--"):
            out.append((w, None))
        else:
            out[-1] = (out[-1][0], w)
    return out


def fixed() -> list:
    launches = []
    for name, extra, ws, arch, conn in _FIXED:
        launches.append(Launch(id=f"f-{name}", form="plain", flags=BASE + _pairs(shlex.split(extra)), nproc=ws,
                               arch=arch, conn=conn))
    return launches


def generate(n: int = 540, seed: int = 20260119) -> list:
    """``n`` seeded launches, then the fixed ones."""
    rng = random.Random(seed)
    return [_launch(rng, i) for i in range(n)] + fixed()


# -- rendering --------------------------------------------------------------------------------------------

def _word(value: str) -> str:
    """A value as a shell word: references to the caller's variables stay expansions (double-quoted)."""
    if "$" in value:
        return f'"{value}"'
    return shlex.quote(value)


def _words(flags: list) -> list:
    out = []
    for flag, value in flags:
        out.append(flag)
        if value is not None:
            out.append(_word(value))
    return out


def _conn_lines(launch: Launch) -> tuple:
    """(lines before the launch, prefix words of the launch command)."""
    if launch.conn is None:
        return [], []
    how = launch.conn_how
    if how == "export":
        return [f"export {MAX_CONN}={launch.conn}"], []
    if how == "assigned":
        return [f"{MAX_CONN}={launch.conn}"], []
    if how == "caller-default":
        return [f"export {MAX_CONN}=${{{MAX_CONN}:-{launch.conn}}}"], []
    if how == "prefix":
        return [], [f"{MAX_CONN}={launch.conn}"]
    if how == "env":
        return [], ["env", f"{MAX_CONN}={launch.conn}"]
    raise ValueError(how)


def _torchrun_opts(launch: Launch, rng: random.Random) -> list:
    nproc = f"${{GPUS_PER_NODE:-{launch.nproc}}}" if launch.gpus_var else str(launch.nproc)
    opts = [rng.choice(["--nproc_per_node", "--nproc-per-node"]), f'"{nproc}"' if launch.gpus_var else nproc]
    if launch.nnodes > 1 or rng.random() < 0.3:
        opts += ["--nnodes", str(launch.nnodes), "--node_rank", "0", "--master_addr", "localhost",
                 "--master_port", "6000"]
    return opts


def _split(flags: list) -> tuple:
    """(model flags, parallelism flags, everything else), in order within each."""
    model_names = {f for f, _ in BASE} | {"--swiglu", "--global-batch-size", "--num-experts"}
    par = ("-parallel", "pipeline", "virtual", "-overlap", "overlap-", "sequence", "expert", "p2p", "layout")
    model, parallel, rest = [], [], []
    for p in flags:
        if p[0] in model_names:
            model.append(p)
        elif any(k in p[0] for k in par):
            parallel.append(p)
        else:
            rest.append(p)
    return model, parallel, rest


def _continued(words: list, per_line: int = 2, indent: str = "    ") -> str:
    lines, line = [], []
    for w in words:
        line.append(w)
        if len(line) >= per_line and not w.startswith("--"):
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    return (" \\\n" + indent).join(lines)


def render(launch: Launch) -> str:
    """The launch's text in its form (deterministic: the choices inside come from a seed of its id)."""
    rng = random.Random(launch.id)
    if launch.form == "yaml":
        return _render_yaml(launch)
    before, prefix = _conn_lines(launch)
    head = ["#!/bin/bash", f"# differential launch {launch.id}", "set -e"] + before
    extra = [" $EXTRA_ARGS"] if launch.extra_args else [""]
    form = launch.form
    if form in ("plain", "script-var", "srun", "python-m", "srun-python"):
        script = "pretrain_gpt.py"
        if form == "script-var":
            head += ["MEGATRON_PATH=/opt/megatron-lm", 'TRAIN_SCRIPT="${MEGATRON_PATH}/pretrain_gpt.py"']
            script = rng.choice(["$TRAIN_SCRIPT", '"$TRAIN_SCRIPT"', "${MEGATRON_PATH}/pretrain_gpt.py"])
        if form == "srun-python":
            if launch.world_export:
                head.append(f"export WORLD_SIZE={launch.world_size}")
            tasks = [f"--ntasks={launch.world_size}"] if rng.random() < 0.5 else \
                [f"--nodes={launch.nnodes}", f"--ntasks-per-node={launch.nproc}"]
            launcher = ["srun", *tasks, "--cpu-bind=none", "python", script]
        else:
            opts = _torchrun_opts(launch, rng)
            if form == "python-m":
                launcher = [rng.choice(["python", "python3"]), "-m", "torch.distributed.run", *opts, script]
            elif form == "srun":
                launcher = ["srun", f"--nodes={launch.nnodes}", "--ntasks-per-node=1", "torchrun", *opts, script]
            else:
                launcher = ["torchrun", *opts, script]
        body = " ".join(prefix + launcher) + " \\\n    " + _continued(_words(launch.flags)) + extra[0]
        return "\n".join(head + [body]) + "\n"
    model, parallel, rest = _split(launch.flags)
    opts = _torchrun_opts(launch, rng)
    if form == "array":
        head.append("DISTRIBUTED_ARGS=(\n    " + " ".join(opts) + "\n)")
        head.append("MODEL_ARGS=(\n    " + "\n    ".join(_continued(_words(model)).split(" \\\n    ")) + "\n)")
        if parallel and rng.random() < 0.5:
            half = len(parallel) // 2
            head.append("PARALLEL_ARGS=(" + " ".join(_words(parallel[:half])) + ")")
            head.append("PARALLEL_ARGS+=(" + " ".join(_words(parallel[half:])) + ")")
        else:
            head.append("PARALLEL_ARGS=(\n    " + " ".join(_words(parallel)) + "\n)")
        head.append("OTHER_ARGS=(" + " ".join(_words(rest)) + ")")
        line = " ".join(prefix + ["torchrun", '"${DISTRIBUTED_ARGS[@]}"', "pretrain_gpt.py"]) + \
            ' \\\n    "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" \\\n    "${OTHER_ARGS[@]}"' + extra[0]
        return "\n".join(head + [line]) + "\n"
    if form == "string":
        head.append('DISTRIBUTED_ARGS="' + " ".join(o.strip('"') for o in opts) + '"')
        head.append('MODEL_ARGS="' + " ".join(w.strip("'\"") for w in _words(model)) + '"')
        head.append('PARALLEL_ARGS="' + " ".join(w.strip("'\"") for w in _words(parallel)) + '"')
        head.append('OTHER_ARGS="' + " ".join(w.strip("'\"") for w in _words(rest)) + '"')
        line = " ".join(prefix + ["torchrun", "$DISTRIBUTED_ARGS", "pretrain_gpt.py"]) + \
            " \\\n    $MODEL_ARGS $PARALLEL_ARGS $OTHER_ARGS" + extra[0]
        return "\n".join(head + [line]) + "\n"
    raise ValueError(form)


def _yaml_scalar(value: str) -> str:
    if value.startswith("${"):
        return value
    if any(c in value for c in "|*:#{}[],&!%@`'\" ") or value in ("true", "false", "null", "yes", "no", "on", "off"):
        return '"' + value + '"'
    return value


def _render_yaml(launch: Launch) -> str:
    lines = [f"# differential launch {launch.id}", "ENV_VARS:"]
    lines.append("  NCCL_IB_SL: 1")
    if launch.conn is not None:
        lines.append(f"  {MAX_CONN}: {launch.conn}")
    lines.append("TEST_TYPE: regular")
    lines.append("MODEL_ARGS:")
    for flag, value in launch.flags:
        lines.append(f"  {flag}: " + ("true" if value is None else _yaml_scalar(value)))
    return "\n".join(lines) + "\n"
