"""LM0xx-LM2xx — Megatron-LM launches: the launch itself, tensor and pipeline parallelism.

Each rule reports what megatron-core 0.19.2's ``megatron/training/arguments.py`` ``validate_args`` does with
the launch's flags, as the resolver (frameworks/megatron_lm/resolver.py) recorded it: an assertion is an
error quoting the message the launch prints, a silent change a warning or info. ``lm_finding`` and the
fix helpers are shared with lm_dp.py and lm_env.py.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.results import Edit, Finding, Fix
from overlap_cli.rules.registry import MEGATRON_LM, rule

LM = (MEGATRON_LM,)


# ----------------------------------------------------------------------------------------------
# Helpers for the LM rules
# ----------------------------------------------------------------------------------------------


def flag_of(view, dest: str) -> str:
    """The flag as the launch spells it, else its first spelling in Megatron-LM's table."""
    arg = view.given(dest)
    if arg is not None:
        return arg.flag
    from overlap_cli.frameworks.megatron_lm.args import option

    row = option(dest, view.launch.core_version)
    return row["flags"][0] if row else "--" + dest.replace("_", "-")


def lm_finding(view, code: str, severity: str, message: str, dest: Optional[str] = None, fix: Optional[Fix] = None,
               env: Optional[str] = None) -> Finding:
    """A finding at the flag of ``dest`` (key: the flag), or at the variable ``env`` (key: env.NAME), or at
    the launch line."""
    line, col, key = view.launch.launch_line, 1, None
    if env is not None:
        key = f"env.{env}"
        var = view.launch.env.get(env)
        if var is not None and var.line:
            line, col = var.line, var.column or 1
    elif dest is not None:
        key = flag_of(view, dest)
        arg = view.given(dest)
        if arg is not None and arg.line:
            line, col = arg.line, arg.column or 1
        elif arg is not None and arg.origin == "command line":  # a dotlist word (frameworks.megatron_lm.dotlist)
            return Finding(code, severity, message, key, None, None, fix, origin="command line")
    return Finding(code, severity, message, key, line, col, fix)


def add_flag(view, dest: str) -> Edit:
    """Give a store_true flag (placed by fix/script.py)."""
    return Edit("add", flag_of(view, dest), True)


def remove_flag(view, dest: str) -> Edit:
    return Edit("remove", flag_of(view, dest))


def open_words_note(view, assertion) -> str:
    """Why an assertion may not hold: a flag it depends on is not given and an unknown expansion could give it."""
    missing = [d for d in assertion.dests if view.given(d) is None]
    if not view.open_words or not missing:
        return ""
    return f" — unless {', '.join(view.open_words)} gives {', '.join(flag_of(view, d) for d in missing)}"


def assertion_findings(view, code: str, ids: tuple, fix=None, lead: str = ""):
    """One error per recorded assertion with id in ``ids``, quoting its message (a warning when an unknown
    expansion may supply a flag it depends on); one warning per assertion that fires on some of the launch's
    paths only (resolver.path_assertions), naming the decisions under which it does not."""
    for a in view.asserted(*ids):
        note = open_words_note(view, a)
        verb = a.who or ("raises" if a.at.startswith("megatron/training/initialize.py") else "validate_args asserts")
        if a.bare:  # an assert without a message: the launch prints a bare AssertionError at that line
            message = f"{lead}{verb} `{a.message}` (a bare AssertionError, no message; {a.at}){note}"
        else:
            message = f"{lead}{verb} \"{a.message}\" ({a.at}){note}"
        f = fix(a) if callable(fix) else fix
        yield lm_finding(view, code, "warning" if note else "error", message, a.dests[0] if a.dests else None,
                         None if note else f)
    for a, unless in view.path_assertions:
        if a.id not in ids:
            continue
        # asserts on the launch's paths where the values are known; a path the script leaves to what it does not
        # say (a sourced file, the caller's arguments) may not: a warning naming the decisions
        verb = a.who or "validate_args asserts"
        where = f" {unless}" if unless else " on every way through the script where the value is known"
        message = f"{lead}{verb} \"{a.message}\" ({a.at}){where}{open_words_note(view, a)}"
        yield lm_finding(view, code, "warning", message, a.dests[0] if a.dests else None)


# ----------------------------------------------------------------------------------------------
# LM0xx — the launch
# ----------------------------------------------------------------------------------------------


@rule("LM001", "world-size-not-divisible", "error", "World size not divisible by TP·PP·CP", frameworks=LM)
def world_not_divisible(view):
    """
    ## What it does
    Flags a world size (torchrun's `--nproc_per_node` × `--nnodes`, else the target's) that TP × PP × CP
    does not divide.

    ## Why it matters
    `validate_args` asserts it before anything else (megatron-core 0.19.2,
    `megatron/training/arguments.py:430`): `world size (12) is not divisible by total_model_size
    (total_model_size=8)`. Every rank stops at start-up.

    ## Example
    Checked with `--world-size 12`:
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 4
      --pipeline-model-parallel-size: 2
    ```

    ## Fix
    None offered: choose sizes that divide the world size.
    """
    yield from assertion_findings(view, "LM001", ("world",))


@rule("LM002", "launch-not-fully-known", "info", "Parts of the launch are not known statically", frameworks=LM)
def not_fully_known(view):
    """
    ## What it does
    Lists what the launch takes from outside the file: `$(...)`, variables the script does not assign,
    `${VAR:-default}` defaults the caller's environment may replace, conditions on such values (an `if`
    or `case` whose branches give different flags), the functional-test harness's `${DATA_PATH}`-style
    values, unquoted expansions that may hold any flags — and which printed effective values they can change.

    ## Why it matters
    The check reports those values as `unknown` and never guesses them; a finding that depends on a flag
    an unknown expansion could supply is a warning, not an error. A value printed from a default
    (`TP=${TP:-4}`) holds only if the environment leaves the variable unset.

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 2
      --data-path: ${DATA_PATH}/text/my-gpt3_00_text_document
    ```

    ## Fix
    None offered; assign the variables in the script to have them checked. The text shows the first
    three items; `--format json` lists every one under the finding's `details` (`unknowns`: each with its
    line; `can_change`: the effective keys they can change, and `target.world_size` /
    `target.data_parallel_size` when those can change; `open`: expansions that may hold any flag).
    """
    unknowns = list(view.launch.unknowns)
    if not unknowns:
        return
    shown = "; ".join(unknowns[:3])
    if len(unknowns) > 3:
        shown += f"; and {len(unknowns) - 3} more (--format json lists them all)"
    changeable = [k for k, v in view.effective.items() if v.source == "unknown"]
    extra = getattr(view.launch, "changeable", None) or []
    changeable += [k for k in extra if k not in changeable]
    open_words = list(dict.fromkeys(view.open_words))
    if changeable:
        words = {"target.world_size": "the world size", "target.data_parallel_size": "the data-parallel size"}
        shown += f"; the printed values they can change: {', '.join(words.get(k, k) for k in changeable)}"
    elif not open_words and view.launch.kind == "shell":  # (a functional test's harness decides more than it says)
        shown += "; none of the printed effective values depends on them"
    if open_words:
        # argparse keeps the last of a flag given twice: a flag written before the expansion is overridden too
        shown += (f"; {', '.join(open_words)} may hold any flags, so a value printed as a default or given by a flag "
                  "written before it may differ, and so may what follows from one")
    details = {
        "unknowns": [{"line": _leading_line(u), "message": u} for u in unknowns],
        "can_change": changeable,
        "open": open_words,
    }
    f = lm_finding(view, "LM002", "info", f"not known statically (reported as unknown, never guessed): {shown}")
    f.details = details
    yield f


def _leading_line(sentence: str) -> Optional[int]:
    """The line a sentence starts with ("line 12: ..."), if it does."""
    head = sentence.split(":", 1)[0]
    if head.startswith("line ") and head[5:].isdigit():
        return int(head[5:])
    return None


# ----------------------------------------------------------------------------------------------
# LM1xx — tensor parallelism
# ----------------------------------------------------------------------------------------------


@rule("LM101", "tp-overlap-without-sequence-parallel", "error", "--tp-comm-overlap without --sequence-parallel",
      fix="overlap", frameworks=LM)
def tp_overlap_without_sp(view):
    """
    ## What it does
    Flags `--tp-comm-overlap` with TP > 1 and no `--sequence-parallel`.

    ## Why it matters
    Bridge switches TP overlap off in this case; Megatron-LM asserts instead (megatron-core 0.19.2,
    `megatron/training/arguments.py:1402`): `Tensor parallel communication/GEMM overlap can happen only
    when sequence parallelism is enabled`. The job dies at start-up.

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 4
      --tp-comm-overlap: true
    ```

    ## Fix
    Adds `--sequence-parallel` on its own line beside the flag. **Safe (b) — makes the requested overlap
    take effect**: userbuffers overlap is built on sequence-parallel all-gather / reduce-scatter.
    """
    if view.tp is None or view.tp <= 1:
        return
    yield from assertion_findings(
        view, "LM101", ("tp-overlap-sp",),
        Fix("safe", "add --sequence-parallel (TP overlap needs sequence parallelism)", (add_flag(view, "sequence_parallel"),)),
    )


@rule("LM102", "tp-overlap-at-tp1", "error", "--tp-comm-overlap at TP = 1: sequence parallelism is dropped first, then it asserts",
      fix="crash", frameworks=LM)
def tp_overlap_at_tp1(view):
    """
    ## What it does
    Flags `--tp-comm-overlap` with `--tensor-model-parallel-size 1` (the default).

    ## Why it matters
    At TP = 1 `validate_args` turns sequence parallelism off first (megatron-core 0.19.2,
    `megatron/training/arguments.py:1393-1399`), even when `--sequence-parallel` is given, and then asserts
    (`arguments.py:1402`): `Tensor parallel communication/GEMM overlap can happen only when sequence
    parallelism is enabled`. There is no TP communication to overlap at TP = 1.

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 1
      --sequence-parallel: true
      --tp-comm-overlap: true
    ```

    ## Fix
    Removes `--tp-comm-overlap`. **Safe (a) — removes a launch crash**: nothing it would do exists at TP = 1.
    """
    if view.tp != 1:
        return
    yield from assertion_findings(
        view, "LM102", ("tp-overlap-sp",),
        Fix("safe", "remove --tp-comm-overlap (nothing to overlap at TP = 1)", (remove_flag(view, "tp_comm_overlap"),)),
        lead="TP = 1 turns sequence parallelism off, then ",
    )


@rule("LM103", "sequence-parallel-dropped", "info", "--sequence-parallel at TP = 1 is turned off", frameworks=LM)
def sequence_parallel_dropped(view):
    """
    ## What it does
    Reports `--sequence-parallel` with TP = 1.

    ## Why it matters
    `validate_args` turns it off and prints `Disabling sequence parallelism because tensor model
    parallelism is disabled` (megatron-core 0.19.2, `megatron/training/arguments.py:1393-1399`). Harmless
    alone; with `--tp-comm-overlap` it leads to LM102.

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 1
      --sequence-parallel: true
    ```

    ## Fix
    None offered; nothing is lost.
    """
    for f in view.forced("sp-tp1"):
        if f.printed:
            yield lm_finding(
                view, "LM103", "info",
                f"TP = 1: validate_args turns --sequence-parallel off and prints \"{f.printed}\" ({f.at})",
                "sequence_parallel",
            )


@rule("LM104", "tp-overlap-with-deterministic-mode", "error", "--tp-comm-overlap with --deterministic-mode",
      fix="unsafe", frameworks=LM)
def tp_overlap_deterministic(view):
    """
    ## What it does
    Flags `--tp-comm-overlap` together with `--deterministic-mode`.

    ## Why it matters
    Deterministic mode checks the options it needs and never changes them (megatron-core 0.19.2,
    `megatron/training/determinism.py:24`, `117-145`, called from `arguments.py:1653`): TP overlap must be
    off, so the launch stops with `--deterministic-mode requires: tp_comm_overlap=False (got True). Adjust
    these options to continue.`

    ## Example
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 2
      --sequence-parallel: true
      --tp-comm-overlap: true
      --deterministic-mode: true
    ```

    ## Fix
    Removes `--tp-comm-overlap`. **Unsafe**: which of the two you want is your choice.
    """
    yield from assertion_findings(
        view, "LM104", ("determinism",),
        Fix("unsafe", "remove --tp-comm-overlap (deterministic mode needs it off)", (remove_flag(view, "tp_comm_overlap"),)),
    )


@rule("LM105", "tp-overlap-without-te", "error", "--tp-comm-overlap where Transformer Engine is absent", frameworks=LM)
def tp_overlap_without_te(view):
    """
    ## What it does
    Flags `--tp-comm-overlap` on a target without Transformer Engine (`--no-te`).

    ## Why it matters
    Megatron-LM sets up the userbuffers through Transformer Engine when it initializes (megatron-core 0.19.2,
    `megatron/training/initialize.py:157-198`); without it the launch raises `Tensor Parallel
    Communication/GEMM Overlap optimization needs 'yaml' and 'transformer_engine' packages`.

    ## Example
    Checked with `--no-te`:
    ```yaml
    MODEL_ARGS:
      --tensor-model-parallel-size: 2
      --sequence-parallel: true
      --tp-comm-overlap: true
    ```

    ## Fix
    None offered: install Transformer Engine, or drop the flag.
    """
    yield from assertion_findings(view, "LM105", ("tp-overlap-te",), lead="at initialize, ")


# ----------------------------------------------------------------------------------------------
# LM2xx — pipeline parallelism
# ----------------------------------------------------------------------------------------------


@rule("LM201", "p2p-overlap-off-without-vpp", "info", "No virtual pipeline: p2p overlap and aligned param gather are turned off",
      frameworks=LM)
def p2p_off_without_vpp(view):
    """
    ## What it does
    Reports PP > 1 without a virtual pipeline (no `--num-layers-per-virtual-pipeline-stage`,
    `--num-virtual-stages-per-pipeline-rank`, or a layout / hybrid pattern with more stages than PP).

    ## Why it matters
    `overlap_p2p_comm` defaults to true in Megatron-LM (only `--no-overlap-p2p-communication` exists), but
    without VPP `validate_args` sets `overlap_p2p_comm` and `align_param_gather` to false (megatron-core
    0.19.2, `megatron/training/arguments.py:977-985`) and prints `WARNING: Setting args.overlap_p2p_comm
    and args.align_param_gather to False since non-interleaved schedule does not support overlapping p2p
    communication and aligned param AG`. Pipeline sends then run batched (`batch_p2p_comm = not
    overlap_p2p_comm`, `argument_utils.py:307`), not overlapped.

    ## Example
    ```yaml
    MODEL_ARGS:
      --pipeline-model-parallel-size: 4
    ```

    ## Fix
    None offered: a virtual pipeline changes the schedule and memory; add
    `--num-layers-per-virtual-pipeline-stage N` if p2p overlap matters.
    """
    forced = [f for f in view.forced("no-vpp") if f.printed and f.old is True]
    if not forced:
        return
    names = " and ".join(f.dest for f in forced)
    yield lm_finding(
        view, "LM201", "info",
        f"PP={view.pp} without a virtual pipeline: validate_args sets {names} to False ({forced[0].at}); "
        "p2p runs batched, not overlapped",
        "pipeline_model_parallel_size",
    )


@rule("LM202", "interleaved-pp-too-small", "error", "A virtual pipeline with too few pipeline stages", frameworks=LM)
def interleaved_pp_too_small(view):
    """
    ## What it does
    Flags a virtual pipeline with PP = 1, or with PP ≤ 2 and `--no-overlap-p2p-communication`.

    ## Why it matters
    `validate_args` asserts (megatron-core 0.19.2, `megatron/training/arguments.py:966-976`): `When
    interleaved schedule is used, pipeline-model-parallel size should be greater than 1`, or, without p2p
    overlap, `... should be greater than 2 to avoid having multiple p2p sends and recvs between same 2
    ranks per communication batch`.

    ## Example
    ```yaml
    MODEL_ARGS:
      --pipeline-model-parallel-size: 2
      --num-virtual-stages-per-pipeline-rank: 2
      --no-overlap-p2p-communication: true
    ```

    ## Fix
    None offered: drop the virtual pipeline or `--no-overlap-p2p-communication`, or raise PP.
    """
    yield from assertion_findings(view, "LM202", ("interleaved-pp",))


@rule("LM203", "pipeline-split-rejected", "error", "A virtual-pipeline or layer split that the launch rejects",
      frameworks=LM)
def pipeline_split_rejected(view):
    """
    ## What it does
    Flags the pipeline-split assertions of `validate_args`: more than one way of asking for a virtual
    pipeline, a layout whose stages PP does not divide, layers that do not split evenly over the pipeline
    or its virtual stages, a hybrid layer pattern beside other split flags; and those of the
    `TransformerConfig` Megatron-LM builds next: uneven first / last stages
    (`--decoder-first-pipeline-num-layers`) whose remaining layers do not split over the middle stages or
    their virtual stages, `--account-for-*-in-pipeline-split` beside them, a layout beside either.

    ## Why it matters
    They stop the launch (megatron-core 0.19.2, `megatron/training/arguments.py:776-812`, `894-904`, `911`,
    `921`, `934`, `938`, `963`; `megatron/core/transformer/transformer_config.py:1922-2110`) with messages
    such as `number of layers per pipeline stage must be divisible number of layers per virtual pipeline
    stage`. The virtual pipeline decides p2p overlap (LM201).

    A script whose ways to the launch differ (a sourced file, the caller's arguments) is read along each of
    them: a split that fails on the ways where the sizes are known, while another way leaves them unknown,
    is a **warning** naming the decision (Megatron-LM's `examples/gptoss/02_train.sh`: 12 layers over
    PP = 8 GPUs, `unless` a distributed config file is sourced).

    ## Example
    ```yaml
    MODEL_ARGS:
      --num-layers: 12
      --pipeline-model-parallel-size: 4
      --num-layers-per-virtual-pipeline-stage: 2
    ```

    ## Fix
    None offered: pick sizes that divide.
    """
    from overlap_cli.frameworks.megatron_lm.assertions import ids_of

    yield from assertion_findings(view, "LM203", ("vpp-args", "layout", "vpp-layers", *ids_of("LM203")))
