"""The cache of node results and the token-budget ledger, in one store shared by every process.

SQLite (one file under ``$SHAD_HOME``) is the default; Redis is used when a ``redis://`` URL is given
(``REDIS_URL`` or ``--redis``). Both implement ``Store`` and pass one shared test suite; both are also
an ``engine.budget.Ledger``.
"""

from __future__ import annotations

from ._base import CacheEntry, Store, StoreUnavailableError
from ._redis import RedisStore
from ._registry import open_store
from ._sqlite import SQLiteStore

__all__ = ["CacheEntry", "RedisStore", "SQLiteStore", "Store", "StoreUnavailableError", "open_store"]
