"""The default store: one SQLite file (WAL) that several processes on one machine can share.

Read-modify-write happens inside ``BEGIN IMMEDIATE`` (the write lock is taken before the read), so ledger
updates are exact under concurrency; ``busy_timeout`` makes a contended process wait instead of failing.
One connection per store object, guarded by a lock: the engine calls from its event loop thread and from
worker threads (``asyncio.to_thread``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._base import (
    CacheEntry,
    StoreUnavailableError,
    check_clear,
    check_tier,
    check_tokens,
    check_ttl,
    encode_value,
    source_bounds,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    run_id TEXT PRIMARY KEY, total INTEGER NOT NULL DEFAULT 0, spent INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS cache (
    tier TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL, run_id TEXT, sources TEXT NOT NULL,
    PRIMARY KEY (tier, key)
);
CREATE INDEX IF NOT EXISTS cache_run ON cache (run_id);
CREATE INDEX IF NOT EXISTS cache_expires ON cache (expires_at);
CREATE TABLE IF NOT EXISTS cache_sources (
    tier TEXT NOT NULL, key TEXT NOT NULL, source TEXT NOT NULL,
    PRIMARY KEY (tier, key, source),
    FOREIGN KEY (tier, key) REFERENCES cache (tier, key) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS cache_sources_source ON cache_sources (source);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_BUMP = "INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1"
_HINT = "check that the folder exists and is writable, or set SHAD_STORE to another file"


class SQLiteStore:
    """Cache and ledger in one SQLite file (default ``$SHAD_HOME/store.sqlite3``)."""

    name = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().absolute()
        self.url = f"sqlite://{self.path.as_posix()}"
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if self.path.is_dir():
            raise UsageError(
                f"the store path {self.path} is a folder", hint="give a file path, e.g. store.sqlite3"
            )
        with self._errors("open"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)  # fmt: skip
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _wal(conn)
                conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: crash-safe, no fsync per commit
                conn.execute("PRAGMA foreign_keys = ON")
                self._migrate(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # --- plumbing ------------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot {what} the SQLite store at {self.path}: {exc}", hint=_HINT, url=self.url
            ) from exc

    @contextmanager
    def _read(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors(what):
            if self._conn is None:
                raise StoreUnavailableError(f"the store at {self.path} is closed", hint="open it again")
            yield self._conn

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first read on."""
        with self._read(what) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # One statement at a time: executescript() would commit the transaction that guards the check.
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreUnavailableError(
                    f"the store at {self.path} has schema version {row[0]}; this Shad reads version "
                    f"{SCHEMA_VERSION}",
                    hint="upgrade Shad, or set SHAD_STORE to another file",
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # --- ledger --------------------------------------------------------------------------------------

    def open(self, run_id: str, total: int) -> None:
        with self._write("open a budget in") as conn:
            conn.execute(
                "INSERT INTO ledger (run_id, total, spent) VALUES (?, ?, 0) "
                "ON CONFLICT (run_id) DO UPDATE SET total = excluded.total",
                (run_id, int(total)),
            )

    def charge(self, run_id: str, tokens: int) -> int:
        count = max(0, int(tokens))  # usage is a fact: never refused, never negative
        with self._write("charge tokens in") as conn:
            row = conn.execute(
                "INSERT INTO ledger (run_id, total, spent) VALUES (?, 0, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET spent = spent + excluded.spent RETURNING total - spent",
                (run_id, count),
            ).fetchone()
        return int(row[0])

    def reserve(self, run_id: str, tokens: int) -> bool:
        count = check_tokens(tokens, "reserve")
        with self._write("reserve tokens in") as conn:
            row = conn.execute("SELECT total - spent FROM ledger WHERE run_id = ?", (run_id,)).fetchone()
            if (int(row[0]) if row else 0) < count:
                return False
            if count:
                conn.execute("UPDATE ledger SET spent = spent + ? WHERE run_id = ?", (count, run_id))
        return True

    def add(self, run_id: str, tokens: int) -> int:
        count = check_tokens(tokens, "add")
        with self._write("add tokens in") as conn:
            row = conn.execute(
                "INSERT INTO ledger (run_id, total, spent) VALUES (?, ?, 0) "
                "ON CONFLICT (run_id) DO UPDATE SET total = total + excluded.total RETURNING total - spent",
                (run_id, count),
            ).fetchone()
        return int(row[0])

    def remaining(self, run_id: str) -> int:
        with self._read("read the budget in") as conn:
            row = conn.execute("SELECT total - spent FROM ledger WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0]) if row else 0

    def spent(self, run_id: str) -> int:
        with self._read("read the budget in") as conn:
            row = conn.execute("SELECT spent FROM ledger WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0]) if row else 0

    # --- cache ---------------------------------------------------------------------------------------

    def cache_get(self, key: str, *, tier: str = "main") -> CacheEntry | None:
        check_tier(tier)
        now = time.time()
        with self._read("read the cache in") as conn:
            row = conn.execute(
                "SELECT value, fingerprint, created_at, expires_at, run_id, sources FROM cache "
                "WHERE tier = ? AND key = ?",
                (tier, key),
            ).fetchone()
            live = row is not None and row[3] > now
            conn.execute("BEGIN IMMEDIATE")
            try:
                if row is not None and not live:  # only if still expired: a concurrent overwrite stays
                    conn.execute(
                        "DELETE FROM cache WHERE tier = ? AND key = ? AND expires_at <= ?", (tier, key, now)
                    )
                conn.execute(_BUMP, ("hits" if live else "misses",))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        if not live or row is None:
            return None
        return CacheEntry(
            key, json.loads(row[0]), row[1], tier, row[2], row[3], row[4], tuple(json.loads(row[5]))
        )

    def cache_put(
        self,
        key: str,
        value: dict[str, Any],
        *,
        fingerprint: str,
        ttl: float,
        tier: str = "main",
        run_id: str | None = None,
        sources: Sequence[str] = (),
    ) -> None:
        check_tier(tier)
        seconds = check_ttl(ttl)
        data = encode_value(value)
        paths = list(dict.fromkeys(str(s) for s in sources))
        now = time.time()
        with self._write("write the cache in") as conn:
            conn.execute("DELETE FROM cache WHERE tier = ? AND key = ?", (tier, key))
            conn.execute(
                "INSERT INTO cache (tier, key, value, fingerprint, created_at, expires_at, run_id, sources) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (tier, key, data, fingerprint, now, now + seconds, run_id, json.dumps(paths)),
            )
            conn.executemany(
                "INSERT INTO cache_sources (tier, key, source) VALUES (?, ?, ?)",
                [(tier, key, p) for p in paths],
            )

    def cache_promote(self, key: str, *, ttl: float) -> bool:
        seconds = check_ttl(ttl)
        now = time.time()
        with self._write("promote in the cache of") as conn:
            found = conn.execute(
                "SELECT 1 FROM cache WHERE tier = 'staging' AND key = ? AND expires_at > ?", (key, now)
            ).fetchone()
            if found is None:
                return False
            conn.execute("DELETE FROM cache WHERE tier = 'main' AND key = ?", (key,))
            # A copy under the main tier, then the staging row goes (its sources with it, by cascade).
            conn.execute(
                "INSERT INTO cache (tier, key, value, fingerprint, created_at, expires_at, run_id, sources) "
                "SELECT 'main', key, value, fingerprint, created_at, ?, run_id, sources FROM cache "
                "WHERE tier = 'staging' AND key = ?",
                (now + seconds, key),
            )
            conn.execute(
                "INSERT INTO cache_sources (tier, key, source) SELECT 'main', key, source FROM cache_sources "
                "WHERE tier = 'staging' AND key = ?",
                (key,),
            )
            conn.execute("DELETE FROM cache WHERE tier = 'staging' AND key = ?", (key,))
        return True

    def cache_clear(self, scope: str, *, run_id: str | None = None, source: str | None = None) -> int:
        path = check_clear(scope, run_id, source)
        with self._write("clear the cache in") as conn:
            if scope == "run":
                cursor = conn.execute("DELETE FROM cache WHERE run_id = ?", (run_id,))
            elif scope == "source" and path is not None:
                exact, low, high = source_bounds(path)
                cursor = conn.execute(
                    "DELETE FROM cache WHERE (tier, key) IN (SELECT tier, key FROM cache_sources "
                    "WHERE source = ? OR (source >= ? AND source < ?))",
                    (exact, low, high),
                )
            else:
                cursor = conn.execute("DELETE FROM cache")
            return int(cursor.rowcount)

    def cache_stats(self) -> dict[str, Any]:
        now = time.time()
        with self._read("read the cache stats of") as conn:
            entries = dict.fromkeys(("main", "staging"), 0)
            for tier, count in conn.execute(
                "SELECT tier, count(*) FROM cache WHERE expires_at > ? GROUP BY tier", (now,)
            ):
                entries[tier] = int(count)
            expired, size = conn.execute(
                "SELECT coalesce(sum(expires_at <= ?), 0), "
                "coalesce(sum(length(key) + length(value) + length(fingerprint) + length(sources)), 0) "
                "FROM cache",
                (now,),
            ).fetchone()
            counters = dict(conn.execute("SELECT name, value FROM counters").fetchall())
        return {
            "store": self.name,
            "url": self.url,
            "entries": entries,
            "expired": int(expired),
            "bytes": int(size),
            "hits": int(counters.get("hits", 0)),
            "misses": int(counters.get("misses", 0)),
        }


def _wal(conn: sqlite3.Connection, seconds: float = 30.0) -> None:
    """Switch to WAL. Several processes opening a brand-new file at once can be told "database is
    locked" (the switch needs the file to itself, and SQLite's busy handler does not always wait for
    it): try again for a while rather than fail the run."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
