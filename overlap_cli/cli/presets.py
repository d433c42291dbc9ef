"""``overlap presets list | show | suggest`` -- Megatron-Bridge's 19 TP-overlap (userbuffers) presets.

Only typer and the CLI module are imported at the top: registering these commands costs nothing.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from overlap_cli.cli.app import (
    OverlapGroup,
    GPU,
    TE,
    Detect,
    EnvFromShell,
    Format,
    GpusPerNode,
    Nodes,
    SettingsPath,
    TEVersion,
    TorchVersion,
    WorldSize,
    app,
    build_target,
    split_args,
    usage_error,
)

presets_app = typer.Typer(
    cls=OverlapGroup,  # one-line usage errors in the sub-commands too
    name="presets",
    help="Megatron-Bridge's TP-overlap (userbuffers) presets: list them, print one, pick one for a config.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(presets_app, name="presets")

EXIT_FIT, EXIT_NO_FIT = 0, 1


class ShowFormat(str, Enum):
    yaml = "yaml"
    json = "json"


def _fields_json(preset) -> dict:
    f = preset.fields
    return {
        "name": preset.name,
        "precision": f.precision,
        "gpu": f.gpu,
        "hidden_size": f.hidden_size,
        "tp": f.tp,
        "cp": f.cp,
        "micro_batch_size": f.micro_batch_size,
        "seq_length": f.seq_length,
        "lora": f.lora,
    }


def _same_values(name: str) -> list:
    from overlap_cli.frameworks.bridge import presets

    return [n for n in presets.match_presets(presets.get_preset(name)) if n != name]


def _json(doc) -> None:
    """Every JSON document overlap prints opens with the format version, as check's does."""
    import json

    sys.stdout.write(json.dumps({"version": 1, **doc}, indent=2, default=list) + "\n")


# ---------------------------------------------------------------------------------------------
# overlap presets list
# ---------------------------------------------------------------------------------------------


@presets_app.command("list")
def list_presets(
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Only presets for this GPU (h100|b200, or a target GPU: h200 uses h100 presets, b300/gb200/gb300 b200)."),
    precision: Optional[str] = typer.Option(None, "--precision", help="Only presets of this precision: bf16|fp8."),
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
):
    """All shipped presets with the fields their names encode."""
    from overlap_cli.frameworks.bridge import presets
    from overlap_cli.frameworks.bridge.preset_fit import GPU_FAMILY

    family = None
    if gpu is not None:
        name = gpu.strip().lower()
        if name not in GPU_FAMILY and name != "a100":
            raise usage_error(f"unknown GPU {gpu!r}: expected h100|h200|b200|b300|gb200|gb300 (or a100, which has no presets)")
        family = GPU_FAMILY.get(name, "none")
    if precision is not None and precision not in ("bf16", "fp8"):
        raise usage_error(f"unknown precision {precision!r}: expected bf16|fp8")
    chosen = [
        p for _, p in sorted(presets.load_presets().items())
        if (family is None or p.fields.gpu == family) and (precision is None or p.fields.precision == precision)
    ]  # fmt: skip
    if format == Format.json:
        _json({"presets": [{**_fields_json(p), "same_values_as": _same_values(p.name), "gemms": p.normalized()} for p in chosen]})
        return
    header = ("name", "precision", "GPU", "hidden", "TP", "CP", "MBS", "seq", "LoRA")
    rows = [
        (p.name, p.fields.precision, p.fields.gpu, str(p.fields.hidden_size), str(p.fields.tp), str(p.fields.cp),
         str(p.fields.micro_batch_size), str(p.fields.seq_length), "yes" if p.fields.lora else "no")
        for p in chosen
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        sys.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n")
    groups = [g for g in presets.duplicate_groups() if any(p.name in g for p in chosen)]
    sys.stdout.write(f"\n{len(chosen)} preset(s)")
    if gpu is not None and family == "none":
        sys.stdout.write(f" (no preset was tuned for {gpu})")
    sys.stdout.write("\n")
    if groups:
        sys.stdout.write("identical values (a config equal to one equals all):\n")
        for g in groups:
            sys.stdout.write("  " + " = ".join(g) + "\n")


# ---------------------------------------------------------------------------------------------
# overlap presets show
# ---------------------------------------------------------------------------------------------


def _unknown_preset(name: str) -> "typer.Exit":
    from overlap_cli.frameworks.bridge import presets

    why = ""
    try:
        presets.parse_preset_name(name)
    except ValueError as exc:
        why = f" ({exc})"
    close = presets.closest_names(name)
    hint = f"; closest: {', '.join(close)}" if close else "; `overlap presets list` shows them all"
    return usage_error(f"unknown preset {name!r}{why}{hint}")


@presets_app.command("show")
def show(
    name: str = typer.Argument(..., metavar="NAME", help="Preset name, e.g. userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192."),
    format: ShowFormat = typer.Option(ShowFormat.yaml, "--format", "-f", help="Output format."),
):
    """One preset in Bridge's serialized form, ready to paste into the comm_overlap section."""
    from overlap_cli.frameworks.bridge import presets

    if name not in presets.preset_names():
        raise _unknown_preset(name)
    preset = presets.get_preset(name)
    form = presets.serialized_form(name)
    if format == ShowFormat.json:
        _json({**_fields_json(preset), "same_values_as": _same_values(name), "tp_comm_overlap_cfg": form})
        return
    import yaml

    f = preset.fields
    same = _same_values(name)
    lines = [
        f"# {name}: tuned for precision {f.precision}, GPU {f.gpu}, hidden size {f.hidden_size}, TP {f.tp}, CP {f.cp},",
        f"# micro-batch size {f.micro_batch_size}, sequence length {f.seq_length}, LoRA {'yes' if f.lora else 'no'}.",
        "# Megatron-Bridge's serialized form (as ConfigContainer.to_yaml() writes it); paste under comm_overlap:",
    ]
    if same:
        lines.insert(2, f"# Holds the same values as {', '.join(same)}.")
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.write(yaml.safe_dump({"tp_comm_overlap_cfg": form}, default_flow_style=False, sort_keys=True))


# ---------------------------------------------------------------------------------------------
# overlap presets suggest
# ---------------------------------------------------------------------------------------------

_HONEST = (
    "No shipped preset was tuned for this run. Transformer Engine's defaults (tp_comm_overlap_cfg: null) are "
    "the honest choice; a near preset above is a guess to benchmark, not a fit."
)
_NEAR = (
    "No shipped preset was tuned exactly for this run. The closest, {name}, differs only in {fields} "
    "(info-level: TP and precision match): a reasonable start to benchmark against Transformer Engine's "
    "defaults (tp_comm_overlap_cfg: null), not a fit."
)


@presets_app.command("suggest")
def suggest(
    args: List[str] = typer.Argument(..., metavar="CONFIG [OVERRIDES...]", help="One config file, then Hydra-style overrides."),
    world_size: Optional[int] = WorldSize,
    nodes: Optional[int] = Nodes,
    gpus_per_node: Optional[int] = GpusPerNode,
    te: Optional[bool] = TE,
    gpu: Optional[str] = GPU,
    te_version: Optional[str] = TEVersion,
    torch_version: Optional[str] = TorchVersion,
    settings: Optional[str] = SettingsPath,
    detect: bool = Detect,
    env_from_shell: bool = EnvFromShell,
    show_all: bool = typer.Option(False, "--all", help="Rank all presets (default: the best five)."),
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
):
    """Rank the presets for a config (TP overlap must be effective), best fit first.

    Exit 0: a preset fits every known field; 1: none does, or TP overlap is off; 2: bad input.
    """
    from overlap_cli.check.engine import check_file
    from overlap_cli.config.overrides import parse_override
    from overlap_cli.check.results import InputError

    files, raw_overrides = split_args(args)
    if len(files) != 1:
        raise usage_error("give exactly one config file")
    try:
        overrides = [parse_override(o) for o in raw_overrides]
    except InputError as exc:
        raise usage_error(exc.problem.message) from None
    target = build_target(
        world_size, nodes, gpus_per_node, te, files[0], gpu=gpu, te_version=te_version, torch_version=torch_version,
        settings=settings, detect=detect, env_from_shell=env_from_shell,
    )  # fmt: skip
    result = check_file(files[0], target, overrides)
    if result.error is not None:
        sys.stderr.write(result.error.one_line() + "\n")
        raise typer.Exit(2)
    report = suggestion(result._view)  # type: ignore[attr-defined]
    report["file"] = files[0]
    if format == Format.json:
        _json(report)
    else:
        _print_suggestion(report, show_all)
    raise typer.Exit(EXIT_FIT if report["verdict"] in ("fit", "ambiguous") else EXIT_NO_FIT)


def suggestion(view) -> dict:
    """The ranking for one resolved config, as the JSON document ``suggest --format json`` prints."""
    from overlap_cli.frameworks.bridge import preset_fit

    ub = view.ub
    shape = ub.shape
    tp = view.effective["model.tp_comm_overlap"]
    doc: dict = {
        "tp_overlap_effective": bool(ub.tp_effective),
        "tp_overlap_reason": tp.reason,
        "run": shape.to_json(),
        "not_compared": shape.unknown(),
        "current": view.effective["model.tp_comm_overlap_cfg"].value,
        "candidates": [],
        "fits": [],
    }
    if not ub.tp_effective:
        doc["verdict"] = "tp-overlap-off"
        return doc
    ranked = preset_fit.rank(shape)
    doc["candidates"] = [c.to_json() for c in ranked]
    doc["fits"] = [c.name for c in ranked if c.exact]
    if preset_fit.single_exact_fit(shape):
        doc["verdict"] = "fit"
    elif doc["fits"]:
        doc["verdict"] = "ambiguous"
    else:
        doc["verdict"] = "none"
    return doc


def _current_text(value) -> str:
    if value is None:
        return "null (Transformer Engine's defaults)"
    preset = value.get("preset")
    if preset == "custom":
        return "a custom mapping"
    if preset is None:
        return f"{value.get('given')!r} (not a mapping Bridge can use)"
    others = [n for n in value.get("matches", []) if n != preset]
    return f"preset {preset}" + (f" (same values as {', '.join(others)})" if others else "")


def _print_suggestion(doc: dict, show_all: bool) -> None:
    from overlap_cli.frameworks.bridge.preset_fit import LABELS

    out = sys.stdout.write
    run = doc["run"]
    out(f"{doc['file']}: tp_comm_overlap_cfg is {_current_text(doc['current'])}\n")
    if doc["verdict"] == "tp-overlap-off":
        out(f"TP overlap is not effective here ({doc['tp_overlap_reason']}): a preset would do nothing.\n")
        out("Turn it on first: comm_overlap.tp_comm_overlap: true with TP >= 2 and model.sequence_parallel: true.\n")
        return
    known = [f"{LABELS[f]} {('yes' if run[f] else 'no') if f == 'lora' else run[f]}" for f in LABELS if run[f] is not None]
    out("this run: " + ", ".join(known) + "\n")
    if doc["not_compared"]:
        hints = {"gpu": "pass --gpu", "micro_batch_size": "train.micro_batch_size", "seq_length": "model.seq_length",
                 "hidden_size": "model.hidden_size"}  # fmt: skip
        out("not compared (unknown): " + ", ".join(f"{LABELS[f]} ({hints.get(f, 'not in the file')})" for f in doc["not_compared"]) + "\n")
    out("\n")
    shown = doc["candidates"] if show_all else doc["candidates"][:5]
    width = max(len(c["name"]) for c in shown)
    for i, c in enumerate(shown, 1):
        if c["exact"]:
            what = "fits what is known" if doc["not_compared"] else "fits exactly"
        else:
            what = "; ".join(_describe(d) for d in c["differences"])
        same = f"  [same values as {', '.join(c['same_values_as'])}]" if c["same_values_as"] else ""
        out(f"{i:>2}. {c['name']:<{width}}  {what}{same}\n")
    if not show_all and len(doc["candidates"]) > len(shown):
        out(f"    ... {len(doc['candidates']) - len(shown)} more (--all)\n")
    out("\n")
    if doc["verdict"] == "fit":
        name = doc["fits"][0]
        scope = "this run" if not doc["not_compared"] else "everything known about this run"
        out(f"{name} fits {scope}. `overlap presets show {name}` prints it for comm_overlap.tp_comm_overlap_cfg.\n")
    elif doc["verdict"] == "ambiguous":
        missing = ", ".join(LABELS[f] for f in doc["not_compared"])
        out(f"{', '.join(doc['fits'])} all fit what is known; their values differ, so give the missing fields "
            f"({missing}) to choose.\n")
    elif doc["candidates"] and doc["candidates"][0]["differences"] and all(
        d["severity"] == "info" for d in doc["candidates"][0]["differences"]
    ):
        best = doc["candidates"][0]
        fields = ", ".join(LABELS[d["field"]] for d in best["differences"])
        out(_NEAR.format(name=best["name"], fields=fields) + "\n")
    else:
        out(_HONEST + "\n")


def _describe(d: dict) -> str:
    from overlap_cli.frameworks.bridge.preset_fit import Difference

    return Difference(d["field"], d["preset"], d["model"]).describe() + (" [warning]" if d["severity"] == "warning" else "")
