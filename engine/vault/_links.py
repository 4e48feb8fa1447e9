"""The link graph kept in the index: each note's links are stored when the note is indexed and resolved
there (Obsidian's rules, ``_graph.Resolver``), so that reading a note, its backlinks, its neighbours or a
link's target is a lookup; networkx is built only when a caller asks for the whole graph (``export``).

Tables: ``lookup`` holds what a link can name a file by (its lower-cased path, its name, a note's aliases);
``edges`` holds every link as written, with the file it resolves to (``dst``: a file id, 0 when it
resolves to nothing, NULL while it waits to be resolved) and the other candidates of an ambiguous name.

Kept right incrementally: a link depends only on the files whose name or alias ends like its target (its
``tail``: the last path component, lower-cased, ``.md`` left off). When a file is added, removed, renamed,
or a note's aliases change, the tails it answers to are written to ``dirty`` in the same transaction as the
change; at the end of the update (``resolve_pending``, one transaction) the links with a dirty tail and
the new links are resolved again. A crash in between leaves ``dirty`` and the pending links for the next
update to finish.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from ._graph import LinkGraph, Resolver, UnresolvedLink, add_link_edge
from ._parse import RELATION_FIELDS, LinkParts

__all__ = [
    "LINK_SCHEMA",
    "IndexResolver",
    "backlinks",
    "export_graph",
    "forget_file",
    "index_file",
    "index_new_files",
    "link_counts",
    "link_rows",
    "neighbors",
    "resolve_pending",
    "tail_key",
    "unresolved",
]

LINK_SCHEMA = """
CREATE TABLE IF NOT EXISTS edges(src INTEGER NOT NULL, dst INTEGER, target TEXT NOT NULL, tail TEXT NOT NULL,
    line INTEGER NOT NULL, kind TEXT NOT NULL, embed INTEGER NOT NULL, relation TEXT, others TEXT);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE INDEX IF NOT EXISTS edges_tail ON edges(tail);
CREATE TABLE IF NOT EXISTS lookup(key TEXT NOT NULL, kind INTEGER NOT NULL, file_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS lookup_key ON lookup(key, kind);
CREATE INDEX IF NOT EXISTS lookup_file ON lookup(file_id);
CREATE TABLE IF NOT EXISTS dirty(tail TEXT PRIMARY KEY) WITHOUT ROWID;
"""
LINK_TABLES = ("edges", "lookup", "dirty")
EXACT, NAME, ALIAS = 0, 1, 2  # lookup kinds
_CHUNK = 5000

# A link as stored: (target, tail_key(target), line, kind, embed, relation)
LinkRow = tuple[str, str, int, str, int, str | None]
Query = Callable[[str, tuple[Any, ...] | list[Any]], list[tuple[Any, ...]]]


@lru_cache(maxsize=8192)  # (a vault links to some of its notes from many others)
def tail_key(target: str) -> str:
    """What a link target or file name is filed under: its last path component, lower-cased, no ``.md``."""
    low = target.strip().replace("\\", "/").lower().rsplit("/", 1)[-1]
    return low[:-3] if low.endswith(".md") else low


def link_rows(links: Iterable[LinkParts]) -> list[LinkRow]:
    """A note's links (as ``read_note`` reads them) as stored."""
    return [
        (target, tail_key(target), line, kind, 1 if embed else 0, field if field in RELATION_FIELDS else None)
        for target, _heading, _block, _alias, embed, kind, field, line in links
    ]


def _lookup_rows(fid: int, path: str, aliases: Iterable[str]) -> list[tuple[str, int, int]]:
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    rows = [(low, EXACT, fid), (name, NAME, fid)]
    if name.endswith(".md"):
        rows.append((name[:-3], NAME, fid))
    rows += [(a.lower(), ALIAS, fid) for a in dict.fromkeys(aliases)]
    return rows


def mark(conn: sqlite3.Connection, tails: Iterable[str]) -> None:
    conn.executemany("INSERT OR IGNORE INTO dirty VALUES(?)", [(t,) for t in set(tails)])


def index_file(
    conn: sqlite3.Connection,
    fid: int,
    path: str,
    aliases: list[str],
    links: list[LinkRow],
    *,
    new: bool,
    old_aliases: list[str] | None = None,
) -> None:
    """Store what file ``fid`` is named by and its links (to be resolved), inside the caller's transaction.
    ``new``: the file was not in the index (links to its name may resolve now); else ``old_aliases`` are
    the aliases it had (links by an alias it gained or lost resolve differently)."""
    conn.executemany("INSERT INTO lookup VALUES(?, ?, ?)", _lookup_rows(fid, path, aliases))
    conn.executemany(_INSERT_EDGES, [(fid, *link) for link in links])
    if new:
        mark(conn, [tail_key(path), *(tail_key(a) for a in aliases)])
    else:
        changed = {a.lower() for a in aliases} ^ {a.lower() for a in old_aliases or []}
        mark(conn, [tail_key(a) for a in changed])


def index_new_files(
    conn: sqlite3.Connection,
    files: list[tuple[int, str, list[str], list[LinkRow]]],
    *,
    mark_tails: bool = True,
) -> None:
    """``index_file(..., new=True)`` for each of ``files`` (file id, path, aliases, links), a statement
    per table for all of them: the same rows, in the same order. ``mark_tails=False``: no link in the
    index is resolved yet (a first build), so none can need resolving again and no tail is marked dirty
    (every pending link is resolved at the end anyway; 66k rows of a 100 MB vault's build saved)."""
    lookup: list[tuple[str, int, int]] = []
    edges: list[tuple[Any, ...]] = []
    tails: list[str] = []
    for fid, path, aliases, links in files:
        lookup += _lookup_rows(fid, path, aliases)
        edges += [(fid, *link) for link in links]
        if mark_tails:
            tails.append(tail_key(path))
            tails += [tail_key(a) for a in aliases]
    conn.executemany("INSERT INTO lookup VALUES(?, ?, ?)", lookup)
    conn.executemany(_INSERT_EDGES, edges)
    if mark_tails:
        mark(conn, tails)


_INSERT_EDGES = (
    "INSERT INTO edges(src, target, tail, line, kind, embed, relation) VALUES(?, ?, ?, ?, ?, ?, ?)"
)


def aliases_of(conn: sqlite3.Connection, fid: int) -> list[str]:
    return [r[0] for r in conn.execute("SELECT key FROM lookup WHERE file_id = ? AND kind = ?", (fid, ALIAS))]


def forget_file(conn: sqlite3.Connection, fid: int, *, keep_incoming: bool) -> None:
    """Drop file ``fid``'s names and links. Unless ``keep_incoming`` (the same file is written again under
    the same id), the links that led to it, or could have, are resolved again at the end of the update."""
    if not keep_incoming:
        keys = conn.execute("SELECT key FROM lookup WHERE file_id = ? AND kind != ?", (fid, EXACT)).fetchall()
        mark(conn, [tail_key(k) for (k,) in keys])
        conn.execute("UPDATE edges SET dst = NULL WHERE dst = ?", (fid,))
    conn.execute("DELETE FROM lookup WHERE file_id = ?", (fid,))
    conn.execute("DELETE FROM edges WHERE src = ?", (fid,))


class IndexResolver(Resolver):
    """Obsidian's resolution answered from the index's ``lookup`` table: a few indexed queries per link."""

    def __init__(self, query: Query) -> None:
        self._query = query

    def _exact_lower(self, low: str) -> str | None:
        rows = self._query(
            "SELECT f.path FROM lookup l JOIN files f ON f.id = l.file_id WHERE l.key = ? AND l.kind = ? "
            "ORDER BY l.file_id DESC LIMIT 1",
            (low, EXACT),
        )
        return str(rows[0][0]) if rows else None

    def _paths(self, low: str, kind: int) -> list[str]:
        rows = self._query(
            "SELECT f.path FROM lookup l JOIN files f ON f.id = l.file_id WHERE l.key = ? AND l.kind = ? "
            "ORDER BY l.file_id",
            (low, kind),
        )
        return [r[0] for r in rows]

    def _named(self, low: str) -> list[str]:
        return self._paths(low, NAME)

    def _aliased(self, low: str) -> list[str]:
        return self._paths(low, ALIAS)


class _Asked(Resolver):
    """A resolver whose every lookup finds nothing, noting what it was asked: the lookups a real
    resolution makes are a prefix of these (a lookup's key never depends on an earlier answer, only
    whether it is made), so they are every lookup a link can need."""

    def __init__(self) -> None:
        self.keys: set[tuple[str, int]] = set()

    def _exact_lower(self, low: str) -> str | None:
        self.keys.add((low, EXACT))
        return None

    def _named(self, low: str) -> list[str]:
        self.keys.add((low, NAME))
        return []

    def _aliased(self, low: str) -> list[str]:
        self.keys.add((low, ALIAS))
        return []


class _Fetched(Resolver):
    """Obsidian's resolution over the ``lookup`` rows of a set of keys, read in a few queries: what
    ``IndexResolver`` would find key by key (the last indexed file for an exact path; every file of a
    name or alias, in index order)."""

    def __init__(self, conn: sqlite3.Connection, keys: set[tuple[str, int]]) -> None:
        self.rows: dict[tuple[str, int], list[str]] = {}
        self.ids: dict[str, int] = {}
        wanted = sorted({key for key, _ in keys})
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, kind, path, fid in conn.execute(
                f"SELECT l.key, l.kind, f.path, f.id FROM lookup l JOIN files f ON f.id = l.file_id "
                f"WHERE l.key IN ({marks}) ORDER BY l.file_id",
                chunk,
            ):
                self.rows.setdefault((key, kind), []).append(path)
                self.ids[path] = fid

    def _exact_lower(self, low: str) -> str | None:
        found = self.rows.get((low, EXACT))
        return found[-1] if found else None

    def _named(self, low: str) -> list[str]:
        return self.rows.get((low, NAME), [])

    def _aliased(self, low: str) -> list[str]:
        return self.rows.get((low, ALIAS), [])


def resolve_pending(conn: sqlite3.Connection) -> int:
    """Resolve the links whose tail is dirty and the new ones; inside the caller's write transaction (so
    no other writer changes the files in between). Returns how many links were resolved."""
    if conn.execute("SELECT 1 FROM dirty LIMIT 1").fetchone():
        conn.execute("UPDATE edges SET dst = NULL WHERE tail IN (SELECT tail FROM dirty) AND dst IS NOT NULL")
        conn.execute("DELETE FROM dirty")
    pending = conn.execute("SELECT count(*) FROM edges WHERE dst IS NULL").fetchone()[0]
    if not pending:
        return 0
    if pending >= _MANY_PENDING:
        _resolve_one_named_in_bulk(conn)
    else:
        conn.execute(_ONE_NAMED)
    conn.execute(_NONE_NAMED)
    last = 0  # each chunk is resolved (given a dst) whole: the next one starts after it, in rowid order
    while True:
        rows = conn.execute(
            "SELECT e.rowid, f.path, e.target FROM edges e JOIN files f ON f.id = e.src "
            "WHERE e.dst IS NULL AND e.rowid > ? ORDER BY e.rowid LIMIT ?",
            (last, _CHUNK),
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        conn.executemany("UPDATE edges SET dst = ?, others = ? WHERE rowid = ?", _resolve_chunk(conn, rows))
    return int(pending)


# Most links are a bare name that one file answers to, or that nothing answers to: resolved in SQL, in
# one statement each. A bare name is a target without "/" or "\\" (no path to join or strip), printable
# ASCII only (SQLite's lower() folds ASCII alone), with no spaces around it. One file has that name: then
# it is the link's target whatever the folder of the linking note (an exact root-level path would be that
# same file: its name is one of the names). No file has it as a name or an alias: the link resolves to
# nothing. Everything else goes through ``Resolver`` below.
_BARE = (
    "dst IS NULL AND target != '' AND target = trim(target) AND instr(target, '/') = 0"
    " AND instr(target, '\\') = 0 AND target NOT GLOB '*[^ -~]*'"
)
_NAMED = f"FROM lookup l WHERE l.key = lower(edges.target) AND l.kind = {NAME}"
_ONE_NAMED = f"""UPDATE edges SET dst = (SELECT l.file_id {_NAMED}), others = NULL
WHERE {_BARE} AND (SELECT count(*) {_NAMED}) = 1"""
_NONE_NAMED = f"""UPDATE edges SET dst = 0, others = NULL WHERE {_BARE} AND NOT EXISTS
(SELECT 1 FROM lookup l WHERE l.key = lower(edges.target) AND l.kind IN ({NAME}, {ALIAS}))"""
# Many pending links (a first build: 299k on the 100 MB scale vault): the names that one file has are
# listed once, in a temporary table, and each link looks its name up there once, instead of counting
# the name's files and then reading the one file again for every link (2.4 -> 1.5 s there). Not for a
# few links: listing every name of the vault costs more than they do.
_MANY_PENDING = 20_000
_ONE_NAMED_TABLE = "temp.shad_one_named"


def _resolve_one_named_in_bulk(conn: sqlite3.Connection) -> None:
    """What ``_ONE_NAMED`` does, for many links at once (see ``_MANY_PENDING``)."""
    conn.execute(f"DROP TABLE IF EXISTS {_ONE_NAMED_TABLE}")
    conn.execute(f"CREATE TABLE {_ONE_NAMED_TABLE}(key TEXT PRIMARY KEY, fid INTEGER NOT NULL) WITHOUT ROWID")
    try:
        conn.execute(
            f"INSERT INTO {_ONE_NAMED_TABLE} SELECT key, min(file_id) FROM lookup WHERE kind = {NAME} "
            "GROUP BY key HAVING count(*) = 1"
        )
        conn.execute(
            f"UPDATE edges SET dst = (SELECT o.fid FROM {_ONE_NAMED_TABLE} o "
            f"WHERE o.key = lower(edges.target)), others = NULL "
            f"WHERE {_BARE} AND lower(target) IN (SELECT key FROM {_ONE_NAMED_TABLE})"
        )
    finally:
        conn.execute(f"DROP TABLE {_ONE_NAMED_TABLE}")


def _resolve_chunk(
    conn: sqlite3.Connection, rows: list[tuple[int, str, str]]
) -> list[tuple[int, str | None, int]]:
    """(dst, others, rowid) for each pending link (rowid, source path, target). A link resolves the
    same from any note of one folder (but the empty target: the note itself), so each (target, folder)
    is resolved once; the lookups of the whole chunk are read together, not one query per link."""
    groups: dict[tuple[str, str], list[int]] = {}
    for rowid, source, target in rows:
        # The folder stands for the note (as the resolver takes it) but for the empty target.
        folder = source.rpartition("/")[0]
        where = (f"{folder}/_" if folder else "_") if target else source
        groups.setdefault((target, where), []).append(rowid)
    asked = _Asked()
    for target, where in groups:
        asked.resolve(target, where)
    resolver = _Fetched(conn, asked.keys)
    updates: list[tuple[int, str | None, int]] = []
    for (target, where), rowids in groups.items():
        path, others = resolver.resolve(target, where)
        dst = 0 if path is None else resolver.ids.get(path) or _file_id(conn, path)
        shown = json.dumps(others, ensure_ascii=False) if others else None
        updates += [(dst, shown, rowid) for rowid in rowids]
    return updates


def _file_id(conn: sqlite3.Connection, path: str) -> int:
    row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    return int(row[0]) if row else 0


# --- reading ---------------------------------------------------------------------------------------------


def _note_id(query: Query, path: str) -> int | None:
    rows = query("SELECT id FROM files WHERE path = ? AND is_note = 1", (path,))
    return int(rows[0][0]) if rows else None


def backlinks(query: Query, path: str) -> list[str]:
    """Notes that link to the note at ``path`` (sorted; itself left out)."""
    fid = _note_id(query, path)
    if fid is None:
        return []
    rows = query(
        "SELECT DISTINCT f.path FROM edges e JOIN files f ON f.id = e.src WHERE e.dst = ? AND e.src != ?",
        (fid, fid),
    )
    return sorted(r[0] for r in rows)


def neighbors(query: Query, path: str, depth: int = 1) -> list[str]:
    """Notes reachable from ``path`` within ``depth`` links, in either direction (sorted)."""
    fid = _note_id(query, path)
    if fid is None or depth < 1:
        return []
    seen = {fid}
    frontier = [fid]
    for _ in range(depth):
        found: set[int] = set()
        for i in range(0, len(frontier), 500):
            chunk = frontier[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in query(
                    f"SELECT DISTINCT e.dst FROM edges e JOIN files f ON f.id = e.dst "
                    f"WHERE e.src IN ({marks}) AND f.is_note = 1",
                    chunk,
                )
            )
            found.update(r[0] for r in query(f"SELECT DISTINCT src FROM edges WHERE dst IN ({marks})", chunk))
        frontier = sorted(found - seen)
        seen.update(frontier)
        if not frontier:
            break
    seen.discard(fid)
    out: list[str] = []
    ordered = sorted(seen)
    for i in range(0, len(ordered), 500):
        chunk = ordered[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out += [r[0] for r in query(f"SELECT path FROM files WHERE id IN ({marks})", chunk)]
    return sorted(out)


def unresolved(query: Query) -> list[UnresolvedLink]:
    """Links that resolve to no file, in index order (by note, then as written)."""
    rows = query(
        "SELECT f.path, e.target, e.line, e.kind FROM edges e JOIN files f ON f.id = e.src "
        "WHERE e.dst = 0 ORDER BY e.src, e.rowid",
        (),
    )
    return [UnresolvedLink(path, target, line, kind) for path, target, line, kind in rows]


def link_counts(query: Query) -> tuple[int, int, int]:
    """(links, unresolved, ambiguous) over the whole vault, counted in SQL."""
    row = query(
        "SELECT count(*), coalesce(sum(dst = 0), 0), coalesce(sum(others IS NOT NULL), 0) FROM edges", ()
    )[0]
    return int(row[0]), int(row[1]), int(row[2])


def export_graph(query: Query) -> LinkGraph:
    """The whole link graph as networkx, from the stored resolutions (nothing is resolved again)."""
    import networkx as nx

    graph = nx.DiGraph()
    notes: dict[int, str] = {}
    for fid, path, title, ntype in query("SELECT id, path, title, type FROM files WHERE is_note = 1", ()):
        notes[fid] = path
        graph.add_node(path, title=title, type=ntype)
    result = LinkGraph(graph, IndexResolver(query))
    rows = query(
        "SELECT e.src, f.path, e.dst, d.path, e.target, e.line, e.kind, e.embed, e.relation, e.others "
        "FROM edges e JOIN files f ON f.id = e.src LEFT JOIN files d ON d.id = e.dst ORDER BY e.src, e.rowid",
        (),
    )
    for src, path, dst, target_path, target, line, kind, embed, relation, others in rows:
        result.link_count += 1
        if not dst or target_path is None:
            result.unresolved.append(UnresolvedLink(path, target, line, kind))
            continue
        if others:
            candidates = [target_path, *json.loads(others)]
            result.ambiguous.append(
                {"source": path, "target": target, "chose": target_path, "candidates": candidates}
            )
        if dst == src or dst not in notes:
            continue  # self links and links to attachments are not graph edges
        add_link_edge(graph, path, target_path, kind, bool(embed), relation)
    return result
