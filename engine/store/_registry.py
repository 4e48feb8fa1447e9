"""Which store a URL names: a small registry of URL schemes, and ``open_store`` with its defaults."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..config import shad_home
from ..errors import UsageError
from ._base import Store
from ._redis import RedisStore
from ._sqlite import SQLiteStore

__all__ = ["StoreRegistry", "open_store", "registry"]

StoreFactory = Callable[[str], Store]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class StoreRegistry:
    """URL scheme -> a function that opens that kind of store from the whole URL."""

    def __init__(self) -> None:
        self._factories: dict[str, StoreFactory] = {}

    def register(self, scheme: str, factory: StoreFactory) -> None:
        self._factories[scheme.lower()] = factory

    def get(self, scheme: str) -> StoreFactory:
        try:
            return self._factories[scheme.lower()]
        except KeyError:
            known = ", ".join(f"{s}://" for s in sorted(self._factories))
            raise UsageError(
                f"unknown store URL scheme {scheme!r}",
                hint=f"use one of {known}, or a plain file path for a SQLite store",
            ) from None

    def open(self, url: str) -> Store:
        """A ``scheme://`` URL goes to its factory; anything else is a SQLite file path."""
        match = _SCHEME.match(url)
        if match is None:
            return SQLiteStore(url)
        return self.get(match[1])(url)


def _sqlite_url(url: str) -> Store:
    path = url.split("://", 1)[1]
    if not path.startswith("/"):
        raise UsageError(
            f"a SQLite store URL needs an absolute path, not {url!r}",
            hint="write sqlite:///absolute/path/store.sqlite3, or give a plain file path",
        )
    return SQLiteStore(path)


registry = StoreRegistry()
registry.register("sqlite", _sqlite_url)
for _scheme in ("redis", "rediss", "unix"):
    registry.register(_scheme, RedisStore)


def open_store(url: str | None = None) -> Store:
    """The store ``url`` names; without one, ``$REDIS_URL``; without that, the SQLite file
    ``$SHAD_HOME/store.sqlite3``. Raises ``UsageError`` for an unknown scheme and
    ``StoreUnavailableError`` when the store cannot be reached or written."""
    chosen = url or os.environ.get("REDIS_URL") or None
    if chosen is None:
        return SQLiteStore(shad_home() / "store.sqlite3")
    return registry.open(chosen)
