"""The offline provider on a task that compares things ("Compare canvas and graph view: what is each
for?"): each side is searched for on its own, and the answer quotes each side before the rest.

Searched as one question, a comparison finds the side its words favour ("graph view" is two words, "canvas"
one) and quotes passages that name both sides in passing. Each side's search is the clause's words
without the other sides' own words; the answer opens with, for each side, the opening of the note titled
by it when the clause names no aspect ("what is each for?"), else the best passage about the side (its own
words in the passage or its heading, no other side's words in the passage).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..strategies import comparison, split_clauses
from ..text import STOP_WORDS, parse_query
from ._offline_text import Passage, terms

__all__ = ["COMPARING", "Side", "SideItem", "compared_sides", "side_passages"]

# what asks for a comparison, not what is compared: searched for, they find notes that "compare" things
COMPARING = frozenset(
    "compare compared comparing comparison contrast contrasting versus vs difference differences differ "
    "differs between".split()
)


_WORD = re.compile(r"\w+")
MIN_SIDE_WORDS = 5


@dataclass(frozen=True)
class Side:
    """One side of a comparison: ``query`` to search for it, the ``names`` a note about it is titled by
    (lower-cased), its own ``words`` (lower-cased, what sets it apart from the other sides), and the
    ``aspect`` the clause compares the sides on (its words, lower-cased; none for "what is each for?").

    A one-word side said before a head word ("symmetric and asymmetric *encryption*") is named with it
    ("symmetric encryption"); alone (``bare``) it may name something else (the note *Symmetric* on
    relations), or the thing itself when the head was no head ("canvas and graph *view*"): a note titled by
    it counts only when the side's own search ranks it first (the script), or when a passage defines it
    ("Canvas is ...", the answer)."""

    query: str
    names: tuple[str, ...]
    words: tuple[str, ...]
    aspect: tuple[str, ...]
    bare: str = ""  # the side without the head word it shares ("symmetric" of "symmetric encryption")
    head: tuple[str, ...] = ()  # the words of the head word the sides share


def compared_sides(task: str) -> list[Side]:
    """The sides of the first clause of ``task`` that compares things (``strategies.comparison``); [] when
    none does, or when a side has no word of its own."""
    for clause, _ in split_clauses(task):
        found = comparison(clause)
        if found is None:
            continue
        words = [parse_query(side).words() for side in found.sides]
        shared = set.intersection(*map(set, words)) | set(parse_query(found.head).words())
        own = [[w for w in side if w not in shared] for side in words]
        if not all(own):
            return []
        asked = [w for w in parse_query(clause).words() if len(w) > 1 and w not in COMPARING]
        # "what is each for?", "what are the differences": no aspect
        said = [w for w in _WORD.findall(found.aspect.lower()) if w not in STOP_WORDS and w not in COMPARING]
        aspect = tuple(said)
        out = []
        for k, side in enumerate(found.sides):
            others = {w for j, o in enumerate(own) if j != k for w in o}
            query = " ".join(w for w in asked if w not in others)
            named = found.named(side).lower()
            # the side without the shared word: "symmetric" of "symmetric", "natural" of "natural processing"
            bare = named.removesuffix(f" {found.head.lower()}") if found.head else ""
            head = tuple(parse_query(found.head).words())  # every side's, said once ("roasts")
            out.append(Side(query, (named,), tuple(own[k]), aspect, bare, head))
        return out
    return []


@dataclass(frozen=True)
class SideItem:
    """What ``side_passages`` reads of one context item: its ``label`` (heading and path), its ``name``
    (lower-cased: its heading, or for a note's opening the note's title), and its ``first`` quotable
    passage that is not a property line ("" when none)."""

    label: str
    name: str
    first: str
    shown: str = ""  # the title its text shows (its first heading: "# Tasks" of obsidian-tasks-plugin.md)


def side_passages(
    sides: Sequence[Side], ranked: Sequence[Passage], items: Sequence[SideItem]
) -> list[Passage]:
    """For each side, in order, the passage that answers for it: when the comparison names no aspect, the
    first passage of the first item the side names (its note's opening, its section: what it is), else the
    best of ``ranked`` about the side (its words in the passage or the item's label, no other side's in
    the passage, nor all of them in the label; the aspect's in either). A side with neither gets none."""
    own_terms = [set(terms(" ".join(s.words))) for s in sides]
    out: list[Passage] = []
    for k, side in enumerate(sides):
        others = set().union(*(t for j, t in enumerate(own_terms) if j != k))
        mine, aspect = own_terms[k], set(terms(" ".join(side.aspect)))
        # (or named by the bare side, when the item's place holds the shared word: "Washed" in
        # "Beans/Processing methods.md" for "washed processing", not the note "Math/Symmetric")
        head = set(terms(" ".join(side.head)))
        named = [
            i
            for i, item in enumerate(items)
            if item.first
            and (
                _named(item.name, side.names)
                or (item.shown and _named(item.shown, side.names))
                or (side.bare and item.name == side.bare and head <= set(terms(item.label)))
            )
        ]
        pick = Passage(items[named[0]].first, named[0], 0, 0.0, ()) if named and not aspect else None
        if pick is None and not aspect and side.bare:  # "Canvas is a core plugin ...": what it is
            defines = re.compile(
                rf"^(?:an?\s+|the\s+)?\W*{re.escape(side.bare)}\W*\s+(?:is|are|means)\b", re.I
            )
            pick = next((p for p in ranked if defines.match(p.text)), None)
        needed = mine | set(terms(" ".join(side.head)))
        for p in ranked if pick is None else ():
            if len(_WORD.findall(p.text)) < MIN_SIDE_WORDS:  # a link's label, a heading: says nothing
                continue
            said, label = set(terms(p.text)), set(terms(items[p.item].label))
            about = needed <= said | label and (mine <= said or mine <= label)
            on_aspect = not aspect or bool(aspect & (said | label))
            # (under a heading that names another side, a passage is about that one)
            if about and on_aspect and not (others & said) and not (others and others <= label):
                pick = p
                break
        if pick is not None and all(pick.text != q.text for q in out):
            out.append(pick)
    return out


def _named(title: str, names: Sequence[str]) -> bool:
    """Whether a note or section ``title`` is one of a side's ``names``, or spelled by their initials
    ("Transmission Control Protocol" for "TCP")."""
    initials = "".join(w[0] for w in _WORD.findall(title))
    return title in names or (len(initials) > 1 and initials in names)
