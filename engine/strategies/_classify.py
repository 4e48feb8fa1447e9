"""Choosing a strategy, and deciding whether a goal needs decomposing at all. No model call: both are
transparent rules whose inputs and outcome are written to the run's ``decisions/``.

Classifier. Each strategy's skeleton file lists keywords with weights. The goal and every keyword are
lower-cased, split into words and stemmed (Porter 2); a keyword matches when its stemmed words occur
consecutively in the goal (so "implementing" matches "implement", "state of the art" matches as a
phrase). A keyword counts once; keywords with the same stems count once per strategy (the highest
weight). A strategy's score is the sum of its matched weights, and

    confidence = (top / total) * min(1, top / SATURATION)

where ``top`` is the best score, ``total`` the sum over all strategies and ``SATURATION`` = 2.5: the
guess must both dominate the other strategies and rest on more than one weak word (one strong keyword
of weight 1.5 alone gives at most 0.6). Ties go to the order of ``names()``.

A strategy marked ``needs_instruction`` (software: it builds code) is set aside, with its reason
recorded, when every clause of the goal is a question ("Which apps give a six-digit code?" asks for
no code, whatever its keywords).

Decision rule: an override (``--strategy``) always wins; otherwise a guess with confidence >= 0.7
proceeds; otherwise the strategy is ``analysis`` (the general default).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..text import stem
from . import _skeleton
from ._size import only_questions

__all__ = [
    "CONFIDENCE_THRESHOLD",
    "DEFAULT_STRATEGY",
    "SATURATION",
    "StrategyDecision",
    "StrategyGuess",
    "choose_strategy",
    "classify",
]

CONFIDENCE_THRESHOLD = 0.7
DEFAULT_STRATEGY = "analysis"
SATURATION = 2.5

_WORD = re.compile(r"[^\W_]+", re.U)


def stems(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text`` in order (stop words kept: phrases need them)."""
    return [stem(w) for w in _WORD.findall(text.lower())]


def _contains(seq: list[str], sub: tuple[str, ...]) -> bool:
    n = len(sub)
    if n == 0 or n > len(seq):
        return False
    first = sub[0]
    return any(seq[i] == first and tuple(seq[i : i + n]) == sub for i in range(len(seq) - n + 1))


def _keyword_table(skeleton: _skeleton.Skeleton) -> dict[tuple[str, ...], tuple[str, float]]:
    """Stemmed keyword -> (keyword as written, weight); duplicates by stem keep the highest weight."""
    table: dict[tuple[str, ...], tuple[str, float]] = {}
    for word, weight in skeleton.keywords.items():
        key = tuple(stems(word))
        if key and (key not in table or weight > table[key][1]):
            table[key] = (word, weight)
    return table


@dataclass
class StrategyGuess:
    strategy: str
    confidence: float
    scores: dict[str, float]
    matched: dict[str, list[str]] = field(default_factory=dict)  # strategy -> keywords that matched
    set_aside: dict[str, str] = field(default_factory=dict)  # strategy -> why its keywords did not count

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SET_ASIDE_QUESTIONS = "the goal only asks questions, and this strategy builds something"


@dataclass
class StrategyDecision:
    """What the engine writes to ``decisions/strategy.json``."""

    strategy: str
    source: str  # "override" | "classifier" | "default"
    confidence: float
    scores: dict[str, float]
    reason: str
    guess: str | None = None
    matched: dict[str, list[str]] = field(default_factory=dict)
    threshold: float = CONFIDENCE_THRESHOLD
    set_aside: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As ``decisions/strategy.json`` holds it (``set_aside`` only when a strategy was)."""
        record = asdict(self)
        if not record["set_aside"]:
            del record["set_aside"]
        return record


def classify(goal: str) -> StrategyGuess:
    """Score every registered strategy's keywords against the goal (see the module docstring)."""
    words = stems(goal)
    questions = only_questions(goal)
    scores: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    set_aside: dict[str, str] = {}
    for name in _skeleton.names():
        skeleton = _skeleton.get(name)
        hits = [(word, w) for key, (word, w) in _keyword_table(skeleton).items() if _contains(words, key)]
        if hits:
            matched[name] = sorted(word for word, _ in hits)
            if skeleton.needs_instruction and questions:
                set_aside[name] = SET_ASIDE_QUESTIONS
                hits = []
        scores[name] = round(float(sum(w for _, w in hits)), 3)
    total = sum(scores.values())
    if total <= 0:
        return StrategyGuess(DEFAULT_STRATEGY, 0.0, scores, matched, set_aside)
    best = max(scores, key=lambda n: scores[n])  # max keeps the first of equal scores: names() order
    top = scores[best]
    confidence = (top / total) * min(1.0, top / SATURATION)
    return StrategyGuess(best, round(confidence, 3), scores, matched, set_aside)


def choose_strategy(goal: str, override: str | None = None) -> StrategyDecision:
    """Override wins; else the classifier's guess if confident enough; else ``analysis``. An unknown
    override raises ``UnknownStrategyError`` (listing the known strategies)."""
    guess = classify(goal)
    if override is not None and str(override).strip():
        skeleton = _skeleton.get(override)
        return StrategyDecision(
            skeleton.name, "override", 1.0, guess.scores,
            f"--strategy {skeleton.name} given; the classifier's guess was {guess.strategy} "
            f"(confidence {guess.confidence:.2f})",
            guess.strategy, guess.matched, set_aside=guess.set_aside,
        )  # fmt: skip
    if guess.confidence >= CONFIDENCE_THRESHOLD:
        words = ", ".join(guess.matched.get(guess.strategy, []))
        return StrategyDecision(
            guess.strategy, "classifier", guess.confidence, guess.scores,
            f"keywords ({words}) give {guess.strategy} confidence {guess.confidence:.2f} "
            f">= {CONFIDENCE_THRESHOLD}",
            guess.strategy, guess.matched, set_aside=guess.set_aside,
        )  # fmt: skip
    reasons = [f"{name} set aside ({why})" for name, why in guess.set_aside.items()]
    if not guess.matched:
        reasons.insert(0, "no strategy keyword in the goal")
    elif any(guess.scores.values()):
        reasons.insert(
            0, f"best guess {guess.strategy} has confidence {guess.confidence:.2f} < {CONFIDENCE_THRESHOLD}"
        )
    return StrategyDecision(
        DEFAULT_STRATEGY, "default", guess.confidence, guess.scores,
        f"{'; '.join(reasons)}: using the default strategy {DEFAULT_STRATEGY}", guess.strategy,
        guess.matched, set_aside=guess.set_aside,
    )  # fmt: skip
