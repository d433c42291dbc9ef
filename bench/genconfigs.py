"""Generate many realistic training configs from the examples, for the benchmark and the fuzzers.

Each generated file is one of the examples (hand-written ones and Bridge's own full dumps) with its
parallel sizes and overlap switches redrawn, so the set covers clean configs, findings of every
family and input errors in the proportions a repository of real configs would have. Deterministic
for a given seed.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# key -> values to draw from; only lines that already hold the key are changed (text substitution keeps
# comments, order and Bridge's dump layout exactly as they are).
_CHOICES = {
    "tensor_model_parallel_size": ["1", "2", "4", "8"],
    "pipeline_model_parallel_size": ["1", "2", "4", "8"],
    "virtual_pipeline_model_parallel_size": ["null", "2", "4", "5"],
    "context_parallel_size": ["1", "2"],
    "sequence_parallel": ["true", "false"],
    "tp_comm_overlap": ["true", "false"],
    "overlap_grad_reduce": ["true", "false"],
    "overlap_param_gather": ["true", "false"],
    "use_distributed_optimizer": ["true", "false"],
    "overlap_p2p_comm": ["true", "false"],
}
_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<key>" + "|".join(_CHOICES) + r"):[ \t]*(?P<value>[^\s#]+)(?P<rest>.*)$", re.M)


def templates(kind: str = "mixed") -> list[Path]:
    """``mixed``: every example (6 hand-written, 3 Bridge dumps); ``dumps``: Bridge's dumps only (~28 KB each)."""
    dumps = sorted((EXAMPLES / "bridge").glob("*.yaml"))
    if kind == "dumps":
        return dumps
    return sorted(EXAMPLES.glob("*.yaml")) + dumps


def mutate(text: str, rng: random.Random) -> str:
    def redraw(m: re.Match) -> str:
        if rng.random() < 0.5:
            return m.group(0)
        return f"{m.group('indent')}{m.group('key')}: {rng.choice(_CHOICES[m.group('key')])}{m.group('rest')}"

    return _LINE.sub(redraw, text)


def generate(folder: Path, count: int, kind: str = "mixed", seed: int = 8) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    sources = [(p.stem, p.read_text(encoding="utf-8")) for p in templates(kind)]
    paths = []
    for i in range(count):
        stem, text = sources[i % len(sources)]
        path = folder / f"{i:05d}_{stem}.yaml"
        path.write_text(mutate(text, rng), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder", type=Path)
    ap.add_argument("-n", "--count", type=int, default=1000)
    ap.add_argument("--kind", choices=("mixed", "dumps"), default="mixed")
    ap.add_argument("--seed", type=int, default=8)
    a = ap.parse_args()
    print(f"wrote {len(generate(a.folder, a.count, a.kind, a.seed))} configs to {a.folder}")
