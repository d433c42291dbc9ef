"""Text of an estimate: a small table with a bar per part, each exposed part with the setting behind it."""

from __future__ import annotations

from overlap_cli.estimate.model import PARTS

BAR = 24


def part_reason(est, part: str) -> str:
    if part == "compute":
        d = est.details
        return (f"{d['t_gemm']:.2f} s GEMMs at {100 * d['efficiency']:.0f} % of peak, {d['t_mem']:.2f} s memory-bound, "
                f"{d['t_opt']:.2f} s optimizer")
    text = est.reasons.get(part, "")
    if part in ("tp_exposed", "dp_exposed", "ep_exposed") and "ln_margin" in est.reasons and text:
        text += "; " + est.reasons["ln_margin"]
    if part in ("dp_exposed", "p2p_exposed") and "cdmc" in est.reasons and text:
        text += "; " + est.reasons["cdmc"]
    return text or "none: no such communication in this layout"


def headline(est) -> str:
    j = est.to_json()
    s = est.shape
    return (f"step {j['step_time_s']:.3f} s  |  {j['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU  |  "
            f"{j['model_tflops_per_gpu']:.0f} model TFLOP/s/GPU  |  {s.world} x {s.gpu}, TP {s.tp} PP {s.pp} VPP {s.vp} "
            f"CP {s.cp} EP {s.ep} DP {s.dp}, {s.microbatches} micro-batches, {s.eff_class}")


def trust_lines(est) -> list:
    """The interval and the memory of an estimate, one line each (and the memory warning when there is one)."""
    iv = est.interval
    lines = []
    if iv["low_s"] is not None:
        lines.append(f"  interval: {iv['low_s']:.3f} .. {iv['high_s']:.3f} s ({int(iv['level'] * 100)} % of held-out runs of "
                     f"{iv['from']} fell in it, n = {iv['n']})" + (f"; {iv['note']}" if iv["note"] else ""))
    return lines + memory_lines(est.memory)


def memory_lines(m) -> list:
    """The memory line, then its warning or note when there is one."""
    lines = [memory_line(m)]
    w, n = m.warning(m.shape.gpu), m.note(m.shape.gpu)
    lines += [f"  warning: {w}"] if w else []
    lines += [f"  note: {n}"] if n else []
    return lines


def memory_line(m) -> str:
    """The memory of the most-loaded rank, its parts and its verdict against the GPU; where the vocabulary is
    unknown, the floor without the embedding and output layer, and why."""
    from overlap_cli.estimate.memory import gib

    f = m.fields
    extra = m.floor - f["weights_and_optimizer_bytes"] - f["activation_bytes"]
    cap = f"of {gib(m.capacity)}: {m.verdict()}" if m.capacity else "(GPU capacity unknown)"
    if m.unknown is not None:
        return (f"  memory, most-loaded rank: at least {gib(m.floor)} {cap} -- weights and optimizer "
                f"{gib(f['weights_and_optimizer_bytes'])} + activations {gib(f['activation_bytes'])} + overlap buffers "
                f"{gib(extra)} without the embedding and output layer: the vocabulary is unknown ({m.unknown})")
    return (f"  memory, most-loaded rank: weights and optimizer {gib(f['weights_and_optimizer_bytes'])} + activations "
            f"{gib(f['activation_bytes'])} + overlap buffers {gib(extra)} = {gib(m.total)} {cap}")


def render_memory_only(path: str, mem, why: str, assumptions: list, out) -> None:
    """A run on a GPU without step-time figures: its memory, and why there is no step time."""
    s = mem.shape
    out.write(f"{path}: step time not estimated: {why}  |  {s.world} x {s.gpu}, TP {s.tp} PP {s.pp} VPP {s.vp} CP {s.cp} "
              f"EP {s.ep} DP {s.dp}, {s.microbatches} micro-batches, {s.eff_class}\n")
    for line in memory_lines(mem):
        out.write(line + "\n")
    for a in assumptions:
        out.write(f"  assumption: {a}\n")


def render_text(path: str, est, out) -> None:
    """Write one estimate to ``out`` with rich (plain text when ``out`` is not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, highlight=False, soft_wrap=False, width=None if out.isatty() else 160)
    console.print(f"{path}: {headline(est)}", markup=False)
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for name in ("part", "seconds", "share", "", "why"):
        table.add_column(name, overflow="fold")
    total = est.step_time or 1.0
    for part in PARTS:
        value = est.parts[part]
        share = value / total
        bar = "█" * round(share * BAR) or ("▏" if value > 0 else "")
        table.add_row(part, f"{value:.3f}", f"{100 * share:4.1f} %", bar, part_reason(est, part))
    console.print(table)
    for line in trust_lines(est):
        console.print(line, markup=False)
    for a in est.assumptions:
        console.print(f"  assumption: {a}", markup=False)
