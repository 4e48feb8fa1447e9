"""Reading an index on a second core while the calling thread goes on: a search's passage ranking runs
beside its name and whole-note rankings (``_search``).

A search spends most of its time in three BM25 statements (passages, whole notes, names) that do not
depend on each other. SQLite releases the GIL while it steps a statement, so one of them can run in a
worker thread on its own read-only connection while the caller runs the others: on the 100 MB vault the
passage statement is ~1.1 ms of a ~3.3 ms median search, and the others ~1.0 ms.

Inside a job (``run_aside``), ``IndexDatabase.query`` on this thread goes to the worker's own connection
(``connection_for``): the code a job runs is the same code that runs inline. One connection per worker
thread and index file, kept open (opening one costs more than a search); an index about to be written by
a first build closes them first (``close_readers``), since SQLite refuses to change the journal mode of a
file another connection has open. Nothing here writes.

With one usable CPU, or ``SHAD_SEARCH_THREADS=0``, a job runs inline: a thread would only add its
hand-over.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

__all__ = ["SEARCH_CACHE_KIB", "THREADS_ENV", "close_readers", "connection_for", "run_aside", "threads"]

T = TypeVar("T")
THREADS_ENV = "SHAD_SEARCH_THREADS"
_MAX_THREADS = 4  # concurrent searches beyond this wait for a worker (or run inline, see run_aside)
# A searching connection's page cache (the index's own and each worker's), in KiB. A search reads the
# doclists of its words and the size of every row it scores (fts, names, docs): SQLite's default 2 MB let
# each search of the 100 MB vault read ~1.5 MB through the OS again (~380 reads, 0.4 ms of system time);
# 16 MB: ~80 reads.
SEARCH_CACHE_KIB = 16_384


class _Active(threading.local):
    """The connection this thread's ``IndexDatabase.query`` uses while it runs a job, by index file."""

    path: Path | None = None
    conn: sqlite3.Connection | None = None


ACTIVE = _Active()
_POOL: ThreadPoolExecutor | None = None
_BUSY = 0  # jobs submitted and not yet finished
_STATE = threading.Lock()
_READERS: dict[tuple[int, Path], tuple[sqlite3.Connection, threading.Lock]] = {}
# Connections inherited across a fork are never closed in the child: closing one there could make SQLite
# think it holds the last connection to the file (POSIX locks are not inherited) and checkpoint the WAL.
_INHERITED: list[object] = []


def threads() -> int:
    """How many worker threads searches may use: ``$SHAD_SEARCH_THREADS``, else up to 4 with two usable CPUs
    or more, else none."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            return max(0, min(int(raw), 64))
        except ValueError:
            pass  # an unreadable setting: the default, as for an unset one
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return min(_MAX_THREADS, cpus - 1) if cpus >= 2 else 0


def run_aside(db_path: Path, job: Callable[[], T]) -> Callable[[], T]:
    """Start ``job`` (reading the index at ``db_path``, the index object's own path object) in a worker
    thread; the returned function waits for
    its result (or raises its exception). With no worker free, or none allowed, ``job`` runs here, now."""
    global _POOL, _BUSY
    limit = threads()
    with _STATE:
        if limit == 0 or limit <= _BUSY:
            pool = None
        else:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="shad-search")
            pool = _POOL
            _BUSY += 1
    if pool is None:
        result = job()
        return lambda: result
    try:
        future: Future[T] = pool.submit(_in_worker, db_path, job)
    except RuntimeError:  # the interpreter is shutting down: no new threads
        _finished()
        result = job()
        return lambda: result
    return future.result


def connection_for(db_path: Path) -> sqlite3.Connection | None:
    """The connection ``IndexDatabase.query`` should use on this thread for ``db_path`` (None: its own)."""
    active = ACTIVE
    return active.conn if active.path is db_path else None


def close_readers(db_path: Path) -> None:
    """Close the workers' connections to ``db_path`` (each after the job using it, if any, ends)."""
    with _STATE:
        mine = [(key, value) for key, value in _READERS.items() if key[1] == db_path]
        for key, _ in mine:
            del _READERS[key]
    for _, (conn, lock) in mine:
        with lock:
            conn.close()


def _in_worker(db_path: Path, job: Callable[[], T]) -> T:
    try:
        conn, lock = _reader(db_path)
        with lock:
            ACTIVE.path, ACTIVE.conn = db_path, conn
            try:
                return job()
            finally:
                ACTIVE.path, ACTIVE.conn = None, None
    finally:
        _finished()


def _finished() -> None:
    global _BUSY
    with _STATE:
        _BUSY -= 1


def _reader(db_path: Path) -> tuple[sqlite3.Connection, threading.Lock]:
    key = (threading.get_ident(), db_path)
    with _STATE:
        found = _READERS.get(key)
    if found is not None:
        return found
    # read-only: a worker never writes, and never makes a file where the index was deleted meanwhile
    uri = Path(db_path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=60, isolation_level=None)
    conn.execute("PRAGMA query_only = 1")
    conn.execute(f"PRAGMA cache_size = -{SEARCH_CACHE_KIB}")
    made = (conn, threading.Lock())
    with _STATE:
        _READERS[key] = made
    return made


def _forget_after_fork() -> None:
    """In a forked child no worker thread exists: start afresh, keeping the inherited objects alive."""
    global _POOL, _BUSY, _STATE
    _INHERITED.extend([_POOL, *_READERS.values()])
    _POOL, _BUSY, _STATE = None, 0, threading.Lock()
    _READERS.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
