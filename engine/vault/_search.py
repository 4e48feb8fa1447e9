"""Ranked search over one vault's index: BM25 over passages and names, grouped by note, with a bonus for
query words in the note's name. The ranking statements are in ``_statements``, the filters in
``_filters``, the fusion of rankings in ``_fusion``, what each hit shows in ``_hits`` (its snippets in
``_snippets``).

What a search costs is mostly the rows its ranking queries score: FTS5's ``bm25()`` looks up each matching
row's size (~1.5 us a row), and counts every row holding each phrase of the query for its IDF (~0.1 us a
row, for every occurrence of a phrase in the expression). The caps (``DOCS_BUDGET`` in ``_statements``;
``SELECTIVE`` and ``AFFORDABLE`` in ``_counts``, which counts the rows a word matches) bound those rows;
the rest of a search is a few lookups by key, done in as few statements as possible, and no stored column
is read for a row that is only ranked. What a search adds to the words typed (synonyms of a word no note
holds, rare one-word names) is in ``_expand``.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from typing import Any

from ..text import ParsedQuery, iso_dates, iso_days_of_months, parse_query
from ._aside import SEARCH_CACHE_KIB, run_aside
from ._counts import (
    AFFORDABLE_LAST,
    affordable,
    count_clauses,
    phrase,
    row_cap,
    row_count,
    selective,
)
from ._expand import rare_name, searched_synonyms, with_synonyms
from ._filters import SearchFilters, allowed, in_folders
from ._fusion import FusionInput, agreed_name, expansions, fuse_linked, key_matches, scoped_names
from ._hits import (
    FIRST_PASSAGES,
    NAME_ONLY,
    OPENING,
    Candidate,
    list_only,
    meta_and_passages,
    read_passages,
    shown_chunk,
    shown_rowids,
    to_hit,
)
from ._index import CHUNK_BITS, VaultIndex
from ._model import Hit
from ._statements import (
    NO_FILTER,
    PASSAGE_WEIGHTS,
    dated_notes,
    fetch_names,
    fetch_passages,
    pairs,
    rank_whole_notes,
)
from ._vectors import fuse_semantic, semantic_ranking

__all__ = ["SearchFilters", "search_index", "searched_synonyms"]

_WORDS = re.compile(r"\w+", re.U)
_RELAX_BELOW = 10  # relax a strict AND query when it finds fewer notes than this (or than the limit)
_MAX_CANDIDATES = 60
# The first hit ranked without a passage, when its note is longer than FIRST_PASSAGES, shows the passage
# that best matches the query.
_SEARCH_PASSAGE_OF = 1
_EXCLUDED_TOKEN = re.compile(r"(?:^|\s)-\S+")


BOILERPLATE_SHARE, BOILERPLATE_NOTES = 0.5, 20

SHORT_QUERY = 3  # up to this many words, try every word in one passage (AND) first
DEMOTED = 0.5  # the fused score of a note in a ``filters.demote`` folder (a template) is multiplied by this
_CACHE_SET: weakref.WeakSet[VaultIndex] = weakref.WeakSet()


def search_index(
    index: VaultIndex,
    vault_id: str,
    query: str,
    limit: int,
    filters: SearchFilters,
    *,
    semantic: bool = True,
) -> list[Hit]:
    """Notes ranked by the fusion (``_fusion``) of passage BM25 (grouped by note, with a bonus for query
    words in the note's name), whole-note BM25 over weighted fields, names found in the query and the
    links among the strongest hits; each hit shows its best passage.

    Short queries first require every word in one passage; longer ones (questions) take passages that
    hold at least two of the query's selective words, which finds the sentence that answers without
    scoring every passage that mentions one common word.
    """
    if index not in _CACHE_SET:
        index.query(f"PRAGMA cache_size = -{SEARCH_CACHE_KIB}")
        _CACHE_SET.add(index)
    parsed = parse_query(query)
    where, params = filters.sql()
    if parsed.excluded:
        where, params = _exclude_words(parsed, where, params) if parsed.empty else (where, params)
    if parsed.empty:
        return list_only(index, vault_id, limit, where, params)
    # What ranks is filtered in SQL only when the filters narrow the search; the hits always are (below).
    rank_where, rank_params = (where, params) if filters.narrows() else (NO_FILTER, [])
    # The candidate pool must not depend on ``limit`` (up to 10), or a smaller limit changes the order.
    n_passages = max(limit * 8, _MAX_CANDIDATES)
    clauses = parsed.clauses()
    strict = parsed.strict()
    # The passages are counted and ranked on another core (``_aside``) while the names and whole notes are
    # here: neither side needs the other's counts or rows until the fusion.
    beside = ("names", "docs")
    count_clauses(index, clauses, beside)
    if with_synonyms(index, parsed):
        clauses, strict = parsed.clauses(), parsed.strict()
        count_clauses(index, clauses, beside)
    # A statement that can find nothing (a word of an AND that no row holds; an OR, or pairs, of words
    # fewer than it needs hold) is not issued: its doclists cost up to 0.4 ms to read for nothing.
    found = {t: [c for c in clauses if row_count(index, c, t)] for t in beside}
    every = {t: len(found[t]) == len(clauses) for t in beside}

    def rank_passages() -> tuple[dict[int, Candidate], bool]:
        count_clauses(index, clauses, ("fts",))
        live_clauses = [c for c in clauses if row_count(index, c, "fts")]
        every_one = len(live_clauses) == len(clauses)
        pool: dict[int, Candidate] = {}
        ranking = (rank_where, rank_params, n_passages)
        if len(clauses) <= SHORT_QUERY and every_one and affordable(index, strict, "fts", clauses):
            fetch_passages(index, strict, *ranking, pool)
        if len(clauses) > 1 and (len(clauses) > SHORT_QUERY or len(pool) < max(limit, _RELAX_BELOW)):
            chosen = selective(index, clauses, "fts")
            live = [c for c in chosen if c in live_clauses]
            if len(chosen) > 2 and len(live) > 1:
                fetch_passages(index, pairs(chosen, parsed), *ranking, pool)
            elif len(chosen) <= 2 and live:
                fetch_passages(index, parsed.relaxed(chosen), *ranking, pool)
        return pool, every_one

    ranked_passages = run_aside(index.db_path, rank_passages)
    by_name: dict[int, Candidate] = {}
    names = selective(index, clauses, "names")
    n_names = max(limit * 3, 30)
    if names:
        if any(c in found["names"] for c in names):
            fetch_names(index, parsed.relaxed(names), rank_where, rank_params, n_names, by_name)
    elif every["names"] and affordable(index, strict, "names", clauses):
        fetch_names(index, strict, rank_where, rank_params, n_names, by_name)
    # A date in words ("August 20, 2022") also looks for the ISO date dated notes are named by.
    dates = iso_dates(query)
    named = " ".join([_EXCLUDED_TOKEN.sub(" ", query), *dates])
    keys, exact, phrases = key_matches(index, named, lambda w: rare_name(index, w))
    dated = dated_notes(index, [[d] for d in dates] + iso_days_of_months(query))
    keys, phrases = [*dated, *(k for k in keys if k not in dated)], phrases | set(dated)
    # An alias inside a longer question also searches for the note's title; a query that *is* an alias
    # already has its note first, and the rest should hold what was typed.
    extra = [phrase(e) for e in expansions(index, [k for k in keys if k not in exact], query)]
    # An expansion is a rare phrase in a real vault ("serial peripheral interface"). One whose every word
    # many notes hold costs more to match than the rest of a search (position lists of common words:
    # ~0.35 ms of the median, up to 20 ms, at 100 MB) and tells the ranking little; a phrase with one rare
    # word is never common itself. Words recur from search to search, so their counts are mostly cached.
    cap = row_cap(index, "docs")
    extra = [
        e
        for e in extra
        if min((row_count(index, phrase(w), "docs") for w in _WORDS.findall(e)), default=cap + 1) <= cap
    ]
    extra += [phrase(d) for d in dates]  # common words, but a whole date is rare (and rarely asked)
    docs = rank_whole_notes(index, parsed, clauses, strict, rank_where, rank_params, extra, found["docs"])
    # Every word is very common: the notes whose names hold them all ("Sync Obsidian": the note named
    # "Obsidian Sync") are far fewer than the passages that do, and ranking them costs a tenth.
    # The notes the query names are not filtered in SQL: a name the filters refuse finds nothing (a search
    # inside one note, ``path=``, for "plugins", which a note's title holds), and the fallbacks below run.
    candidates, every["fts"] = ranked_passages()
    for fid, name_hit in by_name.items():  # a note's name match adds to its passages' score
        if fid in candidates:
            candidates[fid].score += name_hit.score
        else:
            candidates[fid] = name_hit
    kept_keys = keys
    if keys and filters.narrows():
        passed = allowed(index, set(keys), filters, where, params)
        kept_keys = [k for k in keys if k in passed]
    nothing = not candidates and not docs and not kept_keys
    if nothing and every["names"] and not names and _names_cheaper(index, strict):
        fetch_names(index, strict, rank_where, rank_params, n_names, candidates)
    if not candidates and not docs and not kept_keys and every["fts"]:
        # Every word is very common (and so is their combination): ranked while that stays bearable, else
        # an unranked sample, better than nothing.
        rank_all = affordable(index, strict, "fts", times=AFFORDABLE_LAST)
        fetch_passages(index, strict, rank_where, rank_params, n_passages, candidates, ranked=rank_all)
    # A vault that opted into semantic ranking (``_vectors``) also ranks notes by what the query means.
    by_meaning = semantic_ranking(index, query) if semantic else []
    if not candidates and not docs and not keys and not by_meaning:
        return []
    by_passage = [c.fid for c in sorted(candidates.values(), key=lambda c: c.score, reverse=True)]
    # Every list holds only notes the filters let through (the names and, unless the filters narrow the
    # search, the ranking queries are not filtered in SQL): a note refused must not take a rank.
    ok = allowed(index, {*by_passage, *docs, *keys}, filters, where, params)
    by_passage, docs, keys = ([f for f in ids if f in ok] for ids in (by_passage, docs, keys))
    inputs = FusionInput(by_passage, docs, keys, exact & ok, phrases & ok)
    # A name that only says where to look ("the mathematical objection to the Turing test") counts for
    # no more; the note it points at counts as named by its title.
    broad, specific = scoped_names(index, inputs, query, lambda w: rare_name(index, w))
    specific = {f for f in specific if f in ok}
    rest = [f for f in inputs.keys if f not in broad and f not in specific]
    inputs.keys, inputs.phrases = [*sorted(specific), *rest], (inputs.phrases | specific) - broad
    agreed = agreed_name(inputs)
    if agreed is not None and agreed not in inputs.phrases:  # no other name outweighs it
        inputs.phrases = set()
    scores = fuse_linked(index, inputs)
    for fid in in_folders(index, scores, filters.demote) - inputs.exact:
        scores[fid] *= DEMOTED
    for fid, value in scores.items():
        if fid not in candidates:
            candidates[fid] = Candidate(fid, NAME_ONLY, 0.0)
        candidates[fid].score = value
    for fid in inputs.exact:
        candidates[fid].chunk = OPENING
    ranked = sorted((candidates[fid] for fid in scores), key=lambda c: (-c.score, c.fid))
    if by_meaning:
        unseen = {f for f in by_meaning if f not in candidates}
        refused = unseen - allowed(index, unseen, filters, where, params)
        by_meaning = [f for f in by_meaning if f not in refused]
        for fid in by_meaning:
            candidates.setdefault(fid, Candidate(fid, NAME_ONLY, 0.0))
        fused = fuse_semantic([c.fid for c in ranked], by_meaning, inputs.exact)
        for fid in in_folders(index, fused, filters.demote) - inputs.exact:
            fused[fid] *= DEMOTED
        for fid, value in fused.items():
            candidates[fid].score = value
        ranked = sorted((candidates[fid] for fid in fused), key=lambda c: (-c.score, c.fid))
    if parsed.excluded:
        ranked = _drop_excluded(index, parsed, ranked[: limit * 3 + 10])
    ranked = ranked[: limit + 5]  # room for notes that vanished since they were ranked
    top = {c.fid: c for c in ranked}
    # The notes' fields and the passages the first ``limit`` of them show, in one statement; a note that
    # vanished (or is refused) is dropped, and the passages of the notes that take its place read after.
    passages = meta_and_passages(index, top, ranked[:limit], where, params)
    read = {r for c in ranked[:limit] for r in shown_rowids(c)}
    shown = [c for c in ranked if c.fid in top][:limit]
    # A section most notes share (a template's footer: "This note in GitHub") says nothing of its note:
    # the note shows its best other passage, or its opening.
    words = parsed.words()
    density: dict[int, float] = {}
    titles = {c.title for c in shown}
    picked = [shown_chunk(c, words, passages, density=density) for c in shown]
    # (a note's own title heads its opening: never a template's)
    common = _boilerplate(index, {passages[r][0] for r in picked if r in passages} - titles)
    moved = [c for c in shown if c.chunk in passages and passages[c.chunk][0] in common]
    long_notes = [
        c for c in shown[:_SEARCH_PASSAGE_OF] if c.chunk == NAME_ONLY and c.passages > FIRST_PASSAGES
    ]
    if long_notes or moved:
        chosen = selective(index, clauses, "fts") or clauses
        _best_passages(index, chosen, parsed, [*long_notes, *moved], avoid=sorted(common))
        for c in moved:
            c.chunk = (
                c.fid << CHUNK_BITS if c.chunk in passages and passages[c.chunk][0] in common else c.chunk
            )
    missing = [r for c in shown for r in shown_rowids(c) if r not in read]
    if missing:
        passages.update(read_passages(index, missing))
    return [to_hit(vault_id, c, parsed, passages, common, density) for c in shown]


def _names_cheaper(index: VaultIndex, strict: str) -> bool:
    """Whether the names that hold every word are few enough to rank instead of passages: as many as
    ``AFFORDABLE_LAST`` times the names' cap, or fewer than the passages that hold them, within the
    passage ranking's own bound ("Themes" at 100 MB: 1.4k names against 7k passages, 3 against 14 ms)."""
    if affordable(index, strict, "names", times=AFFORDABLE_LAST):
        return True
    bound = AFFORDABLE_LAST * row_cap(index, "fts")
    held = index.capped_count(strict, bound + 1, "names")
    return held <= bound and held < index.capped_count(strict, bound + 1, "fts")


def _best_passages(
    index: VaultIndex,
    chosen: list[str],
    parsed: ParsedQuery,
    found: list[Candidate],
    avoid: Sequence[str] = (),
) -> None:
    """For notes ranked by other signals than a passage: their passage that best matches the query's
    selective words (``chosen``), under none of the headings ``avoid``."""
    match = parsed.relaxed(chosen)
    other = f" AND heading NOT IN ({','.join('?' * len(avoid))})" if avoid else ""
    for c in found:
        lo = c.fid << CHUNK_BITS
        rows = index.query(
            f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid >= ? AND rowid < ?{other} "
            f"ORDER BY bm25(fts, {PASSAGE_WEIGHTS}) LIMIT 1",
            (match, lo, lo + (1 << CHUNK_BITS), *avoid),
        )
        if rows:
            c.chunk = rows[0][0]


def _boilerplate(index: VaultIndex, headings: set[str | None]) -> set[str]:
    """Of ``headings``, those at least ``BOILERPLATE_SHARE`` of the notes have (and ``BOILERPLATE_NOTES``):
    a template's sections, not what a note is about. Counted once per index state (``capped_count``)."""
    cap = max(BOILERPLATE_NOTES, int(BOILERPLATE_SHARE * index.note_count()))
    return {h for h in headings if h and index.capped_count(f"headings : {phrase(h)}", cap, "names") >= cap}


def _drop_excluded(index: VaultIndex, parsed: ParsedQuery, ranked: list[Candidate]) -> list[Candidate]:
    """``-word`` excludes notes that hold the word anywhere, not only in the passage that matched."""
    match = " OR ".join(f'"{w}"' for w in parsed.excluded)
    kept = []
    for c in ranked:
        lo = c.fid << CHUNK_BITS
        in_text = index.query(
            "SELECT 1 FROM fts WHERE fts MATCH ? AND rowid >= ? AND rowid < ? LIMIT 1",
            (match, lo, lo + (1 << CHUNK_BITS)),
        )
        in_name = index.query("SELECT 1 FROM names WHERE names MATCH ? AND rowid = ?", (match, c.fid))
        if not in_text and not in_name:
            kept.append(c)
    return kept


def _exclude_words(parsed: ParsedQuery, where: str, params: list[Any]) -> tuple[str, list[Any]]:
    """For a query of only ``-words``: list the notes that hold none of them."""
    match = " OR ".join(f'"{w}"' for w in parsed.excluded)
    clause = (
        f" AND f.id NOT IN (SELECT rowid >> {CHUNK_BITS} FROM fts WHERE fts MATCH ?)"
        " AND f.id NOT IN (SELECT rowid FROM names WHERE names MATCH ?)"
    )
    return where + clause, [*params, match, match]
