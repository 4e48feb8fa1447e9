"""Routing: which skills a goal (or a subtask) uses, by a deterministic score; composition; loop guards.

Score (seed 002 §4.3, without the parts that need a model or history)::

    3.0 * trigger   (a ``use_when`` pattern matches: 1.0 at the start of the goal, 0.8 inside it)
  + 1.5 * intent    (1.0 for the first ``intents`` word found, 0.25 for each further one, at most 1.5)
  + 0.75 * entity   (the same for ``entities``)
  + 0.5 * strategy  (the run's strategy is one of the skill's ``strategies``)
  + 0.01 * priority
  - 10 * exclusion  (an ``exclusions`` pattern matches)

A skill is a candidate at ``THRESHOLD`` (a trigger, or an intent and a little more). The best candidate is
the primary (ties: higher priority, then name); its ``composes_with`` skills (and theirs, three levels
deep) are support. Loop guards: a skill already active in the node's ancestors is not triggered again
unless its ``max_depth`` allows it, and a composition that leads back to a skill on its own path stops
there. Everything is recorded (``Routing.to_dict``) for ``decisions/skills.json``."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..text import STOP_WORDS, stem
from ._discover import SkillSet
from ._skill import Skill

__all__ = ["THRESHOLD", "Candidate", "Routing", "guidance", "route"]

THRESHOLD = 1.5
W_TRIGGER, W_INTENT, W_ENTITY, W_STRATEGY, W_PRIORITY, W_EXCLUSION = 3.0, 1.5, 0.75, 0.5, 0.01, 10.0
MAX_COMPOSE_DEPTH = 3
MAX_GUIDANCE_TOTAL = 8000
_WORD = re.compile(r"[\w'’]+", re.U)


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower().replace("’", "'")))


@functools.lru_cache(maxsize=1024)
def _pattern(pattern: str) -> re.Pattern[str]:
    parts = [_normal(p) for p in pattern.split("*")]
    body = r"(?:\s.*?\s|\s|.*?)".join(re.escape(p) for p in parts if p) if any(parts) else ""
    return re.compile(rf"(?:^|\s){body}(?:$|\s)" if body else r"^$")


def _trigger(goal: str, patterns: Sequence[str]) -> tuple[float, str | None]:
    best, which = 0.0, None
    for pattern in patterns:
        found = _pattern(pattern).search(goal)
        if found is None:
            continue
        strength = 1.0 if found.start() == 0 else 0.8
        if strength > best:
            best, which = strength, pattern
    return best, which


def _words_found(stems: frozenset[str], words: Sequence[str]) -> list[str]:
    out = []
    for word in words:
        needed = _needed(word)
        if needed and needed <= stems:
            out.append(word)
    return out


@functools.lru_cache(maxsize=4096)
def _needed(word: str) -> frozenset[str]:
    # A skill's intent or entity is the same on every node a run routes: stemmed once.
    return frozenset(stem(w) for w in _WORD.findall(word.lower()) if w not in STOP_WORDS)


@functools.lru_cache(maxsize=256)
def _goal_words(goal: str) -> tuple[str, frozenset[str]]:
    # One goal is scored against every skill: normalized and stemmed once.
    text = _normal(goal)
    return text, frozenset(stem(w) for w in text.split() if w not in STOP_WORDS)


def _graded(found: list[str]) -> float:
    return 0.0 if not found else min(1.5, 1.0 + 0.25 * (len(found) - 1))


@dataclass(frozen=True)
class Candidate:
    name: str
    score: float
    why: tuple[str, ...]
    excluded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "score": self.score, "why": list(self.why), "excluded": self.excluded}


@dataclass
class Routing:
    """The skills chosen for one goal or subtask, and why."""

    goal: str
    candidates: list[Candidate] = field(default_factory=list)
    primary: str | None = None
    support: list[str] = field(default_factory=list)
    guarded: list[dict[str, str]] = field(default_factory=list)  # {"skill", "reason"}

    @property
    def selected(self) -> list[str]:
        return ([self.primary] if self.primary else []) + self.support

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "primary": self.primary,
            "support": list(self.support),
            "guarded": list(self.guarded),
            "candidates": [c.to_dict() for c in self.candidates],
        }


def score(skill: Skill, goal: str, strategy: str | None = None) -> Candidate:
    """How well ``skill`` fits ``goal`` (deterministic: the same goal and skill give the same score)."""
    text, stems = _goal_words(goal)
    why: list[str] = []
    total = 0.0
    trigger, pattern = _trigger(text, skill.use_when)
    if trigger:
        total += W_TRIGGER * trigger
        why.append(f"use_when {pattern!r}")
    intents = _words_found(stems, skill.intents)
    if intents:
        total += W_INTENT * _graded(intents)
        why.append(f"intents {', '.join(intents)}")
    entities = _words_found(stems, skill.entities)
    if entities:
        total += W_ENTITY * _graded(entities)
        why.append(f"entities {', '.join(entities)}")
    if strategy and strategy in skill.strategies:
        total += W_STRATEGY
        why.append(f"fits the {strategy} strategy")
    total += W_PRIORITY * skill.priority
    excluded, rule = _trigger(text, skill.exclusions)
    if excluded:
        total -= W_EXCLUSION
        why.append(f"excluded by {rule!r}")
    return Candidate(skill.name, round(total, 3), tuple(why), bool(excluded))


def route(goal: str, skills: SkillSet, *, strategy: str | None = None, active: Sequence[str] = ()) -> Routing:
    """Choose the skills for ``goal``. ``active``: the skills in force in the ancestors, outermost first
    (a skill may appear there ``max_depth`` times before it is no longer triggered)."""
    routing = Routing(goal)
    in_force = Counter(active)
    scored = [score(s, goal, strategy) for s in skills]
    ranked = sorted(
        (c for c in scored if c.why),  # priority alone is no reason to list a skill
        key=lambda c: (-c.score, -skills.get(c.name).priority, c.name),
    )
    routing.candidates = ranked
    for cand in ranked:
        if cand.excluded or cand.score < THRESHOLD:
            continue
        if in_force[cand.name] > skills.get(cand.name).max_depth:
            routing.guarded.append({"skill": cand.name, "reason": _loop(cand.name, in_force[cand.name])})
            continue
        routing.primary = cand.name
        break
    if routing.primary is not None:
        _compose(routing, skills, routing.primary, [routing.primary], in_force)
    return routing


def _loop(name: str, times: int) -> str:
    return f"loop guard: {name} is already active in {times} enclosing task(s)"


def _compose(routing: Routing, skills: SkillSet, name: str, path: list[str], in_force: Counter[str]) -> None:
    if len(path) > MAX_COMPOSE_DEPTH:
        return
    for other in skills.get(name).composes_with:
        chain = " → ".join([*path, other])
        if other in path:
            routing.guarded.append({"skill": other, "reason": f"loop guard: composition cycle {chain}"})
            continue
        if other not in skills:
            routing.guarded.append({"skill": other, "reason": f"not found (composed by {name})"})
            continue
        if other in routing.selected:
            continue
        if in_force[other] > skills.get(other).max_depth:
            routing.guarded.append({"skill": other, "reason": _loop(other, in_force[other])})
            continue
        routing.support.append(other)
        _compose(routing, skills, other, [*path, other], in_force)


def guidance(routing: Routing, skills: SkillSet) -> str:
    """The text composition injects into the system prompt: each selected skill's guidance, primary
    first (empty when no skill applies)."""
    if not routing.selected:
        return ""
    parts = ["Skills in use for this task (follow their guidance where it applies):"]
    for name in routing.selected:
        skill = skills.get(name)
        role = "primary" if name == routing.primary else "support"
        parts.append(f"\n## Skill: {skill.name} ({role}) — {skill.description}\n\n{skill.guidance}")
    return "\n".join(parts)[:MAX_GUIDANCE_TOTAL]
