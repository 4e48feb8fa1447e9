"""Snippets: the window of a passage densest in distinct query words, cut at a word boundary; separate
from ranking, as text work on a passage already chosen."""

from __future__ import annotations

import re
from functools import lru_cache

from ..text import stem

__all__ = ["SNIPPET_CHARS", "clean", "densest_window", "make_snippet"]

SNIPPET_CHARS = 240


@lru_cache(maxsize=512)
def _match_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(s) for s in stems) + r")\w*", re.I | re.U)


def densest_window(body: str, words: list[str], width: int = SNIPPET_CHARS) -> tuple[float, int | None]:
    """(distinct query words, start offset) of the densest ``width``-wide window of ``body``."""
    stems = tuple(sorted({stem(w) for w in words if w}, key=len, reverse=True))
    if not body or not stems:
        return 0.0, None
    # Which query word a match stands for is the alternative that matched: the text is never stemmed.
    pattern = _match_pattern(stems)
    found = [(m.start(), m.group(1).lower()) for _, m in zip(range(2000), pattern.finditer(body))]
    if not found:
        return 0.0, None
    best_start, best_score = found[0][0], -1.0
    j = 0
    for i, (start, _) in enumerate(found):
        while found[j][0] < start - width // 2:
            j += 1
        score = len({s for _, s in found[j : i + 1]}) + 0.01 * (i - j)
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
    """``text`` on one line, runs of whitespace as one space."""
    return re.sub(r"\s+", " ", text).strip()
