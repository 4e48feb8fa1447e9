"""What a stage's task asks about: a strategy stage wraps the goal in an instruction ("Frame the question
and the criteria for answering: {goal}"). Its words say what to do with the passages, not what they hold:
searching for "criteria" or "evidence", or scoring a retrieval on them, or suggesting them as a hint,
looks for the wrong thing."""

from __future__ import annotations

import itertools
import re

from ..text import points_back_by_pronoun, without_vault_wording
from ._size import split_clauses
from ._skeleton import get, names

__all__ = ["antecedent", "stage_subject"]

_WORD = re.compile(r"\w+")


def stage_subject(task: str, goal: str = "") -> str:
    """``task`` without the wording a registered strategy's stage wrapped the goal in; or ``goal`` when the
    task holds it whole inside other words (a stage a model reworded); else ``task`` (spaces normalised
    when wording was taken off). Words that only name the vault as where to look are taken off too
    ("Summarize what the vault says about Docker" asks about Docker)."""
    return without_vault_wording(_unwrapped(task, goal))


def _unwrapped(task: str, goal: str) -> str:
    text = " ".join(task.split())
    lowered = text.lower()
    for before, after in _wordings():
        if before and lowered.startswith(before) and lowered.endswith(after):
            return text[len(before) : len(text) - len(after)].strip() or task
    if goal and task != goal and " ".join(goal.lower().split()) in lowered:
        return goal
    return task


def _wordings() -> list[tuple[str, str]]:
    """What each registered stage's task template puts before and after ``{goal}``, lowercased, longest
    first. Read each time (a few dozen stages, microseconds): a strategy registered later, or in place of
    another, counts at once."""
    found = set()
    for name in names():
        for stage in get(name).stages:
            if "{goal}" in stage.task:
                before, _, after = stage.task.partition("{goal}")
                found.add((" ".join(before.lower().split()), " ".join(after.lower().split())))
    return sorted(found, key=lambda pair: -len(pair[0]) - len(pair[1]))


def antecedent(task: str, goal: str) -> str:
    """The clause of ``goal`` just before ``task`` when ``task`` is a later clause of it that points back at
    what that one asked for with a pronoun ("Which plugins help me write math, and how do *they* differ?"),
    else "". Such a clause means nothing on its own: searched alone, "how do they differ?" finds notes that
    say "different". ("*That* developer" names another note, one link away, which the step before finds.)"""
    if not goal or not points_back_by_pronoun(task):
        return ""
    key = _WORD.findall(task.lower())
    clauses = [clause for clause, _ in split_clauses(goal)]
    for before, clause in itertools.pairwise(clauses):
        if _WORD.findall(clause.lower()) == key:
            return before
    return ""
