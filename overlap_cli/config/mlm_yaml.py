"""Megatron-LM's functional-test YAML (``ENV_VARS:`` + ``MODEL_ARGS:``) as the words of a launch.

The test harness (tests/functional_tests/shell_test_utils/_run_training.sh of the ``core_r0.19.0``
branch) runs ``envsubst`` over the file, exports each ``ENV_VARS`` entry as ``KEY=value``, and turns each
``MODEL_ARGS`` entry into words with yq and bash:

- a value ``true`` gives the flag alone (``with(select(.value == true); .value = "true")`` and then
  ``[[ "$value" == "true" ]]``); any other value is ``--flag value``, so ``--flag: false`` hands argparse
  a stray ``false``;
- an empty value drops the entry (``select(.value != "")``);
- ``( ... )`` and values with a space, ``|``, ``(`` or ``)`` stay one word; ``[a b]`` loses its brackets
  and splits into words (``nargs='+'`` lists, e.g. ``--recompute-modules: "[core_attn mlp]"``);
- ``${VAR}`` / ``$VAR`` are the harness's environment (``DATA_PATH``, ``CHECKPOINT_SAVE_PATH``, ...):
  not known here, never an error, and never OmegaConf interpolations.

Aliases and ``<<:`` merges are expanded first (yq ``explode(.)``); a key written in the mapping wins over
a merged one. The YAML itself is composed by ``config.yamlnodes``'s loader (libyaml nodes, positions kept, the same
size and depth limits); values are taken as the text written, which is what yq's ``tostring`` hands on (``1.0e-5`` stays ``1.0e-5``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.argv import MODEL_ARGS, UNKNOWN, EnvVar, LaunchText, Token

# envsubst replaces $NAME and ${NAME} (gettext's envsubst: no other forms).
_ENV_REF = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")
_PARENS = re.compile(r"^\([^)]+\)$")
_BRACKETS = re.compile(r"^\[[^\]]+\]$")
_TRUE = ("true", "True", "TRUE")


def looks_like_mlm_yaml(text: str) -> bool:
    """A top-level ``MODEL_ARGS:`` key in block style."""
    return re.search(r"^MODEL_ARGS[ \t]*:", text, re.MULTILINE) is not None


def read_mlm_yaml(path: str, text: str, key: str = "MODEL_ARGS") -> LaunchText:
    """The launch a functional-test YAML describes: ``key`` (``MODEL_ARGS``, or ``MODEL_ARGS_2`` for a
    resumed run's second launch) as argument words, ``ENV_VARS`` as the environment."""
    from overlap_cli.config.yamlnodes import check_nesting, loader_class, pyyaml, yaml_error

    yaml = pyyaml()

    check_nesting(text, path)
    loader = loader_class()(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise yaml_error(path, exc) from None
        if root is None or not isinstance(root, yaml.MappingNode):
            raise InputError(InputProblem(path, "expected a mapping with ENV_VARS and MODEL_ARGS (Megatron-LM's functional-test form)", line=1))
        # yq reads the node tree, where a repeated key is two entries (the later one is the flag argparse
        # keeps); so unlike a Bridge config, duplicates are not an error here. Only these two sections are read.
        pairs = {k.value: (k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode)}
        if key not in pairs:
            raise InputError(InputProblem(path, f"no top-level {key}: mapping (Megatron-LM's functional-test form has ENV_VARS and MODEL_ARGS)"))
        key_node, args_node = pairs[key]
        found = LaunchText(file=path, text=text, kind="yaml", script=None, launch_line=key_node.start_mark.line + 1)
        env = pairs.get("ENV_VARS")
        if env is not None and isinstance(env[1], yaml.MappingNode):
            _env(found, _flatten(loader, env[1], path, yaml), yaml)
        if isinstance(args_node, yaml.ScalarNode) and args_node.tag.endswith(":null"):
            return found
        if not isinstance(args_node, yaml.MappingNode):
            raise InputError(InputProblem(path, f"{key} must be a mapping of --flag: value", key=key,
                                          line=args_node.start_mark.line + 1, column=args_node.start_mark.column + 1))
        node = _flatten(loader, args_node, path, yaml)
        for k, _ in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise InputError(InputProblem(path, f"{key} keys are flag names (--flag: value); this one is a {k.id}",
                                              key=key, line=k.start_mark.line + 1, column=k.start_mark.column + 1))
        if node.value and not any(isinstance(k, yaml.ScalarNode) and k.value.startswith("-") for k, _ in node.value):
            first = node.value[0][0]
            raise InputError(InputProblem(
                path, f"{key} holds no --flag keys (NeMo-style overrides such as {first.value!r}?); not a Megatron-LM command line",
                key=key, line=first.start_mark.line + 1, column=first.start_mark.column + 1))
        _model_args(found, node, key, yaml)
        found.unknowns.append("the training script, world size and GPUs per node are the harness recipe's (tests/test_utils/recipes), not this file's")
        return found
    finally:
        loader.dispose()


def _flatten(loader, node, path: str, yaml):
    """The mapping with ``<<:`` merges expanded (merged pairs first, as PyYAML's flatten_mapping puts them);
    ``node.merged_pairs`` counts them."""
    if getattr(node, "merged_pairs", None) is None:
        explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        try:
            loader.flatten_mapping(node)
        except yaml.YAMLError as exc:
            mark = node.start_mark
            raise InputError(InputProblem(path, f"invalid merge key: {getattr(exc, 'problem', exc)}", line=mark.line + 1, column=mark.column + 1)) from None
        node.merged_pairs = len(node.value) - explicit
    return node


def _span(node) -> Optional[tuple]:
    start, end = node.start_mark, node.end_mark
    if start.line != end.line:
        return None
    return (start.line + 1, start.column + 1, end.column + 1)


def _env(found: LaunchText, node, yaml) -> None:
    merged = getattr(node, "merged_pairs", 0) or 0
    for index, (k, v) in enumerate(node.value):
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            continue
        raw = v.value
        value: object = UNKNOWN if _ENV_REF.search(raw) else raw
        found.env[k.value] = EnvVar(k.value, value, k.start_mark.line + 1, k.start_mark.column + 1, "ENV_VARS",
                                    span=None if index < merged else _span(k))


def _model_args(found: LaunchText, node, key: str, yaml) -> None:
    merged = getattr(node, "merged_pairs", 0) or 0
    written = {k.value for k, _ in node.value[merged:] if isinstance(k, yaml.ScalarNode)}
    last_line = node.start_mark.line + 1
    for index, (k, v) in enumerate(node.value):
        from_merge = index < merged
        if from_merge and k.value in written:
            continue  # a key written in the mapping wins over the merged one (yq explode, OmegaConf alike)
        line, col = k.start_mark.line + 1, k.start_mark.column + 1
        last_line = max(last_line, v.end_mark.line + 1 if v.end_mark.column else v.end_mark.line)
        origin = MODEL_ARGS
        flag = Token(str(k.value), line, col, origin, literal=not from_merge, span=None if from_merge else _span(k))
        if isinstance(v, yaml.MappingNode):
            raise InputError(InputProblem(found.file, "a mapping is not a flag value", key=f"{key}.{k.value}", line=line, column=col))
        if isinstance(v, yaml.SequenceNode):
            # yq's tostring writes the list back as YAML; the harness strips one pair of brackets. Each
            # element is taken as one word, the reading argparse's nargs lists want.
            items = [c for c in v.value if isinstance(c, yaml.ScalarNode)]
            if len(items) != len(v.value):
                raise InputError(InputProblem(found.file, "a list of flag values holds scalars only", key=f"{key}.{k.value}", line=line, column=col))
            found.tokens.append(flag)
            found.tokens.extend(_value_token(found, c.value, c, origin, from_merge) for c in items)
            continue
        raw = v.value if not v.tag.endswith(":null") else ""
        value = " ".join(raw.split())  # `echo "$value" | xargs`: trimmed, inner runs of blanks collapsed
        if value == "":
            found.unknowns.append(f"line {line}: {k.value} has an empty value; the harness drops the flag")
            continue
        found.tokens.append(flag)
        if value in _TRUE:
            continue
        if _PARENS.match(value) or not _BRACKETS.match(value) and any(c in value for c in " |()"):
            words = [value]
        elif _BRACKETS.match(value):
            words = value[1:-1].split()
        else:
            words = [value]
        exact = len(words) == 1 and words[0] == v.value
        for word in words:
            found.tokens.append(_value_token(found, word, v if exact else None, origin, from_merge, line, col))
    found.insert_at = (last_line + 1, node.start_mark.column + 1)


def _value_token(found: LaunchText, word: str, node, origin: str, from_merge: bool, line=None, col=None) -> Token:
    if node is not None:
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
    ref = _ENV_REF.search(word)
    if ref:
        return Token(None, line, col, origin, what=ref.group(0))
    literal = node is not None and not from_merge and _span(node) is not None
    return Token(word, line, col, origin, literal=literal, span=_span(node) if literal else None)
