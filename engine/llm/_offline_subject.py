"""What a question is about when it names someone or something by a proper name, or by a word no
dictionary lists ("the GitHub user sspaeti"): "The GitHub user Artel250 has one plugin. Which AI assistant
does it let you chat with?" is about the note *Artel250* and the notes linked with it (the plugin it lists,
whose note says "Developed by: [[Artel250]]"; a note a property names, "artist: Paul Chambers"), not about
every plugin whose note says "AI assistant". The offline script puts the named note in the context; the
offline answer prefers the passages of the named note and of the notes linked with it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ..lexicon import is_word
from ..text import STOP_WORDS
from ._offline_units import WIKILINK

__all__ = ["NO_SUBJECT", "Subject", "proper_names", "spelled", "subject_items", "unlisted_words"]

_TOKEN = re.compile(r"[^\W_]+", re.U)
_MAX_WORDS = 3
_LINK_END = re.compile(r"[|#^]")  # where a wikilink's target ends
MIN_UNLISTED = 4  # a lower-case word names a note from this many letters (not "foo", "ipv")
MIN_MENTIONED = 6  # a note's name spelled inside another's text is a mention from this many letters


def spelled(name: str) -> str:
    """A name's letters and digits, lower-cased: ``janisringli`` for "Janis Ringli" and "janisringli",
    ``shappo`` for "Shap Po" and "shap-po"."""
    return "".join(_TOKEN.findall(name.lower()))


def proper_names(text: str) -> set[str]:
    """The names ``text`` spells as proper nouns (``spelled``): each run of one to three words that start
    with a capital or hold a digit, with the stop words between them ("Bass on Top"), but not one stop
    word alone ("The GitHub user Artel250": ``github``, ``artel250``, ``thegithub``). A note titled so is
    what the text is about."""
    tokens = _TOKEN.findall(text)
    proper = [t[0].isupper() or any(c.isdigit() for c in t) for t in tokens]
    names: set[str] = set()
    for i in range(len(tokens)):
        if not proper[i]:
            continue
        words = 0
        for j in range(i, len(tokens)):
            if not proper[j]:
                if tokens[j].lower() in STOP_WORDS:
                    continue  # "Bass on Top": a stop word between two words of a name
                break
            words += 1
            if words > _MAX_WORDS:
                break
            name = "".join(tokens[i : j + 1]).lower()
            if len(name) > 2 and not name.isdigit() and (words > 1 or name not in STOP_WORDS):
                names.add(name)
    return names


def unlisted_words(text: str) -> set[str]:
    """The words of ``text`` that no dictionary lists (``engine.lexicon.is_word``), lower-cased: a handle
    or a product name written in lower case ("the GitHub user sspaeti"), which names a note titled so as a
    capitalised name does. An English word ("knowledge") names no note: a note titled by it is a topic the
    question shares with others, not its subject."""
    words = {t.lower() for t in _TOKEN.findall(text) if not t[0].isupper() and not t.isdigit()}
    return {w for w in words if len(w) >= MIN_UNLISTED and w not in STOP_WORDS and not is_word(w)}


def _mentioned(name: str, squashed: str) -> bool:
    return len(name) >= MIN_MENTIONED and name in squashed


def _linked_names(text: str) -> set[str]:
    """The names (``spelled``) of the notes ``text`` links to."""
    return {spelled(_stem_of(_LINK_END.split(m.group(2))[0])) for m in WIKILINK.finditer(text)}


def _stem_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


class Subject(NamedTuple):
    """Of a list of context items, by index: those titled by a name the question spells (``named``) and
    those linked with them (``linked``: the notes they link to and the notes that link to them); and the
    named notes' titles (``titles``)."""

    named: frozenset[int] = frozenset()
    linked: frozenset[int] = frozenset()
    titles: tuple[str, ...] = ()


NO_SUBJECT = Subject()


def subject_items(question: str, items: Sequence[tuple[str, str]]) -> Subject:
    """What ``question`` names among ``items`` ((note path, text) pairs): ``Subject``. Nothing when it
    names no note of the items, or when the named notes link with none of the others (then the name says
    nothing about which of them answers)."""
    names = proper_names(question) | unlisted_words(question)
    if not names:
        return NO_SUBJECT
    names_of = [spelled(_stem_of(path)) for path, _ in items]
    named = {i for i, name in enumerate(names_of) if name in names}
    if not named:
        return NO_SUBJECT
    named_notes = {names_of[i] for i in named}
    links = [_linked_names(text) for _, text in items]
    linked_from_named = set().union(*(links[i] for i in named))
    # A property's link reaches the context as its target's name ("artist: Paul Chambers"): a note whose
    # name the named note's text spells out is linked with it too.
    squashed = " ".join(spelled(items[i][1]) for i in named)
    related = {
        i
        for i, name in enumerate(names_of)
        if i not in named
        and (links[i] & named_notes or name in linked_from_named or _mentioned(name, squashed))
    }
    if not related:
        return NO_SUBJECT
    titles = tuple(dict.fromkeys(_stem_of(items[i][0]) for i in sorted(named)))
    return Subject(frozenset(named), frozenset(related), titles)
