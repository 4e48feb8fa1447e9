"""Batch runs: one papermill execution of a parameterised notebook per row of a goals CSV.

Each row's columns become the notebook's parameters. The results table is read from each executed
notebook's Shad result bundle (the ``application/vnd.shad.run+json`` output the magics display), never
from scraped text, so a notebook may print whatever it likes.
"""

from __future__ import annotations

import ast
import csv
import importlib.util
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..fs import atomic_write

__all__ = ["COLUMNS", "MIME_TYPE", "BatchResult", "read_goals", "read_run_bundle", "run_batch"]

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
    nb = _load_notebook(source)
    kernel = _kernel(nb, kernel_name)
    if parallel < 1:
        raise UsageError(f"--parallel must be at least 1, got {parallel}")
    work_dir = Path(cwd).resolve() if cwd is not None else source.parent
    if not work_dir.is_dir():
        raise UsageError(f"working folder not found: {work_dir}")
    declared = _declared_parameters(source)
    warnings = [
        f"parameter {name!r} is not set in the notebook's parameters cell (papermill adds it anyway)"
        for name in sorted(({*rows[0]} | set(parameters or {})) - set(declared))
    ]
    target = Path(out_dir).resolve()
    width = max(3, len(str(len(rows))))
    common = {
        name: _coerce(name, value, declared.get(name), "-p") for name, value in (parameters or {}).items()
    }
    jobs = []
    for number, row in enumerate(rows, start=1):
        given = {k: _coerce(k, v, declared.get(k), f"row {number}") for k, v in row.items() if v != ""}
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
                _write_table(done, target, [*warnings, f"interrupted after {len(done)} of {len(jobs)} rows"])
            raise
    ordered = [results[job.number] for job in jobs]
    return _write_table(ordered, target, warnings)


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
        return _row(job, self._executed(job.output), error)

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


def _row(job: _Job, executed: Any, error: str) -> dict[str, Any]:
    bundle, metadata = read_run_bundle(executed)
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(row=job.number, goal=job.goal, notebook=str(job.output), error=error or None)
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


def _write_table(rows: list[dict[str, Any]], target: Path, warnings: list[str]) -> BatchResult:
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


def _load_notebook(path: Path) -> Any:
    import nbformat  # imported here: it takes a second, and every `shad` command imports this module

    if not path.is_file():
        raise UsageError(f"notebook not found: {path}", hint="pass the .ipynb file to run for each row")
    try:
        nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise UsageError(f"{path.name} is not a readable notebook: {exc}", hint="pass a .ipynb file") from exc
    if not any("parameters" in cell.get("metadata", {}).get("tags", []) for cell in nb.cells):
        raise UsageError(
            f"{path.name} has no cell tagged 'parameters'",
            hint="tag the cell that sets goal, vault ... with 'parameters' so papermill can override it",
        )
    return nb


def _kernel(nb: Any, requested: str | None) -> str:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    name = requested or nb.metadata.get("kernelspec", {}).get("name")
    if not name:
        raise UsageError("the notebook names no kernel", hint="pass --kernel NAME (e.g. python3)")
    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel as exc:
        hint = "install it with: python -m shad_kernel install --user" if name == "shad" else None
        raise UsageError(
            f"kernel {name!r} is not installed",
            hint=hint or "pass --kernel with one that `jupyter kernelspec list` shows",
        ) from exc
    return str(name)


def _declared_parameters(path: Path) -> dict[str, str]:
    """The parameters cell's names and the type of their default (papermill's own introspection)."""
    import papermill

    declared: dict[str, str] = {}
    for name, param in papermill.inspect_notebook(str(path)).items():
        kind = param["inferred_type_name"]
        if kind in ("None", ""):  # no annotation: judge by the default value
            try:
                kind = type(ast.literal_eval(param["default"])).__name__
            except (ValueError, SyntaxError):
                kind = "str"
        declared[name] = kind
    return declared


def _coerce(name: str, value: str, kind: str | None, where: str) -> Any:
    """A CSV cell (always text) as the type of the notebook's default for that parameter."""
    if name == "goal" or kind in (None, "str", "NoneType"):
        return value
    try:
        if kind == "bool":
            lowered = value.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return lowered in ("true", "1", "yes")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind in ("list", "dict", "tuple"):
            parsed = ast.literal_eval(value)
            if type(parsed).__name__ != kind:
                raise ValueError(value)
            return parsed
    except (ValueError, SyntaxError) as exc:
        raise UsageError(
            f"{where}: {name}={value!r} is not a valid {kind}",
            hint=f"the notebook's default for {name} is a {kind}; write the cell as one",
        ) from exc
    return value


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
