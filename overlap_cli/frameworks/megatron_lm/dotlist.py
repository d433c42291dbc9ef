"""Dotlist words given with a Megatron-LM launch (``overlap check train.sh model.tensor_model_parallel_size=4``):
the flags they stand for, given after the launch's own (argparse: the last occurrence wins).

A key is a name ``effective`` prints: ``model.NAME`` / ``ddp.NAME`` / ``optimizer.NAME`` / ``train.NAME`` is
the argparse dest of that Megatron-Core field (``facts.DEST_OF`` for the renamed ones, e.g. ``ddp.bucket_size``
is ``--ddp-bucket-size``); ``env.NAME`` a variable of the launch environment. The value is read as the
dotlist reads it (``config.overrides``) and handed to argparse as the flag's words, so its type and choices
are checked as the launch would check them; ``true`` / ``false`` give or drop a switch (``--no-x`` where the
flag has one). ``~key`` takes the flag away. A key no flag sets is refused in one line.
"""

from __future__ import annotations

from overlap_cli.problems import InputError, InputProblem

COMMAND_LINE = "command line"


def apply_overrides(launch, overrides: list) -> dict:
    """Apply ``overrides`` (config.overrides.Override) to ``launch`` in place; returns {argparse dest, or
    ``env.NAME``: the word} for what they set (its provenance is the command line)."""
    from overlap_cli.frameworks.megatron_lm import facts as lm
    from overlap_cli.frameworks.megatron_lm.args import (
        Arg, EnvVar, Token, check_parallel_sizes, option, options_for, parse_tokens,
    )

    def refuse(o, message: str) -> InputError:
        return InputError(InputProblem(launch.file, f"command-line override {o.raw!r}: {message}"))

    set_keys: dict = {}
    for o in overrides:
        key = ".".join(str(p) for p in o.path)
        section = str(o.path[0]) if o.path else ""
        if section == "env" and len(o.path) == 2:
            name = str(o.path[1])
            if o.op == "delete":
                launch.env.pop(name, None)
            else:
                value = o.value
                if isinstance(value, bool):
                    value = "1" if value else "0"
                if not isinstance(value, (str, int, float)):
                    raise refuse(o, "an environment variable's value is one word")
                launch.env[name] = EnvVar(name, str(value), None, None, "export")
            set_keys["env." + name] = o.raw
            continue
        dest = _dest_of(o.path, lm)
        row = option(dest, launch.core_version) if dest else None
        if row is None:
            raise refuse(o, f"no Megatron-LM flag sets {key} (a key `overlap check --show-effective` prints: "
                            "model.*, ddp.*, optimizer.*, train.*, env.*)")
        where = f"{o.raw} on the command line"
        set_keys[dest] = o.raw
        if o.op == "delete":
            launch.args.pop(dest, None)
            continue
        words = _words(o, row, options_for(dest, launch.core_version), refuse)
        if not words:  # a switch turned off that has no --no- spelling, or null: as if the flag were not given
            value = False if words is None else None
            launch.args[dest] = Arg(dest=dest, value=value, flag=row["flags"][0], line=None, column=None,
                                    origin=COMMAND_LINE, placeable=False, reason=where)
            continue
        tokens = [Token(w, None, None, COMMAND_LINE) for w in words]
        try:
            parsed = parse_tokens(launch.file, tokens, [], script=launch.script, strict=False, core=launch.core_version)
            check_parallel_sizes(launch.file, parsed)
        except InputError as exc:
            raise refuse(o, exc.problem.describe()) from None
        for got in parsed.values():
            got.reason = where + f" ({' '.join(words)})"
            launch.args[got.dest] = got
    return set_keys


def _dest_of(path: tuple, lm) -> str:
    if len(path) != 2:
        return ""
    section, name = str(path[0]), str(path[1])
    key = f"{section}.{name}"
    if key in lm.DEST_OF:
        return lm.DEST_OF[key]
    fields = {"ddp": lm.DDP_FIELDS, "optimizer": lm.OPTIMIZER_FIELDS, "train": lm.TRAIN_FIELDS}
    if section == "model" or name in fields.get(section, ()):
        return name
    return ""


def _words(o, row: dict, rows: list, refuse):
    """The argparse words of an override's value for the flag of ``row``; None: drop the switch."""
    action = row["action"]
    value = o.value
    flag = row["flags"][0]
    if action in ("store_true", "store_false", "boolean_optional"):
        if not isinstance(value, bool):
            raise refuse(o, f"{flag} is a switch: give true or false")
        if action == "boolean_optional":
            return [flag if value else "--no-" + flag[2:]]
        want_true = value
        for r in rows:  # a spelling of the same dest that stores the wanted value
            stores = {"store_true": True, "store_false": False}.get(r["action"])
            if stores is want_true:
                return [r["flags"][0]]
        return None
    if value is None:
        if row.get("default") is not None:
            raise refuse(o, f"{flag} cannot be null (its default is {row.get('default')!r})")
        return []
    if isinstance(value, dict):
        raise refuse(o, f"{flag} takes words, not a mapping")
    values = value if isinstance(value, list) else [value]
    if isinstance(value, list) and row.get("nargs") in (None, "?"):
        raise refuse(o, f"{flag} takes one value")
    out = [flag]
    for v in values:
        if isinstance(v, (dict, list)):
            raise refuse(o, f"{flag} takes words")
        out.append(("true" if v else "false") if isinstance(v, bool) else str(v))
    return out
