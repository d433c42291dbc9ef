"""CFG006 — a dataclass section Bridge leaves a plain dict: merged onto a recipe's null section, or written
without ``_target_`` in a file ``ConfigContainer.from_yaml`` loads whole."""

from __future__ import annotations

from overlap_cli.config.layers import DATACLASS_SECTIONS
from overlap_cli.rules.common import finding, safe, set_
from overlap_cli.rules.registry import rule


# The attribute runtime_config_update reads first on each section (training/config.py:1041, :1876).
_READ = {"comm_overlap": "data_parallel_size", "mixed_precision": "finalize"}


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

    A file Bridge loads whole (a dump: a top-level `_target_`, read by `ConfigContainer.from_yaml`) has the
    same trap: `instantiate` builds only mappings that name their class (megatron/training/config/
    container.py:67-87), so a `comm_overlap` or `mixed_precision` mapping edited into a dump without its
    `_target_` (or a recipe name `mixed_precision: bf16_mixed` turned into a mapping) stays a dict and the
    launch fails the same way: `'dict' object has no attribute 'data_parallel_size'` /
    `'dict' object has no attribute 'finalize'`.

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
    fields written there -- what the file meant. Not offered for a `mixed_precision` mapping in a file loaded
    whole: it may be what is left of a recipe name, and the class's defaults are not that recipe.
    """
    cfg = view.cfg
    for path in sorted(cfg.plain_dict_paths):
        section = path[0]
        target, line = DATACLASS_SECTIONS[section]
        error = f"AttributeError: 'dict' object has no attribute '{_READ[section]}'"
        if cfg.layered:
            base = "null" if cfg.lower_data is None or cfg.lower_data.get(section) is None else repr(cfg.lower_data.get(section))
            what = f"{section} is a mapping without _target_ merged onto the recipe's {section}: {base}; Bridge sets it as a plain dict"
        else:
            what = (f"{section} is a mapping without _target_ in a file ConfigContainer.from_yaml loads whole "
                    "(top-level _target_): it stays a plain dict")
        yield finding(
            view,
            "CFG006",
            "error",
            f"{what} and the launch fails with \"{error}\" (megatron/bridge/{line})",
            section,
            # In a whole file the mapping may be all that is left of a recipe name (`bf16_mixed`): naming the
            # class would build MixedPrecisionConfig's defaults, not that recipe, so no fix is offered there.
            safe(f"add {section}._target_: {target} (Bridge then instantiates the mapping)", set_(f"{section}._target_", target))
            if cfg.layered or section == "comm_overlap" else None,
        )
