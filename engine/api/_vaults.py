"""The server's vaults, opened once and kept: search and status as ``shad vault search/status --json``
give them, the index brought up to date at most every ``REFRESH_EVERY`` seconds."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..vault import Vault, VaultSet
from ._security import Settings

__all__ = ["REFRESH_EVERY", "VaultPool"]

REFRESH_EVERY = 2.0  # seconds between re-scans of a vault's folder


class VaultPool:
    """One ``VaultSet`` per combination of the server's vaults a request names."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._sets: dict[tuple[Path, ...], tuple[VaultSet, threading.Lock]] = {}
        self._refreshed: dict[tuple[Path, ...], float] = {}
        self._lock = threading.Lock()

    def _open(self, roots: tuple[Path, ...]) -> tuple[VaultSet, threading.Lock]:
        with self._lock:
            if roots not in self._sets:
                self._sets[roots] = (VaultSet([Vault(r) for r in roots]), threading.Lock())
            vs, lock = self._sets[roots]
        with lock:
            now = time.monotonic()
            if now - self._refreshed.get(roots, -REFRESH_EVERY) >= REFRESH_EVERY:
                vs.refresh()
                self._refreshed[roots] = time.monotonic()
                for v in vs:
                    if not v.list_notes():
                        raise UsageError(f"vault {v.id!r} has no notes", hint="add .md files to it")
        return vs, lock

    def search(
        self,
        roots: tuple[Path, ...],
        query: str,
        *,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tags: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        vs, lock = self._open(roots)
        with lock:
            hits = vs.search(query, limit=limit, path=path, type=type, tags=tags or None)
        return [h.to_dict() for h in hits]

    def status(self, roots: tuple[Path, ...]) -> list[dict[str, Any]]:
        vs, lock = self._open(roots)
        with lock:
            return [v.status() for v in vs]
