"""Batch rows on Dask distributed: a LocalCluster of worker processes on loopback (``local``), or the
scheduler at ``tcp://HOST:PORT`` and whatever workers it has. Dask is an optional extra, imported only
here and only once a batch asks for it, so ``shad --help`` and a local batch never load it.

A row whose worker dies (the process is killed, the machine goes away) runs once more on another worker,
then is recorded as failed: the scheduler's ``allowed_failures`` is 1 for the batch. Workers share the cache
and the exact ledger through the store whose URL every row's kernel gets as ``SHAD_STORE``.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store import open_store
from ._execute import Job, Notebook, Shipped, one_line, read_executed
from ._table import table_row

__all__ = ["ALLOWED_FAILURES", "DASK_HINT", "check_scheduler", "dask_client", "run_on_dask", "shared_store"]

DASK_HINT = "pip install 'shad[dask]'"
ALLOWED_FAILURES = 1  # a row whose worker dies is tried once more, then recorded as failed
CONNECT_TIMEOUT = 15.0  # seconds to reach a tcp:// scheduler
WORKER_TIMEOUT = 60.0  # seconds a tcp:// scheduler may take to have a worker
_TCP = re.compile(r"^tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}$")
_SHARED = ("redis://", "rediss://")
_START_HINT = (
    "start one with `dask scheduler --port 8786` and workers with `dask worker tcp://HOST:8786 --nthreads 1`"
)

Row = dict[str, Any]


def check_scheduler(scheduler: str) -> str:
    """``local`` or ``tcp://HOST:PORT``; anything else is a usage error."""
    if scheduler == "local" or _TCP.match(scheduler):
        return scheduler
    raise UsageError(
        f"--scheduler must be 'local' or tcp://HOST:PORT, not {scheduler!r}",
        hint="e.g. --scheduler local --parallel 4, or --scheduler tcp://10.0.0.5:8786",
    )


def shared_store(scheduler: str | None, redis_url: str | None) -> str | None:
    """The store URL every row's kernel is given (None: each kernel's own default, ``$SHAD_STORE``, then
    ``$REDIS_URL``, then SQLite under ``$SHAD_HOME``), checked before anything starts: ``redis_url``, else
    for a Dask batch ``$SHAD_STORE`` or ``$REDIS_URL`` (the order a run reads them in).

    ``tcp://`` (workers may be on other machines) needs a Redis every worker reaches: a SQLite file is
    shared only by the processes of one machine. ``local`` accepts SQLite, which is safe there (WAL, and
    every ledger update inside ``BEGIN IMMEDIATE``), and Redis. A store that cannot be reached fails here.
    """
    if scheduler is None and redis_url is None:
        return None  # a batch in this process: the kernels inherit this environment, as they always did
    url = redis_url or os.environ.get("SHAD_STORE") or os.environ.get("REDIS_URL") or None
    if redis_url is not None and not redis_url.lower().startswith((*_SHARED, "unix://")):
        raise UsageError(
            f"--redis takes a redis://, rediss:// or unix:// URL, not {redis_url!r}",
            hint="e.g. --redis redis://127.0.0.1:6379/0",
        )
    if scheduler is not None and scheduler != "local" and not (url or "").lower().startswith(_SHARED):
        where = f"the store {url!r}" if url else "the default SQLite store (under $SHAD_HOME)"
        raise UsageError(
            f"a {scheduler} scheduler needs a shared store for the cache and ledger, and {where} is not one",
            hint="pass --redis redis://HOST:6379/0 (or set REDIS_URL) with a Redis that every worker reaches",
        )
    if url is not None:
        open_store(url).close()  # StoreUnavailableError (one line, with a hint) when it cannot be used
    return url


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise UsageError(
            f"--scheduler runs the rows on Dask distributed, which is not installed ({exc})", hint=DASK_HINT
        ) from exc
    return distributed


@contextmanager
def dask_client(scheduler: str, workers: int) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler``: ``local`` starts ``workers`` worker processes (one row
    at a time each) on 127.0.0.1 and stops them afterwards; ``tcp://`` connects and waits for a worker."""
    distributed = _distributed()
    cluster: Any = None
    restore: int | None = None
    if scheduler == "local":
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,  # a dead worker is reported in its row, not over the progress bar
            scheduler_kwargs={"allowed_failures": ALLOWED_FAILURES},
        )
        client = distributed.Client(cluster, set_as_default=False)
    else:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            message = f"cannot reach the Dask scheduler at {scheduler}: {one_line(str(exc))}"
            raise UsageError(message, hint=_START_HINT) from exc
    try:
        if cluster is None:
            _wait_for_a_worker(client, scheduler)
            restore = _set_allowed_failures(client, ALLOWED_FAILURES)
        yield client
    finally:
        if restore is not None:
            _set_allowed_failures(client, restore)
        client.close()
        if cluster is not None:
            cluster.close()


def _wait_for_a_worker(client: Any, scheduler: str) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
    except TimeoutError as exc:
        raise UsageError(
            f"the Dask scheduler at {scheduler} has no workers (waited {WORKER_TIMEOUT:.0f} s)",
            hint=f"start some with `dask worker {scheduler} --nthreads 1`",
        ) from exc


def _set_allowed_failures(client: Any, value: int) -> int | None:
    """Set the scheduler's ``allowed_failures`` (the deaths a task survives); the value it had, or None
    when the scheduler refuses to run client code (``distributed.scheduler.pickle: false``)."""

    def swap(dask_scheduler: Any) -> int:  # nested, so it is pickled by value: the scheduler needs no shad
        before = int(dask_scheduler.allowed_failures)
        dask_scheduler.allowed_failures = value
        return before

    try:
        return int(client.run_on_scheduler(swap))
    except Exception:  # the scheduler keeps its own setting; rows are then retried as often as it says
        return None


@dataclass(frozen=True)
class _Outcome:
    job: Job
    shipped: Shipped | None
    error: str


def run_on_dask(
    client: Any,
    notebook: Notebook,
    jobs: Sequence[Job],
    on_row: Callable[[Row], None],
) -> None:
    """Submit one task per job; as each ends, write its notebook and log and call ``on_row`` with its
    table row, from this thread. Interrupted (Ctrl-C, or ``on_row`` raising), the rows not yet finished
    are cancelled on the cluster."""
    from distributed import as_completed

    from ._execute import execute_shipped

    source_text = notebook.source.read_text(encoding="utf-8")
    batch = uuid.uuid4().hex[:8]
    futures = {
        client.submit(
            execute_shipped,
            notebook,
            source_text,
            job,
            key=f"shad-batch-{batch}-row-{job.number}",
            pure=False,
            retries=0,  # exceptions are rows' own errors already; worker deaths are allowed_failures'
        ): job
        for job in jobs
    }
    try:
        for future in as_completed(list(futures), loop=client.loop):  # type: ignore[no-untyped-call]
            outcome = _outcome(future, futures.pop(future))
            # Let go of the result at once: a finished row held on a worker that dies later would be
            # computed again (another run, charged to the ledger again).
            future.release()
            on_row(_row(outcome))
    except BaseException:
        client.cancel(list(futures))
        raise


def _outcome(future: Any, job: Job) -> _Outcome:
    from distributed.scheduler import KilledWorker

    if future.status == "finished":
        return _Outcome(job, future.result(), "")
    try:
        exc = future.exception()
    except Exception as lost:  # cancelled or lost with the scheduler: the row failed all the same
        exc = lost
    if isinstance(exc, KilledWorker):
        return _Outcome(
            job,
            None,
            f"KilledWorker: the Dask worker running this row died {exc.allowed_failures + 1} times"
            f" (the row was tried again {exc.allowed_failures} time(s)); last on {exc.last_worker.address}",
        )
    return _Outcome(job, None, f"{type(exc).__name__}: {one_line(str(exc))}")


def _row(outcome: _Outcome) -> Row:
    """Write what the worker sent back where a local batch writes it; the row read from the notebook."""
    from ..fs import atomic_write

    job, shipped = outcome.job, outcome.shipped
    if shipped is None:
        _append(job.log, f"shad batch: {outcome.error}\n".encode())
        return table_row(job.number, job.goal, job.output, {}, outcome.error)
    if shipped.notebook:
        atomic_write(job.output, shipped.notebook)
    if shipped.log:
        _append(job.log, shipped.log)
    executed = read_executed(job.output) if shipped.notebook else {}
    return table_row(job.number, job.goal, job.output, executed, shipped.error)


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)
