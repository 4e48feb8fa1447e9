"""Coverage: does the report answer every ask of the goal?

The goal's *asks* are its clauses as the decomposition finds them (``strategies.split_clauses``: the
questions and instructions; every clause when none is one; "A, then B" is two). A comparison is one ask
per side: in "Compare security and privacy in Obsidian Sync versus Obsidian Publish" the asks are
"Obsidian Sync" and "Obsidian Publish", both about the aspect "security and privacy" (the sides as
``strategies.comparison`` reads them: "versus", "compare A with B", "between A and B", "compare A and B").

An ask is *covered* when at least one supported claim (see ``support``) covers it:

- a plain ask: at least ``COVER_SHARE`` of its content words (question words and verbs such as
  "compare" or "explain" out) occur in the claim, its citation (note path and heading) or the cited
  passage, and at least one of them in the claim or its citation;
- an ask that points back at the clause before it with a pronoun ("..., and how much does *it* cost?")
  also needs one word of that clause (what "it" is) in the claim or its citation: a line on what
  something else costs does not answer it;
- a side of a comparison: the words that set it apart from the other sides ("Publish") occur in the
  cited note's path or heading, or in a claim that names no other side, and (when the goal names an
  aspect) one aspect word occurs in the claim, its citation or the passage. A passage that only names
  both sides in one breath answers neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..strategies import antecedent, comparison, count_asks, split_clauses
from ..text import without_vault_wording
from .support import content_terms, has_term

__all__ = ["COVER_SHARE", "Ask", "CoverEvidence", "goal_asks", "uncovered_asks"]

COVER_SHARE = 0.6
# The words of the cited passage that count for an ask: those near what the claim quotes. A long passage
# (a drawing's text elements, a glossary) holds many words that the quoted line has nothing to do with.
NEAR_CHARS = 300
_QUOTE_WORD = re.compile(r"\w+")
ASK_WORDS = frozenset(
    content_terms(
        "what which who whom whose when where why how do does did can could should would will may might "
        "must is are was were compare comparison contrast versus difference differences differ between "
        "explain describe tell show list find give name identify summarize summarise overview analyse "
        "analyze evaluate assess way ways long much many often use using get make"
    )
)
_THEN = re.compile(r",?\s+(?:and\s+)?then\s+", re.I)  # "compare A, then plan B": two asks
# A conflict bullet names the subtask that found its side ("VALUE — from “TASK” (`node`): “STATEMENT”",
# ``synthesis.render_conflicts``): the task's words are the run's, not the source's, and cover nothing.
_FOUND_BY = re.compile(r"\s+—\s+from\s+“[^”]*”\s+\(`[^`]*`\):")


@dataclass(frozen=True)
class Ask:
    """One ask: ``text`` as listed when uncovered, ``query`` for a focused follow-up run, ``terms`` the
    words that must be found, ``others`` the other sides' distinguishing words, ``aspect`` the aspect's
    words (comparisons), ``about`` the words of the clause a pointing-back ask means (one must be found)."""

    text: str
    query: str
    terms: tuple[str, ...]
    side: bool = False
    others: tuple[str, ...] = ()
    aspect: tuple[str, ...] = ()
    about: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoverEvidence:
    """What one supported claim offers: its words, its citation's path and heading, the cited passage."""

    claim: str
    where: str
    passage: str


def _terms(text: str) -> tuple[str, ...]:
    return tuple(t for t in content_terms(text) if t not in ASK_WORDS)


def goal_asks(goal: str) -> list[Ask]:
    """The goal's asks (see the module docstring); asks without content words are left out."""
    clauses = [p for c, _ in split_clauses(goal) for p in _THEN.split(c) if p.strip()]
    asks_only = [c for c in clauses if count_asks(c) >= 1]
    out: list[Ask] = []
    for clause in asks_only or clauses:
        found = comparison(clause)
        if found is not None:
            sides, aspect = found.sides, found.aspect
            side_terms = [set(_terms(s)) for s in sides]
            shared = set.intersection(*side_terms) | set(_terms(found.head))
            own = [tuple(t for t in _terms(s) if t not in shared) for s in sides]
            if all(own):
                aspect_terms = _terms(aspect)
                for k, side in enumerate(sides):
                    others = tuple(t for j, o in enumerate(own) if j != k for t in o)
                    query = f"{aspect} in {side}" if aspect_terms else side
                    out.append(Ask(side, query, own[k], True, others, aspect_terms))
                continue
        terms = _terms(without_vault_wording(clause))  # "what my notes say about X" asks about X
        if terms:
            about = tuple(t for t in _terms(antecedent(clause, goal)) if t not in terms)
            out.append(Ask(clause.strip(), clause.strip(), terms, about=about))
    return out


def _near(claim: str, passage: str) -> str:
    """The part of ``passage`` around where it says ``claim`` (a quote): NEAR_CHARS either side. A claim
    the passage does not say word for word (a model's own words) keeps the whole passage."""
    words = _QUOTE_WORD.findall(claim.lower())[:8]
    if len(words) < 2 or len(passage) <= 2 * NEAR_CHARS:
        return passage
    found = re.search(r"\W+".join(map(re.escape, words)), passage, re.I)
    if found is None:
        return passage
    return passage[max(0, found.start() - NEAR_CHARS) : found.end() + NEAR_CHARS]


def _covers(ask: Ask, ev: CoverEvidence) -> bool:
    said, where = set(content_terms(_FOUND_BY.sub(" ", ev.claim))), set(content_terms(ev.where))
    passage = set(content_terms(_near(ev.claim, ev.passage)))
    if ask.side:
        named = all(has_term(t, where) for t in ask.terms) or (
            all(has_term(t, said) for t in ask.terms) and not any(has_term(t, said) for t in ask.others)
        )
        if not named:
            return False
        return not ask.aspect or any(has_term(t, said | where | passage) for t in ask.aspect)
    near = said | where
    # (the stems themselves: a prefix is too loose here, "web" of "Web Clipper" is not "website")
    if ask.about and not any(t in near for t in ask.about):
        return False
    found = [t for t in ask.terms if has_term(t, near) or has_term(t, passage)]
    return any(has_term(t, near) for t in ask.terms) and len(found) >= COVER_SHARE * len(ask.terms)


def uncovered_asks(asks: list[Ask], evidence: list[CoverEvidence]) -> list[Ask]:
    """The asks no supported claim covers."""
    return [a for a in asks if not any(_covers(a, ev) for ev in evidence)]
