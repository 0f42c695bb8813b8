"""Benchmarks: the side-by-side harness, its problems and the paper reproductions."""
