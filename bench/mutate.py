"""Mutations of example configs, for the fuzz test (driven by hypothesis) and bench/fuzz_long.py (driven by
random.Random). Both drive the same functions through a ``Chooser``, so a case found by one can be
replayed by the other.

Mutations work on the text, so comments survive them and ``fix --write`` can be checked for losing one:
a value replaced by another type (huge, negative, NaN, unicode, a collection, an interpolation, an
alias, a tag), a line or a whole section deleted or duplicated, a unicode key added, deep nesting, a
line re-indented, a comment added (on a line of its own or at the end of a key's line), random bytes
inserted, the file cut short.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol, Sequence

ROOT = Path(__file__).resolve().parent.parent


class Chooser(Protocol):
    def int(self, lo: int, hi: int) -> int: ...
    def pick(self, seq: Sequence): ...
    def raw(self, n: int) -> bytes: ...
    def unicode(self, max_len: int) -> str: ...


class RandomChooser:
    """A Chooser over random.Random (bench/fuzz_long.py)."""

    _ALPHABET = "abcXYZ_09 -.:#'\"{}[]&*!|>%@`\\\t\u00e9\u00df\u4e2d\u0430\U0001f600\u200b\u202e\ufeff\x85"

    def __init__(self, rng):
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def raw(self, n: int) -> bytes:
        return bytes(self.rng.randrange(256) for _ in range(n))

    def unicode(self, max_len: int) -> str:
        return "".join(self.rng.choice(self._ALPHABET) for _ in range(self.rng.randint(0, max_len)))


# Megatron-Bridge 0.6.2's recipes as its serializer writes them (shared reference beside the repository,
# or OVERLAP_CORPUS): real 28 KB dumps with hundreds of keys the tool does not use.
CORPUS = Path(os.environ.get("OVERLAP_CORPUS") or ROOT.parent / "shared" / "reference" / "bridge_recipes")


def seeds() -> list[Path]:
    """Small examples and every rule case (they cover every family), plus one of Bridge's full dumps."""
    small = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "tests" / "cases").glob("*.yaml"))
    return small + sorted((ROOT / "examples" / "bridge").glob("*.yaml"))[:1]


def corpus_seeds() -> dict:
    """{path: (world size, gpu)} for every recipe of the corpus; {} when it is absent."""
    import json

    manifest = CORPUS / "manifest.jsonl"
    if not manifest.is_file():
        return {}
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    return {CORPUS / r["file"]: (r["world_size"], r["gpu"]) for r in rows}


_KEY_LINE = re.compile(r"^(?P<indent>[ ]*)(?P<dash>- )?(?P<key>[^\s#:][^:#]*):(?P<sep>[ \t]+|$)(?P<value>[^#\n]*?)(?P<comment>[ \t]+#.*)?$")
_KEYS_OF_INTEREST = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "sequence_parallel", "tp_comm_overlap",
    "overlap_grad_reduce", "overlap_param_gather", "use_distributed_optimizer", "overlap_p2p_comm",
    "batch_p2p_comm", "bucket_size", "num_layers", "mixed_precision", "tp_comm_overlap_cfg",
    "CUDA_DEVICE_MAX_CONNECTIONS", "num_distributed_optimizer_instances", "wgrad_deferral_limit",
)


def scalar(c: Chooser) -> str:
    """A value of some random type, as YAML text."""
    kind = c.int(0, 21)
    if kind == 0:
        return str(c.pick([0, 1, 2, 3, 4, 7, 8, 16, 64, 128, 1000003]))
    if kind == 1:
        return "-" + str(c.pick([1, 2, 8, 2**31, 2**63]))
    if kind == 2:
        return "9" * c.int(19, 5000)  # past int64; past Python's 4,300-digit str->int limit at the top end
    if kind == 3:
        return c.pick(["1e308", "1e309", "-1e400", ".inf", "-.Inf", ".nan", "NaN", "3e-4", "0.0", "-0.0", "1_000", "0x10", "0o17", "1:30", "0b101"])
    if kind == 4:
        return c.pick(["true", "false", "yes", "No", "on", "OFF", "y", "n", "True", "~", "null", "Null", ""])
    if kind == 5:
        return '"' + c.unicode(30).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if kind == 6:
        return "'" + c.unicode(30).replace("'", "''") + "'"
    if kind == 7:
        return c.unicode(20)  # a plain scalar, possibly not valid YAML at all
    if kind == 8:
        return c.pick(["[]", "{}", "[1, 2, 3]", "{a: 1, b: [2, 3]}", "[true, null, 'x']", "{? a : b}"])
    if kind == 9:
        depth = c.int(1, 260)
        return "[" * depth + "]" * depth if c.int(0, 1) else "{a: " * depth + "1" + "}" * depth
    if kind == 10:
        return c.pick(["${model.tensor_model_parallel_size}", "${oc.env:HOME}", "${oc.env:NOPE_NOT_SET}", "${foo:bar}",
                       "${model.nope}", "${oc.decode:'[1, 2]'}", "${.missing}", "${", "${}", "$${x}", "${oc.select:model.x,3}",
                       "${oc.create:{a: 1}}", "a ${model} b", "${..}"])
    if kind == 11:
        return c.pick(["&anchor 4", "*anchor", "*undefined_alias", "&a [1, *a]"])
    if kind == 12:
        return c.pick(["!!python/object/apply:os.system ['true']", "!!python/name:os.system ''", "!!int 'x'",
                       "!!bool maybe", "!!float nope", "!!timestamp 2001-13-45", "!!binary '***'", "!!binary aGVsbG8=",
                       "!custom 1", "!!str 5", "!!set {a, b}", "!!omap [a: 1]", "!!null x", "!<tag:yaml.org,2002:int> 3"])
    if kind == 13:
        return "x" * c.int(1000, 60000)
    if kind == 14:
        return "|\n" + "".join("  " + c.unicode(10) + "\n" for _ in range(c.int(0, 3)))
    if kind == 15:
        return c.pick(["2024-01-01", "2001-02-30", "12:30:45", "0.5.1", "1.2e3", "- 1", "? x", "a: b", "@x", "`x`", "%x"])
    if kind == 16:
        return c.pick(["tp_comm_overlap_cfg", "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192", "bf16_mixed", "fp8_mx", "nope_recipe"])
    return str(c.int(-3, 300))


def _lines(text: str) -> list[str]:
    return text.split("\n")


def set_value(text: str, c: Chooser) -> str:
    lines = _lines(text)
    candidates = [i for i, ln in enumerate(lines) if _KEY_LINE.match(ln)]
    if not candidates:
        return text
    interesting = [i for i in candidates if any(k in lines[i] for k in _KEYS_OF_INTEREST)]
    i = c.pick(interesting) if interesting and c.int(0, 2) else c.pick(candidates)
    m = _KEY_LINE.match(lines[i])
    value = scalar(c)
    indent = m.group("indent") + ("  " if m.group("dash") else "")
    if "\n" in value:
        value = value.replace("\n", "\n" + indent + "  ").rstrip(" ")
    lines[i] = f"{m.group('indent')}{m.group('dash') or ''}{m.group('key')}: {value}{m.group('comment') or ''}"
    return "\n".join(lines)


def delete_line(text: str, c: Chooser) -> str:
    lines = _lines(text)
    if len(lines) > 1:
        del lines[c.int(0, len(lines) - 1)]
    return "\n".join(lines)


def duplicate_line(text: str, c: Chooser) -> str:
    lines = _lines(text)
    i = c.int(0, len(lines) - 1)
    lines.insert(i, lines[i])
    return "\n".join(lines)


def delete_section(text: str, c: Chooser) -> str:
    lines = _lines(text)
    tops = [i for i, ln in enumerate(lines) if re.match(r"^[^\s#-][^:]*:", ln)]
    if not tops:
        return text
    start = c.pick(tops)
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " \t#-"):
        end += 1
    return "\n".join(lines[:start] + lines[end:])


def retype_section(text: str, c: Chooser) -> str:
    """A section's block replaced by a scalar, list or empty value (``model: 5``)."""
    lines = _lines(text)
    tops = [i for i, ln in enumerate(lines) if re.match(r"^[^\s#-][^:]*:\s*(#.*)?$", ln)]
    if not tops:
        return text
    start = c.pick(tops)
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " \t"):
        end += 1
    name = lines[start].split(":", 1)[0]
    return "\n".join(lines[:start] + [f"{name}: {scalar(c)}"] + lines[end:])


def add_unicode_key(text: str, c: Chooser) -> str:
    lines = _lines(text)
    candidates = [i for i, ln in enumerate(lines) if _KEY_LINE.match(ln) and not _KEY_LINE.match(ln).group("dash")]
    if not candidates:
        return text + f"\n{c.unicode(12) or 'k'}: {scalar(c)}\n"
    i = c.pick(candidates)
    indent = _KEY_LINE.match(lines[i]).group("indent")
    key = c.pick(["m\u00f6del", "\u6a21\u578b", "tensor_model_parallel_size\u200b", "\U0001f600", "ddp ", '"quoted key"', "'a:b'", "1", "true", "null", c.unicode(16) or "k"])
    lines.insert(i + 1, f"{indent}{key}: {scalar(c)}")
    return "\n".join(lines)


def deep_nesting(text: str, c: Chooser) -> str:
    depth = c.int(2, 260)
    block = "".join("  " * d + f"n{d}:\n" for d in range(depth)) + "  " * depth + "leaf: 1\n"
    where = c.pick(["model:\n  ", "ddp:\n  ", ""])
    if where:
        block = "\n".join(("  " + ln if ln else ln) for ln in block.split("\n"))
        return text.rstrip("\n") + "\n" + "deep_section:\n" + block
    return text.rstrip("\n") + "\n" + block


def reindent(text: str, c: Chooser) -> str:
    lines = _lines(text)
    i = c.int(0, len(lines) - 1)
    lines[i] = " " * c.pick([0, 1, 3, 5, 8]) + lines[i].lstrip(" ") if c.int(0, 3) else "\t" + lines[i]
    return "\n".join(lines)


def add_comment(text: str, c: Chooser) -> str:
    lines = _lines(text)
    i = c.int(0, len(lines))
    lines.insert(i, "# " + c.unicode(30).replace("\n", " "))
    return "\n".join(lines)


def add_eol_comment(text: str, c: Chooser) -> str:
    """A comment at the end of a key's line, mostly a key that rules edit or remove (fix must keep it)."""
    lines = _lines(text)
    candidates = [i for i, ln in enumerate(lines) if _KEY_LINE.match(ln)]
    if not candidates:
        return text
    interesting = [i for i in candidates if any(k in lines[i] for k in _KEYS_OF_INTEREST)]
    i = c.pick(interesting) if interesting and c.int(0, 2) else c.pick(candidates)
    lines[i] += " " * c.int(1, 3) + "# " + c.unicode(20).replace("\n", " ")
    return "\n".join(lines)


_SIZE_KEYS = (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "num_layers",
    "num_attention_heads", "num_query_groups", "hidden_size", "seq_length", "micro_batch_size",
    "global_batch_size", "num_moe_experts", "bucket_size", "num_distributed_optimizer_instances",
)  # fmt: skip


def nondividing_size(text: str, c: Chooser) -> str:
    """A parallel size, layer count or batch that divides nothing it should (TP 3 of 64 heads, PP 5 of 80
    layers, VPP 7, a world the product does not divide)."""
    lines = _lines(text)
    candidates = [i for i, ln in enumerate(lines) if _KEY_LINE.match(ln) and _KEY_LINE.match(ln).group("key").strip() in _SIZE_KEYS]
    if not candidates:
        return text
    i = c.pick(candidates)
    m = _KEY_LINE.match(lines[i])
    value = c.pick([3, 5, 6, 7, 9, 11, 12, 13, 24, 96, 1023, 1025, 4095])
    lines[i] = f"{m.group('indent')}{m.group('dash') or ''}{m.group('key')}: {value}{m.group('comment') or ''}"
    return "\n".join(lines)


def move_key(text: str, c: Chooser) -> str:
    """A key line taken out of its section and put into another (``overlap_grad_reduce`` under ``model``,
    ``sequence_parallel`` under ``ddp``): what a hand merge of two configs does."""
    lines = _lines(text)
    tops = [i for i, ln in enumerate(lines) if re.match(r"^[^\s#-][^:]*:\s*(#.*)?$", ln)]
    keys = [i for i, ln in enumerate(lines) if re.match(r"^  [^\s#-][^:#]*: [^\s#|>]", ln)]
    if not tops or not keys:
        return text
    interesting = [i for i in keys if any(k in lines[i] for k in _KEYS_OF_INTEREST)]
    src = c.pick(interesting) if interesting and c.int(0, 2) else c.pick(keys)
    moved = lines.pop(src)
    tops = [i for i, ln in enumerate(lines) if re.match(r"^[^\s#-][^:]*:\s*(#.*)?$", ln)]
    dst = c.pick(tops)
    lines.insert(dst + 1, moved)
    return "\n".join(lines)


MUTATIONS = {
    "nondividing_size": nondividing_size,
    "move_key": move_key,
    "set_value": set_value,
    "delete_line": delete_line,
    "duplicate_line": duplicate_line,
    "delete_section": delete_section,
    "retype_section": retype_section,
    "add_unicode_key": add_unicode_key,
    "deep_nesting": deep_nesting,
    "reindent": reindent,
    "add_comment": add_comment,
    "add_eol_comment": add_eol_comment,
}
# set_value is listed several times: most real damage is one wrong value in an otherwise fine file.
_WEIGHTED = ["set_value"] * 6 + list(MUTATIONS)


def mutate(data: bytes, c: Chooser, max_steps: int = 4) -> tuple[bytes, list[str]]:
    """Apply 1..max_steps mutations; returns the new bytes and the names applied."""
    text = data.decode("utf-8", errors="surrogateescape")
    applied = []
    for _ in range(c.int(1, max_steps)):
        name = c.pick(_WEIGHTED)
        text = MUTATIONS[name](text, c)
        applied.append(name)
    out = text.encode("utf-8", errors="surrogateescape")
    tail = c.int(0, 19)
    if tail == 0:  # random bytes somewhere
        at = c.int(0, len(out))
        out = out[:at] + c.raw(c.int(1, 64)) + out[at:]
        applied.append("random_bytes")
    elif tail == 1:  # cut short, possibly inside a multi-byte character
        out = out[: c.int(0, len(out))]
        applied.append("truncate")
    elif tail == 2:
        out = b"\xef\xbb\xbf" + out
        applied.append("bom")
    return out, applied


# ---------------------------------------------------------------------------------------------------
# What a comment is: YAML's rule (a '#' at line start or after whitespace, outside any scalar)
# ---------------------------------------------------------------------------------------------------


def comments(text: str) -> list[str]:
    """The comments of a YAML text, stripped; empty when the text does not scan as YAML."""
    import yaml

    spans = []
    try:
        loader = yaml.SafeLoader(text)
        try:
            while True:
                tok = loader.get_token()
                if tok is None:
                    break
                if isinstance(tok, yaml.ScalarToken):
                    spans.append((tok.start_mark.index, tok.end_mark.index))
        finally:
            loader.dispose()
    except yaml.YAMLError:
        return []
    found, pos = [], 0
    for line in text.split("\n"):
        for m in re.finditer(r"(?:^|(?<=[ \t]))#", line):
            index = pos + m.start()
            if not any(a <= index < b for a, b in spans):
                found.append(line[m.start():].strip())
                break
        pos += len(line) + 1
    return found


def lost_comments(before: str, after: str) -> list[str]:
    """Comments of ``before`` that no comment of ``after`` holds, counted one for one: a comment written
    twice must be there twice. "Holds" is containment, since fix may add its own note to a line, before
    the user's comment (the comment line left by a removed key) or after it (an edited key). A note fix
    wrote in an earlier run (``# overlap: CODE why``) is its own: a later edit of that key replaces it."""
    free = comments(after)
    lost = []
    own = re.compile(r"^#\s*overlap:\s*[A-Z]{2,4}\d{3}\b")
    for c in sorted(comments(before), key=len, reverse=True):  # longest first: "# a  # b" before "# a"
        if own.match(c):
            continue
        at = next((i for i, k in enumerate(free) if c in k), None)
        if at is None:
            lost.append(c)
        else:
            del free[at]
    return lost
