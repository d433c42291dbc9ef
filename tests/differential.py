"""What the differential tests share: finding the environment with the real Megatron-Bridge / Megatron-Core,
running `overlap check` on a file, and comparing EVERY key the tool prints in ``effective`` with what the
real code computed — the keys come from the tool's output, never from a list in the test, so a key added
to ``effective`` later is compared without anyone remembering to.

The comparison of one run (``compare``): the outcome first — where the real code raises, the tool reports an
error (an error finding quoting the message; ``quote=False`` where the message is not the tool's to quote);
where it launches, the tool reports none — then the data-parallel size, then each effective key:

- the reference must hold a value for the key (``no reference value`` otherwise: the key has no real
  counterpart the reference knows, which is itself a failure to look at);
- a launch that reads nothing from the caller's environment is determined by its text: the tool's value must
  equal the real one, and ``unknown`` is a disagreement (``unknown, but determined``);
- a launch that reads the caller's environment ran twice (where both runs fail, each for another reason, the
  tool is not asked to name one), under two caller environments (``variants``): a key
  whose real value differs between them must be ``unknown`` in the tool; one that is the same in both must
  be that value when the tool gives one (``unknown`` is then allowed: two runs cannot prove a value is
  determined);
- except that a value the tool gives saying the caller's environment can change it (LM002: ``can_change``,
  or an expansion that may hold any flags) must be the value of the run where the caller sets none of the
  variables (``baseline``);
- a real value ``{"unavailable": why}`` (the reference cannot compute it on CPU) must be ``unknown``.

Each disagreement is a ``Disagreement(key, cause, tool, real)``; ``cause`` is short and groups alike ones
(bench/differential.py prints the table).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTCOME, DP = "(outcome)", "(data_parallel_size)"
# The Megatron-Bridge releases ../shared/bridge-env/setup.sh builds, with the megatron-core each pins
# (its case table); ``main`` is the 0.6.2 environment with Bridge's main source ahead of it.
RELEASES = {"0.4.2": "0.17.1", "0.5.1": "0.18.2", "0.6.0": "0.19.2", "0.6.2": "0.19.2", "main": "0.19.2"}
DEFAULT_RELEASE = "0.6.2"


def _env_var(release: str) -> str:
    """OVERLAP_BRIDGE_ENV for the default release, OVERLAP_BRIDGE_ENV_0_5_1 (and the like) for another."""
    return "OVERLAP_BRIDGE_ENV" if release == DEFAULT_RELEASE else "OVERLAP_BRIDGE_ENV_" + release.replace(".", "_").upper()


def _installed(env: Path, dist: str):
    """The version of ``dist`` installed in ``env`` (from its .dist-info directory name), or None."""
    for site in env.glob("lib/python*/site-packages"):
        for info in site.glob(dist.replace("-", "_") + "-*.dist-info"):
            return info.name[len(dist) + 1:-len(".dist-info")]
    return None


def _is_main(env: Path) -> bool:
    return any(env.glob("lib/python*/site-packages/aa_bridge_main_src.pth"))


def reference_python(release: str = DEFAULT_RELEASE) -> Path | None:
    """The Python of an environment with the real Megatron-Bridge ``release`` and the megatron-core it pins,
    or None (then the differential tests of that release skip). Looked for in the variable ``_env_var``
    names, else where setup.sh builds it by default (the temp dir: ``bridge-env`` for 0.6.2,
    ``bridge-env-RELEASE`` for another); an environment holding another release is never used in its place.
    ``OVERLAP_BRIDGE_ENV=off`` turns every release off, as on a machine without the environments."""
    if os.environ.get("OVERLAP_BRIDGE_ENV", "").lower() in ("off", "none", "0"):
        return None
    tmp = tempfile.gettempdir()
    names = ["bridge-env", "bridge-env-" + release] if release == DEFAULT_RELEASE else ["bridge-env-" + release]
    for candidate in [os.environ.get(_env_var(release))] + [os.path.join(tmp, n) for n in names]:
        if not candidate or not (Path(candidate) / "bin" / "python").exists():
            continue
        env = Path(candidate)
        if not any(env.glob("lib/python*/site-packages/zz_bridge_env_compat.pth")):
            continue  # setup.sh writes it after every install: an environment still being built
        bridge = "0.6.2" if release == "main" else release
        if (_installed(env, "megatron_bridge") == bridge and _installed(env, "megatron_core") == RELEASES[release]
                and _is_main(env) == (release == "main")):
            return env / "bin" / "python"
    return None


@dataclass(frozen=True)
class Disagreement:
    key: str
    cause: str
    tool: object = None
    real: object = None

    def __str__(self) -> str:
        return f"{self.key}: {self.cause} (overlap: {self.tool!r}; real: {self.real!r})"


def run_tool(*args) -> dict:
    """``overlap check ARGS --format json`` in this process (conftest.run_entry_point); the one result."""
    from conftest import run_entry_point

    args = list(args)
    at = args.index("--") if "--" in args else len(args)  # the words after "--" are the checked script's own
    code, out, err = run_entry_point("check", *args[:at], "--format", "json", "--show-effective", *args[at:])
    try:
        results = json.loads(out)["results"]
    except (ValueError, KeyError):
        return {"crash": f"exit {code}: {err.strip()[-400:] or out[-400:]}"}
    return results[-1]


def same(a, b) -> bool:
    """Equal as JSON values, with booleans apart from integers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _short(v) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def tool_errors(result: dict) -> list:
    return [f"{f['code']}: {f['message']}" for f in result.get("findings", []) if f["severity"] == "error"]


INPUT_STAGES = ("argparse", "torchrun", "launcher", "bash")


def caller_qualified(result: dict) -> set:
    """The keys whose printed value the tool itself says the caller's environment can change (LM002's
    ``can_change``; ``(data_parallel_size)`` for ``target.data_parallel_size``), and ``("default", ...)``
    when an expansion may hold any flags (LM002's ``open``: "any value printed as a default may differ")."""
    out = set()
    for f in result.get("findings", []):
        if f.get("code") != "LM002":
            continue
        details = f.get("details") or {}
        for key in details.get("can_change", []):
            out.add(DP if key == "target.data_parallel_size" else key)
        if details.get("open"):
            out.add(("any",))
    return out


def compare(result: dict, variants: list, lookup, quote=lambda v: True, project=lambda key, value: value,
            input_stages=INPUT_STAGES, baseline=None) -> list:
    """Disagreements of one tool ``result`` (a JSON result of `overlap check`) with the real runs.

    ``variants``: the real results, one per caller environment, each ``{"error": message or None, "failed":
    bool, "data_parallel_size": int, ...}``; ``lookup(variant, key)`` gives the real value of an effective
    key (``KeyError``: the reference has none); ``quote(variant)``: whether the tool must quote its message;
    ``project(key, value)``: the part of a printed value the real code holds; ``input_stages``: the real
    steps whose failure is the input's (the tool's input error answers them); ``baseline``: the index in
    ``variants`` of the run where the caller's environment sets none of the variables the launch reads
    (None: no such run) — a value the tool prints as the one taken when the caller sets nothing, saying it
    can change (``caller_qualified``), must be that run's."""
    if "crash" in result:
        return [Disagreement(OUTCOME, "tool crashed", result["crash"], None)]
    out = []
    failed = [v for v in variants if v["failed"]]
    launched = [v for v in variants if not v["failed"]]
    errors = tool_errors(result)
    input_error = result.get("error")
    if input_error is not None:
        message = input_error.get("message") if isinstance(input_error, dict) else str(input_error)
        if launched:
            out.append(Disagreement(OUTCOME, "tool refuses the input; real launches", message, None))
            return out
        real = failed[0]
        if real.get("stage") not in input_stages:
            out.append(Disagreement(OUTCOME, "tool refuses the input; real fails later", message, real["error"]))
        return out
    if failed and not launched:
        real = failed[0]
        if len({v["error"] for v in failed}) > 1:
            return out  # fails under every caller environment tried, each time for another reason
        if not errors:
            out.append(Disagreement(OUTCOME, f"real fails ({real.get('stage')}); tool reports no error", None, real["error"]))
        elif quote(real) and not any(any(f'"{v["error"]}"' in e or v["error"] in e for e in errors) for v in failed):
            out.append(Disagreement(OUTCOME, f"real fails ({real.get('stage')}); tool reports another error", errors, real["error"]))
        return out
    if launched and not failed and errors:
        out.append(Disagreement(OUTCOME, "real launches; tool reports an error", errors, None))
    # the data-parallel size and every effective key, over the runs that launched
    dependent = len(variants) > 1
    qualified = caller_qualified(result)
    base = variants[baseline] if dependent and baseline is not None else None

    def as_baseline(key, value, found):
        """A value qualified as the caller-sets-nothing one is held to that run alone (nothing to hold it to
        where that run fails: the outcome above is then "depends on the caller")."""
        if not found or base is None or not (key in qualified or ("any",) in qualified):
            return found
        if base["failed"]:
            return []
        return [Disagreement(key, f"{d.cause} [caller's environment unset]", d.tool, d.real)
                for d in _value(key, value, False, [base["data_parallel_size"] if key == DP else lookup(base, key)], False)]

    shown_dp = result.get("target", {}).get("data_parallel_size")
    out += as_baseline(DP, shown_dp, _value(DP, shown_dp, False, [v["data_parallel_size"] for v in launched], dependent))
    for key, shown in result.get("effective", {}).items():
        try:
            reals = [lookup(v, key) for v in launched]
        except KeyError:
            out.append(Disagreement(key, "no reference value", shown.get("value"), None))
            continue
        value = project(key, shown.get("value"))
        found = _value(key, value, shown.get("source") == "unknown", reals, dependent)
        if shown.get("source") != "unknown":
            found = as_baseline(key, value, found)
        if found and shown.get("source") == "recommended":  # a suggestion printed in the value's place
            found = [Disagreement(key, f"{d.cause} [source recommended]", d.tool, d.real) for d in found]
        out += found
    return out


def _value(key: str, value, unknown: bool, reals: list, dependent: bool) -> list:
    if not reals:
        return []
    if any(isinstance(r, dict) and "unavailable" in r for r in reals):
        if unknown:
            return []
        return [Disagreement(key, "real value needs the built model; tool gives one", value, reals[0]["unavailable"])]
    agree = all(same(r, reals[0]) for r in reals)
    if unknown or (key == DP and value is None):
        if dependent or (key == DP and not agree):
            return []
        return [Disagreement(key, "tool unknown, but determined", None, reals[0])]
    if not agree:
        return [Disagreement(key, "tool gives a value; real depends on the caller's environment", value, reals)]
    if not same(value, reals[0]):
        where = " (where it launches; reads the caller's environment)" if dependent else ""
        return [Disagreement(key, f"tool {_short(value)}, real {_short(reals[0])}{where}", value, reals[0])]
    return []


def cached(name: str, inputs: list, compute):
    """``compute()`` once for these inputs (texts: the generated cases and the reference code), shared by the
    test workers of a run and by later runs: a JSON file in the temporary folder, written under a lock."""
    import fcntl
    import hashlib
    import tempfile

    digest = hashlib.sha256("\0".join(inputs).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"overlap-differential-{name}-{digest}.json"
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            return json.loads(path.read_text())
        value = compute()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(value))
        os.replace(tmp, path)
        return value
