"""Megatron-LM's ``--yaml-cfg FILE``: the file's values in place of everything argparse read.

``parse_args`` (megatron/training/arguments.py:136-139 in megatron-core 0.19.2) calls ``load_yaml(args.yaml_cfg)``
after argparse has parsed the launch, and *replaces* the namespace with the file's: ``yaml.safe_load`` of the
file, turned into nested namespaces (megatron/training/yaml_arguments.py:436-453, "argparse arguments will be
ignored"). ``validate_yaml`` then flattens its ``model_parallel`` and ``language_model`` sections into the top
level (yaml_arguments.py:352-353). So with ``--yaml-cfg``:

- every other flag of the launch is ignored;
- a dest is the file's value, from ``FILE:LINE`` (top-level keys, and the keys of those two sections);
- a dest the file does not name has no value at all (the namespace lacks it; argparse's default does not
  apply): unknown here, naming the file;
- a file not found statically (its path an expansion, or no such file next to the script) leaves every dest
  unknown, with the reason.

The values are PyYAML's ``safe_load`` values (YAML 1.1: ``1e-4`` is a string, ``1.e-5`` a float), as
``load_yaml`` reads them; the ``${VAR}`` resolver yaml_arguments.py registers is not on the safe loader, so
such a value stays the text it is. The world size is still ``WORLD_SIZE`` (read after ``load_yaml``,
arguments.py:143-144). Megatron-LM validates such a run with ``validate_yaml``, not ``validate_args``; the
checks of the resolver are ``validate_args``', and a sentence says so.
"""

from __future__ import annotations

import os

from overlap_cli.config.argv import UNKNOWN
from overlap_cli.problems import InputError

LOAD_YAML = "megatron/training/yaml_arguments.py:436-453"
SECTIONS = ("model_parallel", "language_model")  # flattened into the top level (yaml_arguments.py:352-353)


def apply_yaml_cfg(launch_file: str, args: dict, notes: list, arg_type, dests) -> dict:
    """The launch's dest -> Arg once ``--yaml-cfg`` is applied (``args`` unchanged without it). ``arg_type``
    builds an ``args.Arg``; ``dests`` are every dest argparse knows (the ones the file leaves without value)."""
    given = args.get("yaml_cfg")
    if given is None or given.value is None:
        return args
    where = f"--yaml-cfg on line {given.line}"
    path, why = _file_of(launch_file, given.value)
    values: dict = {}
    if path is not None:
        try:
            values = _read(path)
        except InputError as exc:
            path, why = None, f"{exc.problem.describe()}"
    if path is None:
        reason = (f"{where}: {why}; load_yaml replaces every value argparse read with the file's "
                  f"({LOAD_YAML})")
        notes.append(f"line {given.line}: {why}: every argument comes from that file (load_yaml, {LOAD_YAML}), "
                     "so none is known")
        return {dest: _unknown(arg_type, given, dest, f"{dest} (--yaml-cfg)", reason) for dest in dests}
    shown = os.path.relpath(path, os.path.dirname(os.path.abspath(launch_file)))
    notes.append(f"line {given.line}: {where} reads {shown}: its values replace every flag of the launch "
                 f"(load_yaml, {LOAD_YAML}); Megatron-LM then validates with validate_yaml "
                 "(yaml_arguments.py), the checks here are validate_args'")
    out: dict = {}
    for dest in dests:
        if dest not in values:
            out[dest] = _unknown(arg_type, given, dest, f"{dest} (not in {shown})", f"not in {shown}, which {where} makes the whole argument "
                                                        f"set: the run has no value for it ({LOAD_YAML})")
    for dest, (value, line) in values.items():
        out[dest] = arg_type(dest=dest, value=value, flag=f"{shown}:{line}", line=line, column=1,
                             origin=f"--yaml-cfg {shown}", placeable=False, literal=False,
                             reason=f"{shown}:{line} ({where})")
    return out


def _unknown(arg_type, given, dest: str, flag: str, reason: str):
    return arg_type(dest=dest, value=UNKNOWN, flag=flag, line=given.line, column=given.column,
                    origin=given.origin, placeable=False, literal=False, reason=reason)


def _file_of(launch_file: str, value) -> tuple:
    """(the file's path, None) or (None, why it is not found statically). ``load_yaml`` opens the path as
    given, from the process's working directory: a relative path is taken from the script's folder."""
    if value is UNKNOWN:
        return None, "the file --yaml-cfg names is not known statically"
    path = value if os.path.isabs(value) else os.path.join(os.path.dirname(os.path.abspath(launch_file)), value)
    if not os.path.isfile(path):
        return None, f"{value} is not found next to the script (load_yaml opens it from the working directory)"
    return os.path.normpath(path), None


def _read(path: str) -> dict:
    """dest -> (value, line) as ``load_yaml`` + ``validate_yaml``'s flattening give them."""
    from overlap_cli.config.safe_read import read_text
    from overlap_cli.config.yamlnodes import check_nesting, pyyaml, yaml_error
    from overlap_cli.problems import InputProblem

    text = read_text(path)
    check_nesting(text, path)
    yaml = pyyaml()
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return {}
        if not isinstance(root, yaml.MappingNode):
            raise InputError(InputProblem(path, "not a mapping of arguments (load_yaml reads one)", line=1))
        out: dict = {}
        for key_node, value_node in root.value:
            key = loader.construct_object(key_node, deep=True)
            if key in SECTIONS and isinstance(value_node, yaml.MappingNode):
                for sub_key, sub_value in value_node.value:
                    out[str(loader.construct_object(sub_key, deep=True))] = (
                        loader.construct_object(sub_value, deep=True), sub_key.start_mark.line + 1)
                continue
            out[str(key)] = (loader.construct_object(value_node, deep=True), key_node.start_mark.line + 1)
        return out
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    finally:
        loader.dispose()

