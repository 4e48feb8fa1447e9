"""How many rows of a table of the index a search's words (or phrases) match, counted no further than
a cap and cached on the index: what decides which words are rare enough to rank by (``selective``) and
which AND queries are cheap enough to rank whole (``affordable``). Counting stops at the cap, so even a
word every note holds costs little.
"""

from __future__ import annotations

from ._index import VaultIndex

__all__ = [
    "AFFORDABLE",
    "AFFORDABLE_LAST",
    "SELECTIVE",
    "affordable",
    "count_all",
    "count_clauses",
    "phrase",
    "row_cap",
    "row_count",
    "selective",
]

# A word found in more than this share of passages (or names) is too common to rank by: scoring every
# passage that holds it costs ~1 us each and its IDF adds little. It still counts in the AND query.
SELECTIVE = {"fts": (2000, 0.01), "names": (300, 0.005), "docs": (500, 0.01)}
# An AND query is ranked when it matches at most this many times the selective cap: scoring a row costs
# ~1.5 us, so an AND of common words ("github stars": 6.9k of the 100 MB vault's passages) costs more than
# all the rest of a search; such a query is ranked by its names and whole notes instead.
AFFORDABLE = 1
# When nothing else ranked anything (every word is common, and so is their AND), the AND is still ranked
# up to this many times the cap: slow, but rare (3% of the benchmark's queries); past it, a sample.
AFFORDABLE_LAST = 4
COUNTS_PER_STATEMENT = 300  # capped counts computed in one statement (each is a scalar subquery)


def phrase(words: str) -> str:
    """``words`` as one quoted FTS5 phrase."""
    return '"' + words.replace('"', '""') + '"'


def row_cap(index: VaultIndex, table: str) -> int:
    """The rows of ``table`` above which a word is too common to rank by (``SELECTIVE``)."""
    floor, share = SELECTIVE[table]
    total = index.passage_count() if table == "fts" else index.note_count()
    return max(floor, int(share * total))


def row_count(index: VaultIndex, clause: str, table: str) -> int:
    """The rows of ``table`` that ``clause`` matches, capped as ``selective`` counts them (cached)."""
    return index.capped_count(clause, row_cap(index, table) + 1, table)


def selective(index: VaultIndex, clauses: list[str], table: str) -> list[str]:
    """The clauses rare enough to rank by, rarest first."""
    cap = row_cap(index, table)
    counted = sorted((index.capped_count(c, cap + 1, table), c) for c in clauses)
    return [c for n, c in counted if n <= cap]


def affordable(
    index: VaultIndex, match: str, table: str, clauses: list[str] | None = None, times: int | None = None
) -> bool:
    """Whether ranking every row that ``match`` finds stays cheap (a sampled count decides). ``match``
    being the AND of ``clauses`` (and maybe NOTs), it finds no more rows than its rarest clause."""
    selective = row_cap(index, table)
    if clauses and min(index.capped_count(c, selective + 1, table) for c in clauses) <= selective:
        return True
    cap = (times or AFFORDABLE) * selective
    return index.capped_count(match, cap + 1, table) <= cap


def count_clauses(index: VaultIndex, clauses: list[str], tables: tuple[str, ...] = tuple(SELECTIVE)) -> None:
    """Count (capped, as ``selective`` does) the rows of each of ``tables`` that each clause matches, all
    in one statement, into the index's count cache: every count is cheap, but a statement each (three
    tables, every word of a question) cost more than all of them together."""
    count_all(index, [(c, row_cap(index, table) + 1, table) for table in tables for c in clauses])


def count_all(index: VaultIndex, keys: list[tuple[str, int, str]]) -> None:
    """``index.capped_count`` of each (match, cap, table) not cached yet, in as few statements as may be."""
    todo = [key for key in dict.fromkeys(keys) if key not in index._counts]
    for i in range(0, len(todo), COUNTS_PER_STATEMENT):
        chunk = todo[i : i + COUNTS_PER_STATEMENT]
        sql = "SELECT " + ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM {t} WHERE {t} MATCH ? LIMIT ?))" for _, _, t in chunk
        )
        row = index.query(sql, [x for match, cap, _ in chunk for x in (match, cap)])[0]
        if len(index._counts) > 50_000:  # bounded, as ``capped_count`` keeps it
            index._counts.clear()
        index._counts.update(zip(chunk, row))
