"""Published A/B measurements of communication-overlap settings against ``overlap diff``'s estimated change.

    python bench/overlap_ab.py            # the table (markdown) for bench/results.md
    python bench/overlap_ab.py --json     # one JSON object per pair

Data: ``bench/data/overlap_ab.jsonl`` -- for each pair its citation, the configuration (a shipped Bridge
recipe, settings both arms share, and each arm's own), and the measured old / new values with the step-time
change they imply. Each pair runs as ``overlap diff --recipe RECIPE old.yaml new.yaml --world-size N --gpu G
--format json``; the estimate's ``change_s`` over ``old_step_time_s`` is the predicted change.

A pair's sign is right when predicted and measured changes have the same sign; a measured change within
+-NULL (a null result) is right when the predicted one is within +-NULL too. The magnitude is "within 2x"
when predicted / measured is in [0.5, 2].
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "bench" / "data" / "overlap_ab.jsonl"
NULL = 0.01  # |step change| below 1 % is a null result (within the short benchmark windows' noise)


def pairs() -> list:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def _value(text: str):
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    try:
        return int(text)
    except ValueError:
        return text.strip("'\"")


def override_yaml(dotlists: list) -> str:
    """A YAML override file holding ``section.key=value`` settings (``++`` forced keys included)."""
    tree: dict = {}
    for item in dotlists:
        key, _, value = item.lstrip("+").partition("=")
        node = tree
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = _value(value)
    return json.dumps(tree, indent=1) + "\n"  # JSON is YAML


def run_cli(*args) -> tuple:
    from overlap_cli.cli.fast import main

    saved = sys.argv, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.argv, sys.stdout, sys.stderr = ["overlap", *map(str, args)], out, err
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def predict(pair: dict, folder: str, cli=run_cli) -> dict:
    """{"old_s", "new_s", "predicted", "measured", "sign_right", "within_2x"} for one pair."""
    cfg = pair["config"]
    old, new = Path(folder) / f"{pair['id']}.old.yaml", Path(folder) / f"{pair['id']}.new.yaml"
    old.write_text(override_yaml(cfg["common"] + cfg["old"]))
    new.write_text(override_yaml(cfg["common"] + cfg["new"]))
    code, out, err = cli("diff", "--recipe", cfg["recipe"], str(old), str(new), "--world-size", cfg["world_size"],
                         "--gpu", cfg["gpu"], "--format", "json")
    if code not in (0, 1):
        raise RuntimeError(f"{pair['id']}: overlap diff exit {code}: {err.strip()}")
    est = json.loads(out)["estimate"]
    if est["change_s"] is None:
        raise RuntimeError(f"{pair['id']}: no estimate: {est['unavailable']}")
    predicted = est["change_s"] / est["old_step_time_s"]
    measured = pair["measured"]["step_change"]
    if abs(measured) < NULL:
        sign_right = abs(predicted) < NULL
    else:
        sign_right = predicted * measured > 0 and abs(predicted) >= NULL / 10
    ratio = predicted / measured if measured else None
    return {"id": pair["id"], "old_s": est["old_step_time_s"], "new_s": est["new_step_time_s"], "predicted": predicted,
            "measured": measured, "sign_right": sign_right,
            "within_2x": (ratio is not None and 0.5 <= ratio <= 2) or (abs(measured) < NULL and abs(predicted) < NULL)}


def table(results: list, data: list) -> str:
    by_id = {p["id"]: p for p in data}
    lines = ["| pair | change | confidence | measured | predicted | sign | within 2x |", "|---|---|---|---:|---:|---|---|"]
    for r in results:
        p = by_id[r["id"]]
        setting = ", ".join(x.split("=")[0].split(".")[-1] + "=" + x.split("=")[1] for x in p["config"]["new"])
        lines.append(f"| `{r['id']}` | {setting} | {p['confidence']} | {100 * r['measured']:+.1f} % | {100 * r['predicted']:+.1f} % | "
                     f"{'right' if r['sign_right'] else 'WRONG'} | {'yes' if r['within_2x'] else 'no'} |")
    n = len(results)
    signs = sum(r["sign_right"] for r in results)
    mags = sum(r["within_2x"] for r in results)
    lines.append("")
    lines.append(f"{signs}/{n} signs right ({100 * signs / n:.0f} %), {mags}/{n} magnitudes within a factor of 2.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = pairs()
    with tempfile.TemporaryDirectory() as folder:
        results = [predict(p, folder) for p in data]
    if args.json:
        for r in results:
            print(json.dumps(r))
    else:
        print(table(results, data))


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
