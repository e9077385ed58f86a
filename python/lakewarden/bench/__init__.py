"""Benchmarks: runnable modules that print figures (not tests)."""
