"""Small goals stay small. Recursion is known to hurt simple and in-window tasks, so decomposition is
chosen, not forced, and the reason is recorded in ``decisions/decomposition.json``.

The goal is split into clauses (``split_clauses``: lines, enumerations, sentences, ";", and " and "
before a new question or instruction). A clause is an *ask* when it is a question (ends with "?" or
starts with a question word) or an instruction (starts with a verb, after "please", "can you", ...);
each enumerated item is an ask; statements that only give context are not. Then:

    decompose  when  asks >= 2
               or    an ask is open-ended: an instruction led by a verb such as implement, build,
                     design, write, plan, survey, compare, analyse, evaluate, summarize, or the goal
                     says "literature", "state of the art", "in depth", "pros and cons", "trade-offs" ...
               or    the goal is longer than ``max_words`` (50) words
    otherwise  one node: a single question or lookup that a few notes can answer.
"""

from __future__ import annotations

import re

from ..text import parse_query

__all__ = [
    "LOOKUP_VERBS",
    "MAX_WORDS",
    "OPEN_PHRASES",
    "OPEN_VERBS",
    "needs_decomposition",
    "only_questions",
    "split_clauses",
]

MAX_WORDS = 50
OPEN_VERBS = frozenset(
    "implement build create design develop write draft compose plan organize organise survey review "
    "research compare contrast analyze analyse evaluate assess investigate explore outline prepare "
    "brainstorm refactor migrate summarize summarise report critique audit map".split()
)
LOOKUP_VERBS = frozenset(
    "explain describe define tell show list find give name look identify state recall what's".split()
)
OPEN_PHRASES = (
    "literature", "state of the art", "comprehensive", "in depth", "in-depth", "pros and cons", "trade-off",
    "tradeoff", "trade off", "everything about", "all aspects", "overview of", "roadmap", "step by step plan",
    "research report", "deep dive",
)  # fmt: skip
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could should would will "
    "may might must has have had".split()
)
_POLITE = re.compile(
    r"^(?:please|kindly|can you|could you|would you|will you|help me(?: to)?|i want to|i need to|"
    r"i'd like to|i would like to|let's|lets|we need to|try to)\s+",
    re.I,
)
_BULLET = re.compile(r"^\s*(?:[-*•+]|\(?\d{1,2}[.)]|\(?[a-hA-H]\))\s+")
_INLINE_ENUM = re.compile(
    r"(?:(?<=^)|(?<=[\s:;,]))\(?(?:\d{1,2}|[a-h])\)\s+|(?:(?<=^)|(?<=[\s:;]))\d{1,2}\.\s+"
)
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=\S)|\s*;\s*")
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|ca|no|fig|dr|mr|mrs|ms|st|jr|sr)\.|\b[A-Z]\.)$", re.I
)
_AND = re.compile(r",?\s+and\s+(?:then\s+|also\s+)?", re.I)
_WORD = re.compile(r"[\w'’-]+", re.U)
_LEAD = re.compile(r"^(?:and|also|then|but|so|or)\s+", re.I)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _first_word(text: str) -> str:
    words = _words(_POLITE.sub("", text.strip()))
    return words[0] if words else ""


def _starts_ask(text: str) -> bool:
    first = _first_word(text)
    return first in QUESTION_WORDS or first in OPEN_VERBS or first in LOOKUP_VERBS


def _sentences(text: str) -> list[str]:
    """Split on sentence ends and ";", but not after an abbreviation ("e.g.", "vs.", "Dr.", "J.")."""
    out: list[str] = []
    for piece in _SENTENCE.split(text):
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _split_and(sentence: str) -> list[str]:
    """Split on " and " only before a new question or instruction, with enough words on both sides."""
    parts = _AND.split(sentence)
    out = [parts[0]]
    for part in parts[1:]:
        first = _first_word(part)
        if (
            len(_words(out[-1])) >= 3
            and len(_words(part)) >= 3
            and (first in QUESTION_WORDS - {"is", "are"} or first in OPEN_VERBS or first in LOOKUP_VERBS)
        ):
            out.append(part)
        else:
            out[-1] = f"{out[-1]} and {part}"
    return out


def only_questions(goal: str) -> bool:
    """Whether every clause of the goal is a question: led by a question word once "please", "can you"
    and the like are set aside ("Can you write a script?" is an instruction)."""
    clauses = split_clauses(goal)
    return bool(clauses) and all(_first_word(c) in QUESTION_WORDS for c, _ in clauses)


def count_asks(text: str) -> int:
    """How many separate asks (questions, instructions, list items) a text makes."""
    return sum(1 for clause, enumerated in split_clauses(text) if _is_ask(clause, enumerated))


def split_clauses(goal: str) -> list[tuple[str, bool]]:
    """The goal's clauses in order, each with whether it came from an enumeration (list item)."""
    segments: list[tuple[str, bool]] = []
    for line in goal.splitlines():
        if not line.strip():
            continue
        bullet = bool(_BULLET.match(line))
        rest = _BULLET.sub("", line, count=1) if bullet else line
        markers = len(_INLINE_ENUM.findall(rest)) + bullet
        items = [x for x in _INLINE_ENUM.split(rest) if x.strip()]
        if markers >= 2 and len(items) >= 2:
            head = [] if bullet or _INLINE_ENUM.match(rest.strip()) else [items.pop(0)]
            segments += [(h, False) for h in head] + [(i, True) for i in items]
        else:
            segments.append((rest, bullet))
    clauses: list[tuple[str, bool]] = []
    seen: set[str] = set()
    for text, enumerated in segments:
        for sentence in _sentences(text):
            for part in _split_and(sentence.strip()):
                clause = _LEAD.sub("", part.strip(" \t,:-")).strip()
                key = " ".join(_words(clause))
                if not clause or key in seen or parse_query(clause).empty:
                    continue
                seen.add(key)
                clauses.append((clause, enumerated))
    return clauses


def _is_ask(clause: str, enumerated: bool) -> bool:
    return enumerated or clause.rstrip().endswith("?") or _starts_ask(clause)


def needs_decomposition(goal: str, *, max_words: int = MAX_WORDS) -> tuple[bool, str]:
    """(decompose?, the reason in words) by the rule in the module docstring."""
    clauses = split_clauses(goal)
    asks = [c for c, enum in clauses if _is_ask(c, enum)]
    n_asks = max(1, len(asks)) if clauses else 0
    n_words = len(_words(goal))
    low = " ".join(_words(goal))
    open_verbs = sorted({_first_word(c) for c in asks if _first_word(c) in OPEN_VERBS})
    open_phrases = [p for p in OPEN_PHRASES if re.search(r"\b" + re.escape(p), low)]
    facts = f"{n_asks} ask(s), {n_words} words"
    if n_asks >= 2:
        return (
            True,
            f"decompose: the goal makes {n_asks} separate asks ({n_words} words); each becomes a subtask",
        )
    if open_verbs or open_phrases:
        marks = ", ".join([f"'{v}'" for v in open_verbs] + [f"'{p}'" for p in open_phrases])
        return True, f"decompose: open-ended goal ({marks}; {facts}); the strategy's stages structure it"
    if n_words > max_words:
        return (
            True,
            f"decompose: a long goal ({n_words} words > {max_words}); splitting keeps each step in focus",
        )
    return False, (
        f"single node: one question or lookup ({facts}, nothing open-ended) that a few notes can answer; "
        "decomposing it would only add calls and lose context"
    )
