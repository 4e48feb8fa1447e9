"""One row's notebook, executed with papermill: in this process straight into the batch's folder, or on a
Dask worker in a temporary folder whose notebook and log are sent back (a worker on another machine sees
none of the client's files). Separate from planning the rows and from choosing where they run."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._table import table_row

__all__ = ["Job", "Notebook", "Shipped", "execute_here", "execute_shipped", "one_line", "read_executed"]

KERNEL_STARTS = 3  # a kernel that never came up is started again, this many times in all
# nbclient's words for a kernel that did not answer its first request: no cell of the row has run.
_NEVER_STARTED = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")


@dataclass(frozen=True)
class Job:
    """One CSV row: its number, goal, coerced parameters and where its notebook and kernel log go."""

    number: int
    goal: str
    parameters: dict[str, Any]
    output: Path
    log: Path


@dataclass(frozen=True)
class Notebook:
    """What every row shares: the notebook, its kernel, the kernels' working folder, the time limits and
    the variables added to each kernel's environment (the shared store's URL)."""

    source: Path
    kernel: str
    cwd: Path
    start_timeout: float = 60
    execution_timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Shipped:
    """What a Dask worker sends back for a row: the executed notebook's text ("" when none was written),
    the kernel's log and the error that failed the row ("" when none did)."""

    notebook: str
    log: bytes
    error: str


def execute_here(notebook: Notebook, job: Job) -> dict[str, Any]:
    """Run ``job`` in this process (safe from several threads at once); its results-table row."""
    error = _papermill(notebook, notebook.source, job)
    return table_row(job.number, job.goal, job.output, read_executed(job.output), error)


def execute_shipped(notebook: Notebook, source_text: str, job: Job) -> Shipped:
    """Run ``job`` on a Dask worker: the notebook (``source_text``) is written to a temporary folder and
    runs there; the executed notebook comes back with the client's paths in its papermill metadata."""
    scratch = Path(tempfile.mkdtemp(prefix="shad-batch-row-"))
    try:
        source = scratch / notebook.source.name
        source.write_text(source_text, encoding="utf-8")
        here = Job(job.number, job.goal, job.parameters, scratch / "executed.ipynb", scratch / "kernel.log")
        error = _papermill(notebook, source, here)
        log = here.log.read_bytes() if here.log.is_file() else b""
        return Shipped(_with_client_paths(here.output, notebook.source, job.output), log, error)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def read_executed(path: Path) -> Any:
    """The executed notebook at ``path``, or ``{}`` when there is none (or only one cut short mid-write)."""
    import nbformat  # imported here: it takes a second, and every `shad` command imports this package

    if not path.is_file():
        return {}
    try:
        return nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    except Exception:
        return {}


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _papermill(notebook: Notebook, source: Path, job: Job) -> str:
    """Execute ``source`` into ``job.output``; the error that failed it, or "".

    A kernel that never answered its first ``kernel_info`` (kernels started at the same moment from
    several processes can race for the same ports and hang) is started afresh, up to ``KERNEL_STARTS``
    times in all: no cell has run then, so starting over cannot run any of the row's work twice."""
    error = _papermill_once(notebook, source, job)
    for attempt in range(2, KERNEL_STARTS + 1):
        if not _kernel_never_started(error):
            break
        with job.log.open("ab") as fh:
            fh.write(f"shad batch: {error}; starting a new kernel ({attempt}/{KERNEL_STARTS})\n".encode())
        error = _papermill_once(notebook, source, job)
    return error


def _kernel_never_started(error: str) -> bool:
    return error.startswith("RuntimeError: ") and any(m in error for m in _NEVER_STARTED)


def _papermill_once(notebook: Notebook, source: Path, job: Job) -> str:
    import papermill  # type: ignore[import-untyped]

    try:
        # The kernel's working folder goes through nbclient's resources, not papermill's cwd=,
        # which os.chdir()s the whole process and so races between threads.
        papermill.execute_notebook(
            str(source),
            str(job.output),
            parameters=job.parameters,
            kernel_name=notebook.kernel,
            progress_bar=False,
            log_output=False,
            start_timeout=notebook.start_timeout,
            execution_timeout=notebook.execution_timeout,
            resources={"metadata": {"path": str(notebook.cwd)}},
            kernel_manager_class=_logging_kernel_manager(job.log, notebook.env),
        )
    except papermill.PapermillExecutionError as exc:
        return f"{exc.ename}: {one_line(exc.evalue)}"
    except Exception as exc:  # a dead kernel, a cell timeout ...: this row fails, the batch goes on
        return f"{type(exc).__name__}: {one_line(str(exc))}"
    return ""


def _with_client_paths(executed: Path, source: Path, output: Path) -> str:
    """The executed notebook's text as if it had run where the client keeps it ("" when there is none)."""
    import nbformat

    nb = read_executed(executed)
    if not nb:
        return ""
    meta = nb.metadata.get("papermill")
    if isinstance(meta, dict):
        meta.update(input_path=str(source), output_path=str(output))
    return str(nbformat.writes(nb))  # type: ignore[no-untyped-call]


def _logging_kernel_manager(log: Path, env: dict[str, str]) -> type[Any]:
    """A kernel manager whose kernel writes its stderr (its own log lines and warnings) to ``log``
    instead of the terminal, where several kernels would scribble over the progress bar, and gets
    ``env`` on top of this process's environment."""
    from jupyter_client.manager import AsyncKernelManager

    class _LoggingKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            if env:
                kw["env"] = {**(kw.get("env") or os.environ), **env}
            with log.open("ab") as stream:  # the kernel holds its own copy of the descriptor
                kw.setdefault("stderr", stream)
                await super().start_kernel(**kw)

    return _LoggingKernelManager
