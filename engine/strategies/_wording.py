"""What a stage's task asks about: a strategy stage wraps the goal in an instruction ("Frame the question
and the criteria for answering: {goal}"). Its words say what to do with the passages, not what they hold:
searching for "criteria" or "evidence", or scoring a retrieval on them, or suggesting them as a hint,
looks for the wrong thing."""

from __future__ import annotations

from ._skeleton import get, names

__all__ = ["stage_subject"]


def stage_subject(task: str, goal: str = "") -> str:
    """``task`` without the wording a registered strategy's stage wrapped the goal in; or ``goal`` when the
    task holds it whole inside other words (a stage a model reworded); else ``task`` (spaces normalised
    when wording was taken off)."""
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
