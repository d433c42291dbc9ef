"""LM5xx — Megatron-LM launches: the launch environment. LM501-LM503: CUDA_DEVICE_MAX_CONNECTIONS as
validate_args checks it; LM504: the rest of what the target (GPU, library versions) and the launch
variables rule out (frameworks/megatron_lm/assertions.py, code LM504).

megatron-core 0.19.2, ``megatron/training/arguments.py:1413-1439``: with TP or CP > 1 before Blackwell
(``get_device_arch_version() < 10``) it asserts the variable is exactly "1", unless Torch-FSDP2,
Megatron-FSDP or MoE EP overlap is on (then it only warns); both FSDPs assert it is *not* "1"
(``arguments.py:1014``, ``1143``). The value is the training processes' environment: the script's
``export`` or ``NAME=... torchrun``, the functional test's ``ENV_VARS``, else the caller's shell.
"""

from __future__ import annotations

from overlap_cli.results import Edit, Fix
from overlap_cli.rules.lm import LM, assertion_findings, lm_finding
from overlap_cli.rules.registry import rule

_NAME = "CUDA_DEVICE_MAX_CONNECTIONS"


def _set_one(view, applicability: str) -> Fix:
    return Fix(applicability, f"export {_NAME}=1 before the launch (validate_args asserts it)", (Edit("set", f"env.{_NAME}", "1"),))


@rule("LM501", "max-connections-not-one", "error", "TP or CP > 1 before Blackwell without CUDA_DEVICE_MAX_CONNECTIONS=1",
      fix="crash/unsafe", frameworks=LM)
def max_connections_not_one(view):
    """
    ## What it does
    Flags a launch with TP or CP > 1 on a Hopper-or-older target (no FSDP, no MoE EP overlap) whose
    environment does not set `CUDA_DEVICE_MAX_CONNECTIONS=1`. With the GPU unknown it is a warning.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:1437`): `Using tensor
    model parallelism or context parallelism require setting the environment variable
    CUDA_DEVICE_MAX_CONNECTIONS to 1`. One hardware queue keeps each TP communication kernel ahead of the
    GEMM it overlaps; Blackwell no longer needs it.

    ## Example
    Checked with `--gpu h100`:
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 4
      --sequence-parallel: true
    ```

    ## Fix
    Writes `export CUDA_DEVICE_MAX_CONNECTIONS=1` before the launch line. **Safe (a) — removes a launch
    crash** when the variable is not set; changing a value the launch sets, exporting the script's own
    `CUDA_DEVICE_MAX_CONNECTIONS=1` (which without `export` reaches torchrun's processes only if the calling
    shell exports it: a warning), or adding it for an unknown GPU is **unsafe**.
    """
    value, var = view.max_connections, view.launch.env.get(_NAME)
    from overlap_cli.frameworks.megatron_lm.args import UNKNOWN

    asserted = view.asserted("max-conn-one")
    if asserted:
        fix = _set_one(view, "safe" if value is None else "unsafe")
        yield from assertion_findings(view, "LM501", ("max-conn-one",), fix, lead=_state(view) + ": ")
        return
    split = f"TP={view.tp}, CP={view.cp}"
    if view.max_conn_needs_one is True and value is UNKNOWN:
        if view.max_connections_unexported:
            yield lm_finding(
                view, "LM501", "warning",
                f"{split} on {view.target.gpu_label()}: validate_args asserts {_NAME} == \"1\", and {_NAME} is "
                f"{view.max_connections_from}: torchrun's processes see it only if the calling shell exports it",
                env=_NAME, fix=_set_one(view, "unsafe"),  # the caller's shell may export it: not a certain crash
            )
            return
        yield lm_finding(
            view, "LM501", "warning",
            f"{split} on {view.target.gpu_label()}: validate_args asserts {_NAME} == \"1\" and the launch sets it "
            "to a value not known statically",
            env=_NAME,
        )
    elif view.max_conn_needs_one is None and view.tp and view.cp and (view.tp > 1 or view.cp > 1) and value != "1" \
            and not _exempt(view):
        yield lm_finding(
            view, "LM501", "warning",
            f"{split} and the GPU is not known: on Hopper or older validate_args asserts {_NAME} == \"1\" "
            f"({_state(view)}; use --gpu to check)",
            env=_NAME if var is not None else None,
            fix=_set_one(view, "unsafe"),
        )


def _exempt(view) -> bool:
    args = view.args
    return any(args.get(d) is True for d in ("use_torch_fsdp2", "use_megatron_fsdp", "overlap_moe_expert_parallel_comm"))


def _state(view) -> str:
    if view.max_connections is None:
        return f"{_NAME} is not set"
    return f"{_NAME} is {view.max_connections} ({view.max_connections_from})"


@rule("LM502", "max-connections-one-with-fsdp", "error", "CUDA_DEVICE_MAX_CONNECTIONS=1 with Torch-FSDP2 or Megatron-FSDP",
      fix="unsafe", frameworks=LM)
def max_connections_one_with_fsdp(view):
    """
    ## What it does
    Flags `CUDA_DEVICE_MAX_CONNECTIONS=1` with `--use-torch-fsdp2` or `--use-megatron-fsdp`.

    ## Why it matters
    FSDP overlaps its all-gathers and reduce-scatters on several queues; `validate_args` asserts
    (megatron-core 0.19.2, `megatron/training/arguments.py:1014`): `FSDP always requires
    CUDA_DEVICE_MAX_CONNECTIONS value large than one`, and for Megatron-FSDP (`arguments.py:1143`):
    `FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.`

    ## Example
    ```yaml
    ENV_VARS:
      CUDA_DEVICE_MAX_CONNECTIONS: 1
    MODEL_ARGS:
      --use-megatron-fsdp: true
      --ckpt-format: fsdp_dtensor
    ```

    ## Fix
    Sets it to 8 (CUDA's default). **Unsafe**: it is a value the launch sets.
    """
    yield from assertion_findings(
        view, "LM502", ("fsdp-max-conn",),
        Fix("unsafe", f"set {_NAME}=8 (FSDP needs more than one queue)", (Edit("set", f"env.{_NAME}", "8"),)),
        lead=f"{_NAME}={view.max_connections} ({view.max_connections_from or 'shell'}): ",
    )


@rule("LM503", "max-connections-conflict-warning", "warning",
      "TP or CP > 1 with FSDP or MoE EP overlap before Blackwell: conflicting CUDA_DEVICE_MAX_CONNECTIONS needs",
      frameworks=LM)
def max_connections_conflict(view):
    """
    ## What it does
    Reports TP or CP > 1 together with FSDP or `--overlap-moe-expert-parallel-comm` on a target that is not
    known to be Blackwell or newer.

    ## Why it matters
    Before Blackwell, TP/CP communication wants `CUDA_DEVICE_MAX_CONNECTIONS=1` while FSDP and EP overlap
    want several queues; `validate_args` does not assert here but prints a warning (megatron-core 0.19.2,
    `megatron/training/arguments.py:1416-1435`), e.g. `For Hopper and before, try not to use tensor model
    parallelism or context parallelism with overlap_moe_expert_parallel_comm.` One of the two overlaps
    runs worse.

    ## Example
    Checked with `--gpu h100`:
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 2
      --sequence-parallel: true
      --expert-model-parallel-size: 8
      --num-experts: 8
      --overlap-moe-expert-parallel-comm: true
    ```

    ## Fix
    None offered: decide which overlap to favour (1 for TP, 32 for EP/FSDP).
    """
    from overlap_cli.frameworks.megatron_lm.cites import cite

    at = cite("arguments.py:1416", view.launch.core_version)  # the release's line of these warnings
    for w in view.launch_warnings:
        yield lm_finding(view, "LM503", "warning", f"validate_args warns: \"{w}\" ({at})", "tensor_model_parallel_size")


@rule("LM504", "launch-environment-rejected", "error", "A setting the target's GPU, library versions or launch variables rule out",
      frameworks=LM)
def launch_environment_rejected(view):
    """
    ## What it does
    Flags settings the launch rejects on this target: NVFP4 (`--fp4-format`) before Transformer Engine
    2.7, Torch-FSDP2 before torch 2.4, grouped GEMM below compute capability 8, delayed wgrad without
    fused accumulation before TE 2.7, fp8 activation recompute before TE 2.6, single grouped MoE weights
    before TE 2.14, the precision-aware optimizer without Transformer Engine, and the launch variables
    some settings need: `NVTE_CPU_OFFLOAD_V1=1` for fine-grained activation offloading on TE >= 2.10,
    `NCCL_GRAPH_REGISTER=0` for Transformer Engine CUDA graphs with `expandable_segments:True`,
    `CUDA_GRAPHS_USE_NODE_PRIORITY=1` for GTP with CUDA graphs on Blackwell, no `expandable_segments:True`
    with `--use-nccl-ub` before torch 2.11, `CUDA_DEVICE_MAX_CONNECTIONS` above 1 for the UCC pipeline
    backend. A version or GPU the target does not give makes the check silent (`--te-version`,
    `--torch-version`, `--gpu`).

    ## Why it matters
    Each stops the launch in `validate_args` (megatron-core 0.19.2, `megatron/training/arguments.py:998`,
    `1074`, `1340`, `1501`, `1849-1858`, `1881`), in the configs built after it
    (`megatron/core/transformer/transformer_config.py:1563`, `1829`;
    `megatron/core/distributed/distributed_data_parallel_config.py:258`;
    `megatron/core/optimizer/optimizer_config.py:465`) or while the process groups are built
    (`megatron/core/parallel_state.py:1205`), for instance with `--fp4-format requires Transformer Engine
    >= 2.7.0.dev0 for NVFP4BlockScaling support.`

    ## Example
    Checked with `--te-version 2.6`:
    ```yaml
    MODEL_ARGS:
      --bf16: true
      --fp4-format: e2m1
    ```

    ## Fix
    None offered: a newer library, or the variable exported in the launch script.
    """
    from overlap_cli.frameworks.megatron_lm.assertions import ids_of

    yield from assertion_findings(view, "LM504", ids_of("LM504"))
