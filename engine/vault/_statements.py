"""The ranking statements of a search (``_search``): BM25 over passages, names and whole notes, each
filling or returning candidates, and the notes a date in the query names. What they cost, and the caps that
bound it, is in ``_search`` and ``_counts``."""

from __future__ import annotations

from typing import Any

from ..text import ParsedQuery
from ._counts import affordable, phrase, row_cap, selective
from ._fusion import rank_docs
from ._hits import Candidate
from ._index import CHUNK_BITS, VaultIndex

__all__ = [
    "DATED_NOTES",
    "DOCS_BUDGET",
    "NAME_SCORE_WEIGHT",
    "NAME_WEIGHTS",
    "NO_FILTER",
    "N_DOCS",
    "PASSAGE_WEIGHTS",
    "SECOND_PASSAGE_WEIGHT",
    "dated_notes",
    "fetch_names",
    "fetch_passages",
    "pairs",
    "rank_whole_notes",
    "within_budget",
]

# Ranking queries select no stored column: SQLite reads the columns of every matching row before it sorts,
# and a column after a passage's body is reached through the body's overflow pages (the passages shown
# are read once, in ``_hits``). That made up most of a ranking query's time on a small vault.
_PASSAGES = (
    "SELECT fts.rowid, bm25(fts, {w}) AS score FROM fts "
    f"JOIN files f ON f.id = (fts.rowid >> {CHUNK_BITS}) "
    "WHERE fts MATCH ? AND {where} ORDER BY score LIMIT ?"
)
_PASSAGES_ALL = "SELECT rowid, bm25(fts, {w}) AS score FROM fts WHERE fts MATCH ? ORDER BY score LIMIT ?"
_PASSAGES_SAMPLE = "SELECT rowid, -1.0 FROM fts WHERE fts MATCH ? LIMIT ?"
_PASSAGES_SAMPLE_FILTERED = (
    f"SELECT fts.rowid, -1.0 FROM fts JOIN files f ON f.id = (fts.rowid >> {CHUNK_BITS}) "
    "WHERE fts MATCH ? AND {where} LIMIT ?"
)
_NAMES = (
    "SELECT names.rowid, bm25(names, {w}) AS score FROM names JOIN files f ON f.id = names.rowid "
    "WHERE names MATCH ? AND {where} ORDER BY score LIMIT ?"
)
_NAMES_ALL = "SELECT rowid, bm25(names, {w}) AS score FROM names WHERE names MATCH ? ORDER BY score LIMIT ?"
NO_FILTER = "f.is_note = 1"

DATED_NOTES = 3
PASSAGE_WEIGHTS = "2.0, 1.0, 0.0"  # heading chain, text, (heading: not indexed)
NAME_WEIGHTS = "4.0, 4.0, 1.5, 1.0, 0.5"  # title, aliases, tags, all headings, frontmatter values
NAME_SCORE_WEIGHT = 0.25  # a name match is short, so its BM25 runs high: scale it to a passage's
SECOND_PASSAGE_WEIGHT = 0.6  # a second matching passage in the same note adds this share of its score
DOCS_BUDGET = 1500  # whole notes scored per query, at most (about)
N_DOCS = 40  # whole notes ranked per query


def rank_whole_notes(
    index: VaultIndex,
    parsed: ParsedQuery,
    clauses: list[str],
    strict: str,
    where: str,
    params: list[Any],
    extra: list[str],
    found: list[str],
) -> list[int]:
    """Notes ranked by whole-note BM25 over the query's selective words (any of them) and the ``extra``
    phrases (expansions); ``found``: the clauses that some note holds."""
    chosen = within_budget(index, selective(index, clauses, "docs"), DOCS_BUDGET) + extra
    if chosen:
        if extra or any(c in found for c in chosen):
            return rank_docs(index, parsed.relaxed(chosen), where, params, N_DOCS)
        return []
    if len(found) == len(clauses) and affordable(index, strict, "docs", clauses):
        return rank_docs(index, strict, where, params, N_DOCS)
    return []


def within_budget(index: VaultIndex, chosen: list[str], budget: int) -> list[str]:
    """The rarest of ``chosen`` (rarest first) whose matches add up to at most ``budget`` rows: scoring
    costs about a microsecond a row, and the commonest words add the least to a ranking."""
    cap = row_cap(index, "docs")
    kept: list[str] = []
    total = 0
    for clause in chosen:
        total += index.capped_count(clause, cap + 1, "docs")
        if kept and total > budget:
            break
        kept.append(clause)
    return kept


def pairs(clauses: list[str], parsed: ParsedQuery) -> str:
    """Passages holding at least two of the clauses. Each clause appears once per pair, which scales
    every BM25 term by the same factor and so keeps BM25's ranking."""
    pairs = [f"({a} AND {b})" for i, a in enumerate(clauses) for b in clauses[i + 1 :]]
    return "(" + " OR ".join(pairs) + ")" + parsed.negation()


def fetch_passages(
    index: VaultIndex,
    match: str,
    where: str,
    params: list[Any],
    n: int,
    into: dict[int, Candidate],
    ranked: bool = True,
) -> None:
    if not ranked:  # the first rows found, no scoring pass at all
        sql = _PASSAGES_SAMPLE if where == NO_FILTER else _PASSAGES_SAMPLE_FILTERED.format(where=where)
        rows = index.query(sql, [match, n] if where == NO_FILTER else [match, *params, n])
    elif where == NO_FILTER:
        rows = index.query(_PASSAGES_ALL.format(w=PASSAGE_WEIGHTS), [match, n])
    else:
        rows = index.query(_PASSAGES.format(where=where, w=PASSAGE_WEIGHTS), [match, *params, n])
    seen_here: dict[int, int] = {}
    for rowid, rank in rows:
        fid = rowid >> CHUNK_BITS
        score = -float(rank)
        count = seen_here.get(fid, 0)
        seen_here[fid] = count + 1
        existing = into.get(fid)
        if existing is None:
            into[fid] = Candidate(fid, rowid, score)
        elif count == 1:
            existing.score += SECOND_PASSAGE_WEIGHT * score


def dated_notes(index: VaultIndex, spans: list[list[str]]) -> list[int]:
    """The notes whose title holds a date of one of ``spans`` (each: the ISO dates of one date or month the
    query writes in words; "2022-08-20 Mobile Git Backups"), when at most ``DATED_NOTES`` do for that span:
    such a title names the note as a rare title does ("the mid-January 2022 roundup": of a weekly series,
    the one of the 15th)."""
    found: list[int] = []
    for days in spans:
        match = "title : (" + " OR ".join(phrase(day) for day in days) + ")"
        rows = index.query("SELECT rowid FROM names WHERE names MATCH ? LIMIT ?", (match, DATED_NOTES + 1))
        if len(rows) <= DATED_NOTES:
            found += [fid for (fid,) in rows if fid not in found]
    return found


def fetch_names(
    index: VaultIndex, match: str, where: str, params: list[Any], n: int, into: dict[int, Candidate]
) -> None:
    if where == NO_FILTER:
        rows = index.query(_NAMES_ALL.format(w=NAME_WEIGHTS), [match, n])
    else:
        rows = index.query(_NAMES.format(where=where, w=NAME_WEIGHTS), [match, *params, n])
    for fid, rank in rows:
        score = -float(rank) * NAME_SCORE_WEIGHT
        existing = into.get(fid)
        if existing is None:
            into[fid] = Candidate(fid, -1, score)
        else:
            existing.score += score
