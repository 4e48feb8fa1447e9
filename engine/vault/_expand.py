"""What a search adds to the words typed: the synonyms of a word no note holds, and which one-word note
names in a question count.

- A word of the query that no note holds, in any field, also matches its WordNet synonyms that some note
  holds (``engine.lexicon``): "sluggish" finds *slow*. A word the vault uses keeps its own sense.
- A question naming many notes by one word each tells little about any of them, unless the word is rare
  in the vault ("SPI" among "data", "protocol", "line"): ``rare_name``.
"""

from __future__ import annotations

from ..lexicon import synonyms
from ..text import ParsedQuery, parse_query
from ._counts import count_all, count_clauses, phrase, row_cap, row_count
from ._index import VaultIndex

__all__ = ["rare_name", "searched_synonyms", "with_synonyms"]

# A one-word name is rare when at most this many notes hold its word (a floor, a share of the notes). On
# the dev set every limit from 10 to 160 of its 13.4k notes gave the same ranks; 320 began to cost some.
RARE_NAME = (10, 0.005)
MAX_ALTERNATIVES = 8  # synonyms one absent query word may match


def searched_synonyms(index: VaultIndex, query: str) -> dict[str, list[str]]:
    """The words of ``query`` that no note holds, each with the synonyms a search for it also matches
    (what ``_search.search_index`` does with them, said to whoever reads the hits)."""
    parsed = parse_query(query)
    if parsed.empty:
        return {}
    count_clauses(index, parsed.clauses())
    with_synonyms(index, parsed)
    return dict(parsed.alternatives)


def with_synonyms(index: VaultIndex, parsed: ParsedQuery) -> bool:
    """Let each query word that no note holds (in any field) match its synonyms that some note holds
    ("sluggish" -> "slow"); whether any did. Words the vault uses are left alone (``engine.lexicon``)."""
    absent = [
        t for t in parsed.terms if not any(row_count(index, phrase(t), table) for table in ("docs", "names"))
    ]
    offered = {t: synonyms(t) for t in absent}
    # A synonym counts once it is in one note: a count capped at 1 reads a word's first doclist page only.
    count_all(index, [(phrase(w), 1, "docs") for words in offered.values() for w in words])
    for term, words in offered.items():
        used = [w for w in words if index.capped_count(phrase(w), 1, "docs")]
        if used:
            parsed.alternatives[term] = used[:MAX_ALTERNATIVES]
    return bool(parsed.alternatives)


def rare_name(index: VaultIndex, word: str) -> bool:
    """Whether a one-word note name found in the question is a rare word in the vault ("SPI", not
    "Data"): such a name says which note the question is about even among several one-word names."""
    floor, share = RARE_NAME
    limit = max(floor, int(share * index.note_count()))
    return index.capped_count(phrase(word), row_cap(index, "docs") + 1, "docs") <= limit
