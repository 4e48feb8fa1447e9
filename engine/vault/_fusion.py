"""What the vault knows that plain BM25 over passages ignores, as rankings to fuse with it.

- **Whole notes** (``docs``): BM25 over every field of a note at once, with weights (title and aliases over
  headings over frontmatter values and text), so a question whose words are spread over a note's title
  and several sections still finds it.
- **Names in the question**: a note whose title or alias appears in the question as a phrase ("Who
  directed Blade Runner?") — looked up in ``keys``, never by scanning. A rare title of several words weighs
  as much as a ranking ("What is an AI agent made of?"); a name that only says where to look (a stronger
  hit's title adds words the question uses: "the mathematical objection to the Turing test") counts for
  nothing more. An alias inside a longer question also expands the whole-note query with the note's title
  ("SPI" → "serial peripheral interface").
- **The link graph**: among the notes the query found, those linked from or to the strongest hits (one
  hop; hub notes left out) rise, most when linked with several of them. ``linked_notes`` gives the
  retrievers the notes one link away, for the second step of a two-step question.

Each source gives a ranked list; they are combined by weighted reciprocal rank fusion (RRF), which needs
no calibration between BM25 scores of different tables. Exact title or alias matches of the whole query
stay first: they get a bonus above anything fusion can add.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..text import AUXILIARIES, STOP_WORDS
from ._index import VaultIndex
from ._index_db import name_key

__all__ = [
    "FusionInput",
    "NamedInQuery",
    "Scoped",
    "agreed_name",
    "asked_kind",
    "expansions",
    "fuse",
    "fuse_linked",
    "graph_neighbours",
    "key_matches",
    "linked_notes",
    "rank_docs",
    "scoped_names",
]

NO_FILTER = "f.is_note = 1"  # the filter clause that leaves out nothing (as ``_search`` spells it)
# title, aliases, headings, frontmatter values, text. An alias weighs less than the title: it is often one
# short word that questions use in passing, and a query that *is* an alias is caught by ``key_matches``.
DOC_WEIGHTS = "8.0, 3.0, 2.0, 1.0, 1.0"
RRF_K = 20  # rank offset: smaller favours the top of each list more
# "keys": a note named in the query ("Pipeline"), often in passing; "phrases": by its title of two or more
# words, which few notes use ("What is an AI agent made of?": the note "AI Agent"), seldom by chance.
# passages 1.1, not 1.0: a note first by its passage and second as a whole note then wins the near tie
# with the reverse, which held on 86 questions written blind (r@1 +3) and cost one of the 56 tuned ones.
LIST_WEIGHTS = {"passages": 1.1, "docs": 2.0, "keys": 0.3, "phrases": 1.0, "graph": 0.05}
EXACT_BONUS = 1.0  # the whole query is a note's title or alias: above any fused score (at most ~0.15)
MAX_NGRAM = 6  # longest title or alias looked for inside a question, in words
GRAPH_SEEDS = 3  # the strongest hits whose links are followed
MAX_LINKS = 150  # a hub note linking to more than this gives no signal: its links are not followed
_WORDS = re.compile(r"\w+", re.U)


@dataclass
class FusionInput:
    """Ranked note ids from each source, best first."""

    passages: list[int] = field(default_factory=list)
    docs: list[int] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    exact: set[int] = field(default_factory=set)
    phrases: set[int] = field(default_factory=set)  # of ``keys``: named by a title of two or more words


class NamedInQuery(NamedTuple):
    """What ``key_matches`` found: the notes named in a query, longest name first; those whose name is
    the whole query; those named by a rare title of two or more words (``_named_by_title``)."""

    found: list[int]
    exact: set[int]
    phrases: set[int]


def rank_docs(index: VaultIndex, match: str, where: str, params: list[object], n: int) -> list[int]:
    """Note ids ranked by whole-note BM25 for the FTS5 expression ``match``, filtered by ``where``."""
    if where == NO_FILTER:  # every row of ``docs`` is a note: no join with ``files`` (a lookup per row)
        sql = f"SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, {DOC_WEIGHTS}) LIMIT ?"
        return [row[0] for row in index.query(sql, [match, n])]
    sql = (
        f"SELECT docs.rowid FROM docs JOIN files f ON f.id = docs.rowid WHERE docs MATCH ? AND {where} "
        f"ORDER BY bm25(docs, {DOC_WEIGHTS}) LIMIT ?"
    )
    return [row[0] for row in index.query(sql, [match, *params, n])]


def key_matches(index: VaultIndex, query: str, rare: Callable[[str], bool] | None = None) -> NamedInQuery:
    """The notes whose title or alias occurs in ``query`` as a phrase (``NamedInQuery``). A one-word name
    counts only when it is not a stop word, and when few notes are named by one word in the query or
    ``rare`` says the word is rare in the vault."""
    words = _WORDS.findall(query.lower())
    if not words:
        return NamedInQuery([], set(), set())
    whole = " ".join(words)
    grams: dict[str, int] = {}
    for n in range(min(MAX_NGRAM, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i : i + n])
            if n == 1 and (gram in STOP_WORDS or len(gram) < 3 or gram.isdigit()):
                continue
            grams.setdefault(gram, n)
    if not grams:
        return NamedInQuery([], set(), set())
    found: dict[int, int] = {}
    named: dict[int, str] = {}
    exact: set[int] = set()
    keys = list(grams)
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for key, fid in index.query(f"SELECT key, file_id FROM keys WHERE key IN ({marks})", chunk):
            if grams[key] > found.get(fid, 0):
                found[fid], named[fid] = grams[key], key
            if key == whole:
                exact.add(fid)
    # Many notes sharing one short name ("Readme", "Index") tell little: only the names of few notes.
    by_len = sorted(found, key=lambda fid: -found[fid])
    keep = [
        fid
        for fid in by_len
        if found[fid] > 1 or _rare(found, fid) or (rare is not None and rare(named[fid]))
    ]
    keep = keep[:30]
    by_title = _named_by_title(index, keep, found, named, rare)
    return NamedInQuery(keep, exact, {fid for fid in by_title if not asked_kind(whole, named[fid])})


# "Which AI assistant does it let you chat with?": a name right after "which" or "what" and before the
# verb is the kind of thing asked for, what the answer is one of, not what the question is about.
def asked_kind(words: str, name: str) -> bool:
    """Whether ``name`` is the kind of thing the question asks for (``words``: its words, lower-cased,
    one space apart): "which NAME does ...", "what NAME is ..."."""
    return re.search(rf"\b(?:which|what) {re.escape(name)} (?:{AUXILIARIES})\b", words) is not None


def _named_by_title(
    index: VaultIndex,
    keep: list[int],
    found: dict[int, int],
    named: dict[int, str],
    rare: Callable[[str], bool] | None,
) -> set[int]:
    """The note a query names by its title of two or more words, a title few notes use: what the query is
    about. An alias is looser (often the broader subject: "Amortized Analysis" for the note "Amortized
    Time"); a name many notes use ("Obsidian Publish" in the product's own help) is the vault's topic,
    not the question's; with two notes named by title, neither is the one."""
    several = [fid for fid in keep if found[fid] > 1]
    if not several or rare is None:
        return set()
    by_title = [fid for fid, (_path, title) in _names_of(index, several).items() if title == named[fid]]
    # Two notes named by their titles ("what grind size for a French press?"): both are the subject.
    return {by_title[0]} if len(by_title) == 1 and rare(named[by_title[0]]) else set()


def _names_of(index: VaultIndex, ids: list[int]) -> dict[int, tuple[str, str]]:
    """Note id -> (path, title as a lookup key: ``name_key``), in the order the index returns them."""
    sql = f"SELECT id, path, title FROM files WHERE id IN ({','.join('?' * len(ids))})"
    return {fid: (path, name_key(title or "")) for fid, path, title in index.query(sql, ids)}


def _rare(found: dict[int, int], fid: int) -> bool:
    return sum(1 for n in found.values() if n == found[fid]) <= 3


class Scoped(NamedTuple):
    """What ``scoped_names`` found: the names that only say where to look (``broad``), and the more
    specific notes they point at (``specific``): what the query names."""

    broad: set[int]
    specific: set[int]


def agreed_name(inp: FusionInput) -> int | None:
    """The note both text rankings (passages, whole notes) put first, when the query names it too (by a
    title or an alias): what the question is about, whatever other note it names. A title phrase lifts a
    note the text rankings under-rate ("What is an AI agent made of?"); against such agreement it would
    override the question's subject with a name said in passing ("What does uncurry do to a Haskell
    function's arguments?": "uncurry" names the first note, "Haskell function" another)."""
    if inp.passages and inp.docs and inp.passages[0] == inp.docs[0] and inp.passages[0] in inp.keys:
        return inp.passages[0]
    return None


def scoped_names(
    index: VaultIndex, inp: FusionInput, query: str, rare: Callable[[str], bool] | None = None, near: int = 10
) -> Scoped:
    """Of the notes ``query`` names by their title, those it names only to say where to look: a more
    specific note among the strongest hits (the first ``near`` of the passage or whole-note ranking) adds to
    the name words the query also uses, in its title ("the mathematical objection to the Turing test": the
    note "Turing Test Mathematical Objection") or in its title and folder ("the 2022-07-30 Obsidian
    Roundup": "Obsidian Roundup/2022-07-30 Obsidian Shirts ..."): two such words, or one that ``rare``
    says is rare in the vault ("episode 145 of the Well Made podcast"). Such a name counts for no more;
    the note it points at is the one the query names, as if by its title (unless it only points further
    on itself: "Test" at "Turing Test" at "Turing Test Mathematical Objection"). A note named by an alias
    is broad when the note both text rankings put first holds that alias in a longer title
    (``_aliases_within_the_agreed_note``)."""
    named = [fid for fid in inp.keys if fid not in inp.exact]
    if not named:
        return Scoped(set(), set())
    strong = list(dict.fromkeys(inp.passages[:near] + inp.docs[:near]))
    rows = _names_of(index, list({*strong, *named}))
    words = _WORDS.findall(query.lower())
    spoken, asked = f" {' '.join(words)} ", set(words)
    broad: dict[int, int] = {}  # named note -> the more specific one it points at
    for fid in named:
        key = rows.get(fid, ("", ""))[1]
        if not key or f" {key} " not in spoken:  # named by an alias: often the broader subject already
            continue
        for other in strong:
            if other == fid or other not in rows:
                continue
            path, title = rows[other]
            shared = [w for w in title.split() if w in asked and w not in key.split() and w not in STOP_WORDS]
            # One common word shared ("community") is chance; two, or one rare ("145"), are not.
            if len(shared) < 2 and not (shared and rare is not None and rare(shared[0])):
                continue
            within = title != key and f" {key} " in f" {title} "
            if within or key in (name_key(folder) for folder in path.split("/")[:-1]):
                broad[fid] = other
                break
    left = [fid for fid in named if fid not in broad]
    broad.update(_aliases_within_the_agreed_note(index, inp, left, rows, spoken))
    return Scoped(set(broad), {other for other in broad.values() if other not in broad})


def _aliases_within_the_agreed_note(
    index: VaultIndex, inp: FusionInput, named: list[int], rows: dict[int, tuple[str, str]], spoken: str
) -> dict[int, int]:
    """The notes of ``named`` the query names by an alias that the title of the note both text rankings put
    first holds, with more words ("On Linux, Web Clipper opens Obsidian but only saves the file name": the
    alias "Web Clipper" of the product's introduction, and "Troubleshoot Web Clipper"), each mapped to that
    note. An alias names the broader subject; the rankings' agreement says which part of it is asked."""
    top = inp.passages[0] if inp.passages and inp.docs and inp.passages[0] == inp.docs[0] else None
    if top is None or top in named or top not in rows or not named:
        return {}
    title = f" {rows[top][1]} "
    marks = ",".join("?" * len(named))
    found: dict[int, int] = {}
    for key, fid in index.query(f"SELECT key, file_id FROM keys WHERE file_id IN ({marks})", named):
        by_alias = key != rows.get(fid, ("", ""))[1]  # a title names what is asked ("evergreen note")
        if by_alias and f" {key} " in spoken and f" {key} " in title and title.strip() != key:
            found[fid] = top
    return found


def expansions(index: VaultIndex, found: list[int], query: str, most: int = 3) -> list[str]:
    """Query expansion from aliases: for notes named in the query by an alias ("SPI"), their title as a
    phrase ("serial peripheral interface"), so that text using the full name matches too."""
    if not found:
        return []
    words = " ".join(_WORDS.findall(query.lower()))
    ids = found[:10]
    out: list[str] = []
    # Bound, not written into the statement: SQLite then prepares it once for each count of ids.
    for (title,) in index.query(f"SELECT title FROM files WHERE id IN ({','.join('?' * len(ids))})", ids):
        key = name_key(title or "")
        if key and len(key.split()) > 1 and f" {key} " not in f" {words} " and key not in out:
            out.append(key)
    return out[:most]


_OUT_LINKS = (
    "SELECT 0, ?, dst FROM (SELECT e.dst FROM edges e JOIN files f ON f.id = e.dst "
    "WHERE e.src = ? AND f.is_note = 1 LIMIT ?)"
)
_BACKLINKS = "SELECT 1, ?, src FROM (SELECT src FROM edges WHERE dst = ? LIMIT ?)"


def graph_neighbours(index: VaultIndex, seeds: Iterable[int]) -> dict[int, list[int]]:
    """For each seed note, the notes it links to or that link to it (one hop, hubs left out), as its links
    were resolved at index time (``edges``: the note Obsidian opens, never every note of that name)."""
    seeds = list(seeds)
    if not seeds:
        return {}
    out_links: dict[int, set[int]] = {fid: set() for fid in seeds}
    in_links: dict[int, set[int]] = {fid: set() for fid in seeds}
    # One statement for (up to 50) seeds: each seed's links out and its backlinks, each read no further
    # than MAX_LINKS + 1 rows (a hub's are many and are not followed: reading all 5k links of one took
    # 14 ms). Rows, not distinct notes (DISTINCT sorts, which cost more than the rest): a side cut off
    # with MAX_LINKS or fewer distinct notes in it (a note linked many times) is read again in full.
    cut = MAX_LINKS + 1
    for i in range(0, len(seeds), 50):
        chunk = seeds[i : i + 50]
        rows = index.query(
            " UNION ALL ".join([_OUT_LINKS, _BACKLINKS] * len(chunk)),
            [x for fid in chunk for x in (fid, fid, cut) * 2],
        )
        counted: dict[tuple[int, int], int] = {}
        for back, fid, other in rows:
            (in_links if back else out_links)[fid].add(other)
            counted[back, fid] = counted.get((back, fid), 0) + 1
        for (back, fid), n in counted.items():
            links = (in_links if back else out_links)[fid]
            if n == cut and len(links) <= MAX_LINKS:
                sql = _BACKLINKS if back else _OUT_LINKS
                links.update(r[2] for r in index.query(sql, (fid, fid, -1)))
    out: dict[int, list[int]] = {}
    for fid in seeds:
        linked = out_links[fid] if len(out_links[fid]) <= MAX_LINKS else set()
        if len(in_links[fid]) <= MAX_LINKS:
            linked |= in_links[fid]
        linked.discard(fid)
        out[fid] = sorted(linked)
    return out


def linked_notes(index: VaultIndex, path: str, match: str | None, limit: int) -> list[str]:
    """Paths of the notes linked from or to the note at ``path`` (one hop); with ``match`` (an FTS5
    expression), only those that match it, best first, hub notes left out (a category's index linking to
    more than MAX_LINKS notes holds every word of a question and answers none: "what website does that
    developer list?" must reach the developer's note, not "Uncategorized plugins")."""
    row = index.query("SELECT id FROM files WHERE path = ? AND is_note = 1", (path,))
    if not row:
        return []
    ids = graph_neighbours(index, [row[0][0]]).get(row[0][0], [])
    if ids and match:
        marks = ",".join("?" * len(ids))
        sql = f"SELECT src FROM edges WHERE src IN ({marks}) GROUP BY src HAVING count(*) > ?"
        hubs = index.query(sql, [*ids, MAX_LINKS])
        ids = [i for i in ids if i not in {h[0] for h in hubs}]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    if match:
        ids = [
            r[0]
            for r in index.query(
                f"SELECT rowid FROM docs WHERE docs MATCH ? AND rowid IN ({marks}) "
                f"ORDER BY bm25(docs, {DOC_WEIGHTS}) LIMIT ?",
                [match, *ids, limit],
            )
        ]
    if not ids:
        return []
    paths = dict(index.query(f"SELECT id, path FROM files WHERE id IN ({','.join('?' * len(ids))})", ids))
    return [paths[i] for i in ids[:limit] if i in paths]


def fuse(inp: FusionInput, graph: dict[int, list[int]] | None = None) -> dict[int, float]:
    """Weighted reciprocal-rank fusion of the lists; then ``graph`` (seed -> its linked notes) lifts the
    ranked notes linked with the seeds, by the seed's rank: summed over seeds, so a note linked with several
    of the strongest hits rises most."""
    return _finish(inp, _rrf(inp), graph)


def fuse_linked(index: VaultIndex, inp: FusionInput) -> dict[int, float]:
    """``fuse`` with the graph around the GRAPH_SEEDS strongest notes of the fusion without it (the lists
    fused once, not once for the seeds and again for the scores)."""
    base = _rrf(inp)
    first = dict(base)
    for fid in inp.exact:
        first[fid] = first.get(fid, 0.0) + EXACT_BONUS
    seeds = heapq.nlargest(GRAPH_SEEDS, first, key=first.__getitem__)  # ties: the first found, as sorted()
    return _finish(inp, base, graph_neighbours(index, seeds))


def _rrf(inp: FusionInput) -> dict[int, float]:
    scores: dict[int, float] = {}
    lists = (("passages", inp.passages), ("docs", inp.docs), ("keys", inp.keys))
    for name, ranked in lists:
        for rank, fid in enumerate(ranked, 1):
            weight = LIST_WEIGHTS["phrases" if name == "keys" and fid in inp.phrases else name]
            scores[fid] = scores.get(fid, 0.0) + weight / (RRF_K + rank)
    return scores


def _finish(inp: FusionInput, base: dict[int, float], graph: dict[int, list[int]] | None) -> dict[int, float]:
    """The fused ``base`` scores lifted by ``graph`` and the exact-name bonus."""
    scores = dict(base)
    if graph:
        position = {fid: i for i, fid in enumerate(sorted(base, key=lambda f: -base[f]), 1)}
        for seed, neighbours in graph.items():
            lift = LIST_WEIGHTS["graph"] / (RRF_K + position.get(seed, len(position)))
            for fid in neighbours:
                if fid in base:
                    scores[fid] += lift
    for fid in inp.exact:
        scores[fid] = scores.get(fid, 0.0) + EXACT_BONUS
    return scores
