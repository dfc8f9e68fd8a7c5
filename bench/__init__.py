"""Benchmarks (not tests): each prints a table and writes JSON under bench/results/."""
