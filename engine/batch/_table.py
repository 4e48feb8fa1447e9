"""The batch results table: one row read from each executed notebook's Shad result bundle, written as
CSV (and Parquet); separate from running the notebooks, which it only reads the output of."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fs import atomic_write

__all__ = ["COLUMNS", "MIME_TYPE", "NO_RUN", "BatchResult", "read_run_bundle", "table_row", "write_table"]

MIME_TYPE = "application/vnd.shad.run+json"
COLUMNS = [
    "row",
    "goal",
    "status",
    "run_id",
    "exit_code",
    "tokens",
    "llm_calls",
    "wall_s",
    "citations",
    "failures",
    "error",
    "notebook",
]
# A row whose notebook produced no run result at all (it raised first, or never displayed one).
NO_RUN = "ERROR"


@dataclass
class BatchResult:
    """The gathered table (one dict per CSV row, in CSV order) and where it was written."""

    rows: list[dict[str, Any]]
    out_dir: Path
    csv_path: Path
    parquet_path: Path | None
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Rows whose run did not end SUCCESS (a notebook error, no result, or a PARTIAL/FAILED run)."""
        return [r for r in self.rows if r["status"] != "SUCCESS" or r["error"]]

    @property
    def exit_code(self) -> int:
        """0 when every row succeeded, 3 when some row failed (the CLI's exit code)."""
        return 3 if self.failed else 0

    def frame(self) -> Any:
        """The table as a pandas DataFrame (columns in ``COLUMNS`` order)."""
        return _frame(self.rows)


def read_run_bundle(notebook: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The last Shad run result displayed in an executed notebook: (bundle data, its output metadata),
    or (None, {}) when the notebook shows none."""
    found: tuple[dict[str, Any] | None, dict[str, Any]] = (None, {})
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            if MIME_TYPE in data and isinstance(data[MIME_TYPE], Mapping):
                metadata = output.get("metadata", {}).get(MIME_TYPE, {})
                found = (dict(data[MIME_TYPE]), dict(metadata) if isinstance(metadata, Mapping) else {})
    return found


def table_row(number: int, goal: str, notebook: Path, executed: Any, error: str) -> dict[str, Any]:
    """The results-table row of one executed notebook (``executed`` is ``{}`` when none was written)."""
    bundle, metadata = read_run_bundle(executed)
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(row=number, goal=goal, notebook=str(notebook), error=error or None)
    if bundle is None:
        row["status"] = NO_RUN
        row["error"] = error or f"the notebook displayed no Shad run result ({MIME_TYPE})"
        return row
    metrics = bundle.get("metrics") or {}
    duration_ms = metrics.get("duration_ms")
    row.update(
        status=bundle.get("status") or metadata.get("status") or NO_RUN,
        run_id=bundle.get("run_id") or metadata.get("run_id"),
        exit_code=bundle.get("exit_code"),
        tokens=metrics.get("total_tokens"),
        llm_calls=metrics.get("llm_calls"),
        wall_s=round(float(duration_ms) / 1000, 3) if duration_ms is not None else None,
        citations=len(bundle.get("citations") or []),
        failures=len(bundle.get("failures") or []),
    )
    return row


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=COLUMNS)
    # Integer columns stay integers (not 2349.0) even when a failed row leaves them empty.
    for column in ("exit_code", "tokens", "llm_calls", "citations", "failures"):
        frame[column] = frame[column].astype("Int64")
    return frame


def write_table(rows: list[dict[str, Any]], target: Path, warnings: list[str]) -> BatchResult:
    """Write ``target/results.csv`` (and ``results.parquet`` when pyarrow is importable), atomically."""
    frame = _frame(rows)
    csv_path = target / "results.csv"
    atomic_write(csv_path, frame.to_csv(index=False))
    parquet_path: Path | None = None
    if importlib.util.find_spec("pyarrow") is not None:
        parquet_path = target / "results.parquet"
        tmp = parquet_path.with_name(".results.parquet.tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(parquet_path)
    return BatchResult(rows, target, csv_path, parquet_path, warnings)
