"""``engine.strategies.stage_subject``: what a stage's task asks about, without the instruction a strategy
stage wraps the goal in."""

from __future__ import annotations

import pytest

from engine import strategies
from engine.strategies import antecedent, stage_subject
from engine.text import STOP_WORDS

GOAL = "Compare light roasts versus dark roasts for espresso"


def test_every_built_in_stage_template_is_taken_off_the_goal() -> None:
    wrapped = [
        stage.task.replace("{goal}", GOAL)
        for name in strategies.names()
        for stage in strategies.get(name).stages
        if "{goal}" in stage.task and stage.task != "{goal}"
    ]
    assert wrapped  # the built-in strategies do wrap the goal
    for task in wrapped:
        assert stage_subject(task) == GOAL, task
        assert stage_subject(f"  {task}  ") == GOAL


def test_a_task_that_holds_the_goal_in_other_words_asks_the_goal() -> None:
    reworded = f"Weigh up, with care: {GOAL} (two paragraphs)"
    assert stage_subject(reworded) == reworded  # no template of a strategy: without the goal, unchanged
    assert stage_subject(reworded, GOAL) == GOAL
    assert stage_subject("How long should beans rest?", GOAL) == "How long should beans rest?"
    assert stage_subject(GOAL, GOAL) == GOAL


def test_a_strategy_registered_later_has_its_wording_taken_off_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.strategies import _skeleton

    data = strategies.get("research").to_dict()
    data = {**data, "name": "wording-test"}
    data["stages"] = [{**data["stages"][0], "task": "Weigh the sources on: {goal}"}, *data["stages"][1:]]
    assert stage_subject(f"Weigh the sources on: {GOAL}") != GOAL
    monkeypatch.setitem(_skeleton._REGISTRY, "wording-test", strategies.Skeleton.from_dict(data))
    assert stage_subject(f"Weigh the sources on: {GOAL}") == GOAL
    # one registered in place of another (same name, other stages) counts too
    data["stages"][0] = {**data["stages"][0], "task": "Sift the notes for: {goal}"}
    monkeypatch.setitem(_skeleton._REGISTRY, "wording-test", strategies.Skeleton.from_dict(data))
    assert stage_subject(f"Sift the notes for: {GOAL}") == GOAL


def test_versus_is_no_word_to_search_for() -> None:
    assert {"versus", "vs"} <= STOP_WORDS


def test_a_clause_that_points_back_with_a_pronoun_has_the_clause_before_it_as_antecedent() -> None:
    goal = "Which plugins help me write math in Obsidian, and how do they differ?"
    assert antecedent("how do they differ?", goal) == "Which plugins help me write math in Obsidian"
    assert antecedent("How do  they differ", goal) == "Which plugins help me write math in Obsidian"
    assert antecedent("Which plugins help me write math in Obsidian", goal) == ""  # the first clause
    assert antecedent("how do they differ?", "") == ""
    assert antecedent("how do they differ?", "Which plugins help me write math?") == ""  # not a clause of it
    # "that developer" names another note (the step before hands over what it found), and a relative
    # "that" points back at nothing
    assert (
        antecedent(
            "what website does that developer list?", "Who made X, and what website does that developer list?"
        )
        == ""
    )
    goal = "Which technique is listed for pipelines, and how do CPUs cope with an instruction that stalls?"
    assert antecedent("how do CPUs cope with an instruction that stalls?", goal) == ""


def test_the_words_that_name_the_vault_are_taken_off_a_task() -> None:
    assert stage_subject("Summarize what the vault says about Docker") == "Summarize Docker"
    assert stage_subject("How do I create a vault?") == "How do I create a vault?"
