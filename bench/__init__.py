"""Benchmarks and long fuzz runs (not part of the installed package)."""
