"""Comparisons: the sides a clause sets against each other and the aspect it compares them on.

"Compare security and privacy in Obsidian Sync versus Obsidian Publish" has the sides "Obsidian Sync" and
"Obsidian Publish" and the aspect "security and privacy". Sides are read around "versus", "vs",
"compared to/with", "as opposed to", in "compare A with/to B", "between A and B", and in "compare A and B"
(or "A, B and C": up to ``MAX_SIDES`` short sides, so that "compare the roasting and brewing choices that
give better coffee" is not read as two sides). In "compare light and dark roasts" (or "between symmetric
and asymmetric encryption") the last side's final word is what every side is (``head``: "roasts"): the
sides differ by "light" and "dark".

Coverage needs one supported claim per side; the offline provider searches for each side and quotes each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_SIDES", "Comparison", "comparison"]

MAX_SIDES = 4
MAX_SIDE_WORDS = 4  # a longer "side" of "compare A and B" is a clause, not a thing compared

_VERSUS = re.compile(r"\s+(?:versus|vs\.?|v\.|compared (?:to|with)|as opposed to)\s+", re.I)
_COMPARE_WITH = re.compile(r"^\s*(?:compare|contrast)\s+(.+?)\s+(?:with|to|against)\s+(.+)$", re.I)
_COMPARE = re.compile(r"^\s*(?:compare|contrast)(?:\s+and\s+(?:compare|contrast))?\s+(.+)$", re.I)
# "between A and B" compares only after a word that says so ("the difference between"; not "switches
# between light and dark", "a distance between two numbers")
_BETWEEN = re.compile(
    r"\b(?:differen\w*|distinction|distinguish\w*|compar\w*|contrast\w*|choos\w*|similarit\w*)\b.*?"
    r"\bbetween\s+(.+?)\s+and\s+(.+?)(?=\s+(?:in|for|on|regarding|when)\s|[?.!]?$)",
    re.I,
)
# where the sides end and the aspect begins: a colon (or a comma, unless the sides are a list), a preposition
_ASPECT_AFTER = r"\s+(?:in terms of|for|on|regarding|when|with respect to)\s+(.+)$|[?.!]+$"
_SIDE_END = re.compile(r"\s*[:;,]\s+(.+)$|" + _ASPECT_AFTER, re.I)
_LIST_END = re.compile(r"\s*[:;]\s+(.+)$|" + _ASPECT_AFTER, re.I)
_SIDE_START = re.compile(r"^.*\b(?:in|of|for|on|between|compare|contrast)\s+", re.I)
_ASKING = re.compile(r"(?:how|what|which|why|when|where|who|whether)\b", re.I)
_LIST = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.I)


@dataclass(frozen=True)
class Comparison:
    """The ``sides`` compared (as written), the ``aspect`` they are compared on ("" when none is said),
    and the ``head`` word the sides share when the clause says it once ("roasts" of "light and dark
    roasts"; "" when none)."""

    sides: tuple[str, ...]
    aspect: str = ""
    head: str = ""

    def named(self, side: str) -> str:
        """A side as a thing: with the shared head word when it lacks it ("light" -> "light roasts")."""
        if not self.head or side.lower().split()[-1:] == [self.head.lower()]:
            return side
        return f"{side} {self.head}"


def comparison(clause: str) -> Comparison | None:
    """The comparison ``clause`` makes, or None when it compares nothing (one side, or none)."""
    text = " ".join(clause.split()).rstrip("?.! ")
    m = _COMPARE_WITH.match(text)
    if m:
        return _around(m.group(1), m.group(2))
    b = _BETWEEN.search(text)
    if b:
        aspect = (
            re.sub(r"\s+between\s*$", "", text[: b.start(1)].rstrip(), flags=re.I) + " " + text[b.end() :]
        )
        sides = [*(s.strip() for s in b.group(1).split(",")), b.group(2).strip()]
        return _checked(sides, " ".join(aspect.split()))
    parts = _VERSUS.split(text)
    if len(parts) >= 2:
        return _around(parts[0], " ".join(parts[1:]))
    c = _COMPARE.match(text)
    return _listed(c.group(1)) if c else None


def _around(left: str, right: str) -> Comparison | None:
    """The two sides of "LEFT versus RIGHT", the aspect said before the left one ("security in ...") or
    after the right one ("...: which is safer?")."""
    aspect = ""
    end = _SIDE_END.search(right)
    if end:
        aspect = (end.group(1) or end.group(2) or "").strip()
        right = right[: end.start()]
    head = _SIDE_START.match(left)
    side_left = left[head.end() :] if head else left
    lead = left[: head.end()] if head else ""
    lead = re.sub(r"^\s*(?:compare|contrast)\s+|\s+(?:in|of|for|on|between)\s*$", " ", lead, flags=re.I)
    sides = [s.strip(" ,") for s in (side_left, right) if s.strip(" ,")]
    return _checked(sides, " ".join(f"{lead} {aspect}".split())) if len(sides) == 2 else None


def _checked(sides: list[str], aspect: str) -> Comparison | None:
    """The comparison of ``sides``, or None when they are not things: a side that asks ("which desktop
    component" of "is compared to which desktop component?") or holds no word ("0" and "1")."""
    if not 2 <= len(sides) <= MAX_SIDES or any(
        _ASKING.match(s) or not re.search(r"[^\W\d_]", s) for s in sides
    ):
        return None
    # "light and dark roasts": the one-word sides are kinds of what the last side names
    last = sides[-1].split()
    head = last[-1] if len(last) > 1 and all(len(s.split()) == 1 for s in sides[:-1]) else ""
    return Comparison(tuple(sides), aspect, head)


def _listed(body: str) -> Comparison | None:
    """The sides of "compare A and B" / "compare A, B and C" (``body``: what follows "compare"), each
    short; the aspect after a colon or "in terms of" ("compare A and B: which is cheaper?"), or before the
    sides ("the pros and cons of A and B"). A comma ends the sides only when they are not a list."""
    for ends in (_LIST_END, _SIDE_END):
        for start_first in (False, True):
            found = _split_listed(body, ends, start_first)
            if found is not None:
                return found
    return None


def _split_listed(body: str, ends: re.Pattern[str], start_first: bool) -> Comparison | None:
    after = before = ""
    for step in ("start", "end") if start_first else ("end", "start"):
        if step == "end" and (end := ends.search(body)):
            after = (end.group(1) or end.group(2) or "").strip()
            body = body[: end.start()]
        elif step == "start" and (start := _SIDE_START.match(body)):
            before = re.sub(r"\s+(?:in|of|for|on|between)\s*$", "", body[: start.end()], flags=re.I)
            body = body[start.end() :]
    sides = [s.strip(" ,") for s in _LIST.split(body) if s.strip(" ,")]
    if any(len(s.split()) > MAX_SIDE_WORDS for s in sides):
        return None
    # "Obsidian Sync and Obsidian Publish security": sides named alike are as long as each other; the last
    # one's extra words are the aspect
    first, last = sides[0].split(), sides[-1].split()
    if len(first) > 1 and len(last) > len(first) and first[0].lower() == last[0].lower():
        sides[-1] = " ".join(last[: len(first)])
        after = " ".join([*last[len(first) :], after])
    return _checked(sides, " ".join(f"{before} {after}".split()))
