"""A Bridge run with keys the tool cannot know (``Config.unknown``: a Python run's expression the reader
cannot evaluate, a catalog recipe read from source whose model comes from a Hugging Face config).

A key the run leaves unknown is reported as ``unknown`` with the reason (``FILE:LINE``). What Bridge
derives from it is unknown too: the run is resolved several times with the unknown inputs the resolver
reads set to different values (each input takes each of its candidate values in some sample), and an
effective value that differs between them is unknown, naming the inputs. A finding is reported when
every sample gives it; one that only some give is named in a note (it depends on the unknown keys).
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

SAMPLES = 5

# CommOverlapConfig's fields by type (comm_overlap.py:384-403): None lets Bridge decide.
_COMM_OVERLAP_CANDIDATES = {
    "tp_comm_overlap": [True, False],
    "overlap_p2p_comm": [None, True, False], "batch_p2p_comm": [None, True, False],
    "overlap_grad_reduce": [None, True, False], "overlap_param_gather": [None, True, False],
    "overlap_param_gather_with_optimizer_step": [None, True, False], "align_param_gather": [None, True, False],
    "defer_embedding_wgrad_compute": [None, True, False], "overlap_moe_expert_parallel_comm": [None, True, False],
    "delay_wgrad_compute": [None, True, False],
    "bucket_size": [None, 40000000], "wgrad_deferral_limit": [None, 22],
}


def _candidates(section: str, key: str, default) -> list:
    if isinstance(default, bool):
        return [default, not default]
    if key.endswith("_size") or key in ("num_layers",):
        return [default if default is not None else None, 2, 4, 8] if default is None else [1, 2, 4, 8]
    if isinstance(default, int):
        return [default, 1, 2]
    return [default]


def _inputs(cfg, release) -> list:
    """(path, candidates) of every input the resolver reads that the run leaves unknown."""
    from overlap_cli.frameworks.bridge import facts

    out = []

    def unknown(path: tuple) -> bool:
        return unknown_reason(cfg, path) is not None

    for section, defaults in release.SECTION_DEFAULTS.items():
        for key, default in defaults.items():
            if unknown((section, key)):
                out.append(((section, key), _candidates(section, key, default)))
    if unknown(("comm_overlap",)):
        from overlap_cli.frameworks.bridge.python_values import comm_overlap_config

        out.append((("comm_overlap",), [None, comm_overlap_config({"tp_comm_overlap": True}, release),
                                        comm_overlap_config({"tp_comm_overlap": False}, release)]))
    else:
        for key, default in release.COMM_OVERLAP_FIELDS.items():
            if isinstance(cfg.data.get("comm_overlap"), dict) and unknown(("comm_overlap", key)):
                out.append((("comm_overlap", key), _COMM_OVERLAP_CANDIDATES.get(key, [None])))
    if unknown(("mixed_precision",)):
        out.append((("mixed_precision",), ["bf16_mixed", None, "bf16_with_fp8_current_scaling_mixed"]))
    if not release.HAS_ENV_VARS:
        pass  # the release drops env_vars (release_fields): no value of it reaches the run
    elif unknown(("env_vars",)):
        out.append((("env_vars",), [{}, {"CUDA_DEVICE_MAX_CONNECTIONS": 1}, {"CUDA_DEVICE_MAX_CONNECTIONS": 32}]))
    elif unknown(("env_vars", "CUDA_DEVICE_MAX_CONNECTIONS")):
        out.append((("env_vars", "CUDA_DEVICE_MAX_CONNECTIONS"), [1, 32]))
    for path in (("dist", "use_megatron_fsdp"), ("ddp", "use_megatron_fsdp")):
        if unknown(path):
            out.append((path, [False, True]))
    return out


def unknown_reason(cfg, path: tuple) -> Optional[str]:
    """Why the value at ``path`` is unknown, or None: an unknown prefix of it, unless the run wrote the
    value itself afterwards (it is then in ``cfg.data``)."""
    if not cfg.unknown:
        return None
    node, present = cfg.data, True
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            present = False
            break
    if present:
        return None  # written after what made it unknown (the reader keeps only values it knows)
    for i in range(len(path), -1, -1):
        reason = cfg.unknown.get(path[:i])
        if reason is not None:
            return reason
    return None


def _sample(cfg, inputs: list, i: int):
    import copy
    import zlib

    data = copy.deepcopy(cfg.data)
    for path, candidates in inputs:
        if i == 0:
            value = candidates[0]
        else:
            value = candidates[(zlib.crc32(".".join(path).encode()) + i) % len(candidates)]
        node = data
        for part in path[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        if value is None and len(path) == 1:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    c = copy.copy(cfg)
    c.data = data
    c.sampled = frozenset(path for path, _ in inputs)  # values set here, not by the run (cfg_validate.value)
    return c


def resolve_all(cfg, target) -> list:
    """The resolved views of the run's samples (one view when nothing it reads is unknown)."""
    from overlap_cli.frameworks.bridge.resolver import resolve

    from overlap_cli.frameworks.bridge import releases
    from overlap_cli.problems import InputError

    inputs = _inputs(cfg, releases.of(target)) if cfg.unknown else []
    if not inputs:
        return [resolve(cfg, target)], []
    views = []
    for i in range(SAMPLES):
        try:
            views.append(resolve(_sample(cfg, inputs, i), target))
        except InputError:  # a combination of sampled values the type check refuses: not the run's doing
            continue
    if not views:
        return [resolve(cfg, target)], []
    return views, inputs


def effective_of(views: list, inputs: list, cfg, effective_entries) -> dict:
    """The effective values: the first view's, with what the samples disagree on (or the run left
    unknown itself) unknown."""
    from overlap_cli.results import UNKNOWN, Value

    effective = [{**v.effective, **effective_entries(v)} for v in views]
    out = dict(effective[0])
    names = ", ".join(".".join(p) for p, _ in inputs[:4]) + (" ..." if len(inputs) > 4 else "")
    for key, value in effective[0].items():
        path = tuple(key.split(".", 1)) if not key.startswith("env.") else ("env_vars", key[len("env."):])
        own = unknown_reason(cfg, path)
        if own is not None:
            out[key] = Value(None, UNKNOWN, f"unknown: {own}")
            continue
        if any(_differs(value, e.get(key)) for e in effective[1:]):
            first = next((unknown_reason(cfg, p) for p, _ in inputs), None)
            out[key] = Value(None, UNKNOWN, f"depends on keys the run leaves unknown ({names}; e.g. {first})")
    return out


def _differs(a, b) -> bool:
    if b is None:
        return True
    return (a.value, a.source) != (b.value, b.source)


def findings_of(finding_lists: list) -> tuple:
    """(findings every sample gives -- the first sample's --, the codes only some give)."""
    def key(f):
        return (f.code, f.key, f.line)

    common = set(key(f) for f in finding_lists[0])
    for fl in finding_lists[1:]:
        common &= set(key(f) for f in fl)
    kept = [f for f in finding_lists[0] if key(f) in common]
    some = sorted({f"{f.code} ({f.key})" if f.key else f.code for fl in finding_lists for f in fl if key(f) not in common})
    return kept, some


def effective_and_findings(cfg, views: list, inputs: list, effective_entries, findings_for) -> tuple:
    """(effective values, findings, the findings only some samples give) of a run's views: one view as it is
    when the run leaves nothing unknown; otherwise what the samples disagree on, or the run left unknown
    itself, is unknown, and a finding is kept only when every sample gives it and its own key is known
    (a finding on ``env_vars.X`` where the recipe's ``env_vars`` is unknown is no fact)."""
    view = views[0]
    if not cfg.unknown:
        return {**view.effective, **effective_entries(view)}, findings_for(view), []
    effective = effective_of(views, inputs, cfg, effective_entries)
    view.effective = {k: v for k, v in effective.items() if not k.startswith("env.")}
    findings, some = findings_of([findings_for(v) for v in views])
    kept = []
    for f in findings:
        if f.depends_on or (f.key and unknown_reason(cfg, tuple(f.key.split("."))) is not None):
            some.append(f"{f.code} ({f.key})" if f.key else f.code)
        else:
            kept.append(f)
    return effective, kept, sorted(set(some))


class _Watched(dict):
    """A section of a view that records the keys a rule reads which the run leaves unknown and the view
    only holds as the class default (a key under an unknown ``model`` the recipe never wrote)."""

    def __init__(self, data: dict, section: str, written: frozenset, reason, defaults: dict, reads: set):
        super().__init__(data)
        self._section, self._written, self._reason, self._defaults, self._reads = section, written, reason, defaults, reads

    def _note(self, key) -> None:
        if key in self._written or not isinstance(key, str):
            return
        reason = self._reason(key)
        if reason is not None and dict.get(self, key) == self._defaults.get(key):
            self._reads.add(f"{self._section}.{key}")

    def __getitem__(self, key):
        self._note(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._note(key)
        return dict.get(self, key, default)

    def __contains__(self, key):
        self._note(key)
        return dict.__contains__(self, key)


class ReadWatch:
    """While active, the sections rules read from a view (``final``, the sections as comm_overlap's setup
    reads them, the run's own data) record reads of keys the run leaves unknown (``reads``), so that a
    finding built on a class default standing in for an unknown value is not reported as a fact."""

    def __init__(self, view):
        self.view, self.reads, self._restore = view, set(), []
        cfg = view.cfg
        unknown = cfg.unknown
        data = cfg.data

        def watched(section: str, value):
            if not isinstance(value, dict) or isinstance(value, _Watched):
                return value
            own = data.get(section)
            written = frozenset(dict.keys(own)) if isinstance(own, dict) else frozenset()
            whole = unknown.get((section,)) or unknown.get(())

            def reason(key):
                return unknown.get((section, key)) or whole

            return _Watched(value, section, written, reason, view.release.SECTION_DEFAULTS.get(section, {}), self.reads)

        sections = [s for s in {p[0] for p in unknown if p} if s]
        if () in unknown:
            sections = list(data)
        final = getattr(view, "final", None) or {}
        for section in sections:
            if section in final:
                self._swap(final, section, watched(section, final[section]))
            if isinstance(data.get(section), dict):
                self._swap(data, section, watched(section, data[section]))
        for attr, section in (("model_at_setup", "model"), ("ddp_at_setup", "ddp")):
            value = getattr(view, attr, None)
            if section in sections and isinstance(value, dict) and value:
                self._restore.append((view, attr, value))
                setattr(view, attr, watched(section, value))

    def _swap(self, holder: dict, key: str, new) -> None:
        self._restore.append((holder, key, holder[key]))
        holder[key] = new

    def restore(self) -> None:
        for holder, key, old in reversed(self._restore):
            if isinstance(holder, dict):
                holder[key] = old
            else:
                setattr(holder, key, old)
        self._restore.clear()
