"""CFG006 — what merging override files onto a recipe does to a section the recipe leaves null."""

from __future__ import annotations

from overlap_cli.config.layers import DATACLASS_SECTIONS
from overlap_cli.rules.common import finding, safe, set_
from overlap_cli.rules.registry import rule


@rule("CFG006", "plain-dict-section", "error", "A mapping merged onto a recipe's null section stays a plain dict: the launch crashes", fix="crash")
def plain_dict_section(view):
    """
    ## What it does
    In a run built from a recipe (or a full dump) plus override files, flags a `comm_overlap` or
    `mixed_precision` mapping without `_target_` written where the recipe holds null (or, for
    `mixed_precision`, a recipe name such as `bf16_mixed`).

    ## Why it matters
    Bridge's entry points merge the override file onto the recipe with OmegaConf, then write the result
    back onto the dataclasses (`_apply_overrides`, megatron/bridge/training/utils/omegaconf_utils.py:453-515):
    a mapping is recursed into only where the recipe already holds a dataclass, and instantiated only when
    it names its class with `_target_`; otherwise it is set as a plain `dict`. The launch then fails in
    `runtime_config_update`: `self.comm_overlap.data_parallel_size = ...` (training/config.py:1041) or
    `cfg.mixed_precision.finalize()` (training/config.py:1876) raise `AttributeError` on the dict. The same
    mapping in a full config, or onto a recipe that has the section, works -- so the override file looks
    right and is not.

    ## Example
    ```yaml
    # overlap: recipe=gemma3_1b_pretrain_1gpu_h100_bf16_config
    comm_overlap:            # that recipe's comm_overlap is null
      tp_comm_overlap: false
      overlap_grad_reduce: true
    ```

    ## Fix
    **Safe (a) — removes a launch crash**: add `_target_` naming the class to the mapping in the override file
    (`megatron.bridge.training.comm_overlap.CommOverlapConfig`,
    `megatron.bridge.training.mixed_precision.MixedPrecisionConfig`), so Bridge instantiates it with the
    fields written there -- what the file meant.
    """
    cfg = view.cfg
    for path in sorted(cfg.plain_dict_paths):
        section = path[0]
        target, line = DATACLASS_SECTIONS[section]
        base = "null" if cfg.lower_data is None or cfg.lower_data.get(section) is None else repr(cfg.lower_data.get(section))
        yield finding(
            view,
            "CFG006",
            "error",
            f"{section} is a mapping without _target_ merged onto the recipe's {section}: {base}; Bridge sets it as "
            f"a plain dict and the launch fails with AttributeError (megatron/bridge/{line})",
            section,
            safe(f"add {section}._target_: {target} (Bridge then instantiates the mapping)", set_(f"{section}._target_", target)),
        )
