"""Megatron-LM as a framework: its argparse table and command-line semantics (args), its resolver."""
