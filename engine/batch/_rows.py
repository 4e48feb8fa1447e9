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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._dask import check_scheduler, dask_client, run_on_dask, shared_store
from ._execute import Job, Notebook, execute_here
from ._notebook import coerce_parameter, declared_parameters, load_notebook, notebook_kernel
from ._progress import RowProgress, in_notebook
from ._table import COLUMNS, MIME_TYPE, BatchResult, read_run_bundle, write_table

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
    scheduler: str | None = None,
    redis_url: str | None = None,
    progress: bool | None = None,
    on_start: Callable[[int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> BatchResult:
    """Execute ``notebook`` once per row of ``goals_csv`` with papermill and gather the results.

    Row columns (and ``parameters``, given as strings, for every row; a non-empty row value wins) are
    coerced to the type of the notebook's own default for that parameter. Executed notebooks are kept
    as ``out_dir/notebooks/<row>-<slug>.ipynb`` and each kernel's stderr as ``out_dir/logs/<row>-<slug>.log``;
    the table goes to ``out_dir/results.csv`` (and ``results.parquet`` when pyarrow is importable), in
    CSV order. Notebooks run in ``cwd`` (default: the notebook's folder, as Jupyter would), each in its own
    kernel (default: the notebook's kernelspec). A failing row is recorded and the others go on.

    Without ``scheduler`` the rows run here, ``parallel`` at a time. ``scheduler="local"`` runs them on a
    Dask LocalCluster of ``parallel`` worker processes, ``"tcp://HOST:PORT"`` on that Dask scheduler's
    workers (which then need ``redis_url``, or ``$REDIS_URL``: a store every machine shares); a row whose
    worker dies is tried once more, then recorded as failed. ``redis_url`` is given to every row's kernel
    as its cache and ledger store (``SHAD_STORE``). ``progress`` shows a progress bar (default: only in a
    Jupyter kernel, where it is a widget). ``on_start(rows)`` is called once the inputs are checked,
    ``on_row(result)`` as each row finishes, both from the calling thread.
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
    if scheduler is not None:
        check_scheduler(scheduler)
    store = shared_store(scheduler, redis_url)
    declared = declared_parameters(source)
    warnings = [
        f"parameter {name!r} is not set in the notebook's parameters cell (papermill adds it anyway)"
        for name in sorted(({*rows[0]} | set(parameters or {})) - set(declared))
    ]
    target = Path(out_dir).resolve()
    jobs = _jobs(rows, declared, parameters or {}, target)
    # Said explicitly to every kernel: a worker elsewhere has its own environment.
    env = {"SHAD_STORE": store} if store is not None else {}
    settings = Notebook(source, kernel, work_dir, start_timeout, execution_timeout, env)
    meter = RowProgress(in_notebook() if progress is None else progress, on_start, on_row)
    results: dict[int, dict[str, Any]] = {}

    def finished(row: dict[str, Any]) -> None:
        results[row["row"]] = row
        meter.row(row)

    try:
        if scheduler is None:
            _start(target, meter, len(jobs))
            _run_here(settings, jobs, parallel, finished)
        else:
            with dask_client(scheduler, min(parallel, len(jobs))) as client:
                _start(target, meter, len(jobs))
                run_on_dask(client, settings, jobs, finished)
    except BaseException:  # Ctrl-C: start no further notebooks; the rows that finished are kept
        done = [results[job.number] for job in jobs if job.number in results]
        if done:
            write_table(done, target, [*warnings, f"interrupted after {len(done)} of {len(jobs)} rows"])
        raise
    finally:
        meter.close()
    return write_table([results[job.number] for job in jobs], target, warnings)


def _jobs(
    rows: list[dict[str, str]], declared: dict[str, str], parameters: Mapping[str, str], target: Path
) -> list[Job]:
    """One job per row: its parameters coerced (usage errors before anything starts) and its file names."""
    width = max(3, len(str(len(rows))))
    common = {
        name: coerce_parameter(name, value, declared.get(name), "-p") for name, value in parameters.items()
    }
    jobs = []
    for number, row in enumerate(rows, start=1):
        given = {
            k: coerce_parameter(k, v, declared.get(k), f"row {number}") for k, v in row.items() if v != ""
        }
        stem = f"{number:0{width}d}-{_slug(row['goal'])}"
        output, log = target / "notebooks" / f"{stem}.ipynb", target / "logs" / f"{stem}.log"
        jobs.append(Job(number, row["goal"], common | given, output, log))
    return jobs


def _start(target: Path, meter: RowProgress, rows: int) -> None:
    for folder in ("notebooks", "logs"):
        (target / folder).mkdir(parents=True, exist_ok=True)
    meter.start(rows)


def _run_here(
    settings: Notebook, jobs: list[Job], parallel: int, finished: Callable[[dict[str, Any]], None]
) -> None:
    """The rows in this process, ``parallel`` notebooks at a time (threads, each driving its own kernel)."""
    with ThreadPoolExecutor(max_workers=min(parallel, len(jobs)), thread_name_prefix="shad-batch") as pool:
        futures = [pool.submit(execute_here, settings, job) for job in jobs]
        try:
            for future in as_completed(futures):
                finished(future.result())
        except BaseException:  # running notebooks finish their kernel; queued ones never start
            for pending in futures:
                pending.cancel()
            raise


def _slug(goal: str, limit: int = 40) -> str:
    words = re.findall(r"[a-z0-9]+", goal.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > limit:
            break
        slug = candidate
    return slug or (words[0][:limit] if words else "goal")
