"""``overlap env CONFIG``: the launch environment a config wants on its target, each variable with the reason.

The options are ``cli.options.ENV``; cli.app registers ``env`` as the command. The pipeline loads inside it.
"""

from __future__ import annotations

import sys

from overlap_cli.cli.check import EXIT_CLEAN, EXIT_INPUT, check_one_config
from overlap_cli.problems import InputError


def env(opts) -> int:
    """Print the launch environment (CUDA_DEVICE_MAX_CONNECTIONS, LayerNorm SM margins, ...) this config
    wants on the target, with the reason for each value. Exit 0, or 2 on input errors."""
    checked = check_one_config(opts, "overlap env takes exactly one config file")
    if checked is None:
        return EXIT_INPUT
    result, view = checked.result, checked.view
    try:
        entries = checked.form.launch_env(view)  # the form's framework says what the launch environment is
    except InputError as exc:  # a form whose launch environment is not the tool's to plan (NeMo-RL)
        sys.stderr.write(exc.problem.one_line() + "\n")
        return EXIT_INPUT
    notes = [n for n in result.notes if getattr(n, "kind", None) == "target"]
    if opts.format == "json":
        import json

        from overlap_cli.results import json_document

        doc = json_document(file=result.file, target=result.target, env={name: v.to_json() for name, v in entries})
        if notes:
            doc["notes"] = notes
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(render_lines(result, entries, notes, opts.format == "shell"))
    return EXIT_CLEAN


def _target_line(t: dict) -> str:
    src = t.get("sources", {})
    parts = []
    for key, label in (("gpu", "gpu"), ("world_size", "world size"), ("transformer_engine", "Transformer Engine")):
        value = t.get(key)
        if key == "gpu" and value is None and t.get("compute_capability"):
            value, key = f"compute capability {t['compute_capability']}", "compute_capability"
        shown = "unknown" if value is None else ({True: "present", False: "absent"}[value] if isinstance(value, bool) else value)
        parts.append(f"{label} {shown} ({src.get(key, 'unknown')})")
    dp = t.get("data_parallel_size")
    parts.append(f"DP {dp if dp is not None else 'unknown'}")
    return "# target: " + ", ".join(parts) + "\n"


def _quote_dotenv(value: str) -> str:
    if value and all(c.isalnum() or c in "_-.:/,=+@%" for c in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_lines(result, entries, notes, shell: bool) -> str:
    import shlex

    out = [f"# launch environment for {result.file} (overlap env)\n", _target_line(result.target)]
    out += [f"# {n}\n" for n in notes]
    for name, v in entries:
        if v.value is None:
            out.append(f"# {name}: {v.reason}\n")
        elif shell:
            out.append(f"export {name}={shlex.quote(str(v.value))}  # {v.reason}\n")
        else:
            out.append(f"{name}={_quote_dotenv(str(v.value))}\n")
    return "".join(out)
