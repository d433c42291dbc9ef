"""``overlap presets list | show | suggest`` -- Megatron-Bridge's 19 TP-overlap (userbuffers) presets.

The options are ``cli.options.PRESETS_LIST`` / ``PRESETS_SHOW`` / ``PRESETS_SUGGEST``; cli.app registers
``list_presets``, ``show`` and ``suggest`` as the sub-commands. Which preset fits a config is
``frameworks.bridge.preset_suggestion``; this module prints it.
"""

from __future__ import annotations

import sys

from overlap_cli.cli.check import EXIT_INPUT, UsageError, check_one_config

EXIT_FIT, EXIT_NO_FIT = 0, 1


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

    from overlap_cli.results import json_document

    sys.stdout.write(json.dumps(json_document(**doc), indent=2, default=list) + "\n")


# ---------------------------------------------------------------------------------------------
# overlap presets list
# ---------------------------------------------------------------------------------------------


def list_presets(opts) -> None:
    """All shipped presets with the fields their names encode."""
    from overlap_cli.frameworks.bridge import presets
    from overlap_cli.frameworks.bridge.preset_suggestion import preset_family

    gpu, precision = opts.gpu, opts.precision
    family = None
    if gpu is not None:
        try:
            family = preset_family(gpu)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if precision is not None and precision not in ("bf16", "fp8"):
        raise UsageError(f"unknown precision {precision!r}: expected bf16|fp8")
    chosen = [
        p for _, p in sorted(presets.load_presets().items())
        if (family is None or p.fields.gpu == family) and (precision is None or p.fields.precision == precision)
    ]  # fmt: skip
    if opts.format == "json":
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


def _unknown_preset(name: str) -> UsageError:
    from overlap_cli.frameworks.bridge import presets

    why = ""
    try:
        presets.parse_preset_name(name)
    except ValueError as exc:
        why = f" ({exc})"
    close = presets.closest_names(name)
    hint = f"; closest: {', '.join(close)}" if close else "; `overlap presets list` shows them all"
    return UsageError(f"unknown preset {name!r}{why}{hint}")


def show(opts) -> None:
    """One preset in Bridge's serialized form, ready to paste into the comm_overlap section."""
    from overlap_cli.frameworks.bridge import presets

    name = opts.name
    if name not in presets.preset_names():
        raise _unknown_preset(name)
    preset = presets.get_preset(name)
    form = presets.serialized_form(name)
    if opts.format == "json":
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


def suggest(opts) -> int:
    """Rank the presets for a config (TP overlap must be effective), best fit first.

    Exit 0: a preset fits every known field; 1: none does, or TP overlap is off; 2: bad input.
    """
    from overlap_cli.frameworks.bridge.preset_suggestion import is_fit, suggestion

    checked = check_one_config(opts, "give exactly one config file")
    if checked is None:
        return EXIT_INPUT
    result = checked.result
    report = suggestion(checked.view)
    report["file"] = result.file
    if opts.format == "json":
        _json(report)
    else:
        _print_suggestion(report, opts.show_all)
    return EXIT_FIT if is_fit(report) else EXIT_NO_FIT


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
    from overlap_cli.frameworks.bridge.preset_suggestion import near_preset

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
    elif near_preset(doc) is not None:
        best = near_preset(doc)
        fields = ", ".join(LABELS[d["field"]] for d in best["differences"])
        out(_NEAR.format(name=best["name"], fields=fields) + "\n")
    else:
        out(_HONEST + "\n")


def _describe(d: dict) -> str:
    from overlap_cli.frameworks.bridge.preset_fit import Difference

    return Difference(d["field"], d["preset"], d["model"]).describe() + (" [warning]" if d["severity"] == "warning" else "")
