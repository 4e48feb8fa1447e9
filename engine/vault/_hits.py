"""What a search shows for each note it ranked: the note's fields, and the passage it shows (its best
match, or for a note matched on its name, its opening or the best of its first passages) with a snippet
and the passages around it that its citation covers. Read in one statement; separate from ranking."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..text import ParsedQuery
from ._index import CHUNK_BITS, VaultIndex
from ._index_db import FTS_COLUMNS
from ._model import Hit
from ._snippets import (
    FOLLOWING,
    PASSAGE_CHARS,
    SNIPPET_CHARS,
    clean,
    densest_window,
    make_snippet,
    passage_window,
)

__all__ = [
    "FIRST_PASSAGES",
    "NAME_ONLY",
    "OPENING",
    "Candidate",
    "list_only",
    "meta_and_passages",
    "read_passages",
    "shown_chunk",
    "shown_rowids",
    "to_hit",
]

NAME_ONLY = -1
OPENING = -2  # the whole query is the note's title or alias: it shows its opening, what the note is
FIRST_PASSAGES = 8  # a note ranked without a passage shows the best of its first few passages
# A line of prose: five words or more, not a heading, an embed, a comment, markup or a property.
_PROSE = re.compile(r"^[ \t]*(?![#!%<|>]|[\w -]{1,40}:\s)(?:[^\w\n]*\w+\b){5}", re.M)


@dataclass
class Candidate:
    fid: int
    chunk: int  # rowid of the best passage (NAME_ONLY: matched on its name only; OPENING: named by the query)
    score: float  # best passage BM25 + a share of the second + the scaled name BM25
    path: str = ""
    title: str = ""
    type: str | None = None
    tags: list[str] = field(default_factory=list)
    mtime_ns: int = 0
    passages: int = 0


NAME_ONLY = -1
OPENING = -2  # the whole query is the note's title or alias: it shows its opening, what the note is


# A passage's text is read by its rowid from FTS5's table of the ``fts`` rows' content (``fts_content``:
# its key is the rowid, its column c<i> the i-th declared column), not through ``fts``: FTS5 answers a
# rowid there with a statement of its own each, which cost twice as much (0.35 ms a search on the 100 MB
# vault, for ~50 passages). The same rows, the same values.
_CONTENT = {name.split()[0]: f"c{i}" for i, name in enumerate(FTS_COLUMNS)}
_PASSAGE_COLUMNS = f"id, {_CONTENT['heading']}, {_CONTENT['body']}, {_CONTENT['headings']}"
_META_AND_PASSAGES = (
    "SELECT 0, f.id, f.path, f.title, f.type, f.tags, f.mtime_ns, f.passages FROM files f "
    "WHERE f.id IN ({ids}) AND {where} UNION ALL "
    f"SELECT 1, {_PASSAGE_COLUMNS}, NULL, NULL, NULL FROM fts_content WHERE id IN ({{rowids}})"
)


def meta_and_passages(
    index: VaultIndex,
    candidates: dict[int, Candidate],
    first: list[Candidate],
    where: str,
    params: list[Any],
) -> dict[int, tuple[str | None, str, str]]:
    """Fill in the fields of ``candidates`` (dropping those gone or refused by ``where``), and return
    rowid -> (heading, body, heading trail) of the passages the ``first`` of them show (``shown_rowids``)."""
    # Bound, not written into the statement: SQLite then prepares it once for each count of ids.
    ids = list(candidates)
    rowids = [r for c in first for r in shown_rowids(c)]
    sql = _META_AND_PASSAGES.format(
        ids=",".join("?" * len(ids)) or "NULL", where=where, rowids=",".join("?" * len(rowids)) or "NULL"
    )
    passages: dict[int, tuple[str | None, str, str]] = {}
    for kind, key, path, title, ntype, tags, mtime_ns, n_passages in index.query(
        sql, [*ids, *params, *rowids]
    ):
        if kind:  # a passage: (heading, body, headings)
            passages[key] = (path, title, ntype or "")
            continue
        c = candidates[key]
        c.path, c.title, c.type, c.mtime_ns, c.passages = path, title, ntype, mtime_ns or 0, n_passages or 0
        c.tags = json.loads(tags or "[]")
    for fid in [fid for fid, c in candidates.items() if not c.path]:
        del candidates[fid]
    return passages


def shown_rowids(c: Candidate) -> list[int]:
    """The passages a hit may show: its best passage with its note's first one and its neighbours (for
    ``passage_window``), or for a note matched on its name only, its first few (the best of them is
    shown)."""
    lo = c.fid << CHUNK_BITS
    if c.chunk >= 0:
        return [lo, *range(max(lo, c.chunk - 1), c.chunk + 1 + FOLLOWING)]
    return list(range(lo, lo + FIRST_PASSAGES))


def read_passages(index: VaultIndex, rowids: list[int]) -> dict[int, tuple[str | None, str, str]]:
    marks = ",".join("?" * len(rowids))
    rows = index.query(f"SELECT {_PASSAGE_COLUMNS} FROM fts_content WHERE id IN ({marks})", rowids)
    return {rowid: (heading, body, trail or "") for rowid, heading, body, trail in rows}


def shown_chunk(
    c: Candidate,
    words: list[str],
    passages: dict[int, tuple[str | None, str, str]],
    avoid: Collection[str] = (),
    density: dict[int, float] | None = None,
) -> int:
    """The passage a hit shows: its best one; for a note matched on its name, its opening (named by the
    whole query) or the best of its first passages, under none of the headings ``avoid`` if it has
    another (-1: none read). ``density``: each passage's query-word density, kept across calls."""
    if c.chunk >= 0:
        return c.chunk
    lo = c.fid << CHUNK_BITS
    rows = [r for r in range(lo, lo + FIRST_PASSAGES) if r in passages]
    rows = [r for r in rows if passages[r][0] not in avoid] or rows
    opening = [r for r in rows if _PROSE.search(passages[r][1])][:1] if c.chunk == OPENING else []
    if opening:
        return opening[0]
    seen = {} if density is None else density

    def dense(r: int) -> float:
        if r not in seen:
            seen[r] = densest_window(passages[r][1], words)[0]
        return seen[r]

    return max(rows, key=dense) if rows else -1


def to_hit(
    vault_id: str,
    c: Candidate,
    parsed: ParsedQuery,
    passages: dict[int, tuple[str | None, str, str]],
    avoid: Collection[str] = (),
    density: dict[int, float] | None = None,
) -> Hit:
    words = parsed.words()
    chunk = shown_chunk(c, words, passages, avoid, density)
    heading, body, _trail = passages.get(chunk, (None, "", ""))
    snippet, _ = make_snippet(body, words)
    passage = passage_window(passages, chunk, c.fid << CHUNK_BITS) if chunk >= 0 else ""
    return Hit(
        vault_id,
        c.path,
        c.title,
        round(c.score, 4),
        snippet,
        heading,
        c.type,
        c.tags,
        c.mtime_ns / 1e9,
        passage=passage[:PASSAGE_CHARS],
    )


def list_only(index: VaultIndex, vault_id: str, limit: int, where: str, params: list[Any]) -> list[Hit]:
    rows = index.query(
        f"SELECT f.id, f.path, f.title, f.type, f.tags, f.mtime_ns FROM files f WHERE {where} "
        "ORDER BY f.mtime_ns DESC LIMIT ?",
        [*params, limit],
    )
    hits = []
    for fid, path, title, ntype, tags, mtime_ns in rows:
        body_rows = index.query(
            f"SELECT substr({_CONTENT['body']}, 1, ?) FROM fts_content WHERE id = ?",
            (SNIPPET_CHARS, fid << CHUNK_BITS),
        )
        snippet = clean(body_rows[0][0]) if body_rows and body_rows[0][0] else ""
        hits.append(
            Hit(
                vault_id,
                path,
                title,
                0.0,
                snippet,
                None,
                ntype,
                json.loads(tags or "[]"),
                (mtime_ns or 0) / 1e9,
            )
        )
    return hits
