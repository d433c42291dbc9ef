"""The target profile: where the config will run. Not part of the file, so it is given (or guessed) here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Target:
    world_size: Optional[int] = None
    transformer_engine: bool = True
    # where each value came from: flag | pyproject | detected | default | unknown
    sources: dict = field(default_factory=lambda: {"world_size": "unknown", "transformer_engine": "default"})
    extra: dict = field(default_factory=dict)  # further fields (gpu, versions) filled by target-profile code

    def get(self, name: str, default: Any = None) -> Any:
        if name in ("world_size", "transformer_engine"):
            return getattr(self, name)
        return self.extra.get(name, default)

    def source(self, name: str) -> str:
        return self.sources.get(name, "unknown")

    def to_json(self, data_parallel_size: Optional[int]) -> dict:
        out = {
            "world_size": self.world_size,
            "data_parallel_size": data_parallel_size,
            "transformer_engine": self.transformer_engine,
        }
        for k, v in self.extra.items():
            out[k] = v
        out["sources"] = dict(self.sources)
        return out
