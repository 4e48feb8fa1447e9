"""One update of an index at a time, across processes: an advisory file lock beside the index file.

SQLite alone keeps every transaction whole, but several processes building one fresh index at once would
each parse the whole vault and race to write it. With the lock, the first builds and the others wait,
then find nothing left to do. Readers never take it. Where ``fcntl`` is missing (Windows) the lock is a
no-op and the transactions alone keep the index whole, as before.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl

    _HAVE_FCNTL = True
except ImportError:  # pragma: no cover - Windows
    _HAVE_FCNTL = False

__all__ = ["build_lock"]


@contextlib.contextmanager
def build_lock(db_path: Path) -> Iterator[None]:
    """Hold the update lock of the index at ``db_path`` (waiting for another holder to finish)."""
    if not _HAVE_FCNTL:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(f"{db_path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
