"""Build Megatron-LM's argparse table that overlap-cli ships: every option ``parse_args`` accepts, as data.

    BRIDGE_ENV/bin/python tools/build_mlm_arguments.py [--mlm-source DIR|GITDIR@REF]

Run it in an environment where megatron-core is importable (its wheel carries ``megatron/training``): the
table is that release's (one per release the tool mirrors: /tmp/bridge-env-0.4.2 holds megatron-core 0.17.1,
-0.5.1 holds 0.18.2, -0.6.2 holds 0.19.2).
The parser is the real one: ``argparse.ArgumentParser(allow_abbrev=False)`` filled by
``megatron.training.arguments.add_megatron_arguments``, exactly as ``parse_args`` builds it
(megatron/training/arguments.py:116-121). Every action is written with its spellings, dest, action kind,
type, nargs, choices, const and default.

The optional argument groups the training scripts add through ``extra_args_provider`` are not in the
wheel; they are read from a Megatron-LM source tree (``--mlm-source``: a checkout, or a git directory and
a ref; default ``OVERLAP_MLM_SOURCE``, else the installed release's tag ``core_vX.Y.Z`` of a mirror fetched
next to this repository, ``../.mirror/NVIDIA+Megatron-LM/repo``, or its release branch ``core_rX.Y.0`` when
the mirror has no such tag — 0.19.2's; the wheels' ``megatron/training/arguments.py`` equal both). Of such a file only the top-level imports
(each tried; one that fails is skipped) and the provider function are executed, on a fresh copy of the
core parser; the actions it adds form that group. Nothing of the rest of the script runs.

Output: ``overlap_cli/frameworks/megatron_lm/releases/arguments-X.Y.Z.json`` (the installed release's).
"""

from __future__ import annotations

import argparse
import ast
import enum
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "overlap_cli" / "frameworks" / "megatron_lm" / "releases"
# A mirror fetched next to the repository (``fetch github:NVIDIA/Megatron-LM``).
MIRROR = ROOT.parent / ".mirror" / "NVIDIA+Megatron-LM" / "repo"


def default_source(version: str) -> str:
    """The mirror at the release's tag, else at its release branch."""
    tag = f"core_v{version}"
    found = subprocess.run(["git", "-C", str(MIRROR), "rev-parse", "--verify", "-q", tag + "^{commit}"],
                           capture_output=True, text=True).returncode == 0
    return f"{MIRROR}@{tag if found else 'core_r' + '.'.join(version.split('.')[:2]) + '.0'}"


def describe_source(src: str) -> str:
    """The source as project, release branch and commit — never the path it was read from."""
    gitdir, ref = src.rsplit("@", 1) if "@" in src else (src, "HEAD")
    proc = subprocess.run(["git", "-C", gitdir, "rev-parse", "--verify", "-q", ref + "^{commit}"],
                          capture_output=True, text=True)
    commit = proc.stdout.strip() if proc.returncode == 0 else "unknown commit"
    return f"NVIDIA/Megatron-LM {ref} {commit}"

# (group, file in the Megatron-LM tree, provider function, the training scripts that pass it) — every
# extra_args_provider of a script the functional tests run (tests/test_utils/recipes: TRAINING_SCRIPT_PATH).
PROVIDERS = (
    ("modelopt", "megatron/post_training/arguments.py", "add_modelopt_args", ["pretrain_gpt.py", "pretrain_hybrid.py"]),
    ("vlm", "pretrain_vlm.py", "add_vlm_extra_args", ["pretrain_vlm.py"]),
    ("inference", "megatron/inference/utils.py", "add_inference_args",
     ["train_rl.py", "gpt_dynamic_inference.py", "gpt_dynamic_inference_with_coordinator.py"]),
    ("static-inference", "examples/inference/advanced/gpt_static_inference.py", "add_static_inference_args", ["gpt_static_inference.py"]),
    ("offline-inference", "examples/inference/offline_inference.py", "add_offline_inference_args", ["offline_inference.py"]),
    ("mimo", "examples/mimo/train.py", "add_mimo_args", ["train.py"]),
    # its ModelOpt half is the modelopt group already (has_nvidia_modelopt is set by a try/except at import)
    ("flextron", "megatron/elastification/pretrain_hybrid_flex.py", "mamba_flex_extra_args_provider", ["pretrain_hybrid_flex.py"],
     {"has_nvidia_modelopt": False}),
)

ACTION_KINDS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_CountAction": "count",
    "BooleanOptionalAction": "boolean_optional",
    "_HelpAction": "help",
    "_VersionAction": "version",
}


def read_source(source: str, rel: str) -> str | None:
    if "@" in source:
        gitdir, ref = source.rsplit("@", 1)
        proc = subprocess.run(["git", "-C", gitdir, "show", f"{ref}:{rel}"], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else None
    path = Path(source) / rel
    return path.read_text() if path.is_file() else None


def provider_function(source: str, text: str, name: str, filename: str, depth: int = 0, preset: dict | None = None):
    """The provider function of a module, defined after the module's top-level imports (each tried).

    An import of a ``megatron.*`` module the wheel lacks (``megatron.inference``, ``megatron.elastification``)
    is served from the source tree: the names it imports are defined the same way, one level deep."""
    tree = ast.parse(text, filename)
    namespace: dict = {"__name__": "mlm_provider", **(preset or {})}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module([node], []), filename, "exec"), namespace)
            except Exception as exc:  # an optional dependency of the script, or a module only in the source tree
                module = getattr(node, "module", None) or ""
                rel = module.replace(".", "/") + ".py"
                other = read_source(source, rel) if module.startswith("megatron.") and depth < 2 else None
                if other is not None and isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        fn = provider_function(source, other, alias.name, rel, depth + 1)
                        if fn is not None:
                            namespace[alias.asname or alias.name] = fn
                    continue
                print(f"  {filename}: skipped import at line {node.lineno}: {type(exc).__name__}: {exc}", file=sys.stderr)
        elif isinstance(node, ast.FunctionDef) and node.name == name:
            exec(compile(ast.Module([node], []), filename, "exec"), namespace)
    return namespace.get(name)


def type_name(t) -> str | None:
    if t is None:
        return None
    name = getattr(t, "__name__", repr(t))
    if name in ("int", "float", "str", "bool"):
        return name
    if name == "enum_type_handler":  # argument_utils.ArgumentGroupFactory._get_enum_kwargs: Enum[name]
        return "enum"
    return name  # la_freq_type, moe_freq_type, no_rope_freq_type, tuple_type, _parse_cuda_graph_modules_arg, ...


def plain(value):
    """A JSON value for a default/choice/const: enum members by name, tuples as lists."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def row(action, group: str) -> dict:
    kind = ACTION_KINDS.get(type(action).__name__, type(action).__name__)
    out = {"dest": action.dest, "flags": list(action.option_strings), "action": kind, "group": group}
    t = type_name(action.type)
    if t:
        out["type"] = t
    if action.nargs is not None and kind not in ("store_true", "store_false", "store_const", "count", "help"):
        out["nargs"] = action.nargs
    if action.choices is not None:
        out["choices"] = plain(list(action.choices))
    if action.const is not None:
        out["const"] = plain(action.const)
    if action.default is not argparse.SUPPRESS:
        out["default"] = plain(action.default)
    if action.required:
        out["required"] = True
    return out


def core_parser():
    from megatron.training.arguments import add_megatron_arguments

    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    return add_megatron_arguments(parser)


_ENTRY = re.compile(r"\b(?:parse_and_validate_args|initialize_megatron|pretrain)\(")
_PROVIDER = re.compile(r"extra_args_provider\s*=\s*([A-Za-z_]\w*)")


def entry_scripts(source: str) -> list:
    """Python files of the tree that call Megatron's argument parsing (candidates for training scripts)."""
    if "@" in source:
        gitdir, ref = source.rsplit("@", 1)
        out = subprocess.run(["git", "-C", gitdir, "grep", "-l", "-E", r"\b(parse_and_validate_args|initialize_megatron|pretrain)\(", ref, "--", "*.py"],
                             capture_output=True, text=True).stdout
        return [line.split(":", 1)[1] for line in out.splitlines() if ":" in line]
    root = Path(source)
    return [str(p.relative_to(root)) for p in root.rglob("*.py") if _ENTRY.search(p.read_text(errors="replace"))]


def script_table(source: str, provider_groups: dict) -> dict:
    """Training-script file name -> the optional groups its parser adds, for every script of the tree whose
    whole argument set the table holds: it calls Megatron's argument parsing (parse_and_validate_args,
    initialize_megatron or pretrain) with no extra_args_provider, or with one of PROVIDERS. A name two
    scripts share is kept only when both agree."""
    seen: dict = {}
    for rel in entry_scripts(source):
        if "/tests/" in "/" + rel or rel.startswith(("megatron/training/", "megatron/core/")):  # libraries, not scripts
            continue
        text = read_source(source, rel) or ""
        if not _ENTRY.search(text) or "__main__" not in text:
            continue
        providers = set(_PROVIDER.findall(text)) - {"None", "extra_args_provider"}
        groups = {provider_groups.get(p) for p in providers}
        name = rel.rsplit("/", 1)[-1]
        verdict = None if None in groups else sorted(groups)
        if name in seen and seen[name] != verdict:
            verdict = None
        seen[name] = verdict
    return {name: groups for name, groups in sorted(seen.items()) if groups is not None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from importlib import metadata

    version = metadata.version("megatron-core")
    ap.add_argument("--mlm-source", default=os.environ.get("OVERLAP_MLM_SOURCE") or default_source(version))
    ap.add_argument("-o", "--output", default=str(RELEASES / f"arguments-{version}.json"))
    opts = ap.parse_args()

    import warnings

    warnings.simplefilter("ignore")

    parser = core_parser()
    rows = [row(a, "core") for a in parser._actions]
    groups = {"core": {"source": "megatron/training/arguments.py:add_megatron_arguments", "scripts": "all"}}
    for group, rel, func, scripts, *preset in PROVIDERS:
        text = read_source(opts.mlm_source, rel)
        if text is None:
            print(f"  {rel}: not in {opts.mlm_source}; group {group} left out", file=sys.stderr)
            continue
        provider = provider_function(opts.mlm_source, text, func, rel, preset=preset[0] if preset else None)
        if provider is None:
            print(f"  {rel}: no function {func}; group {group} left out", file=sys.stderr)
            continue
        fresh = core_parser()
        known = set(map(id, fresh._actions))
        try:
            fresh = provider(fresh) or fresh
        except Exception as exc:
            print(f"  {rel}:{func} failed ({type(exc).__name__}: {exc}); group {group} left out", file=sys.stderr)
            continue
        added = [a for a in fresh._actions if id(a) not in known]
        rows.extend(row(a, group) for a in added)
        groups[group] = {"source": f"{rel}:{func}", "scripts": scripts, "options": len(added)}
        print(f"  {group}: {len(added)} options from {rel}", file=sys.stderr)

    doc = {
        "megatron_core": version,
        "mlm_source": describe_source(opts.mlm_source),
        "parser": {"allow_abbrev": parser.allow_abbrev, "prefix_chars": parser.prefix_chars},
        "groups": groups,
        # script file name -> optional groups: a launch of one of these scripts is checked strictly (a flag
        # the table lacks is an error, as argparse's); another script may add flags of its own.
        "scripts": script_table(opts.mlm_source, {func: group for group, _rel, func, *_ in PROVIDERS if group in groups}),
        "options": rows,
    }
    Path(opts.output).write_text(json.dumps(doc, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"{opts.output}: {len(rows)} options (megatron-core {doc['megatron_core']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
