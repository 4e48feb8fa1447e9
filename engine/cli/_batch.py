"""``shad batch``: one papermill run of a notebook per goal in a CSV (here, or on Dask distributed), gathered
into a results table."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from ..batch import BatchResult, run_batch

__all__ = ["batch_cmd"]

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


@click.command("batch")
@click.argument("goals_csv", metavar="GOALS.csv")
@click.option(
    "--notebook", required=True, metavar="NB", help="The parameterised notebook to run for each row."
)
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for notebooks/ and results.csv.")
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Notebooks at once (with --scheduler local: the number of Dask workers).",
)
@click.option(
    "--scheduler",
    metavar="local|tcp://HOST:PORT",
    help="Run the rows on Dask distributed: 'local' starts --parallel worker processes on this machine, "
    "tcp://HOST:PORT uses that scheduler's workers (needs --redis). Needs: pip install 'shad[dask]'.",
)
@click.option(
    "--redis",
    "redis_url",
    metavar="URL",
    help="Cache and ledger for every row on this Redis (default: REDIS_URL; SQLite under $SHAD_HOME).",
)
@click.option("--kernel", "kernel_name", metavar="NAME", help="Kernel to use (default: the notebook's own).")
@click.option(
    "-p",
    "--parameter",
    "parameters",
    type=(str, str),
    multiple=True,
    metavar="KEY VALUE",
    help="A notebook parameter for every row (repeatable); a non-empty CSV cell wins.",
)
@click.option("--cwd", metavar="DIR", help="Working folder of the runs (default: the notebook's folder).")
@click.option("--timeout", type=float, metavar="SECONDS", help="Fail a row whose cell runs longer than this.")
def batch_cmd(
    goals_csv: str,
    notebook: str,
    out_dir: str,
    parallel: int,
    kernel_name: str | None,
    parameters: tuple[tuple[str, str], ...],
    cwd: str | None,
    timeout: float | None,
    scheduler: str | None,
    redis_url: str | None,
) -> int:
    """Run NB once per row of GOALS.csv (columns become notebook parameters; a goal column is
    required) and write DIR/results.csv (and results.parquet): status, run id, tokens, citations ...
    read from each executed notebook's Shad result. With --scheduler the rows run on Dask distributed; a
    row whose worker dies is tried once more, then recorded as failed. Exit 0 when every row succeeded, 3
    when some failed."""
    # papermill logs each unknown parameter once per row; the batch says it once, at the end.
    logging.getLogger("papermill").setLevel(logging.ERROR)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]batch[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        # Jupyter kernels set FORCE_COLOR, which makes rich animate into a pipe (`!shad batch` in a cell
        # would save every frame); only a real terminal gets the live bar.
        disable=not sys.stderr.isatty(),
    )
    task = progress.add_task("batch", total=None)

    def on_start(total: int) -> None:  # only once the inputs are checked: a usage error prints alone
        progress.update(task, total=total)
        progress.start()

    def on_row(row: dict[str, Any]) -> None:
        progress.console.print(_row_line(row), soft_wrap=True)
        progress.advance(task)

    try:
        result = run_batch(
            goals_csv,
            notebook,
            out_dir,
            parallel=parallel,
            kernel_name=kernel_name,
            parameters=dict(parameters),
            cwd=cwd,
            execution_timeout=timeout,
            scheduler=scheduler,
            redis_url=redis_url,
            progress=False,  # the rich bar below
            on_start=on_start,
            on_row=on_row,
        )
    finally:
        progress.stop()
    for warning in result.warnings:
        err.print(f"[yellow]shad: warning:[/] {escape(warning)}")
    out.print(escape(_summary(result)))
    return result.exit_code


def _row_line(row: dict[str, Any]) -> str:
    ok = row["status"] == "SUCCESS" and not row["error"]
    mark = "[green]✓[/]" if ok else "[red]✗[/]"
    detail = f"{row['run_id']}  {row['tokens']} tokens  {row['citations']} citations" if row["run_id"] else ""
    if row["error"]:
        detail = f"{detail}  {row['error']}".strip()
    return f"{mark} row {row['row']} {row['status']}  {escape(row['goal'])}  [dim]{escape(detail)}[/]"


def _summary(result: BatchResult) -> str:
    failed = result.failed
    total = len(result.rows)
    where = f"results: {result.csv_path}"
    if not failed:
        return f"{total}/{total} rows succeeded; {where}"
    rows = ", ".join(str(r["row"]) for r in failed)
    return f"{total - len(failed)}/{total} rows succeeded, {len(failed)} failed (rows {rows}); {where}"
