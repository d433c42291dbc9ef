"""overlap-cli: static checks and fixes for Megatron-Bridge communication-overlap settings."""

__version__ = "0.1.0"
