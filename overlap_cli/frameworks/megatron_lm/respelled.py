"""A flag that respells a Megatron-LM flag (``--tensor_model_parallel_size``): forks and older launch scripts
write dests with underscores. megatron-core's parser matches spellings exactly (``allow_abbrev=False``,
megatron/training/arguments.py:119-120) and exits on any other (``parse_args``, arguments.py:131), so such a
launch runs only with a parser that accepts it, which may set the dest it respells: that dest is unknown, at the
flag's line — never argparse's default (``args.parse_tokens`` asks here before refusing a word)."""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.config.argv import UNKNOWN


def respelled(flag: str, by_flag: dict) -> Optional[str]:
    """The Megatron-LM flag an unknown option word spells another way (``--tensor_model_parallel_size``,
    ``--Tensor-Model-Parallel-Size``: forks and older launch scripts write dests with underscores), or None.
    argparse matches spellings exactly (``allow_abbrev=False``, megatron/training/arguments.py:119-120)."""
    if not flag.startswith("--"):
        return None
    wanted = flag.replace("_", "-").lower()
    if wanted == flag or wanted not in by_flag:
        hits = [f for f in by_flag if f.replace("_", "-").lower() == wanted and f != flag]
        return hits[0] if hits else None
    return wanted


def fork_flag(tokens: list, i: int, alias: str, row: dict, launch: tuple, out: dict, notes: list, is_value,
              arg_type) -> int:
    """An option word that respells a Megatron-LM flag: megatron-core's own parser exits on it
    (unrecognized arguments, parse_args at megatron/training/arguments.py:131), so the launch runs only
    where the training script's parser is another one that accepts it — a fork's, or a script's own — and
    sets there what the fork makes of it. The dest it may set is unknown (never argparse's default), its
    value words taken as the flag it respells takes them. ``launch``: (the training script, whether its
    argument set is Megatron-LM's own, megatron-core's release); ``row``: the respelled flag's row of the
    option table. Returns the index after the words."""
    script, strict, core = launch
    tok = tokens[i]
    flag = tok.text.partition("=")[0]
    i += 1
    if "=" not in (tok.text or "") and row["action"] not in ("store_true", "store_false", "store_const",
                                                             "append_const", "count", "boolean_optional"):
        want = 1 if row.get("nargs") in (None, "?", 1) else None
        taken = 0
        while i < len(tokens) and is_value(tokens[i]) and (want is None or taken < want):
            i += 1
            taken += 1
    owner = script or "the training script"
    refused = (f"megatron-core {core}'s {owner} exits on it (argparse: unrecognized arguments)"
               if strict else f"{owner} may add it to its parser")
    reason = (f"{flag} (line {tok.line}) is not Megatron-LM's spelling of {alias}: {refused}; a parser that "
              f"accepts it may set {row['dest']}")
    notes.append(f"line {tok.line}: {flag} is not Megatron-LM's spelling of {alias}: {refused}; what it sets "
                 f"({row['dest']}) is unknown")
    out[row["dest"]] = arg_type(dest=row["dest"], value=UNKNOWN, flag=flag, line=tok.line, column=tok.column,
                                origin=tok.origin, placeable=False, literal=False, reason=reason)
    return i
