"""The persistent, incremental search index of one vault: SQLite + FTS5, kept under ``$SHAD_HOME``.

Crash safety comes from SQLite transactions: notes are written in batches, each batch commits the file
row and its full-text row together, so a killed indexer leaves every committed note searchable and the
next update simply redoes the rest. Change detection is size/mtime first, content hash to confirm.

Several objects or processes may update one index at once. What changed is decided from the file state
read before writing, but each write transaction checks it against the rows as they are; the tables,
reads and generation-stamped transactions are in ``_index_db``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from ._index_db import (
    CHUNK_BITS,
    DOC_COLUMNS,
    FTS_COLUMNS,
    NAMES_COLUMNS,
    IndexDatabase,
    IndexStats,
    default_index_path,
    doc_body,
    name_key,
)
from ._index_db import check_fts5 as _check_fts5  # noqa: F401 (the tests reach it here)
from ._links import LinkRow, aliases_of, index_file, index_new_files, link_rows, resolve_pending
from ._lock import build_lock
from ._parse import note_type, parse_for_index, read_file
from ._refresh import quick_scan
from ._scan import FileEntry, ScanResult, scan_vault, stream_vault

__all__ = [
    "CHUNK_BITS",
    "FTS_COLUMNS",
    "NAMES_COLUMNS",
    "SCHEMA_VERSION",
    "IndexStats",
    "VaultIndex",
    "default_index_path",
]

# 8: frontmatter NaN/infinity is stored as text (7 wrote it as JSON that SQLite rejects): rebuild once.
# 9: whole-note rows (``docs``), frontmatter values in ``names``, ``links`` and ``keys`` for the graph.
# 10: links resolved at index time (``edges``, ``lookup``, ``dirty``); headings, blocks and links JSON
#     no longer kept per file (read from the note when asked).
# 11: no name-matched ``links`` table: ranking's graph neighbours are the resolved ``edges``.
# 12: a note's properties (frontmatter) lead its first passage.
# 13: what the parse writes changed without a bump (flags read as true/false and left out, a property the
#     body says left out, hand-read frontmatter): indexes from 12 kept "publish: true" in first passages.
#     Any change to what a note is parsed into bumps this.
# 14: HTML comments hold no heading and are not indexed (obsidian-hub's template placeholders).
# 15: image addresses (the alt text stays) and HTML tags (their content stays) are not indexed.
SCHEMA_VERSION = "15"
_PROPS_CHARS = 2000  # frontmatter values indexed per note, at most
_NOT_PROPS = frozenset({"aliases", "alias", "cssclasses", "cssclass", "position"})
_BATCH = 1000
_REMEMBER_REREAD = 5000  # after writing more files than this, the state is not kept in memory
_PARALLEL_THRESHOLD = 1500
_WINDOW = 2000  # notes handed to the parsing processes at a time

ProgressFn = Callable[[int, int], None]


class VaultIndex(IndexDatabase):
    """One vault's index database. Thread-safe; cheap to open (nothing is loaded until asked)."""

    def __init__(self, root: str, db_path: Path | None = None) -> None:
        self._state: dict[str, tuple[int, int, int, str]] | None = None  # path -> (id, size, mtime, hash)
        self._state_generation: str | None = None
        # During a first build (under the update lock, into an index with no files) no link is resolved
        # until the end: nothing written meanwhile can make a resolved link need resolving again.
        self._links_all_pending = False
        super().__init__(root, db_path, SCHEMA_VERSION)

    def content_hashes(self, paths: list[str]) -> dict[str, str]:
        """The indexed content hash (sha256) of each of ``paths`` that the index holds; a path it does not
        hold (deleted, never indexed) is left out. What caches fingerprint a node's notes with."""
        state = (
            self._state
            if self._state is not None and self.meta("generation") == self._state_generation
            else None
        )
        if state is not None:
            return {p: state[p][3] for p in paths if p in state}
        found: dict[str, str] = {}
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self.query(f"SELECT path, hash FROM files WHERE path IN ({marks})", chunk))
        return found

    # --- updating --------------------------------------------------------------------------------------

    def update(
        self,
        progress: ProgressFn | None = None,
        scan: ScanResult | None = None,
        *,
        keep: Callable[[str], bool] | None = None,
        scope: str = "all",
        full: bool = False,
    ) -> IndexStats:
        """Bring the index in line with the folder; only what changed is read and parsed. ``keep``: which
        vault paths to index (all by default), named by ``scope`` (an update with another scope walks the
        whole vault). Without ``scan`` and unless ``full``, only what changed
        since the last scan is looked at (``_refresh``). One update of an index at a time, across
        processes: the others wait for it (a file lock), then find its work done."""
        with build_lock(self.db_path):
            self.finish_killed_build()
            full = full or self.meta("scope") not in (None, scope)
            return self._update(progress, scan, keep or _everything, full, scope)

    def _update(
        self,
        progress: ProgressFn | None,
        scan: ScanResult | None,
        keep: Callable[[str], bool],
        full: bool,
        scope: str,
    ) -> IndexStats:
        started = time.perf_counter()
        scan_started = time.time()
        # Read before the file state, so that a write in between makes it look stale, never current.
        generation = self.meta("generation")
        self._generation, self._stale = generation, False
        quick = None if scan is not None or full else quick_scan(self, keep)
        if quick is None and scan is None and not self.query("SELECT 1 FROM files LIMIT 1"):
            return self._first_build(progress, keep, scope, started, scan_started)
        if quick is not None:
            scan_started = quick.started
            stored = self._rows(list(quick.entries))
            scan = ScanResult(quick.entries, quick.skipped)
        elif self._state is not None and generation == self._state_generation:
            # Nothing else wrote to the index since this object last did: what it holds is known.
            stored = self._state
            scan = scan or scan_vault(self.root)
        else:
            with ThreadPoolExecutor(max_workers=1) as pool:
                # The folder walk and reading what the index holds overlap (both mostly wait on the OS).
                walk = pool.submit(scan_vault, self.root) if scan is None else None
                stored = self._read_state()
                scan = walk.result() if walk is not None else scan
        assert scan is not None
        if quick is None and keep is not _everything:
            scan = ScanResult({p: e for p, e in scan.files.items() if keep(p)}, scan.skipped)
        stats = IndexStats(scanned=len(scan.files), skipped=scan.skipped)
        removed = sorted(set(quick.removed)) if quick else sorted(stored.keys() - scan.files.keys())
        changed: list[tuple[FileEntry, str | None]] = []
        attachments: list[FileEntry] = []
        for path, entry in scan.files.items():
            old = stored.get(path)
            if old is not None and old[1] == entry.size and old[2] == entry.mtime_ns:
                stats.unchanged += 1
            elif entry.is_note:
                changed.append((entry, old[3] if old else None))
            else:
                attachments.append(entry)
        stats.attachments = sum(1 for e in scan.files.values() if not e.is_note)
        total = len(changed)
        if progress:
            progress(0, total)
        with self._lock:
            if removed:
                self._write(lambda: self._delete_paths(removed, stats))
            stats.attachments_changed = len(attachments)
            if attachments:
                self._write(lambda: self._upsert_attachments(attachments))
            batch: list[_Parsed] = []
            done = 0
            # A first build appends hundreds of MB: WAL would write every page twice (log, then
            # checkpoint). A rollback journal is as crash-safe and writes new pages once. (SQLite refuses
            # the switch while another connection has the index open: then the build stays in WAL.)
            bulk = (
                not quick
                and not stored
                and len(changed) >= _PARALLEL_THRESHOLD
                and self._journal_mode("delete")
            )
            jobs = ((self.root, entry, old) for entry, old in changed)
            for item in _parse_all(jobs, len(changed) >= _PARALLEL_THRESHOLD):
                batch.append(item)
                if len(batch) >= _BATCH:
                    done += self._commit_batch(batch, stats)
                    batch = []
                    if progress:
                        progress(done, total)
            if batch:
                done += self._commit_batch(batch, stats)
            if bulk:
                self._journal_mode("wal", wait=30.0)
            if progress:
                progress(done, total)
            written = [*removed, *(e.path for e, _ in changed), *(e.path for e in attachments)]
            self._transaction(
                lambda: self._finish_update(scan_started, quick is None, stats, scope), bump=False
            )
            if stats.changed or self._stale:
                self._counts.clear()
                self._sizes = None
            if quick is None:
                self._remember(stored, written)
            else:  # only the changed part was read: the whole state is not known here
                self._state, self._state_generation = None, None
                self._quick_totals(stats)
        stats.seconds = time.perf_counter() - started
        return stats

    def _first_build(
        self,
        progress: ProgressFn | None,
        keep: Callable[[str], bool],
        scope: str,
        started: float,
        when: float,
    ) -> IndexStats:
        """An update of an empty index: the walk, parsing and writing stream, in windows, so that memory
        stays flat however big the vault (no list of every file is held). The total reported to
        ``progress`` is exact for a vault smaller than one window, else the notes found so far."""
        stats = IndexStats()
        skipped: list[tuple[str, str]] = []
        attachments: list[FileEntry] = []
        found = 0  # notes found by the walk so far

        def flush_attachments() -> None:
            if attachments:
                self._write(lambda: self._upsert_attachments(attachments))
                attachments.clear()

        def jobs() -> Iterator[tuple[str, FileEntry, str | None]]:
            nonlocal found
            for entry in stream_vault(self.root, skipped):
                if not keep(entry.path):
                    continue
                stats.scanned += 1
                if entry.is_note:
                    found += 1
                    yield (self.root, entry, None)
                    continue
                stats.attachments += 1
                attachments.append(entry)
                if len(attachments) >= _BATCH:
                    flush_attachments()

        with self._lock:
            walk = jobs()
            first = list(itertools.islice(walk, _PARALLEL_THRESHOLD))
            parallel = len(first) >= _PARALLEL_THRESHOLD
            # A first build appends hundreds of MB: WAL would write every page twice (log, then
            # checkpoint). A rollback journal is as crash-safe and writes new pages once. (SQLite refuses
            # the switch while another connection has the index open: then the build stays in WAL.)
            bulk = parallel and self._journal_mode("delete")
            if progress:
                progress(0, found)
            batch: list[_Parsed] = []
            done = 0
            if parallel:
                self._transaction(self._drop_indexes, bump=False)
            self._links_all_pending = True
            try:
                for item in _parse_all(itertools.chain(first, walk), parallel):
                    batch.append(item)
                    if len(batch) >= _BATCH:
                        done += self._commit_batch(batch, stats)
                        batch = []
                        if progress:
                            progress(done, found)
                if batch:
                    done += self._commit_batch(batch, stats)
                flush_attachments()
            except BaseException:
                if parallel:  # reading stays fast
                    self._transaction(self._create_indexes, bump=False)
                raise
            finally:
                self._links_all_pending = False
            if parallel:  # the link table's indexes once its links are resolved (a killed build's are
                # created when the index is next opened)
                self._transaction(lambda: self._create_indexes(links=False), bump=False)
            if progress:
                progress(done, found)
            stats.attachments_changed = stats.attachments
            stats.skipped = skipped
            self._transaction(lambda: self._finish_update(when, True, stats, scope), bump=False)
            if parallel:
                self._transaction(self._create_link_indexes, bump=False)
            if bulk:  # after resolving: every link's row is rewritten, once, not to the log and back
                self._journal_mode("wal", wait=30.0)
            self._counts.clear()
            self._sizes = None
            self._state, self._state_generation = None, None  # not kept: memory stays flat
        stats.seconds = time.perf_counter() - started
        return stats

    def _finish_update(self, scan_started: float, full: bool, stats: IndexStats, scope: str) -> None:
        """Resolve the links this update (or an interrupted one) left pending, and stamp the update (the
        generation was bumped by each transaction that changed rows). One transaction: no writer changes
        the files while links are resolved against them."""
        resolve_pending(self.conn)
        stamps = [("scanned_at", repr(scan_started)), ("skipped", _dumps(stats.skipped)), ("scope", scope)]
        if full:
            stamps.append(("full_scan_at", repr(scan_started)))
        self.conn.executemany("INSERT OR REPLACE INTO meta VALUES(?, ?)", stamps)
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES('last_update', ?)", (str(time.time()),))

    def _remember(self, stored: dict[str, tuple[int, int, int, str]], written: list[str]) -> None:
        """Keep the index's file state in memory, so the next update need not read it back."""
        if self._stale:  # someone else wrote in between: what this object holds may be out of date
            self._state, self._state_generation = None, None
            return
        if len(written) > _REMEMBER_REREAD:  # a big update (a first build): not kept, memory stays flat
            self._state, self._state_generation = None, None  # (the next update is a quick scan anyway)
            return
        for path in written:
            stored.pop(path, None)
        stored.update(self._rows(written))
        self._state, self._state_generation = stored, self._generation

    def _commit_batch(self, batch: list[_Parsed], stats: IndexStats) -> int:
        def write() -> None:
            # Each note is written against its row as it is now, inside this transaction: another writer
            # may have added, replaced or removed it since the state this update started from was read.
            current = self._rows([item.entry.path for item in batch])
            # Notes new to the index (all of a first build) are written table by table, a statement per
            # table for the whole batch; the others note by note, against what the index holds.
            fresh = [item for item in batch if item.row is not None and item.entry.path not in current]
            notes, passages = self._insert_fresh(fresh, stats) if fresh else (0, 0)
            for item in batch:
                entry = item.entry
                old = current.get(entry.path)
                if old is None and item.row is not None:
                    continue  # written above
                if old is not None and old[3] == item.digest:
                    if (old[1], old[2]) == (entry.size, entry.mtime_ns):
                        stats.unchanged += 1  # written just so by another writer meanwhile
                        continue
                    if item.row is None:  # same content, new mtime
                        self.conn.execute(
                            "UPDATE files SET size=?, mtime_ns=? WHERE id=?",
                            (entry.size, entry.mtime_ns, old[0]),
                        )
                        stats.touched += 1
                        continue
                if item.row is None:
                    # Not parsed, its content being what the index held; but another writer changed or
                    # removed that row meanwhile (rare): parse it now.
                    item = _parse_one((self.root, entry, None))
                    assert item.row is not None
                old_aliases: list[str] | None = None
                if old is not None:
                    # The note keeps its id, so the links that resolve to it stay resolved.
                    old_aliases = aliases_of(self.conn, old[0])
                    self._delete_ids([old[0]], keep_incoming=True)
                    stats.updated += 1
                else:
                    stats.added += 1
                cur = self.conn.execute(
                    f"INSERT INTO files({_FILE_COLUMNS}) VALUES(?,?,1,?,?,?,?,?,?,?,?,?,?)",
                    (old[0] if old else None, entry.path, entry.size, entry.mtime_ns, *item.counted()),
                )
                fid = cur.lastrowid
                assert fid is not None
                index_file(
                    self.conn,
                    fid,
                    entry.path,
                    item.aliases,
                    item.links,
                    new=old is None,
                    old_aliases=old_aliases,
                )
                notes, passages = notes + 1, passages + len(item.chunks)
                self.conn.execute(_INSERT_NAMES, (fid, *item.names))
                self._insert_doc(fid, item.names, [c[1] for c in item.chunks])
                self.conn.executemany("INSERT INTO keys VALUES(?, ?)", [(k, fid) for k in item.keys])
                base = fid << CHUNK_BITS
                self.conn.executemany(_INSERT_FTS, [(base | i, *c) for i, c in enumerate(item.chunks)])
                if item.tags:
                    self.conn.executemany("INSERT INTO note_tags VALUES(?, ?)", [(fid, t) for t in item.tags])
            self._count(notes, passages)

        self._write(write)
        return len(batch)

    def _insert_fresh(self, items: list[_Parsed], stats: IndexStats) -> tuple[int, int]:
        """Write notes the index does not hold, inside the caller's transaction: each table's rows for
        all of them in one statement. Their ids are the ones SQLite would give them one by one (the
        next after the largest), so the rows are those a note-by-note write makes. (notes, passages)."""
        top = self.conn.execute("SELECT max(id) FROM files").fetchone()[0] or 0
        files: list[tuple[Any, ...]] = []
        names: list[tuple[Any, ...]] = []
        docs: list[tuple[Any, ...]] = []
        fts: list[tuple[Any, ...]] = []
        keys: list[tuple[str, int]] = []
        tags: list[tuple[int, str]] = []
        for fid, item in enumerate(items, top + 1):
            entry, chunks = item.entry, item.chunks
            files.append((fid, entry.path, entry.size, entry.mtime_ns, *item.counted()))
            names.append((fid, *item.names))
            title, aliases, _tags, headings, props = item.names
            docs.append((fid, title, aliases, headings, props, doc_body([c[1] for c in chunks])))
            base = fid << CHUNK_BITS
            fts += [(base | i, *c) for i, c in enumerate(chunks)]
            keys += [(k, fid) for k in item.keys]
            tags += [(fid, t) for t in item.tags]
        self.conn.executemany(f"INSERT INTO files({_FILE_COLUMNS}) VALUES(?,?,1,?,?,?,?,?,?,?,?,?,?)", files)
        index_new_files(
            self.conn,
            [(fid, item.entry.path, item.aliases, item.links) for fid, item in enumerate(items, top + 1)],
            mark_tails=not self._links_all_pending,
        )
        self.conn.executemany(_INSERT_NAMES, names)
        self.conn.executemany(_INSERT_DOCS, docs)
        self.conn.executemany("INSERT INTO keys VALUES(?, ?)", keys)
        self.conn.executemany(_INSERT_FTS, fts)
        self.conn.executemany("INSERT INTO note_tags VALUES(?, ?)", tags)
        stats.added += len(items)
        return len(items), len(fts)


_FILE_COLUMNS = (
    "id, path, is_note, size, mtime_ns, passages, hash, title, type, tags, aliases, frontmatter, diagnostics"
)
_INSERT_NAMES = "INSERT INTO names(rowid, title, aliases, tags, headings, props) VALUES(?,?,?,?,?,?)"
_INSERT_DOCS = f"INSERT INTO docs(rowid, {', '.join(DOC_COLUMNS)}) VALUES(?, ?, ?, ?, ?, ?)"
_INSERT_FTS = "INSERT INTO fts(rowid, headings, body, heading) VALUES(?,?,?,?)"


class _Parsed(NamedTuple):
    """One note as parsed for the index, in plain values (a parsing process sends thousands of these to
    the writing one: tuples and strings pickle several times faster than objects)."""

    entry: FileEntry
    digest: str | None  # the content hash
    row: tuple[Any, ...] | None  # ``files`` values after the passage count; None: content unchanged
    names: tuple[str, str, str, str, str]
    chunks: list[tuple[str, str, str | None]]  # its passages as ``fts`` values: trail, text, heading
    tags: list[str]
    keys: list[str]  # normalized file name, aliases and title: link targets
    aliases: list[str]
    links: list[LinkRow]  # every link as written, to be resolved

    def counted(self) -> tuple[Any, ...]:
        """The ``files`` values after the file state: the passage count, then ``row``."""
        return (len(self.chunks), *(self.row or ()))


def _parse_one(job: tuple[str, FileEntry, str | None]) -> _Parsed:
    root, entry, old_hash = job
    try:
        raw = read_file(os.path.join(root, entry.path), entry.size)
    except OSError as exc:
        raw = b""
        unreadable = f"cannot read file: {exc.strerror}"
    else:
        unreadable = ""
    if old_hash is not None and not unreadable and hashlib.sha256(raw).hexdigest() == old_hash:
        return _Parsed(entry, old_hash, None, ("", "", "", "", ""), [], [], [], [], [])
    note, passages = parse_for_index(entry.path, raw, mtime=entry.mtime_ns / 1e9, plain=True)
    diagnostics = [d.__dict__ for d in note.diagnostics]
    if unreadable:
        diagnostics.append({"code": "unreadable", "message": unreadable, "severity": "error"})
    frontmatter, title, tags, aliases = note.frontmatter, note.title, note.tags, note.aliases
    row = (
        note.hash,
        title,
        note_type(frontmatter) if frontmatter else None,
        _dumps(tags),
        _dumps(aliases),
        _dumps(frontmatter),
        _dumps(diagnostics),
    )
    title_extra = frontmatter.get("title") if frontmatter else None
    extra = [str(title_extra)] if title_extra else []
    names = (
        title,
        " ; ".join([*aliases, *extra]) if aliases or extra else "",
        " ".join(tags),
        " ; ".join([heading[1] for heading in note.headings]),
        _props(frontmatter) if frontmatter else "",
    )
    stem = entry.path.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.lower().endswith(".md") else stem
    if stem == title and not aliases and not extra:  # (most notes: one name)
        keys = {name_key(title)}
    else:
        keys = {name_key(n) for n in (stem, title, *aliases, *extra)}
    keys.discard("")
    return _Parsed(entry, note.hash, row, names, passages, tags, sorted(keys), aliases, link_rows(note.links))


def _everything(path: str) -> bool:
    return True


def _props(frontmatter: dict[str, Any]) -> str:
    """The frontmatter's values as searchable text (``key: value`` lines; link brackets dropped)."""
    lines: list[str] = []
    for key, value in frontmatter.items():
        if str(key).lower() in _NOT_PROPS:
            continue
        if isinstance(value, str):  # (most values)
            lines.append(f"{key}: " + value.replace("[[", "").replace("]]", ""))
            continue
        values = value if isinstance(value, list) else [value]
        shown = [str(v) for v in values if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if shown:
            lines.append(f"{key}: " + ", ".join(v.replace("[[", "").replace("]]", "") for v in shown))
    return "\n".join(lines)[:_PROPS_CHARS]


# One encoder for every value: ``json.dumps`` with options builds a new encoder on each call, and so does
# ``JSONEncoder.encode`` (its C encoder, ``_ENCODE`` here, made with the arguments ``iterencode`` gives it,
# when the ``json`` module has one that takes them; without a check for cycles: a note's values have none).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
try:
    _ENCODE: Any = _MAKE_ENCODER and _MAKE_ENCODER(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
except TypeError:
    _ENCODE = None


def _dumps(value: object) -> str:
    if not value and isinstance(value, (list, dict)):  # most notes: no aliases, no diagnostics
        return "[]" if isinstance(value, list) else "{}"
    if _ENCODE is not None and isinstance(value, (list, dict)):
        return "".join(_ENCODE(value, 0))
    return _ENCODER.encode(value)


def _parse_all(jobs: Iterator[tuple[str, FileEntry, str | None]], parallel: bool) -> Iterator[_Parsed]:
    """The parsed notes of ``jobs``, in order; ``parallel``: in forked processes (a big update)."""
    workers = min(os.cpu_count() or 1, 4)
    if not parallel or workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(_parse_one, jobs)
        return
    ctx = multiprocessing.get_context("fork")
    # A pool's imap keeps every result its workers finish until the caller takes it: when writing is
    # slower than parsing, a whole vault's parsed notes would pile up. Windows of jobs, taken from
    # ``jobs`` as they are needed, one handed out ahead of the one being written, keep that to two.
    with ctx.Pool(workers) as pool:
        window = list(itertools.islice(jobs, _WINDOW))
        ahead = pool.imap(_parse_one, window, chunksize=64)
        while window:
            current = ahead
            window = list(itertools.islice(jobs, _WINDOW))
            if window:
                ahead = pool.imap(_parse_one, window, chunksize=64)
            yield from current
