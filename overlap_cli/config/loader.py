"""Load a training config: bytes -> YAML nodes -> plain values with the position of every key, then
dotlist overrides and ``${...}`` interpolations, in the order Bridge applies them.

Reading bytes safely is ``safe_read``; YAML with Bridge's (OmegaConf's) value semantics is ``yamlnodes``;
``${...}`` interpolations are ``interpolation`` (imported only when a config has one); dotlist
overrides are ``overrides``. The result is a ``document.Config``.

The round-trip parser (ruamel.yaml) is used where the text must be written back: ``fix`` and
``report.annotate``. Both parsers report the same line/column for a key; checking needs only one parse.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli.problems import InputError, InputProblem
from overlap_cli.config.document import Config
from overlap_cli.config.safe_read import read_text
from overlap_cli.config.yamlnodes import has_interpolation, parse_nodes

# OmegaConf parses each ${...} with its ANTLR grammar (~0.4 ms apiece on the benchmark machine).
MAX_INTERPOLATIONS = 1000


def load_config(path: str, overrides: Optional[list] = None, text: Optional[str] = None) -> Config:
    if text is None:
        text = read_text(path)
    data, positions, interpolations = parse_nodes(text, path)
    if data is None:
        raise InputError(InputProblem(path, "empty document, expected a mapping of config sections"))
    if not isinstance(data, dict):
        raise InputError(
            InputProblem(path, f"top level is a {type(data).__name__}, expected a mapping of config sections", line=1, column=1)
        )
    cfg = Config(file=path, data=data, positions=positions, text=text)
    if overrides:
        from overlap_cli.config.overrides import apply_overrides

        apply_overrides(cfg, overrides)
    return finish(cfg, interpolations, overrides)


def finish(cfg: Config, interpolations: int, overrides: Optional[list] = None) -> Config:
    """The steps after the data is complete (one file, or a merged run): ``${...}`` resolved over it,
    as OmegaConf's ``to_container(resolve=True)`` does."""
    if overrides:
        interpolations += sum(1 for ov in overrides if has_interpolation(ov.value))
    if interpolations > MAX_INTERPOLATIONS:
        raise InputError(InputProblem(cfg.file, f"more than {MAX_INTERPOLATIONS} ${{...}} interpolations; refusing to resolve them"))
    if interpolations:  # most configs have none: no second walk over the data, no omegaconf import
        from overlap_cli.config.interpolation import resolve_interpolations

        resolve_interpolations(cfg)
    return cfg
