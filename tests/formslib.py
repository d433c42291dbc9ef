"""The same Megatron-Bridge run written in every form overlap-cli reads, checked and fixed through the CLI,
for tests/check/test_forms_agree.py.

A ``Run`` is a catalog recipe, the world size and GPU it runs on, and 0-4 overrides of overlap-relevant
keys, drawn by a seeded generator (``generate``). ``write`` spells it in each form that can express it:

- ``dotlist``: ``check --recipe NAME key=value ...`` (no fix: ``overlap fix`` edits files, not words);
- ``yaml``: ``check --recipe NAME over.yaml``;
- ``dump``: ``check --base dump.yaml over.yaml``, the dump being ``overlap recipes show NAME`` (only for a
  recipe the catalog holds as values throughout: a recipe read from source leaves keys unknown, which a
  dump cannot say);
- ``python``: ``run.py``, ``cfg = NAME()`` then one ``cfg.a.b = value`` per override;
- ``launch``: ``launch.sh``, ``torchrun --nproc-per-node P --nnodes N scripts/training/run_recipe.py
  --recipe NAME key=value ...``.

The world size is stated as ``--world-size N`` for the first four and by torchrun's sizes for the launch;
the GPU is ``--gpu G`` for all five (a dump does not name its recipe, so the GPU the recipe's name implies
is not the dump's to know: stating it for every form keeps that one fact out of the comparison).

``observe`` runs each form through ``overlap check --format json`` and ``overlap fix --write`` (then
``check`` of the fixed file) in this process (conftest.run_entry_point, the console script's own
function) and returns what the test compares, with file locations normalised (``normalise``).
"""

from __future__ import annotations

import json
import random
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from conftest import run_entry_point
from overlap_cli.results import READING_KINDS

FORMS = ("dotlist", "yaml", "dump", "python", "launch")
FIXABLE = ("yaml", "dump", "python", "launch")  # fix writes into a file; dotlist words are no file
REFERENCE = "yaml"  # the form every other is compared with

# The overlap-relevant keys an override is drawn from, with the values it may take. ``moe``: only for a
# recipe with experts; ``section``: only when the recipe holds that section as a mapping (a key written
# into a section the recipe leaves null means another thing in each form: Hydra refuses it, the YAML
# merge makes a plain dict of it, Python raises AttributeError).
@dataclass(frozen=True)
class Key:
    path: str
    values: tuple
    moe: bool = False
    section: str | None = None


KEYS = (
    Key("model.tensor_model_parallel_size", (1, 2, 4, 8)),
    Key("model.pipeline_model_parallel_size", (1, 2, 4)),
    Key("model.virtual_pipeline_model_parallel_size", (None, 2)),
    Key("model.context_parallel_size", (1, 2)),
    Key("model.expert_model_parallel_size", (1, 2, 4, 8), moe=True),
    Key("model.sequence_parallel", (True, False)),
    Key("comm_overlap.tp_comm_overlap", (True, False), section="comm_overlap"),
    Key("comm_overlap.overlap_grad_reduce", (True, False), section="comm_overlap"),
    Key("comm_overlap.overlap_param_gather", (True, False), section="comm_overlap"),
    Key("comm_overlap.overlap_p2p_comm", (True, False), section="comm_overlap"),
    Key("comm_overlap.bucket_size", (None, 20000000), section="comm_overlap"),
    Key("ddp.overlap_grad_reduce", (True, False)),
    Key("ddp.overlap_param_gather", (True, False)),
    Key("ddp.use_distributed_optimizer", (True, False)),
    Key("ddp.bucket_size", (None, 40000000)),
    Key("ddp.grad_reduce_in_fp32", (True, False)),
    Key("mixed_precision", ("bf16_mixed", "bf16_with_fp8_current_scaling_mixed")),
    Key("env_vars.CUDA_DEVICE_MAX_CONNECTIONS", (1, 8), section="env_vars"),
)


@dataclass(frozen=True)
class Run:
    index: int
    recipe: str
    gpu: str
    world_size: int
    overrides: tuple  # ((key, value), ...) in the order written
    has_dump: bool = True  # the catalog holds every value of the recipe (the dump form can express it)
    # run_recipe.py builds this very run: it sets model.seq_length to the dataset's before validate()
    # (recipe_runner.py:471-486), a no-op only where the recipe's two lengths are known and equal
    runner_same: bool = True

    @property
    def forms(self) -> tuple:
        return tuple(f for f in FORMS if (f != "dump" or self.has_dump) and (f != "launch" or self.runner_same))

    def __str__(self) -> str:
        words = " ".join(f"{k}={_yaml_scalar(v)}" for k, v in self.overrides)
        return f"#{self.index} {self.recipe} ws={self.world_size} gpu={self.gpu} {words}".rstrip()


def _catalog() -> list:
    """[(name, gpu, world_size, moe, sections, has_dump, runner_same)] of every recipe with a GPU and world size."""
    from overlap_cli.frameworks.bridge import recipes

    rows = []
    for name in recipes.names("0.6.2"):
        if name.startswith("perf__"):  # a catalog-internal name: no script can call it
            continue
        info = recipes.info("0.6.2", name)
        if info["gpu"] is None or info["world_size"] is None:
            continue
        values, unknown = recipes.data("0.6.2", name)
        moe = bool((values.get("model") or {}).get("num_moe_experts"))
        sections = frozenset(k for k, v in values.items() if isinstance(v, dict))
        lengths = [(values.get(s) or {}).get("seq_length") for s in ("model", "dataset")]
        same = lengths[0] is not None and lengths[0] == lengths[1] and not any(
            p[:1] in (("model",), ("dataset",)) and p[1:2] in ((), ("seq_length",)) for p in map(tuple, unknown or ()))
        rows.append((name, info["gpu"], info["world_size"], moe, sections, not unknown, same))
    return rows


def generate(seed: int, count: int) -> list:
    """``count`` runs drawn with ``random.Random(seed)``: MoE and dense recipes alternate, the recipe's own
    world size most of the time (else half or double it), 0-4 overrides of distinct keys."""
    rng = random.Random(seed)
    catalog = _catalog()
    moe = [r for r in catalog if r[3]]
    dense = [r for r in catalog if not r[3]]
    runs = []
    for i in range(count):
        name, gpu, world, is_moe, sections, has_dump, runner_same = rng.choice(moe if i % 2 else dense)
        roll = rng.random()
        if roll < 0.15 and world > 1:
            world //= 2
        elif roll < 0.3:
            world *= 2
        keys = [k for k in KEYS if (not k.moe or is_moe) and (k.section is None or k.section in sections)]
        chosen = rng.sample(keys, rng.randint(0, 4))
        overrides = tuple((k.path, rng.choice(k.values)) for k in chosen)
        runs.append(Run(i, name, gpu, world, overrides, has_dump, runner_same))
    return runs


# ---- writing a run in each form -------------------------------------------------------------------------


def _yaml_scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _word(key: str, value) -> str:
    """The dotlist word: env_vars keys with Hydra's ``++`` (add or override: a recipe may lack the key)."""
    return f"{'++' if key.startswith('env_vars.') else ''}{key}={_yaml_scalar(value)}"


def _yaml_text(overrides) -> str:
    if not overrides:
        return "# no overrides: the recipe as it is\n"
    tree: dict = {}
    for key, value in overrides:
        *parents, leaf = key.split(".")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    lines = []

    def emit(node, depth):
        for k, v in node.items():
            if isinstance(v, dict):
                lines.append(f"{'  ' * depth}{k}:")
                emit(v, depth + 1)
            else:
                lines.append(f"{'  ' * depth}{k}: {_yaml_scalar(v)}")

    emit(tree, 0)
    return "\n".join(lines) + "\n"


def _python_text(run: Run) -> str:
    lines = [f"from megatron.bridge.recipes import {run.recipe}", "", f"cfg = {run.recipe}()"]
    for key, value in run.overrides:
        if key.startswith("env_vars."):
            lines.append(f"cfg.env_vars[{key.split('.', 1)[1]!r}] = {value!r}")
        else:
            lines.append(f"cfg.{key} = {value!r}")
    return "\n".join(lines) + "\n"


def _launch_text(run: Run) -> str:
    per_node = min(run.world_size, 8) if run.world_size % 8 == 0 or run.world_size < 8 else run.world_size
    nodes = run.world_size // per_node
    words = " ".join(shlex.quote(_word(k, v)) for k, v in run.overrides)
    return ("#!/bin/bash\n"
            f"torchrun --nproc-per-node {per_node} --nnodes {nodes} scripts/training/run_recipe.py "
            f"--recipe {run.recipe} {words}".rstrip() + "\n")


@dataclass
class Written:
    """One form of a run on disk: ``args`` the check command's inputs, ``edited`` the file fix writes
    into (None: no fix), ``user`` the files whose locations are the user's, ``base`` the dump."""

    form: str
    args: list
    edited: str | None
    user: list = field(default_factory=list)
    base: str | None = None


def write(run: Run, form: str, folder: Path, dumps: Path) -> Written:
    folder.mkdir(parents=True, exist_ok=True)
    if form == "dotlist":
        return Written(form, ["--recipe", run.recipe, *(_word(k, v) for k, v in run.overrides)], None)
    if form == "python":
        path = folder / "run.py"
        path.write_text(_python_text(run))
        return Written(form, [str(path)], str(path), [str(path)])
    if form == "launch":
        path = folder / "launch.sh"
        path.write_text(_launch_text(run))
        return Written(form, [str(path)], str(path), [str(path)])
    over = folder / "over.yaml"
    over.write_text(_yaml_text(run.overrides))
    if form == "yaml":
        return Written(form, ["--recipe", run.recipe, str(over)], str(over), [str(over)])
    dump = dump_of(run.recipe, dumps)
    return Written(form, ["--base", str(dump), str(over)], str(over), [str(over)], str(dump))


def dump_of(recipe: str, dumps: Path) -> Path:
    """``overlap recipes show NAME`` saved once per recipe."""
    path = dumps / f"{recipe}.yaml"
    if not path.exists():
        dumps.mkdir(parents=True, exist_ok=True)
        code, out, err = run_entry_point("recipes", "show", recipe)
        assert code == 0, err
        path.write_text(out)
    return path


# ---- normalising file locations -------------------------------------------------------------------------
#
# The ONLY normalisation: where a form keeps a value, a finding or a note.
# - the user's side: the form's own file (over.yaml, run.py, launch.sh) with or without ``:LINE[:COLUMN]``,
#   and the command line of the dotlist form (``command line`` / ``the command line`` -> ``<user>``,
#   ``on the command line`` / ``in the command line`` -> ``in <user>``);
# - the base: ``recipe NAME`` and the dump file with or without ``:LINE[:COLUMN]`` -> ``<base>``;
# - notes of the kinds ``results.READING_KINDS`` (how the form was read: the runner a launch names, its
#   torchrun sizes) are dropped;
# - a finding's ``line``, ``column`` and ``origin`` (the layer it points at, when not the checked file)
#   and the result's ``file`` are dropped.
# Everything else (values, sources, layers that are not locations such as ``bridge-auto``, codes,
# severities, keys, the words of messages, reasons and notes) is compared as printed.


def _patterns(written: Written, run: Run) -> list:
    loc = r"(?::\d+(?::\d+)?)?"
    pats = [(re.compile(re.escape(p) + loc), "<user>") for p in written.user]
    if written.base:
        pats.append((re.compile(re.escape(written.base) + loc), "<base>"))
    pats += [
        (re.compile(r"\b(?:on|in) the command line\b"), "in <user>"),
        (re.compile(r"\b(?:the )?command line\b"), "<user>"),
        (re.compile(r"\brecipe " + re.escape(run.recipe) + r"\b"), "<base>"),
    ]
    return pats


def normalise(text, pats):
    if not isinstance(text, str):
        return text
    for pat, repl in pats:
        text = pat.sub(repl, text)
    return text


def _summary(result: dict, pats) -> dict:
    n = lambda s: normalise(s, pats)  # noqa: E731
    effective = {k: (v.get("value"), v.get("source"), n(v.get("layer")), n(v.get("reason")))
                 for k, v in (result.get("effective") or {}).items()}
    findings = sorted((f["code"], f["severity"], f.get("key"), n(f["message"]))
                      for f in result.get("findings") or [])
    error = result.get("error")
    target = result.get("target") or {}
    return {
        "effective": effective,
        "findings": findings,
        # a note of a READING_KINDS kind says how this form was read: it differs between forms by design
        "notes": sorted(n(x) for x, kind in zip(result.get("notes") or [], result.get("note_kinds") or [])
                        if kind not in READING_KINDS),
        "error": None if error is None else n(error.get("message") if isinstance(error, dict) else str(error)),
        # the target's ``recipe`` is the base's name, i.e. its location (a dump names none): not compared
        "target": {k: target.get(k) for k in ("world_size", "data_parallel_size", "gpu")},
    }


def _flags(run: Run, form: str) -> list:
    flags = ["--gpu", run.gpu]
    return flags if form == "launch" else ["--world-size", str(run.world_size), *flags]


def check(run: Run, written: Written) -> tuple:
    """(exit code, summary, the raw result) of ``overlap check --format json --show-info``."""
    code, out, err = run_entry_point("check", "--format", "json", "--show-info", *_flags(run, written.form),
                                     *written.args)
    try:
        result = json.loads(out)["results"][0]
    except (ValueError, KeyError, IndexError):
        return code, {"error": f"no JSON result: {err.strip()[:300]}"}, None
    return code, _summary(result, _patterns(written, run)), result


_FIXED = re.compile(r"^fixed (?P<path>.+): (?P<codes>[A-Z0-9, ]+)$")
_LEFT = re.compile(r"^(?P<where>.+?): (?P<code>[A-Z]+\d+)(?: \[\*\])? (?P<severity>info|warning|error): ")


def fix(run: Run, written: Written) -> dict:
    """``overlap fix --write`` of the form's file, then ``check`` of the fixed run: which codes were fixed,
    the exit code, the effective values and findings after the fix; and, within the form, where fix names
    each finding left against where ``check --format concise`` names it."""
    code, out, err = run_entry_point("fix", "--write", *_flags(run, written.form), *written.args)
    fixed = sorted(c.strip() for line in out.splitlines() if (m := _FIXED.match(line))
                   for c in m["codes"].split(","))
    after_code, after, _ = check(run, written)
    _, concise, _ = run_entry_point("check", "--format", "concise", *_flags(run, written.form), *written.args)
    pats = _patterns(written, run)
    fix_places = sorted((m["code"], normalise(m["where"], pats)) for line in out.splitlines()
                        if (m := _LEFT.match(line)))
    check_places = sorted((m["code"], normalise(m["where"], pats)) for line in concise.splitlines()
                          if (m := _LEFT.match(line)) and m["severity"] != "info")
    return {
        "fixed": fixed,
        "exit": code,
        "effective": after.get("effective"),
        "findings": after.get("findings"),
        "after_exit": after_code,
        "places": (fix_places, check_places),
        "stderr": normalise(err.strip(), pats),
    }


def observe(run: Run, folder: Path, dumps: Path) -> dict:
    """{form: {"exit", "check", "fix"}} of one run: each form written under ``folder/FORM``."""
    seen = {}
    for form in run.forms:
        written = write(run, form, folder / form, dumps)
        code, summary, _ = check(run, written)
        seen[form] = {"exit": code, "check": summary,
                      "fix": fix(run, written) if form in FIXABLE else None}
    return seen


# ---- comparing the forms --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    """One item one side prints and the other does not: ``form`` against the reference form for
    ``aspect`` (``side`` "form" or "reference": which of the two prints ``item``), or, for
    ``fix-places``, ``overlap fix``'s place of a finding left against ``check``'s (``side`` "fix" or
    "check"), within one form. ``item``: a finding, a note, ``(key, value)`` of the effective values or of
    the target, an exit code, a line of fix's stderr, a fixed code."""

    run: Run
    form: str
    aspect: str
    side: str
    item: object

    def __str__(self) -> str:
        other = "check" if self.aspect == "fix-places" else REFERENCE
        where = self.form if self.side in ("form", "fix") else other
        return f"{self.run} | {self.form} vs {other} | {self.aspect} | only {where}: {self.item!r}"


def _items(mine, theirs) -> tuple:
    if isinstance(mine, dict) and isinstance(theirs, dict):
        keys = sorted(set(mine) | set(theirs))
        return ([(k, mine[k]) for k in keys if k in mine and mine.get(k) != theirs.get(k)],
                [(k, theirs[k]) for k in keys if k in theirs and mine.get(k) != theirs.get(k)])
    if isinstance(mine, list) and isinstance(theirs, list):
        a, b = list(mine), list(theirs)
        for x in list(a):
            if x in b:
                a.remove(x)
                b.remove(x)
        return a, b
    return ([mine], [theirs]) if mine != theirs else ([], [])


ASPECTS = ("exit", "error", "target", "effective", "findings", "notes",
           "fix-fixed", "fix-exit", "fix-effective", "fix-findings", "fix-stderr", "fix-places")


def disagreements(run: Run, seen: dict) -> list:
    """Every Disagreement of one observed run (``observe``)."""
    ref = seen[REFERENCE]
    out = []

    def add(form, aspect, mine, theirs, sides=("form", "reference")):
        a, b = _items(mine, theirs)
        out.extend(Disagreement(run, form, aspect, sides[0], x) for x in a)
        out.extend(Disagreement(run, form, aspect, sides[1], x) for x in b)

    for form, o in seen.items():
        if form != REFERENCE:
            add(form, "exit", o["exit"], ref["exit"])
            for aspect in ("error", "target", "effective", "findings", "notes"):
                add(form, aspect, o["check"].get(aspect), ref["check"].get(aspect))
            if o["fix"] is not None:
                for aspect in ("fixed", "exit", "effective", "findings"):
                    add(form, "fix-" + aspect, o["fix"][aspect], ref["fix"][aspect])
                add(form, "fix-stderr", [x for x in o["fix"]["stderr"].splitlines() if x],
                    [x for x in ref["fix"]["stderr"].splitlines() if x])
        if o["fix"] is not None:
            fix_places, check_places = o["fix"]["places"]
            add(form, "fix-places", fix_places, check_places, ("fix", "check"))
    return out
