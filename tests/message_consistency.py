"""Statements a finding's message makes about effective values, checked against the result's own table.

The convention the rules follow: ``key=value`` (``DP=8``, ``overlap_grad_reduce=true``) in a message states
the value Bridge runs with, so it must equal the ``effective`` entry; a conditional value is written
"key to value" ("with DP > 1 Bridge sets bucket_size to ..."). Beyond ``key=value`` these statements are
read: "Bridge forces A, B and C off", "DP unknown (give --world-size)", "TP overlap is on/off",
"section.key: X is overwritten ... with Y", "env_vars sets NAME=V", "env_vars has no NAME".
"""

from __future__ import annotations

import re

_SIZE_KEYS = {
    "TP": "model.tensor_model_parallel_size",
    "PP": "model.pipeline_model_parallel_size",
    "VPP": "model.virtual_pipeline_model_parallel_size",
    "CP": "model.context_parallel_size",
}
_SIZE = re.compile(r"(?<![\w.])(TP|PP|VPP|CP|DP)=(\d+)\b")
_ASSIGN = re.compile(r"(?<![\w.])((?:(?:model|ddp|optimizer)\.)?[a-z][a-z0-9_]*)=(-?\d{1,3}(?:,\d{3})+\b|[^\s,;:)]+)")
_FORCES = re.compile(r"\bforces? ((?:[a-z_]+(?:, | and ))*[a-z_]+) off\b")
_OVERWRITTEN = re.compile(r"\b((?:model|ddp|optimizer)\.[a-z0-9_]+): \S+ is overwritten\b[^;]*?\bwith (true|false|null|-?\d+)\b")
_ENV_SETS = re.compile(r"\benv_vars sets ([A-Z][A-Z0-9_]*)=(\S+?)[;,]?(?:\s|$)")
_ENV_HAS_NO = re.compile(r"\benv_vars has no ([A-Z][A-Z0-9_]*)\b")
_KEY_STATE = re.compile(r"(?<![\w.])((?:(?:model|ddp|optimizer)\.)?[a-z][a-z0-9_]*) is (on|off|true|false)\b")
_OVERLAP_STATE = re.compile(r"\b(TP overlap|DP overlap)(?: and (TP overlap|DP overlap))? (?:is|are) (on|off)\b")


def _parse(text: str):
    text = text.rstrip(".")
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none"):
        return None
    digits = text.replace(",", "")
    if re.fullmatch(r"-?\d+", digits):
        return int(digits)
    return text


def _by_leaf(effective: dict) -> dict:
    leaves: dict = {}
    for key in effective:
        if key.startswith("env."):
            continue
        leaves.setdefault(key.split(".", 1)[1], []).append(key)
    return leaves


def _value(effective: dict, key: str):
    entry = effective.get(key)
    return entry["value"] if isinstance(entry, dict) else None


def contradictions(result: dict) -> list:
    """Every statement in the result's messages that disagrees with its effective table (JSON result)."""
    effective = result.get("effective") or {}
    if not effective:
        return []
    target = result.get("target") or {}
    leaves = _by_leaf(effective)
    out = []
    for f in result.get("findings", []):
        msg, code = f["message"], f["code"]

        def bad(what: str) -> None:
            out.append(f"{result['file']}: {code}: {what} -- {msg}")

        for name, num in _SIZE.findall(msg):
            num = int(num)
            if name == "DP":
                actual = target.get("data_parallel_size")
            else:
                actual = _value(effective, _SIZE_KEYS[name])
                if name == "VPP" and actual is None:
                    actual = 1
            if actual != num:
                bad(f"says {name}={num}, effective {name} is {actual}")
        for key, text in _ASSIGN.findall(msg):
            keys = [key] if "." in key else leaves.get(key, [])
            keys = [k for k in keys if k in effective]
            if not keys:
                continue
            stated = _parse(text)
            actual = [_value(effective, k) for k in keys]
            if isinstance(stated, (str, dict, list)) or any(isinstance(a, (dict, list)) for a in actual):
                continue  # presets, paths: described, not restated
            if stated not in actual:
                bad(f"says {key}={text}, effective {' / '.join(f'{k}={a!r}' for k, a in zip(keys, actual))}")
        for group in _FORCES.findall(msg):
            for name in re.split(r", | and ", group):
                for k in leaves.get(name, []):
                    if _value(effective, k) not in (False, None):
                        bad(f"says Bridge forces {name} off, effective {k}={_value(effective, k)!r}")
        if ("unknown (give --world-size)" in msg or "world size not given" in msg) and target.get("world_size") is not None:
            bad(f"says the world size is missing, the target has world size {target['world_size']}")
        if target.get("data_parallel_size") is None and target.get("world_size") is not None and "DP=" in msg:
            pass  # covered by _SIZE: DP=N against an undefined DP fails there
        if "give --gpu" in msg and target.get("gpu") is not None and target.get("compute_capability") is not None:
            bad(f"asks for --gpu, the target's GPU is {target['gpu']}")
        if re.search(r"\b(?:without|no) VPP\b", msg):
            vpp = _value(effective, _SIZE_KEYS["VPP"])
            if vpp not in (None, 1):
                bad(f"says there is no VPP, effective VPP is {vpp}")
        for key, state in _KEY_STATE.findall(msg):
            keys = [k for k in ([key] if "." in key else leaves.get(key, [])) if k in effective]
            want = state in ("on", "true")
            actual = [_value(effective, k) for k in keys]
            if keys and not any((a is True) == want for a in actual):
                bad(f"says {key} is {state}, effective {' / '.join(f'{k}={a!r}' for k, a in zip(keys, actual))}")
        for key, text in _OVERWRITTEN.findall(msg):
            if key in effective and _value(effective, key) != _parse(text):
                bad(f"says {key} is overwritten with {text}, effective {_value(effective, key)!r}")
        for name, text in _ENV_SETS.findall(msg):
            entry = effective.get(f"env.{name}")
            if entry is not None and (entry["source"] != "env_vars" or str(entry["value"]) != text):
                bad(f"says env_vars sets {name}={text}, effective env.{name} is {entry['value']!r} ({entry['source']})")
        for name in _ENV_HAS_NO.findall(msg):
            entry = effective.get(f"env.{name}")
            if entry is not None and entry["source"] == "env_vars":
                bad(f"says env_vars has no {name}, effective env.{name} is {entry['value']!r} from the file")
        for first, second, state in _OVERLAP_STATE.findall(msg):
            for what in filter(None, (first, second)):
                if what == "TP overlap":
                    on = _value(effective, "model.tp_comm_overlap") is True
                else:
                    on = any(_value(effective, f"ddp.{k}") is True for k in ("overlap_grad_reduce", "overlap_param_gather"))
                if on != (state == "on"):
                    bad(f"says {what} is {state}, the effective table says {'on' if on else 'off'}")
    return out
