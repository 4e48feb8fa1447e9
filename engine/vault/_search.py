"""Ranked search over one vault's index: BM25 with field weights, a strict-then-relaxed match, a
light rerank on title and coverage, filters, and snippets centred on the match under their heading."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._index import CHUNK_BITS, VaultIndex
from ._model import Hit
from ._query import ParsedQuery, parse_query, stem

__all__ = ["SearchFilters", "search_index"]

SNIPPET_CHARS = 240
_RELAX_BELOW = 3  # relax a strict AND query when it finds fewer notes than this (or than the limit)
_MAX_CANDIDATES = 60


@dataclass
class SearchFilters:
    path: str | None = None  # folder or path prefix, vault-relative
    type: str | None = None  # frontmatter `type`, case-insensitive
    tags: Sequence[str] | None = None  # every tag must be present; `a` also matches `a/b`
    where: dict[str, Any] | None = None  # frontmatter field -> value (or list of accepted values)
    modified_after: float | None = None  # epoch seconds
    modified_before: float | None = None
    exclude: Sequence[str] = ()  # path prefixes to leave out

    def sql(self) -> tuple[str, list[Any]]:
        clauses: list[str] = ["f.is_note = 1"]
        params: list[Any] = []
        if self.path:
            prefix = self.path.strip("/")
            if prefix.lower().endswith(".md"):
                clauses.append("f.path = ?")
                params.append(prefix)
            else:
                clauses.append("(f.path LIKE ? ESCAPE '\\' )")
                params.append(_like_prefix(prefix + "/"))
        for prefix in self.exclude:
            clauses.append("f.path NOT LIKE ? ESCAPE '\\'")
            params.append(_like_prefix(prefix.strip("/") + "/"))
        if self.type:
            clauses.append("lower(f.type) = lower(?)")
            params.append(self.type)
        for tag in self.tags or ():
            tag = tag.lstrip("#").lower()
            clauses.append(
                "EXISTS (SELECT 1 FROM note_tags t WHERE t.file_id = f.id AND "
                "(t.tag = ? OR t.tag LIKE ? ESCAPE '\\'))"
            )
            params += [tag, _like_prefix(tag + "/")]
        for key, value in (self.where or {}).items():
            json_path = '$."' + str(key).replace('"', '\\"') + '"'
            values = value if isinstance(value, (list, tuple, set)) else [value]
            alternatives = []
            for v in values:
                alternatives.append(
                    "(json_extract(f.frontmatter, ?) = ? OR EXISTS "
                    "(SELECT 1 FROM json_each(f.frontmatter, ?) j WHERE j.value = ?))"
                )
                sql_value = (
                    v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else json.dumps(v)
                )
                if isinstance(v, bool):
                    sql_value = int(v)
                params += [json_path, sql_value, json_path, sql_value]
            clauses.append("(" + " OR ".join(alternatives) + ")")
        if self.modified_after is not None:
            clauses.append("f.mtime_ns >= ?")
            params.append(int(self.modified_after * 1e9))
        if self.modified_before is not None:
            clauses.append("f.mtime_ns <= ?")
            params.append(int(self.modified_before * 1e9))
        return " AND ".join(clauses), params


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass
class _Candidate:
    fid: int
    path: str
    title: str
    type: str | None
    tags: list[str]
    mtime_ns: int
    aliases: list[str]
    chunk: int  # rowid of the best passage
    heading: str | None
    bm25: float  # best passage score, plus a little for further matching passages
    strict: bool
    score: float = 0.0


_PASSAGES = (
    "SELECT fts.rowid, fts.heading, bm25(fts, {w}) AS score, f.id, f.path, f.title, f.type, f.tags, "
    f"f.mtime_ns, f.aliases FROM fts JOIN files f ON f.id = (fts.rowid >> {CHUNK_BITS}) "
    "WHERE fts MATCH ? AND {where} ORDER BY score LIMIT ?"
)
_NAMES = (
    "SELECT f.id, bm25(names, {w}) AS score, f.path, f.title, f.type, f.tags, f.mtime_ns, f.aliases "
    "FROM names JOIN files f ON f.id = names.rowid WHERE names MATCH ? AND {where} ORDER BY score LIMIT ?"
)
PASSAGE_WEIGHTS = (1.0, 1.0, 0.0)  # heading chain, text
NAME_WEIGHTS = (4.0, 4.0, 1.5, 1.0)  # title, aliases, tags, headings
NAME_SCORE_WEIGHT = 0.5
SECOND_PASSAGE_WEIGHT = 0.3
STRATEGY = {"strict": True, "rerank": False}


def search_index(
    index: VaultIndex, vault_id: str, query: str, limit: int, filters: SearchFilters
) -> list[Hit]:
    parsed = parse_query(query)
    where, params = filters.sql()
    if parsed.empty:
        return _list_only(index, vault_id, limit, where, params)
    n_passages = max(limit * 8, _MAX_CANDIDATES)
    candidates: dict[int, _Candidate] = {}
    single = len(parsed.clauses()) == 1
    if STRATEGY["strict"] or single:
        _fetch_passages(index, parsed.strict(), where, params, n_passages, True, candidates)
    if not single and (not STRATEGY["strict"] or len(candidates) < max(limit, _RELAX_BELOW)):
        _fetch_passages(index, parsed.relaxed(), where, params, n_passages, False, candidates)
    _fetch_names(index, parsed.relaxed(), where, params, max(limit * 3, 30), candidates)
    if not candidates:
        return []
    ranked = list(candidates.values())
    _rerank(ranked, parsed)
    ranked.sort(key=lambda c: c.score, reverse=True)
    return [_to_hit(index, vault_id, c, parsed) for c in ranked[:limit]]


def _fetch_passages(
    index: VaultIndex,
    match: str,
    where: str,
    params: list[Any],
    n: int,
    strict: bool,
    into: dict[int, _Candidate],
) -> None:
    weights = ", ".join(str(w) for w in PASSAGE_WEIGHTS)
    rows = index.query(_PASSAGES.format(where=where, w=weights), [match, *params, n])
    seen_here: dict[int, int] = {}
    for rowid, heading, rank, fid, path, title, ntype, tags, mtime_ns, aliases in rows:
        score = -float(rank)
        count = seen_here.get(fid, 0)
        seen_here[fid] = count + 1
        existing = into.get(fid)
        if existing is not None:
            if count == 1 and existing.strict == strict:
                existing.bm25 += SECOND_PASSAGE_WEIGHT * score
            continue
        into[fid] = _Candidate(
            fid,
            path,
            title,
            ntype,
            json.loads(tags or "[]"),
            mtime_ns or 0,
            json.loads(aliases or "[]"),
            rowid,
            heading,
            score,
            strict,
        )


def _fetch_names(
    index: VaultIndex, match: str, where: str, params: list[Any], n: int, into: dict[int, _Candidate]
) -> None:
    weights = ", ".join(str(w) for w in NAME_WEIGHTS)
    for fid, rank, path, title, ntype, tags, mtime_ns, aliases in index.query(
        _NAMES.format(where=where, w=weights), [match, *params, n]
    ):
        score = -float(rank) * NAME_SCORE_WEIGHT
        existing = into.get(fid)
        if existing is None:
            into[fid] = _Candidate(
                fid,
                path,
                title,
                ntype,
                json.loads(tags or "[]"),
                mtime_ns or 0,
                json.loads(aliases or "[]"),
                -1,
                None,
                score,
                False,
            )
        else:
            existing.bm25 += score


def _stems(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"\w+", text.lower())}


def _rerank(candidates: list[_Candidate], parsed: ParsedQuery) -> None:
    """Scale BM25 by how much of the query the title and aliases cover, with a bonus for full matches.

    Multiplicative, so scores stay on BM25's scale and hits from layered vaults can be merged."""
    query_stems = [stem(w) for w in parsed.words()]
    for c in candidates:
        if not STRATEGY["rerank"]:
            c.score = c.bm25
            continue
        name_stems = _stems(" ".join([c.title, *c.aliases]))
        title_cover = sum(1 for s in query_stems if s in name_stems) / max(1, len(query_stems))
        # Titles that are mostly query words are the note *about* the thing asked.
        title_stems = _stems(c.title)
        precision = sum(1 for s in title_stems if s in query_stems) / max(1, len(title_stems))
        c.score = c.bm25 * (1 + 0.35 * title_cover + 0.15 * precision + (0.1 if c.strict else 0.0))


def _to_hit(index: VaultIndex, vault_id: str, c: _Candidate, parsed: ParsedQuery) -> Hit:
    chunk, heading = c.chunk, c.heading
    if chunk < 0:  # matched on its name only: show its best passage, or its opening
        lo, hi = c.fid << CHUNK_BITS, (c.fid + 1) << CHUNK_BITS
        rows = index.query(
            "SELECT rowid, heading FROM fts WHERE fts MATCH ? AND rowid >= ? AND rowid < ? "
            "ORDER BY rank LIMIT 1",
            (parsed.relaxed(), lo, hi),
        )
        chunk, heading = rows[0] if rows else (lo, None)
    rows = index.query("SELECT body FROM fts WHERE rowid = ?", (chunk,))
    snippet, _ = make_snippet(rows[0][0] if rows else "", parsed.words())
    return Hit(
        vault_id, c.path, c.title, round(c.score, 4), snippet, heading, c.type, c.tags, c.mtime_ns / 1e9
    )


def make_snippet(body: str, words: list[str], width: int = SNIPPET_CHARS) -> tuple[str, int | None]:
    """The window of ``body`` holding the most distinct query words, and its start offset."""
    if not body:
        return "", None
    stems = sorted({stem(w) for w in words if w}, key=len, reverse=True)
    if not stems:
        return _clean(body[:width]), None
    pattern = re.compile(r"\b(" + "|".join(re.escape(s) for s in stems) + r")\w*", re.I | re.U)
    matches = [(m.start(), stem(m.group(0))) for _, m in zip(range(2000), pattern.finditer(body))]
    if not matches:
        return _clean(body[:width]), None
    best_start, best_score = matches[0][0], -1.0
    j = 0
    for i, (start, _) in enumerate(matches):
        while matches[j][0] < start - width // 2:
            j += 1
        window = {s for pos, s in matches[j : i + 1]}
        score = len(window) + 0.01 * (i - j)
        if score > best_score:
            best_score, best_start = score, matches[j][0]
    start = max(0, best_start - width // 4)
    start = _word_boundary(body, start)
    text = body[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(body) else ""
    return prefix + _clean(text) + suffix, best_start


def _word_boundary(body: str, start: int) -> int:
    if start <= 0:
        return 0
    newline = body.rfind("\n", max(0, start - 60), start)
    if newline != -1:
        return newline + 1
    space = body.find(" ", start)
    return space + 1 if 0 <= space < start + 30 else start


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _list_only(index: VaultIndex, vault_id: str, limit: int, where: str, params: list[Any]) -> list[Hit]:
    rows = index.query(
        f"SELECT f.id, f.path, f.title, f.type, f.tags, f.mtime_ns FROM files f WHERE {where} "
        "ORDER BY f.mtime_ns DESC LIMIT ?",
        [*params, limit],
    )
    hits = []
    for fid, path, title, ntype, tags, mtime_ns in rows:
        body_rows = index.query(
            "SELECT substr(body, 1, ?) FROM fts WHERE rowid = ?", (SNIPPET_CHARS, fid << CHUNK_BITS)
        )
        snippet = _clean(body_rows[0][0]) if body_rows and body_rows[0][0] else ""
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
