"""Solvers: one module per paper's algorithms (zheng2025, zhu2025, ...)."""
