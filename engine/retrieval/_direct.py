"""Retrieval: what a node learns from the vaults before it answers.

``Retriever`` is the interface the orchestrator calls; the Code Mode sandbox (model-written scripts)
plugs in behind it. ``DirectSearchRetriever`` searches the vaults directly and hands over whole sections
(the heading a hit falls under), each with its full-path citation. The engine scores every retrieval
itself (``retrieval_score``), independent of anything a script claims.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..config import HISTORY_FOLDER, UNCITED_FOLDERS
from ..strategies import split_clauses, stage_subject
from ..text import parse_query, points_back_by_pronoun, stem, stems_of
from ..vault import Hit, Note, VaultSet, indexed_text, properties_text
from ._findings import Findings
from .citations import make_citation

__all__ = [
    "REFERENTS",
    "ContextItem",
    "DirectSearchRetriever",
    "RetrievalResult",
    "Retriever",
    "merge_context",
    "retrieval_score",
    "section",
]

_WORDS = re.compile(r"\w+", re.U)
SECTION_CHARS = 1200
# The signal naming the sections one link from what a node's dependencies read: what a second step's "that
# developer" points at (the offline answer counts the pointed noun for them only).
REFERENTS = "referents"
# Labels a retrieval adds to its ``queries`` for a step the engine took, not a search of the vault: what
# was looked for is the rest (the gap analysis reads queries as what runs asked the vault).
LINKS_FOLLOWED = "notes linked with the best hits"
SCRIPT_LINKS_FOLLOWED = "notes linked with the script's notes"
ENGINE_STEPS = frozenset({LINKS_FOLLOWED, SCRIPT_LINKS_FOLLOWED})
LINKED_ITEMS = 2  # sections of notes linked with the best hits that may take the place of the last hits
LINKED_FROM = 3  # the best hits whose links are followed


@dataclass
class ContextItem:
    vault: str
    path: str
    heading: str | None
    text: str
    citation: str
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RetrievalResult:
    context: list[ContextItem]
    queries: list[str]
    method: str  # "direct" | "codemode"
    signals: dict[str, Any] = field(default_factory=dict)
    confidence: float = 0.0
    why: str = ""
    retrieval_score: float = 0.0

    @property
    def citations(self) -> list[dict[str, Any]]:
        return [{"vault": c.vault, "path": c.path, "heading": c.heading} for c in self.context]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["citations"] = self.citations
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalResult:
        """Back from ``to_dict`` (a checkpoint keeps the retrieval it judged this way)."""
        items = [
            ContextItem(**{k: c[k] for k in ContextItem.__dataclass_fields__ if k in c})
            for c in data.get("context", [])
        ]
        return cls(
            items,
            list(data.get("queries", [])),
            str(data.get("method", "")),
            dict(data.get("signals", {})),
            float(data.get("confidence", 0.0)),
            str(data.get("why", "")),
            float(data.get("retrieval_score", 0.0)),
        )


class Retriever(Protocol):
    """``findings``: what the node's dependencies found (given only when there is something)."""

    async def retrieve(
        self, task: str, goal: str, node_id: str, findings: Findings | None = None
    ) -> RetrievalResult: ...


def citation_link(vault_id: str, path: str, heading: str | None, multi_vault: bool) -> str:
    """``[[Folder/Note#Heading]]``: the full path without ``.md``; ``vault:`` first when several vaults."""
    return make_citation(vault_id, path, heading, multi_vault)


def section(note: Note, heading: str | None, snippet: str) -> str:
    """The text under ``heading`` (up to the next heading of the same or a higher level), as a reader sees
    it: without comments, image addresses and HTML tags (a plugin note opens with a comment and a row of
    badge images)."""
    body = note.body
    start, end = 0, len(body)
    if heading:
        for i, h in enumerate(note.headings):
            if h.text == heading:
                start = h.offset
                later = [x for x in note.headings[i + 1 :] if x.level <= h.level]
                end = later[0].offset if later else len(body)
                break
    text = indexed_text(body[start:end]).strip()
    if not heading and note.frontmatter:  # the lead section: the properties Obsidian shows above it
        text = "\n".join(t for t in (properties_text(note.frontmatter, note.body, web=True), text) if t)
    if len(text) <= SECTION_CHARS:
        return text
    # A long section: keep the window around the snippet the search found.
    probe = snippet.strip("…").strip()[:60]
    at = text.find(probe) if probe else -1
    at = max(0, at - SECTION_CHARS // 3) if at >= 0 else 0
    return text[at : at + SECTION_CHARS].strip()


def merge_context(first: list[ContextItem], second: list[ContextItem]) -> list[ContextItem]:
    """``first``, then the items of ``second`` it does not already have (same note and heading)."""
    seen = {(c.vault, c.path, c.heading) for c in first}
    return first + [c for c in second if (c.vault, c.path, c.heading) not in seen]


# Words of a plan's stage wording ("Gather the evidence on: ...", "Frame the question and the criteria"):
# what to do with the passages, not what they must hold.
INSTRUCTION_WORDS = frozenset(
    {
        stem(w)
        for w in "frame question questions criteria criterion answer answering gather evidence analyse "
        "analyze analysis compare comparison summarize summarise summary overview subtask goal define key "
        "terms scope clarify identify".split()
    }
)


def retrieval_score(task: str, items: list[ContextItem]) -> tuple[float, dict[str, Any]]:
    """How well the context covers the task, in [0, 1].

    Each of the task's words weighs by how rare it is among the passages (a word every passage holds
    says little; a word none holds weighs most). The score rests on the share of that weight the best
    single passage holds (``best``; for a task of several questions, each question's best passage),
    then on the share held anywhere (``keyword_overlap``), the passages' mean share (``coverage``) and
    distinct notes (``diversity``), minus a penalty for boilerplate (near-empty or repeated passages).
    Passages that each hold one different word of the task no longer look like an answer: "Japanese
    tea ceremony" over a coffee vault, from a "Japanese barista" and a "black tea" passage, is weak."""
    task = stage_subject(task)
    words = {stem(w) for w in parse_query(task).words()} - INSTRUCTION_WORDS
    if not items or not words:
        signals = {"keyword_overlap": 0.0, "coverage": 0.0, "diversity": 0.0, "boilerplate": 0.0, "best": 0.0}
        return 0.0, signals
    texts = [c.text.lower() for c in items]
    # Whole words by stem ("ceremonies" holds "ceremony"), not any word a stem begins ("teach" is no "tea").
    # A passage also holds what its note's name and heading say it is about: the properties of the note
    # "Blade Runner" answer "who directed Blade Runner?" without naming the film.
    held = [
        words & (stems_of(_WORDS.findall(t)) | _label_stems(c)) for c, t in zip(items, texts, strict=True)
    ]
    n = len(items)
    weight = {w: math.log(1 + (n + 1) / (sum(w in h for h in held) + 0.5)) for w in words}
    total = sum(weight.values())
    shares = [sum(weight[w] for w in h) / total for h in held]
    best, overlap = _per_ask(task, held, weight)
    coverage = sum(shares) / n
    diversity = len({(c.vault, c.path) for c in items}) / n
    boilerplate = sum(1 for t in texts if len(t) < 80) / n
    boilerplate += (len(texts) - len(set(texts))) / n
    score = 0.45 * best + 0.25 * overlap + 0.2 * coverage + 0.1 * diversity - 0.3 * min(1.0, boilerplate)
    signals = {
        "best": round(best, 3),
        "keyword_overlap": round(overlap, 3),
        "coverage": round(coverage, 3),
        "diversity": round(diversity, 3),
        "boilerplate": round(boilerplate, 3),
        "num_items": n,
        "total_chars": sum(len(t) for t in texts),
    }
    return round(max(0.0, min(1.0, score)), 3), signals


def _per_ask(task: str, held: list[set[str]], weight: dict[str, float]) -> tuple[float, float]:
    """For each of the task's questions, the weighted share of its words its best passage holds and the
    share any passage holds; each averaged over the questions, weighed by their number of words. One
    passage need not answer two questions, but each question needs one that answers it: a task with one
    question answered and one the vault does not hold sits near the weak threshold (the coverage check
    names the missing one)."""
    asks = [{stem(w) for w in parse_query(c).words()} & set(weight) for c, _ in split_clauses(task)]
    asks = [a for a in asks if a] or [set(weight)]
    anywhere = set().union(*held)

    def share(words: set[str], ask: set[str]) -> float:
        return sum(weight[w] for w in words & ask) / sum(weight[w] for w in ask)

    # Each question counts by its number of words, so a short clause ("what to listen for") whose one
    # word the vault says otherwise ("hear") cannot outweigh the question it qualifies.
    sizes = [len(a) for a in asks]
    total = sum(sizes)
    best = sum(size * max(share(h, a) for h in held) for a, size in zip(asks, sizes, strict=True)) / total
    return best, sum(size * share(anywhere, a) for a, size in zip(asks, sizes, strict=True)) / total


def _label_stems(item: ContextItem) -> set[str]:
    """Stems of the words of a context item's note name and heading."""
    name = item.path.rsplit("/", 1)[-1]
    name = name[:-3] if name.lower().endswith(".md") else name
    return {stem(w) for w in _WORDS.findall(f"{name} {item.heading or ''}".lower())}


def _property_links(vault: Any, path: str, task: str) -> list[str]:
    """The notes that the properties of the note at ``path`` whose key the task uses link to ("host:
    [[Steph Ango]]" for "the host of the Well Made podcast")."""
    try:
        note = vault.read_note(path)
    except Exception:  # deleted or unreadable since indexing
        return []
    asked = {stem(w) for w in parse_query(task).words()}
    return [
        link.resolved
        for link in note.links
        if link.kind == "frontmatter" and link.field and link.resolved and stem(link.field.lower()) in asked
    ]


def _missing_words(task: str, items: list[ContextItem]) -> list[str]:
    """The task's words (stop words out) that no context item holds (compared by stem) in its text, its
    note's name or its heading."""
    texts = [f"{c.text} {c.path.rsplit('/', 1)[-1]} {c.heading or ''}".lower() for c in items]
    missing = []
    for word in parse_query(task).words():
        pattern = re.compile(r"\b" + re.escape(stem(word)))
        if not any(pattern.search(t) for t in texts):
            missing.append(word)
    return missing


class DirectSearchRetriever:
    """Search the vaults for the task and return the sections the best hits fall under."""

    def __init__(self, vaults: VaultSet, *, include_history: bool = False, limit: int = 6) -> None:
        self.vaults = vaults
        self.limit = limit
        self.exclude = UNCITED_FOLDERS + (() if include_history else (HISTORY_FOLDER,))

    async def retrieve(
        self, task: str, goal: str, node_id: str, findings: Findings | None = None
    ) -> RetrievalResult:
        return await asyncio.to_thread(self._retrieve, task, goal, findings)

    async def hint(self, task: str, goal: str, node_id: str, hint: str) -> RetrievalResult:
        """A person's hint at a checkpoint: search its words, then the hint with the task."""
        found = await asyncio.to_thread(self._retrieve, hint, hint)
        more = await asyncio.to_thread(self._retrieve, f"{hint} {task}", goal)
        items = merge_context(found.context, more.context)
        score, signals = retrieval_score(task, items)
        why = f"{len(items)} section(s) for the hint {hint[:80]!r}"
        queries = found.queries + more.queries
        return RetrievalResult(
            items, queries, "direct", signals, confidence=score, why=why, retrieval_score=score
        )

    def _retrieve(self, task: str, goal: str, findings: Findings | None = None) -> RetrievalResult:
        # not "criteria" for "Frame the question and the criteria for answering: <goal>"; a subtask a model
        # wrote around the goal ("Find how long roasted beans rest for <goal>") keeps its own words
        asked = stage_subject(task)
        queries = [asked]
        hits = self._search(asked)
        if len(hits) < 2 and goal and goal != asked:  # (a stage wrapped around the goal searched it already)
            queries.append(goal)  # a stage task ("gather sources") says little on its own
            seen = {(h.vault, h.path) for h in hits}
            hits += [h for h in self._search(f"{goal} {asked}") if (h.vault, h.path) not in seen]
        multi = len(self.vaults) > 1
        items: list[ContextItem] = []
        notes: dict[tuple[str, str], Note] = {}
        for hit in hits[: self.limit]:
            key = (hit.vault, hit.path)
            if not hit.passage and key not in notes:  # a vault whose search hands over no passage
                try:
                    notes[key] = self.vaults.get(hit.vault).read_note(hit.path)
                except Exception:  # a note deleted or unreadable since indexing: skip it
                    continue
            text = hit.passage or section(notes[key], hit.heading, hit.snippet)
            items.append(
                ContextItem(
                    hit.vault,
                    hit.path,
                    hit.heading,
                    text,
                    citation_link(hit.vault, hit.path, hit.heading, multi),
                    hit.score,
                )
            )
        # A dependent step's answer is most often one link away from what its dependencies read.
        first = list(findings.notes) if findings else []
        seeds = [*first, *((h.vault, h.path) for h in hits)]
        linked = self.linked(task, seeds, items, most=LINKED_FROM + len(first), hop=bool(first))
        if linked:
            items = items[: max(1, self.limit - len(linked))] + linked
            queries.append(LINKS_FOLLOWED)
        score, signals = retrieval_score(task, items)
        if first and linked:
            signals[REFERENTS] = [c.citation for c in linked]
        why = (
            f"{len(items)} section(s) from {len({(c.vault, c.path) for c in items})} note(s) for {queries!r}"
        )
        return RetrievalResult(
            items, queries, "direct", signals, confidence=score, why=why, retrieval_score=score
        )

    def linked(
        self,
        task: str,
        seeds: list[tuple[str, str]],
        items: list[ContextItem],
        most: int = LINKED_FROM,
        hop: bool = False,
    ) -> list[ContextItem]:
        """The second step of a two-step question is usually one link away from the first: when the task
        has words the context (``items``) lacks, the notes linked from or to the first ``most`` ``seeds``
        ((vault, path) of the best hits) that match the task best, each with its section that matches it
        best. ``hop``: the seeds begin with the notes a dependency read, so the task is a second step
        even when other notes hold all its words ("in that protocol, which line carries the data?"); when
        it points back with a pronoun ("who developed it?"), the seeds' own notes come first."""
        missing = _missing_words(task, items) or (parse_query(task).words() if hop else [])
        if not missing:
            return []
        # What the first step lacks is what the linked note must hold: "… a sociologist. What theme did
        # that developer make?" looks for the developer's note by "sociologist" and "theme".
        query = " ".join(missing)
        multi = len(self.vaults) > 1
        seen = {(c.vault, c.path) for c in items}
        # A note the context holds a section of may hold the missing words in another ("### Plugins" of a
        # developer's note is there; what the task lacks is under its "### Themes").
        held = {(c.vault, c.path, c.heading) for c in items}
        held_notes = {(c.vault, c.path) for c in items}
        out: list[ContextItem] = []
        firsts = list(dict.fromkeys(seeds))[:most]
        # A second step that points back with a pronoun asks about what the first found ("... and who
        # developed it?": the plugin's own note names its developer): the seeds' own notes are looked at
        # before the notes they link to. "That developer" is another note, one link away.
        own_notes = [(v, p, True) for v, p in firsts] if hop and points_back_by_pronoun(task) else []
        for seed_vault, seed_path, own in [*own_notes, *((v, p, False) for v, p in firsts)]:
            vault = self.vaults.get(seed_vault)
            linked = getattr(vault, "linked", None)  # a remote vault has no index to follow links in
            if linked is None:
                continue
            # "the host of the Well Made podcast": the note a property the task names ("host") links to
            keyed = [] if own else _property_links(vault, seed_path, task)
            paths = [seed_path] if own else [*keyed, *linked(seed_path, query, LINKED_ITEMS + len(seen))]
            for path in dict.fromkeys(paths):
                if path.startswith(tuple(f + "/" for f in self.exclude)):
                    continue
                again = (seed_vault, path) in held_notes
                if (seed_vault, path) in seen and not again:
                    continue  # added by this loop already
                found = vault.search(query, limit=1, path=path, exclude=self.exclude, include_templates=False)
                for word in missing if not found else ():  # the note holds one of them (``linked``)
                    found = vault.search(
                        word, limit=1, path=path, exclude=self.exclude, include_templates=False
                    )
                    if found:
                        break
                if not found and path not in keyed:
                    continue
                best = found[0] if found else None  # none: a named property's note, by its opening
                heading = best.heading if best else None
                if again and (seed_vault, path, heading) in held:
                    continue
                text = best.passage if best else ""
                if not text:
                    try:
                        text = section(vault.read_note(path), heading, best.snippet if best else "")
                    except Exception:  # deleted or unreadable since indexing
                        continue
                seen.add((seed_vault, path))
                link = citation_link(seed_vault, path, heading, multi)
                out.append(ContextItem(seed_vault, path, heading, text, link, best.score if best else 0.0))
                if len(out) >= LINKED_ITEMS:
                    return out
        return out

    def _search(self, query: str) -> list[Hit]:
        return self.vaults.search(query, limit=self.limit, exclude=self.exclude, include_templates=False)
