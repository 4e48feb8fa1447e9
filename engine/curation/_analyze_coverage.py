"""Gap analysis, part 4: does any note of the vault support an ask?

Each ask's salient words are searched in the vault's own index (Shad's folder left out: run history and
Shad's reports are not notes a person wrote). For each of the best hits, the note's title and the section
the hit fell in are checked for the ask's word stems; an ask's *support* is the largest share of its words
one note holds. An ask is supported when one note holds at least ``SUPPORTED`` of its words; below that
its miss grows linearly to 1 (no note holds any of them, or the search finds nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..retrieval import section
from ..text import stem
from ..vault import Note, Vault
from ._analyze_topics import Ask

__all__ = ["SEARCH_HITS", "SUPPORTED", "Coverage", "CoverageChecker"]

SUPPORTED = 2 / 3  # one note holds two thirds of the ask's key words: the ask is supported
SEARCH_HITS = 5
SHAD_FOLDER = "Shad"


@dataclass
class Coverage:
    support: float  # 0..1: the largest share of the ask's words one note holds
    miss: float  # 0..1
    closest: list[tuple[str, float]] = field(default_factory=list)  # (note path, support), best first
    missing_words: list[str] = field(default_factory=list)  # words the closest note lacks


class CoverageChecker:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._notes: dict[str, Note | None] = {}
        self._seen: dict[frozenset[str], Coverage] = {}

    def check(self, ask: Ask) -> Coverage:
        cached = self._seen.get(ask.key)
        if cached is None:
            cached = self._seen[ask.key] = self._check(ask)
        return cached

    def _note(self, path: str) -> Note | None:
        if path not in self._notes:
            try:
                self._notes[path] = self.vault.read_note(path)
            except Exception:  # deleted or unreadable since indexing: it supports nothing
                self._notes[path] = None
        return self._notes[path]

    def _check(self, ask: Ask) -> Coverage:
        stems = sorted(ask.key)
        words = {stem(w): w for w in ask.words}
        hits = self.vault.search(" ".join(ask.words), limit=SEARCH_HITS, exclude=(SHAD_FOLDER,))
        texts: dict[str, str] = {}
        for hit in hits:
            note = self._note(hit.path)
            if note is None:
                continue
            part = section(note, hit.heading, hit.snippet)
            texts[hit.path] = texts.get(hit.path, note.title) + "\n" + part
        scored: list[tuple[str, float, set[str]]] = []
        for path, text in texts.items():
            lowered = text.lower()
            found = {s for s in stems if re.search(r"\b" + re.escape(s), lowered)}
            scored.append((path, len(found) / len(stems), found))
        scored.sort(key=lambda t: -t[1])  # stable: the search's own ranking breaks ties
        if not scored:
            return Coverage(0.0, 1.0, [], [words.get(s, s) for s in stems])
        _, support, found = scored[0]
        miss = max(0.0, 1.0 - support / SUPPORTED)
        closest = [(p, round(s, 3)) for p, s, _ in scored if s > 0][:3]
        lacking = [words.get(s, s) for s in stems if s not in found]
        return Coverage(round(support, 3), round(miss, 3), closest, lacking)
