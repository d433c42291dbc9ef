"""Limits every form applies alike (a module of constants: the YAML path imports it and nothing more)."""

# The largest parallel size any form accepts: beyond any machine (a typo), and too large for the sizes'
# arithmetic downstream. Bridge's schema and Megatron-LM's argument check both refuse a size past it.
MAX_PARALLEL_SIZE = 2 ** 31
