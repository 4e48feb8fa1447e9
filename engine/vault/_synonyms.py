"""Other words for a query word: WordNet 3.0's synonyms (``data/wordnet_synonyms.txt.gz``, made by
``tools/make_synonyms.py``; its licence is ``data/WORDNET_LICENSE.txt``).

The search asks only for words the vault never uses. Such a word finds nothing, so it cannot hurt to
look for its synonyms too ("which add-on makes the app *sluggish*" in a vault that says *slow*), while a
word the vault does use keeps its exact sense: WordNet mixes meanings ("picture" is also "movie").

The data is one group of words per line (``|``-separated). It is read on the first lookup (~10 ms) and
searched with ``str.find``: the few words a search asks about cost less than indexing 114k words would.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from ..text import STOP_WORDS

__all__ = ["synonyms"]

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
def _groups() -> str:
    """The groups as one string framed by newlines, or "" when the data file is missing (a source
    checkout without it searches as before)."""
    try:
        with gzip.open(DATA, "rt", encoding="utf-8") as f:
            return "\n" + f.read()
    except OSError:
        return ""


def _lines_with(word: str) -> list[str]:
    text = _groups()
    out: list[str] = []
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if text[at - 1] in "\n|" and end < len(text) and text[end] in "\n|":
            start = text.rfind("\n", 0, at) + 1
            stop = text.find("\n", end)
            out.append(text[start:stop])
            at = stop
        else:
            at = text.find(word, at + 1)
    return out


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
    if len(word) < 3 or "|" in word or "\n" in word:
        return ()
    for base in _bases(word):
        found = [w for line in _lines_with(base) for w in line.split("|")]
        if found:
            others = dict.fromkeys(w for w in found if w not in (word, base) and w not in STOP_WORDS)
            return tuple(others)[:_MAX_SYNONYMS]
    return ()
