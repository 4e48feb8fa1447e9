"""The shadow index (C2): which sources were ingested into which vault, their snapshots and the latest
one, each source's update policy and pinned revision. SQLite at ``$SHAD_HOME/sources.sqlite``, outside
every vault (no sync conflicts, no vault churn); the snapshots themselves are notes in the vault."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..config import shad_home
from ..errors import UsageError

__all__ = ["POLICIES", "ShadowIndex", "SnapshotRecord", "SourceRecord", "slugify"]

POLICIES = ("manual", "notify", "auto")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    type TEXT NOT NULL,
    domain TEXT NOT NULL,
    vault TEXT NOT NULL,
    policy TEXT NOT NULL DEFAULT 'manual' CHECK (policy IN ('manual', 'notify', 'auto')),
    pinned_revision TEXT,
    preset TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (url, vault)
);
CREATE TABLE IF NOT EXISTS snapshots (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL REFERENCES sources(id),
    revision TEXT NOT NULL,
    path TEXT NOT NULL,
    created TEXT NOT NULL,
    files INTEGER NOT NULL,
    preset TEXT NOT NULL,
    latest INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS snapshots_by_source ON snapshots (source_id, created);
"""


def slugify(text: str, fallback: str = "source") -> str:
    """``My Repo.v2`` -> ``my-repo-v2``: lowercase letters, digits and single dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:60].strip("-") or fallback


@dataclass
class SnapshotRecord:
    id: str
    source_id: str
    revision: str
    path: str  # vault-relative folder of the snapshot
    created: str  # ISO UTC
    files: int
    preset: str
    latest: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SourceRecord:
    id: str
    url: str
    type: str  # "folder" | "git"
    domain: str
    vault: str  # absolute path of the vault the snapshots are in
    policy: str  # one of POLICIES
    pinned_revision: str | None
    preset: str  # the preset of the last ingest (``update`` uses it again)
    created: str
    snapshots: list[SnapshotRecord] = field(default_factory=list)  # oldest first

    @property
    def latest(self) -> SnapshotRecord | None:
        return next((s for s in self.snapshots if s.latest), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["snapshots"] = [s.to_dict() for s in self.snapshots]
        latest = self.latest
        data["latest"] = latest.id if latest else None
        return data


class ShadowIndex:
    """``ShadowIndex()`` opens ``$SHAD_HOME/sources.sqlite``. Reading never creates the file: an index
    that does not exist yet simply holds no sources."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else shad_home() / "sources.sqlite"

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection | None]:
        if not write and not self.path.exists():
            yield None
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.executescript(_SCHEMA)
            with conn:
                yield conn
        finally:
            conn.close()

    # --- reading ---------------------------------------------------------------------------------------

    def sources(self) -> list[SourceRecord]:
        """Every source with all its snapshots, in the order they were first ingested."""
        with self._connect(write=False) as conn:
            if conn is None:
                return []
            rows = conn.execute("SELECT * FROM sources ORDER BY created, id").fetchall()
            return [self._with_snapshots(conn, row) for row in rows]

    def source(self, source_id: str) -> SourceRecord:
        with self._connect(write=False) as conn:
            row = (
                conn.execute("SELECT * FROM sources WHERE id = ?", (source_id,)).fetchone() if conn else None
            )
            if conn is None or row is None:
                known = ", ".join(s.id for s in self.sources()) or "none yet"
                raise UsageError(f"no source {source_id!r}", hint=f"sources: {known} (shad sources ls)")
            return self._with_snapshots(conn, row)

    def find_source(self, url: str, vault: str) -> SourceRecord | None:
        with self._connect(write=False) as conn:
            if conn is None:
                return None
            row = conn.execute("SELECT * FROM sources WHERE url = ? AND vault = ?", (url, vault)).fetchone()
            return self._with_snapshots(conn, row) if row else None

    def snapshot(self, snapshot_id: str) -> tuple[SourceRecord, SnapshotRecord]:
        with self._connect(write=False) as conn:
            row = (
                conn.execute("SELECT source_id FROM snapshots WHERE id = ?", (snapshot_id,)).fetchone()
                if conn
                else None
            )
        if row is None:
            raise UsageError(
                f"no snapshot {snapshot_id!r}", hint="snapshot ids are listed by shad sources ls"
            )
        source = self.source(row["source_id"])
        return source, next(s for s in source.snapshots if s.id == snapshot_id)

    def snapshot_ids(self) -> set[str]:
        with self._connect(write=False) as conn:
            return {r["id"] for r in conn.execute("SELECT id FROM snapshots")} if conn else set()

    def source_ids(self) -> set[str]:
        with self._connect(write=False) as conn:
            return {r["id"] for r in conn.execute("SELECT id FROM sources")} if conn else set()

    @staticmethod
    def _with_snapshots(conn: sqlite3.Connection, row: sqlite3.Row) -> SourceRecord:
        snaps = conn.execute(
            "SELECT * FROM snapshots WHERE source_id = ? ORDER BY created, rowid", (row["id"],)
        ).fetchall()
        return SourceRecord(
            id=row["id"],
            url=row["url"],
            type=row["type"],
            domain=row["domain"],
            vault=row["vault"],
            policy=row["policy"],
            pinned_revision=row["pinned_revision"],
            preset=row["preset"],
            created=row["created"],
            snapshots=[
                SnapshotRecord(
                    id=s["id"],
                    source_id=s["source_id"],
                    revision=s["revision"],
                    path=s["path"],
                    created=s["created"],
                    files=s["files"],
                    preset=s["preset"],
                    latest=bool(s["latest"]),
                )
                for s in snaps
            ],
        )

    def export(self) -> dict[str, Any]:
        """The whole index as plain JSON-ready data."""
        return {"version": 1, "index": str(self.path), "sources": [s.to_dict() for s in self.sources()]}

    # --- writing ---------------------------------------------------------------------------------------

    def new_source_id(self, name: str, url: str, vault: str) -> str:
        """A stable id for (url, vault): the existing one, else a slug of ``name`` not taken yet."""
        existing = self.find_source(url, vault)
        if existing is not None:
            return existing.id
        base = slugify(name)
        taken = self.source_ids()
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def record(self, source: SourceRecord, snapshot: SnapshotRecord) -> None:
        """Add (or refresh) the source and add the snapshot as its latest."""
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute(
                "INSERT INTO sources (id, url, type, domain, vault, policy, pinned_revision, preset, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET preset = excluded.preset, type = excluded.type",
                (
                    source.id,
                    source.url,
                    source.type,
                    source.domain,
                    source.vault,
                    source.policy,
                    source.pinned_revision,
                    source.preset,
                    source.created,
                ),
            )
            conn.execute("UPDATE snapshots SET latest = 0 WHERE source_id = ?", (source.id,))
            conn.execute(
                "INSERT INTO snapshots (id, source_id, revision, path, created, files, preset, latest)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                (
                    snapshot.id,
                    source.id,
                    snapshot.revision,
                    snapshot.path,
                    snapshot.created,
                    snapshot.files,
                    snapshot.preset,
                ),
            )

    def set_policy(self, source_id: str, policy: str) -> SourceRecord:
        if policy not in POLICIES:
            raise UsageError(f"unknown policy {policy!r}", hint=f"policies: {', '.join(POLICIES)}")
        self.source(source_id)
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute("UPDATE sources SET policy = ? WHERE id = ?", (policy, source_id))
        return self.source(source_id)

    def pin(self, source_id: str, revision: str | None) -> SourceRecord:
        """Pin ``revision`` (None: unpin): ingest and update keep the source at that revision."""
        self.source(source_id)
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute("UPDATE sources SET pinned_revision = ? WHERE id = ?", (revision, source_id))
        return self.source(source_id)
