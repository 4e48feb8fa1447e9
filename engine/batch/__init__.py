"""Batch runs: one papermill execution of a notebook per row of a goals table, in this process or on Dask
distributed (``scheduler=``), and the results table."""

from __future__ import annotations

from ._rows import COLUMNS, MIME_TYPE, BatchResult, read_goals, read_run_bundle, run_batch

__all__ = ["COLUMNS", "MIME_TYPE", "BatchResult", "read_goals", "read_run_bundle", "run_batch"]
