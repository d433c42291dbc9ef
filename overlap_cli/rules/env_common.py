"""What the ENV5xx rules of both modules (``env``, ``env_section``) share: the assertions that
``CUDA_DEVICE_MAX_CONNECTIONS=1`` trips, and how a value is shortened in a message."""

from __future__ import annotations

FSDP_MESSAGE = "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset."  # megatron/bridge/training/config.py:1102
UCC_MESSAGE = "UCC-backend requires CUDA_DEVICE_MAX_CONNECTIONS > 1"  # megatron/core/parallel_state.py:1205


def one_is_fatal(view, f) -> str | None:
    """The assertion that CUDA_DEVICE_MAX_CONNECTIONS=1 trips with this config, if any. Megatron-FSDP's is
    Bridge's validate() of the releases that make it (FSDP_MAX_CONNECTIONS_ASSERT_AT; 0.4.2 does not)."""
    if f.fsdp and view.release.FSDP_MAX_CONNECTIONS_ASSERT_AT is not None:
        return FSDP_MESSAGE
    if f.ucc:
        return UCC_MESSAGE
    return None


def one_serialises_dp(f) -> bool:
    """CUDA_DEVICE_MAX_CONNECTIONS=1 with DP overlap on and TP = CP = 1 runs the DP collectives in order."""
    return f.dp_overlap is True and f.tp == 1 and f.cp == 1


def shorten(value: str, limit: int = 60) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"
