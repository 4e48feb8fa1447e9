"""WordNet 3.0's synonyms of English words (``data/wordnet_synonyms.txt.gz``, made by
``tools/make_synonyms.py``; its licence is ``data/WORDNET_LICENSE.txt``), and whether it lists a word.

The search asks for the synonyms of words the vault never uses. Such a word finds nothing, so it cannot
hurt to look for its synonyms too ("which add-on makes the app *sluggish*" in a vault that says *slow*),
while a word the vault does use keeps its exact sense: WordNet mixes meanings ("picture" is also "movie").

The data is one sorted line per word (``word|synonym|...``, 2.7 MB once unpacked, read on the first
lookup in ~20 ms) and a word is found by bisection over that text: no table of 59k words in memory.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from ..text import STOP_WORDS

__all__ = ["is_word", "synonyms"]

DATA = Path(__file__).parent / "data" / "wordnet_synonyms.txt.gz"

# WordNet lists base forms: an inflected word is looked up by these suffix swaps (WordNet's own "morphy"
# rules), the first base form it knows wins.
_DETACH = (
    ("ies", "y"),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("es", "e"),
    ("es", ""),
    ("s", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
)
_MAX_SYNONYMS = 24


@functools.cache
def _lines() -> str:
    """The data as one string that starts with a newline, or "" when the data file is missing (a source
    checkout without it searches as before)."""
    try:
        with gzip.open(DATA, "rt", encoding="utf-8") as f:
            return "\n" + f.read()
    except OSError:
        return ""


def _line_of(word: str) -> str:
    """The data line of ``word`` (``word|synonym|...``), or "". The text is "\n" + sorted lines."""
    text = _lines()
    lo, hi = 0, len(text)
    while lo < hi:
        start = text.rfind("\n", 0, (lo + hi) // 2 + 1) + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        bar = text.find("|", start, end)
        key = text[start : bar if bar >= 0 else end]
        if key < word:
            lo = end + 1
        elif key > word or start >= end:
            hi = start - 1
        else:
            return text[start:end]
    return ""


def _bases(word: str) -> list[str]:
    bases = [word]
    for suffix, replacement in _DETACH:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            bases.append(word[: -len(suffix)] + replacement)
    return list(dict.fromkeys(bases))


@functools.lru_cache(maxsize=4096)
def synonyms(word: str) -> tuple[str, ...]:
    """WordNet's synonyms of ``word`` (lower-case; multi-word ones with spaces), its first known base
    form's when ``word`` itself is inflected; stop words and the word itself left out."""
    word = word.lower().strip()
    if len(word) < 3 or not word.isascii() or "|" in word or "\n" in word:
        return ()
    for base in _bases(word):
        line = _line_of(base)
        if line:
            found = line.split("|")[1:]
            others = dict.fromkeys(w for w in found if w not in (word, base) and w not in STOP_WORDS)
            return tuple(others)[:_MAX_SYNONYMS]
    return ()


@functools.lru_cache(maxsize=4096)
def is_word(word: str) -> bool:
    """Whether WordNet lists ``word`` (or its base form) with other words for it: an English word, not a
    name. A handle such as "sspaeti", a product such as "github", and English words WordNet gives no
    synonym for are not listed. Without the data file every word is one (nothing is taken for a name)."""
    word = word.lower().strip()
    if not _lines():
        return True
    if len(word) < 3 or not word.isascii() or "|" in word or "\n" in word:
        return False
    return any(_line_of(base) for base in _bases(word))
