"""One index file: its tables, connection, reads and generation-stamped write transactions; separate from
the incremental update (``_index``), which decides what to write.

Several objects or processes may update one index at once. Each write transaction checks the rows as they
are (they may have been written meanwhile by another writer), and every transaction that changes rows
bumps the ``generation`` in ``meta``, so that a writer notices that any state it remembers is out of date.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import shad_home
from ..errors import IndexUnavailableError
from ._aside import close_readers, connection_for
from ._links import LINK_SCHEMA, LINK_TABLES, forget_file, index_file
from ._scan import FileEntry

__all__ = [
    "CHUNK_BITS",
    "DOC_COLUMNS",
    "FTS_COLUMNS",
    "NAMES_COLUMNS",
    "IndexDatabase",
    "IndexStats",
    "check_fts5",
    "default_index_path",
    "doc_body",
    "name_key",
]

CHUNK_BITS = 10  # full-text rowid = note id << CHUNK_BITS | passage number
# Column weights for BM25: a query word in the title counts far more than one in the body.
# Two full-text tables: ``fts`` holds passages (a section of a note each: its heading chain and text),
# ``names`` holds one row per note with what names it (title, aliases, tags, all headings).
# ``docs`` holds one row per note, every field of it (names, frontmatter values, the whole indexed text):
# BM25 over whole notes, with weighted fields. It is contentless (the text is in ``fts`` and ``names``
# already); a row is deleted by handing FTS5 the values it was written with, rebuilt from those tables.
# ``keys`` (normalized name, alias or title -> note id) finds the notes a query names; the link graph is
# the resolved ``edges`` (``_links``).
FTS_COLUMNS = ("headings", "body", "heading UNINDEXED")
NAMES_COLUMNS = ("title", "aliases", "tags", "headings", "props")
DOC_COLUMNS = ("title", "aliases", "headings", "props", "body")


def default_index_path(root: str) -> Path:
    """Where the index of the vault at ``root`` lives: under ``$SHAD_HOME/index``, one file per real path."""
    real = os.path.realpath(root)
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(real).name).strip("-")[:40] or "vault"
    digest = hashlib.sha256(real.encode()).hexdigest()[:12]
    return shad_home() / "index" / f"{slug}-{digest}.sqlite"


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, is_note INTEGER NOT NULL,
    size INTEGER, mtime_ns INTEGER, hash TEXT, passages INTEGER, title TEXT, type TEXT, tags TEXT,
    aliases TEXT, frontmatter TEXT, diagnostics TEXT);
CREATE INDEX IF NOT EXISTS files_state ON files(path, id, size, mtime_ns, hash);
CREATE TABLE IF NOT EXISTS note_tags(file_id INTEGER NOT NULL, tag TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS note_tags_tag ON note_tags(tag);
CREATE INDEX IF NOT EXISTS note_tags_file ON note_tags(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5({", ".join(FTS_COLUMNS)},
    tokenize = 'porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS names USING fts5({", ".join(NAMES_COLUMNS)},
    tokenize = 'porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5({", ".join(DOC_COLUMNS)}, content = '',
    tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS keys(key TEXT NOT NULL, file_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS keys_key ON keys(key);
CREATE INDEX IF NOT EXISTS keys_file ON keys(file_id);
{LINK_SCHEMA}"""


# The secondary indexes (every ``CREATE INDEX`` above). A first build of a big vault drops them and
# creates them once at the end: sorting a table once costs less than keeping its B-trees ordered row by
# row. It also turns FTS5's merging of segments off meanwhile and merges each table once at the end
# ('optimize': cheaper than merging level by level, and one segment makes queries faster). An index an
# interrupted build left dropped is created again when the file is next opened; merging is turned back
# on, and the tables merged, by the next update (``finish_killed_build``).
SECONDARY_INDEXES = tuple(
    (m.group(1), m.group(0)) for m in re.finditer(r"CREATE INDEX IF NOT EXISTS (\w+) ON [^;]+", _SCHEMA)
)
LINK_INDEXES = frozenset(name for name, create in SECONDARY_INDEXES if " ON edges(" in create)
FTS_TABLES = ("fts", "names", "docs")
_AUTOMERGE = 4  # FTS5's default


def check_fts5(conn: sqlite3.Connection) -> None:
    """Raise IndexUnavailableError, saying what to do, when this SQLite lacks FTS5."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp._fts5_probe")
    except sqlite3.OperationalError as exc:
        raise IndexUnavailableError(
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search",
            hint="use a Python whose sqlite3 module includes FTS5 (python.org and most Linux builds do)",
        ) from exc


@dataclass
class IndexStats:
    """What one update did."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    touched: int = 0  # mtime changed but content identical
    removed: int = 0
    attachments: int = 0
    attachments_changed: int = 0
    seconds: float = 0.0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed


class IndexDatabase:
    """The SQLite file of one vault's index, opened with its tables in place. Thread-safe."""

    def __init__(self, root: str, db_path: Path | None, schema_version: str) -> None:
        self.root = root
        self.db_path = Path(db_path) if db_path else default_index_path(root)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._counts: dict[tuple[str, int, str], int] = {}
        self._sizes: tuple[int, int] | None = None
        self._generation: str | None = None  # the generation as this object last saw or set it
        self._stale = False  # another writer wrote during this update
        self.conn = sqlite3.connect(self.db_path, check_same_thread=False, timeout=60, isolation_level=None)
        check_fts5(self.conn)
        self._journal_mode("wal", wait=2.0)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self._ensure_schema(schema_version)

    def _ensure_schema(self, version: str) -> None:
        """Create the tables; an index written by another ``version`` is a cache: dropped and rebuilt."""
        with self._lock:
            row = None
            with contextlib.suppress(sqlite3.OperationalError):
                row = self.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is not None and row[0] != version:
                for table in (
                    *LINK_TABLES,
                    "fts_vocab",
                    "docs",
                    "links",
                    "keys",
                    "names",
                    "fts",
                    "note_tags",
                    "files",
                    "meta",
                ):
                    self.conn.execute(f"DROP TABLE IF EXISTS {table}")
            self.conn.executescript(_SCHEMA)
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES('notes', '0')")
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES('passages', '0')")
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES('schema', ?)", (version,))
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES('root', ?)", (os.path.realpath(self.root),))

    def close(self) -> None:
        close_readers(self.db_path)
        with self._lock:
            self.conn.close()

    # --- reading ---------------------------------------------------------------------------------------

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        aside = connection_for(self.db_path)  # a search's job on a worker thread (``_aside``)
        if aside is not None:
            return aside.execute(sql, params).fetchall()
        with self._lock:
            return self.conn.execute(sql, params).fetchall()

    def meta(self, key: str) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def is_empty(self) -> bool:
        return self.meta("last_update") is None

    def passage_count(self) -> int:
        """How many passages are indexed (kept in ``meta`` by each update, cached here)."""
        if self._sizes is None:
            self._sizes = (int(self.meta("notes") or 0), int(self.meta("passages") or 0))
        return self._sizes[1]

    def note_count(self) -> int:
        self.passage_count()
        assert self._sizes is not None
        return self._sizes[0]

    def capped_count(self, match: str, cap: int, table: str = "fts") -> int:
        """How many rows of ``table`` (fts, names or docs) match, counting no further than ``cap``: cheap even
        for common words. Cached until the index changes."""
        key = (match, cap, table)
        cached = self._counts.get(key)
        if cached is None:
            name = table if table in ("names", "docs") else "fts"
            sql = f"SELECT count(*) FROM (SELECT 1 FROM {name} WHERE {name} MATCH ? LIMIT ?)"
            cached = self._counts[key] = self.query(sql, (match, cap))[0][0]
            if len(self._counts) > 50_000:
                self._counts.clear()
        return cached

    def _read_state(self) -> dict[str, tuple[int, int, int, str]]:
        return {
            path: (fid, size, mtime, digest)
            for fid, path, size, mtime, digest in self.query(
                "SELECT id, path, size, mtime_ns, hash FROM files"
            )
        }

    def _drop_indexes(self) -> None:
        """Drop the secondary indexes and stop merging full-text segments, for a first build (see
        ``SECONDARY_INDEXES``)."""
        for name, _create in SECONDARY_INDEXES:
            self.conn.execute(f"DROP INDEX IF EXISTS {name}")
        for table in FTS_TABLES:
            self.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('automerge', 0)")

    def _create_indexes(self, *, links: bool = True) -> None:
        """Undo ``_drop_indexes``: create the indexes, merge each full-text table into one segment.
        ``links=False``: not the indexes of the ``edges`` table (a first build resolves its links before
        creating them, so that each link row is rewritten with no index to keep in step; then
        ``_create_link_indexes``)."""
        for name, create in SECONDARY_INDEXES:
            if links or name not in LINK_INDEXES:
                self.conn.execute(create)
        for table in FTS_TABLES:
            self.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('automerge', ?)", (_AUTOMERGE,))
            self.conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")

    def _create_link_indexes(self) -> None:
        for name, create in SECONDARY_INDEXES:
            if name in LINK_INDEXES:
                self.conn.execute(create)

    def finish_killed_build(self) -> None:
        """A first build killed midway left merging off (and maybe the indexes dropped): undo that. Called
        under the update lock, so never while another process builds."""
        off = " UNION ALL ".join(
            f"SELECT 1 FROM {table}_config WHERE k = 'automerge' AND v = 0" for table in FTS_TABLES
        )
        if self.conn.execute(off).fetchone():
            self._transaction(self._create_indexes, bump=False)

    def _journal_mode(self, mode: str, wait: float = 0.0) -> bool:
        """Switch the index file to journal ``mode``; whether it is in that mode now. Another connection's
        lock can refuse the switch, often at once rather than after the busy timeout: it is retried for
        ``wait`` seconds, then given up. The mode decides speed only, never what is stored, and whichever
        connection next opens the index switches it back to WAL."""
        if mode != "wal":
            close_readers(self.db_path)  # a search's worker connection would refuse the switch
        deadline = time.monotonic() + wait
        while True:
            try:
                return str(self.conn.execute(f"PRAGMA journal_mode={mode}").fetchone()[0]).lower() == mode
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    return False
            time.sleep(0.05)

    def _rows(self, paths: list[str]) -> dict[str, tuple[int, int, int, str]]:
        """What the index holds now for each of ``paths`` (id, size, mtime, hash); paths it lacks are left
        out. Point lookups on the path index: cheap, however big the index."""
        found: dict[str, tuple[int, int, int, str]] = {}
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for fid, path, size, mtime, digest in self.conn.execute(
                f"SELECT id, path, size, mtime_ns, hash FROM files WHERE path IN ({marks})", chunk
            ):
                found[path] = (fid, size, mtime, digest)
        return found

    def _write(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` in one write transaction that bumps the generation if ``fn`` changed any row."""
        self._transaction(fn, bump=True)

    def _transaction(self, fn: Callable[[], object], *, bump: bool) -> None:
        """Run ``fn`` in one write transaction. Every transaction that changes rows bumps the generation
        (in the same commit), so a generation other than the one this object last saw or set means that
        another writer changed rows since: what this update read before writing is then stale."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
            current = row[0] if row else None
            if current != self._generation:
                self._stale = True
            before = self.conn.total_changes
            fn()
            if current is None or (bump and self.conn.total_changes != before):
                current = str(int(current or 0) + 1)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES('generation', ?)", (current,))
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self._generation = current

    def _count(self, notes: int, passages: int) -> None:
        """Keep the note and passage totals in ``meta``, in the same transaction as the change (counting
        the tables instead would scan them all on every update)."""
        for key, delta in (("notes", notes), ("passages", passages)):
            if delta:
                self.conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?", (delta, key)
                )

    def _delete_ids(self, ids: list[int], *, keep_incoming: bool = False) -> None:
        """Drop the rows of files ``ids``; ``keep_incoming``: the same file is written again under its id
        (links that resolve to it stay resolved)."""
        for fid in ids:
            row = self.conn.execute("SELECT is_note, passages FROM files WHERE id=?", (fid,)).fetchone()
            if row is not None and row[0]:
                self._count(-1, -(row[1] or 0))
            if row is not None and row[0]:
                self._delete_doc(fid)
            self.conn.execute("DELETE FROM files WHERE id=?", (fid,))
            self.conn.execute(
                "DELETE FROM fts WHERE rowid >= ? AND rowid < ?", (fid << CHUNK_BITS, (fid + 1) << CHUNK_BITS)
            )
            self.conn.execute("DELETE FROM names WHERE rowid = ?", (fid,))
            self.conn.execute("DELETE FROM note_tags WHERE file_id=?", (fid,))
            self.conn.execute("DELETE FROM keys WHERE file_id=?", (fid,))
            forget_file(self.conn, fid, keep_incoming=keep_incoming)

    def _quick_totals(self, stats: IndexStats) -> None:
        """A quick update looked at the changed files only: count the others from the index."""
        files, attachments = self.query("SELECT count(*), coalesce(sum(is_note = 0), 0) FROM files")[0]
        stats.unchanged = files - stats.added - stats.updated - stats.touched - stats.attachments_changed
        stats.scanned, stats.attachments = files, attachments

    def _delete_paths(self, paths: list[str], stats: IndexStats) -> None:
        """Drop the rows of ``paths`` (files gone from the folder) that the index still holds. The ids are
        looked up afresh: another writer may have removed a row meanwhile, and its id been reused."""
        ids = [row[0] for row in self._rows(paths).values()]
        self._delete_ids(ids)
        stats.removed = len(ids)

    def _upsert_attachments(self, entries: list[FileEntry]) -> None:
        known = self._rows([e.path for e in entries])
        self.conn.executemany(
            "INSERT INTO files(path, is_note, size, mtime_ns, title) VALUES(?, 0, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET size=excluded.size, mtime_ns=excluded.mtime_ns",
            [(e.path, e.size, e.mtime_ns, e.path.rsplit("/", 1)[-1]) for e in entries],
        )
        new = [e.path for e in entries if e.path not in known]
        for path, (fid, *_rest) in self._rows(new).items():
            index_file(self.conn, fid, path, [], [], new=True)

    def _delete_doc(self, fid: int) -> None:
        """Remove note ``fid``'s row from the contentless ``docs`` table: FTS5 needs the values it indexed,
        which are the note's ``names`` row and its passages joined (as ``_insert_doc`` wrote them)."""
        names = self.conn.execute(
            "SELECT title, aliases, headings, props FROM names WHERE rowid = ?", (fid,)
        ).fetchone()
        if names is None:
            return
        bodies = self.conn.execute(
            "SELECT body FROM fts WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
            (fid << CHUNK_BITS, (fid + 1) << CHUNK_BITS),
        ).fetchall()
        self.conn.execute(
            f"INSERT INTO docs(docs, rowid, {', '.join(DOC_COLUMNS)}) VALUES('delete', ?, ?, ?, ?, ?, ?)",
            (fid, *names, doc_body([b for (b,) in bodies])),
        )

    def _insert_doc(self, fid: int, names: tuple[str, ...], bodies: list[str]) -> None:
        """``names``: (title, aliases, tags, headings, props) as written to ``names``."""
        title, aliases, _tags, headings, props = names
        self.conn.execute(
            f"INSERT INTO docs(rowid, {', '.join(DOC_COLUMNS)}) VALUES(?, ?, ?, ?, ?, ?)",
            (fid, title, aliases, headings, props, doc_body(bodies)),
        )


def name_key(name: str) -> str:
    """A note name, alias or link target as one lookup key: its words, lower-cased, ``.md`` left off."""
    name = name.strip()
    if name.lower().endswith(".md"):
        name = name[:-3]
    return " ".join(_KEY_WORDS.findall(name.lower()))


_KEY_WORDS = re.compile(r"\w+", re.U)


def doc_body(bodies: list[str]) -> str:
    """A note's whole indexed text: its passages joined."""
    return "\n".join(bodies)
