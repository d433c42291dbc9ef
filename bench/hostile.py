"""Hostile inputs, written on demand: shared by tests/config/test_hostile.py (behaviour) and bench.py (time, memory).

Each maker writes one input into a folder and returns its path. ``HOSTILE`` lists them with the part of
the one-line message a refusal must contain (None: the input is valid and must simply be checked).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

DEPTH = 10_000


def billion_laughs(folder: Path) -> Path:
    """Nine levels of ten aliases each: 10**9 strings once expanded; a few hundred bytes on disk."""
    lines = ['lol: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    lines.append("model:\n  tensor_model_parallel_size: *l9")
    return _write(folder / "billion_laughs.yaml", "\n".join(lines) + "\n")


def interpolation_bomb(folder: Path) -> Path:
    """``s{i}: ${s{i-1}}${s{i-1}}``: the string doubles forty times (a terabyte) when OmegaConf resolves it."""
    lines = ["model:", '  s0: "lol"']
    lines += [f'  s{i}: "${{model.s{i - 1}}}${{model.s{i - 1}}}"' for i in range(1, 41)]
    return _write(folder / "interpolation_bomb.yaml", "\n".join(lines) + "\n")


def interpolation_copy_bomb(folder: Path) -> Path:
    """Lists of ten references to the previous list: 10**12 values once resolved."""
    lines = ["model:", "  c0: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"  c{i}: [" + ", ".join([f'"${{model.c{i - 1}}}"'] * 10) + "]" for i in range(1, 13)]
    return _write(folder / "interpolation_copy_bomb.yaml", "\n".join(lines) + "\n")


def file_50mb(folder: Path) -> Path:
    """A valid but 50 MB YAML file (one long comment-free mapping)."""
    path = folder / "file_50mb.yaml"
    line = b"model:\n" + b"".join(b"  key_%07d: %d\n" % (i, i) for i in range(2000))
    block = line[len(b"model:\n"):]
    with open(path, "wb") as fh:
        fh.write(b"model:\n")
        written = 0
        while written < 50 * 1024 * 1024:
            fh.write(block)
            written += len(block)
    return path


def file_8mb_of_keys(folder: Path) -> Path:
    """Just under the size limit, but ~500,000 keys: refused while composing, before memory fills."""
    path = folder / "file_8mb_of_keys.yaml"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("model:\n  tensor_model_parallel_size: 1\n")  # a training config, so it is read at all
        written, i = 0, 0
        while written < 8 * 1024 * 1024 - 64:
            s = f"k{i}: {i}\n"
            fh.write(s)
            written += len(s)
            i += 1
    return path


def nested_block_mapping(folder: Path) -> Path:
    """10,000 levels of block mapping (one more space per level): ~50 MB of indentation."""
    path = folder / "nested_block_mapping.yaml"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("model: {}\n")  # a training config, so it is read at all
        for i in range(DEPTH):
            fh.write(" " * i + f"k{i}:\n")
        fh.write(" " * DEPTH + "v: 1\n")
    return path


def nested_block_compact(folder: Path) -> Path:
    """10,000 levels of block sequence on one line: ``- - - - ... 1`` (20 KB)."""
    return _write(folder / "nested_block_compact.yaml", "model:\n  x:\n    " + "- " * DEPTH + "1\n")


def nested_flow_sequence(folder: Path) -> Path:
    """``[[[[...]]]]`` 10,000 deep."""
    return _write(folder / "nested_flow_sequence.yaml", "model:\n  x: " + "[" * DEPTH + "]" * DEPTH + "\n")


def nested_flow_mapping(folder: Path) -> Path:
    """``{a: {a: {a: ...}}}`` 10,000 deep."""
    return _write(folder / "nested_flow_mapping.yaml", "model:\n  x: " + "{a: " * DEPTH + "1" + "}" * DEPTH + "\n")


def binary_file(folder: Path) -> Path:
    """A PNG-like header and random bytes (with NULs)."""
    return _write_bytes(folder / "binary.yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(4096))


def latin1_file(folder: Path) -> Path:
    """Text that is not UTF-8 (no NUL byte, so it only fails decoding)."""
    return _write_bytes(folder / "latin1.yaml", "model:\n  name: caf\xe9\n".encode("latin-1"))


def fifo(folder: Path) -> Path:
    """A named pipe with no writer: opening it for reading would block forever."""
    path = folder / "fifo.yaml"
    os.mkfifo(path)
    return path


def python_object_tag(folder: Path) -> Path:
    """PyYAML's unsafe tags: they would run ``os.system`` under an unsafe loader."""
    marker = folder / "python_tag_ran"
    text = (
        "model:\n"
        f"  tensor_model_parallel_size: !!python/object/apply:os.system [\"touch {marker}\"]\n"
    )
    return _write(folder / "python_object_tag.yaml", text)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# (name, maker, message part of the refusal)
HOSTILE: list[tuple[str, Callable[[Path], Path], Optional[str]]] = [
    ("billion_laughs", billion_laughs, "alias bomb"),
    ("interpolation_bomb", interpolation_bomb, "interpolation bomb"),
    ("interpolation_copy_bomb", interpolation_copy_bomb, "interpolation bomb"),
    ("file_50mb", file_50mb, "MiB"),
    ("file_8mb_of_keys", file_8mb_of_keys, "values"),
    ("nested_block_mapping", nested_block_mapping, "MiB"),
    ("nested_block_compact", nested_block_compact, "nesting deeper than"),
    ("nested_flow_sequence", nested_flow_sequence, "nesting deeper than"),
    ("nested_flow_mapping", nested_flow_mapping, "nesting deeper than"),
    ("binary_file", binary_file, "binary file"),
    ("latin1_file", latin1_file, "not UTF-8"),
    ("fifo", fifo, "not a regular file"),
    ("python_object_tag", python_object_tag, "never honoured"),
]
