"""Several files written at once, each atomic and durable, with one wait for the disk.

Each written by ``engine.fs.atomic_write`` (temp file, fsync, rename) in threads side by side, a run's
final files were encoded in those threads at once (fighting over the GIL), and the manifest that says
they are complete, written after them, waited for the disk a second time (~7 ms a fsync on a busy
disk). Here the files are encoded by the caller, every file's bytes go to its temp file, all the fsyncs
(and any ``alongside`` write that makes its own file, started with ``submit``) run side by side, then
the files are renamed into place, ``last`` after every other one is there. A reader, or a process
killed at any point, sees each file whole (old or new), and ``last`` only once every other file is in
place and on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["submit", "to_disk_thread", "write_together"]

T = TypeVar("T")
_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _disk_pool() -> ThreadPoolExecutor:
    """Threads that wait for the disk, made once per process (a pool made for each run's end cost
    thread starts); a forked child makes its own (the parent's threads are not in it)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="shad-disk"))
        return _pool[1]


def submit(write: Callable[[], object]) -> Future[Any]:
    """Start a write that makes its own file on the threads that wait for the disk (``alongside``)."""
    return _disk_pool().submit(write)


async def to_disk_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread`` on these threads, which outlive an event loop: a run's start waits on
    several things at once, and a new loop's default executor (a run in its own ``asyncio.run``: the
    CLI, ``shad.run`` in a notebook, a batch row) started a thread for each, waiting for every start."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(_disk_pool(), call)


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_together(
    folder: Path,
    texts: Sequence[tuple[str, str]],
    last: tuple[str, str],
    alongside: Sequence[Future[Any]] = (),
    before_rename: Callable[[], object] | None = None,
) -> None:
    """Write ``texts`` and then ``last`` (``(path relative to folder, text)``) as described above.
    ``before_rename`` runs once the files are on disk, before the first is renamed (waiting there for
    an older write of one of them, its fsync overlapping these). A file whose write failed is left as
    it was, and ``last`` is then not written; the first error is raised once everything else is done."""
    temps: list[tuple[int, str, Path]] = []
    left: set[str] = set()  # temp files not renamed (yet)
    errors: list[BaseException] = []
    try:
        for rel, text in [*texts, last]:
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((fd, tmp, path))
            left.add(tmp)
            _write_fd(fd, text.encode("utf-8"))
        pool = _disk_pool()
        synced: list[Future[Any]] = [pool.submit(os.fsync, fd) for fd, _, _ in temps]
        every: list[Future[Any]] = synced + list(alongside)
        if before_rename is not None:
            every.append(pool.submit(before_rename))
        wait(every)
        errors += [e for e in (f.exception() for f in every) if e is not None]
        _close(temps)  # before the renames: a file still open cannot be replaced on Windows
        for (_, tmp, path), future in zip(temps, synced):
            if future.exception() is None and (path != temps[-1][2] or not errors):
                # ``last`` only when every other file is in place and on disk: it says they are.
                os.replace(tmp, path)
                left.discard(tmp)
    except BaseException as exc:
        errors.insert(0, exc)
    finally:
        _close(temps)
        for tmp in left:  # a file that failed leaves no temp file behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    if errors:
        raise errors[0]


def _close(temps: list[tuple[int, str, Path]]) -> None:
    for i, (fd, tmp, path) in enumerate(temps):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            temps[i] = (-1, tmp, path)
