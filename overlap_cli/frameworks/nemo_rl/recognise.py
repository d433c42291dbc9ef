"""Whether a YAML file is a NeMo-RL config, and whether its policy trains with the Megatron backend.

Decided from the file's shape, never its path: NeMo-RL's configs (examples/configs/**) have a top-level
``policy`` beside ``cluster`` or an algorithm section (``grpo``, ``sft``, ``dpo``, ...), or inherit from
another file with ``defaults: PATH.yaml`` (nemo_rl/utils/config.py:76-95; Bridge's and Hydra's defaults
lists name config groups, not files). Which backend runs is what ``Policy.__init__`` decides
(nemo_rl/models/policy/lm_policy.py:118-160): ``policy.megatron_cfg.enabled`` or
``policy.dtensor_cfg.enabled``, read on the merged config.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # the typing module costs ~2.5 ms of start-up; annotations here are strings (PEP 563)
if TYPE_CHECKING:
    from typing import Optional

from overlap_cli import lazyre

# The sections of NeMo-RL's master configs beside ``policy`` (nemo_rl/algorithms/*.py MasterConfig).
ALGORITHM_SECTIONS = ("grpo", "sft", "dpo", "rm", "ppo", "distillation", "loss_fn", "checkpointing", "eval")
_TOP_KEY = lazyre.compile(r"^([A-Za-z_][\w\-]*)[ \t]*:", re.MULTILINE)
# ``defaults: x.yaml`` / ``defaults: "x.yaml"`` or a block list of such paths.
_DEFAULTS_PATH = lazyre.compile(
    r"^defaults[ \t]*:[ \t]*(?:['\"]?[^\s'\"#]+\.ya?ml['\"]?|\n(?:[ \t]*-[ \t]*['\"]?[^\s'\"#]+\.ya?ml['\"]?[ \t]*(?:#.*)?\n)+)",
    re.MULTILINE)

MEGATRON_ENABLED = ("policy", "megatron_cfg", "enabled")
DTENSOR_ENABLED = ("policy", "dtensor_cfg", "enabled")


SNIFF_BYTES = 1 << 20


def sniff(path: str) -> Optional[str]:
    """The first MiB of a regular file as text; None for anything else (a FIFO is never opened) or an
    unreadable file, which the reader of the check then reports (frameworks.detect.head_of)."""
    from overlap_cli.frameworks.detect import head_of

    head = head_of(path)
    return head.decode("utf-8", "replace") if head is not None else None


def looks_like_nemo_rl(text: str) -> bool:
    """The file's own shape: ``policy`` with ``cluster`` or an algorithm section, or a file ``defaults:``."""
    if not (text.startswith(("policy", "defaults")) or "\npolicy" in text or "\ndefaults" in text):
        return False  # no top-level policy / defaults key (a Bridge dump's 30 KB never needs the scan below)
    keys = set(_TOP_KEY.findall(text))
    if "policy" in keys and ("cluster" in keys or keys.intersection(ALGORITHM_SECTIONS)):
        return True
    return "defaults" in keys and _DEFAULTS_PATH.search(text) is not None


def recognise(path: str, text: str) -> Optional[tuple]:
    """("run", None) for a NeMo-RL config whose policy uses the Megatron backend (or one that cannot be
    loaded: the check says why), ("skip", reason) for a NeMo-RL config that does not train with Megatron,
    None for a file that is not a NeMo-RL config."""
    if not looks_like_nemo_rl(text):
        return None
    from overlap_cli.frameworks.nemo_rl.loader import load
    from overlap_cli.problems import InputError

    try:
        cfg = load(path, text)
    except (InputError, RecursionError):
        return "run", None  # the check reports the broken chain
    if not isinstance(cfg.data.get("policy"), dict):
        if not (set(cfg.data) & set(ALGORITHM_SECTIONS) or "cluster" in cfg.data):
            return None  # a `defaults:` file that is no NeMo-RL config after all
        sections = ", ".join(k for k in cfg.data if k in ALGORITHM_SECTIONS or k in ("generation", "cluster"))
        return "skip", (f"not a training config: a NeMo-RL config without a policy section ({sections}); "
                        "NeMo-RL's evaluation runs generate only")
    return verdict(cfg)


def verdict(cfg) -> tuple:
    """("run", None) | ("skip", reason) for a loaded NeMo-RL config, as lm_policy.py:118-160 decides."""
    megatron = cfg.get(MEGATRON_ENABLED, False)
    dtensor = cfg.get(DTENSOR_ENABLED, False)
    if megatron is True:
        return "run", None  # with dtensor_cfg.enabled too, rule RL001 reports NeMo-RL's refusal
    where_d = cfg.origin(DTENSOR_ENABLED) if cfg.has(DTENSOR_ENABLED) else None
    where_m = cfg.origin(MEGATRON_ENABLED) if cfg.has(MEGATRON_ENABLED) else None
    if dtensor is True:
        off = (f", policy.megatron_cfg.enabled: {megatron} at {where_m}" if where_m else
               ", no policy.megatron_cfg.enabled")
        return "skip", (f"a NeMo-RL config for the DTensor (FSDP2) policy (policy.dtensor_cfg.enabled: true at "
                        f"{where_d}{off}): not a Megatron run")
    if not isinstance(megatron, bool) and megatron is not False:
        return "run", None  # an unknown flag: the check says so
    said = f"policy.megatron_cfg.enabled: {megatron} at {where_m}" if where_m else "no policy.megatron_cfg.enabled"
    return "skip", (f"a NeMo-RL config with the Megatron backend disabled ({said}) and no DTensor policy "
                    "either: NeMo-RL refuses it (nemo_rl/models/policy/lm_policy.py:156)")
