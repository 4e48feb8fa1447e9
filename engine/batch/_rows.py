"""Batch runs: one papermill execution of a parameterised notebook per row of a goals CSV.

Each row's columns become the notebook's parameters. The results table is read from each executed
notebook's Shad result bundle (the ``application/vnd.shad.run+json`` output the magics display), never
from scraped text, so a notebook may print whatever it likes: see ``_table``. The notebook's own checks
and the parameters' types are in ``_notebook``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._notebook import coerce_parameter, declared_parameters, load_notebook, notebook_kernel
from ._table import COLUMNS, MIME_TYPE, BatchResult, read_run_bundle, table_row, write_table

__all__ = ["COLUMNS", "MIME_TYPE", "BatchResult", "read_goals", "read_run_bundle", "run_batch"]


def read_goals(path: str | Path) -> list[dict[str, str]]:
    """The CSV's rows as dicts (header names stripped). A missing ``goal`` column, an empty goal or an
    empty file is a ``UsageError`` that names what was found."""
    csv_path = Path(path)
    if not csv_path.is_file():
        raise UsageError(
            f"goals file not found: {csv_path}", hint="pass a CSV with a header row and a goal column"
        )
    try:
        with csv_path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            columns = [c.strip() for c in reader.fieldnames or []]
            rows = [
                {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
                for raw in reader
                if any((v or "").strip() for v in raw.values() if isinstance(v, str))
            ]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"cannot read {csv_path} as CSV: {exc}", hint="save it as UTF-8 CSV") from exc
    if "goal" not in columns:
        found = ", ".join(repr(c) for c in columns if c) or "none"
        raise UsageError(
            f"{csv_path.name} has no 'goal' column (columns found: {found})",
            hint="the first line of the CSV must name the columns, one of them 'goal'",
        )
    if not rows:
        raise UsageError(f"{csv_path.name} has no goals (only a header row)", hint="add one goal per line")
    for number, row in enumerate(rows, start=1):
        if not row.get("goal"):
            raise UsageError(
                f"{csv_path.name}: row {number} has an empty goal", hint="fill it in or delete the row"
            )
    return rows


def run_batch(
    goals_csv: str | Path,
    notebook: str | Path,
    out_dir: str | Path,
    *,
    parallel: int = 1,
    kernel_name: str | None = None,
    parameters: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    start_timeout: float = 60,
    execution_timeout: float | None = None,
    on_start: Callable[[int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> BatchResult:
    """Execute ``notebook`` once per row of ``goals_csv`` with papermill and gather the results.

    Row columns (and ``parameters``, given as strings, for every row; a non-empty row value wins) are
    coerced to the type of the notebook's own default for that parameter. Executed notebooks are kept
    as ``out_dir/notebooks/<row>-<slug>.ipynb`` and each kernel's stderr as ``out_dir/logs/<row>-<slug>.log``;
    the table goes to ``out_dir/results.csv`` (and ``results.parquet`` when pyarrow is importable).
    Notebooks run in ``cwd`` (default: the notebook's folder, as Jupyter would), ``parallel`` at a time,
    each in its own kernel (default: the notebook's kernelspec). A failing row is recorded and the others
    go on. ``on_start(rows)`` is called once the inputs are checked, ``on_row(result)`` as each row
    finishes, both from the calling thread.
    """
    rows = read_goals(goals_csv)
    source = Path(notebook).resolve()
    nb = load_notebook(source)
    kernel = notebook_kernel(nb, kernel_name)
    if parallel < 1:
        raise UsageError(f"--parallel must be at least 1, got {parallel}")
    work_dir = Path(cwd).resolve() if cwd is not None else source.parent
    if not work_dir.is_dir():
        raise UsageError(f"working folder not found: {work_dir}")
    declared = declared_parameters(source)
    warnings = [
        f"parameter {name!r} is not set in the notebook's parameters cell (papermill adds it anyway)"
        for name in sorted(({*rows[0]} | set(parameters or {})) - set(declared))
    ]
    target = Path(out_dir).resolve()
    width = max(3, len(str(len(rows))))
    common = {
        name: coerce_parameter(name, value, declared.get(name), "-p")
        for name, value in (parameters or {}).items()
    }
    jobs = []
    for number, row in enumerate(rows, start=1):
        given = {
            k: coerce_parameter(k, v, declared.get(k), f"row {number}") for k, v in row.items() if v != ""
        }
        stem = f"{number:0{width}d}-{_slug(row['goal'])}"
        jobs.append(
            _Job(
                number,
                row["goal"],
                common | given,
                target / "notebooks" / f"{stem}.ipynb",
                target / "logs" / f"{stem}.log",
            )
        )
    for folder in ("notebooks", "logs"):
        (target / folder).mkdir(parents=True, exist_ok=True)
    if on_start is not None:
        on_start(len(jobs))
    results: dict[int, dict[str, Any]] = {}
    execute = _Executor(source, kernel, work_dir, start_timeout, execution_timeout)
    with ThreadPoolExecutor(max_workers=min(parallel, len(jobs)), thread_name_prefix="shad-batch") as pool:
        futures: dict[Future[dict[str, Any]], _Job] = {pool.submit(execute, job): job for job in jobs}
        try:
            for future in as_completed(futures):
                results[futures[future].number] = row_result = future.result()
                if on_row is not None:
                    on_row(row_result)
        except BaseException:  # Ctrl-C: start no further notebooks; running ones finish their kernel
            for pending in futures:
                pending.cancel()
            done = [results[job.number] for job in jobs if job.number in results]
            if done:  # the rows that finished are kept, in the same table
                write_table(done, target, [*warnings, f"interrupted after {len(done)} of {len(jobs)} rows"])
            raise
    ordered = [results[job.number] for job in jobs]
    return write_table(ordered, target, warnings)


@dataclass(frozen=True)
class _Job:
    number: int
    goal: str
    parameters: dict[str, Any]
    output: Path
    log: Path


class _Executor:
    """One papermill execution per call; safe to call from several threads at once."""

    def __init__(
        self, source: Path, kernel: str, cwd: Path, start_timeout: float, execution_timeout: float | None
    ) -> None:
        self.source, self.kernel, self.cwd = source, kernel, cwd
        self.start_timeout, self.execution_timeout = start_timeout, execution_timeout

    def __call__(self, job: _Job) -> dict[str, Any]:
        import papermill  # type: ignore[import-untyped]

        error = ""
        try:
            # The kernel's working folder goes through nbclient's resources, not papermill's cwd=,
            # which os.chdir()s the whole process and so races between threads.
            papermill.execute_notebook(
                str(self.source),
                str(job.output),
                parameters=job.parameters,
                kernel_name=self.kernel,
                progress_bar=False,
                log_output=False,
                start_timeout=self.start_timeout,
                execution_timeout=self.execution_timeout,
                resources={"metadata": {"path": str(self.cwd)}},
                kernel_manager_class=_logging_kernel_manager(job.log),
            )
        except papermill.PapermillExecutionError as exc:
            error = f"{exc.ename}: {_one_line(exc.evalue)}"
        except Exception as exc:  # a dead kernel, a cell timeout ...: this row fails, the batch goes on
            error = f"{type(exc).__name__}: {_one_line(str(exc))}"
        return table_row(job.number, job.goal, job.output, self._executed(job.output), error)

    def _executed(self, path: Path) -> Any:
        import nbformat

        if not path.is_file():
            return {}
        try:
            return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        except Exception:  # a notebook cut short mid-write has no result to read
            return {}


def _logging_kernel_manager(log: Path) -> type[Any]:
    """A kernel manager whose kernel writes its stderr (its own log lines and warnings) to ``log``
    instead of the terminal, where several kernels would scribble over the progress bar."""
    from jupyter_client.manager import AsyncKernelManager

    class _LoggingKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            with log.open("ab") as stream:  # the kernel holds its own copy of the descriptor
                kw.setdefault("stderr", stream)
                await super().start_kernel(**kw)

    return _LoggingKernelManager


def _slug(goal: str, limit: int = 40) -> str:
    words = re.findall(r"[a-z0-9]+", goal.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > limit:
            break
        slug = candidate
    return slug or (words[0][:limit] if words else "goal")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
