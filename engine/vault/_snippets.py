"""Snippets: the window of a passage densest in distinct query words, cut at a word boundary, and the
passages around a hit's that its citation covers (``passage_window``); separate from ranking, as text
work on passages already chosen."""

from __future__ import annotations

import re
from functools import lru_cache

from ..text import stem

__all__ = [
    "FOLLOWING",
    "PASSAGE_CHARS",
    "PASSAGE_WINDOW",
    "SNIPPET_CHARS",
    "clean",
    "densest_window",
    "make_snippet",
    "passage_window",
]

SNIPPET_CHARS = 240
PASSAGE_CHARS = 2_000  # of a hit's passage handed over (a note's last passage may hold its long tail)
PASSAGE_WINDOW = 1_800  # the passages around the matched one join it up to this many characters
FOLLOWING = 2  # of the passages after it, at most
_SHORT_FIRST = 400  # a note's first passage joins a hit further down when it is this short


@lru_cache(maxsize=512)
def _match_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    # One group per query word: which word a match stands for is the group that matched (the text is
    # never stemmed), found without copying the matched text. The set of the words' first letters, looked
    # ahead first, lets the scan skip to where a word may start (twice as fast as trying each word at
    # every word boundary; the same matches).
    words = "|".join(f"({re.escape(s)})" for s in stems)
    if not all(stems):
        return re.compile(r"\b(?:" + words + r")\w*", re.I | re.U)
    first = "".join(sorted({re.escape(s[0]) for s in stems}))
    return re.compile(r"(?=[" + first + r"])\b(?:" + words + r")\w*", re.I | re.U)


@lru_cache(maxsize=256)
def _stems(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({stem(w) for w in words if w}, key=len, reverse=True))


# The characters that ``re.IGNORECASE`` matches with an ASCII letter other than that letter itself: its
# other case, and four Unicode letters (tests/test_snippets checks this against ``re`` over every code
# point). Folded by this table, a text holds an ASCII word where, and only where, the pattern of
# ``_match_pattern`` matches it.
_FOLD = {
    **{c: chr(c + 32) for c in range(ord("A"), ord("Z") + 1)},
    0x130: "i",
    0x131: "i",
    0x17F: "s",
    0x212A: "k",
}
_ASCII_STEM = re.compile(r"[0-9_a-z]+")


def _folded(body: str) -> str:
    """``body`` with each character that ``_FOLD`` names folded, and no other: ``str.lower`` when it
    does that (its only change of length is for U+0130, and it leaves two of the four letters be)."""
    lowered = body.lower()
    if body.isascii() or (len(lowered) == len(body) and "\u0131" not in lowered and "\u017f" not in lowered):
        return lowered  # any other character it changes is not ASCII, before or after: no stem matches it
    return body.translate(_FOLD)


def _find(body: str, stems: tuple[str, ...]) -> list[tuple[int, int | None]]:
    """(start, which stem: its 1-based place in ``stems``) of each word of ``body`` that starts with a
    stem, as ``_match_pattern(stems).finditer`` finds them (the first 2000). Without a regex for the
    query's words when they are ASCII: compiling one cost ~0.4 ms a search, more than all its scans."""
    if not _ascii(stems):
        return [(m.start(), m.lastindex) for _, m in zip(range(2000), _match_pattern(stems).finditer(body))]
    text = _folded(body)
    at: dict[int, int] = {}
    for which, s in enumerate(stems, 1):
        i = text.find(s)
        while i >= 0:
            # A word starts here (a stem's first character is a word character, so \b means the one
            # before is not); the pattern tries the longest stem first: the first one found here stays.
            if i not in at and (i == 0 or not _is_word(body[i - 1])):
                at[i] = which
            i = text.find(s, i + 1)
    return [(i, at[i]) for i in sorted(at)[:2000]]


@lru_cache(maxsize=256)
def _ascii(stems: tuple[str, ...]) -> bool:
    return all(_ASCII_STEM.fullmatch(s) for s in stems)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # \w, as re (Unicode) has it


def densest_window(body: str, words: list[str], width: int = SNIPPET_CHARS) -> tuple[float, int | None]:
    """(distinct query words, start offset) of the densest ``width``-wide window of ``body``."""
    stems = _stems(tuple(words))
    if not body or not stems:
        return 0.0, None
    return _densest(body, stems, width)


# A hit's passage is often measured twice (to choose the passage a hit shows, then for its snippet): the
# same string, whose hash Python keeps, so a lookup costs nothing next to a scan.
@lru_cache(maxsize=64)
def _densest(body: str, stems: tuple[str, ...], width: int) -> tuple[float, int | None]:
    found = _find(body, stems)
    if not found:
        return 0.0, None
    # A window ending at each match, its start moved up past matches more than half a width before it;
    # the query words in it are counted as it slides (was a set built at each match).
    best_start, best_score = found[0][0], -1.0
    inside: dict[int | None, int] = {}
    j = 0
    for i, (start, word) in enumerate(found):
        inside[word] = inside.get(word, 0) + 1
        while found[j][0] < start - width // 2:
            left = found[j][1]
            inside[left] -= 1
            if not inside[left]:
                del inside[left]
            j += 1
        score = len(inside) + 0.01 * (i - j)
        if score > best_score:
            best_score, best_start = score, found[j][0]
    return best_score, best_start


def make_snippet(body: str, words: list[str], width: int = SNIPPET_CHARS) -> tuple[str, int | None]:
    """The window of ``body`` holding the most distinct query words, and its start offset."""
    if not body:
        return "", None
    _, best = densest_window(body, words, width)
    if best is None:
        return clean(body[:width]) + ("…" if len(body) > width else ""), None
    start = _word_boundary(body, max(0, best - width // 4))
    text = body[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(body) else ""
    return prefix + clean(text) + suffix, best


def _word_boundary(body: str, start: int) -> int:
    if start <= 0:
        return 0
    newline = body.rfind("\n", max(0, start - 60), start)
    if newline != -1:
        return newline + 1
    space = body.find(" ", start)
    return space + 1 if 0 <= space < start + 30 else start


def clean(text: str) -> str:
    r"""``text`` on one line, runs of whitespace as one space (what ``re.sub(r"\s+", " ", text).strip()``
    gives: ``str.split`` splits at the characters that are ``\s`` to ``re``, and is several times faster)."""
    return " ".join(text.split())


def passage_window(passages: dict[int, tuple[str | None, str, str]], chunk: int, first: int) -> str:
    """What a retrieval hands over for a hit: its passage and, while they fit in ``PASSAGE_WINDOW``,
    the passages around it that its citation covers, in note order. A hit under a heading cites that
    section: the other pieces of a long section and its subsections join (a quote's commentary above
    it). A hit with no heading cites the whole note: its first passage (properties and lead, when
    short) and the passages after it (the lines under a short note's next heading often hold the
    answer its first lines introduce)."""
    heading, body, trail = passages.get(chunk, (None, "", ""))

    def covered(row: tuple[str | None, str, str]) -> bool:
        return heading is None or row[2] == trail or row[2].startswith(trail + " > ")

    chosen = {chunk}
    size = len(body)
    for nxt in (first, chunk - 1, *range(chunk + 1, chunk + 1 + FOLLOWING)):
        row = passages.get(nxt) if nxt >= first else None
        if nxt in chosen or row is None or not row[1].strip() or not covered(row):
            continue
        if size + len(row[1]) > PASSAGE_WINDOW or (nxt == first and len(row[1]) > _SHORT_FIRST):
            continue
        chosen.add(nxt)
        size += len(row[1]) + 1
    return "\n".join(passages[r][1].strip() for r in sorted(chosen))
