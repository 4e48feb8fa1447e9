"""Strategies (E3): skeleton data files, the keyword classifier, the small-goal rule, plan validation."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engine import strategies
from engine.errors import ShadError
from engine.strategies import (
    CONFIDENCE_THRESHOLD,
    Skeleton,
    UnknownStrategyError,
    choose_strategy,
    classify,
    needs_decomposition,
    validate_plan,
)

pytestmark = pytest.mark.usefixtures("shad_home")


def _ids(plan: strategies.ValidatedPlan) -> list[str]:
    return [n["id"] for n in plan.nodes]


def _stages(plan: strategies.ValidatedPlan) -> set[str]:
    return {n["stage"] for n in plan.nodes}


def _assert_acyclic(nodes: list[dict[str, Any]]) -> None:
    ids = {n["id"] for n in nodes}
    deps = {n["id"]: set(n["depends_on"]) | set(n["soft_depends_on"]) for n in nodes}
    for d in deps.values():
        assert d <= ids
    done: set[str] = set()
    for _ in nodes:  # peel off nodes whose deps are all done; a cycle would leave some behind
        done |= {i for i, d in deps.items() if d <= done}
    assert done == ids


# --- skeletons and registry ---------------------------------------------------------------------------


def test_builtin_skeletons_are_shipped_data_files() -> None:
    here = Path(strategies.__file__).parent
    for name in ("software", "research", "analysis", "planning", "creative"):
        data = json.loads((here / f"{name}.json").read_text(encoding="utf-8"))
        sk = strategies.get(name)
        assert sk.name == name == data["name"]
        assert sk.required and sk.optional and sk.constraints
        for s in sk.stages:
            assert s.description and set(s.depends_on) <= set(sk.stage_names)


def test_software_and_research_follow_the_seed() -> None:
    sw = strategies.get("software")
    required = "clarify_requirements project_layout types_contracts implementation verification synthesis"
    assert [s.name for s in sw.required] == required.split()
    assert {s.name for s in sw.optional} == {"db_schema", "auth", "openapi", "migrations", "docs"}
    assert {c.name for c in sw.constraints} >= {
        "contracts_first",
        "imports_must_resolve",
        "no_implicit_writes",
    }
    rs = strategies.get("research")
    assert [s.name for s in rs.required] == ["clarify_scope", "gather_sources", "synthesize", "cite"]
    assert {s.name for s in rs.optional} == {"compare_perspectives", "identify_gaps"}
    limits = {c.name: c.value for c in rs.constraints}
    assert limits["must_cite_vault"] is True and limits["max_claims_per_source"] == 5


def test_unknown_strategy_lists_the_known_ones() -> None:
    with pytest.raises(UnknownStrategyError) as err:
        strategies.get("astrology")
    assert isinstance(err.value, ShadError)
    for name in ("software", "research", "analysis", "planning", "creative"):
        assert name in str(err.value)


def test_register_a_custom_strategy() -> None:
    data = {
        "name": "recipe-test",
        "stages": [
            {"name": "ingredients", "description": "What goes in", "required": True},
            {"name": "method", "description": "How", "required": True, "depends_on": ["ingredients"]},
        ],
    }
    sk = strategies.register(data, replace=True)
    assert strategies.get("Recipe-Test") is sk
    assert "recipe-test" in strategies.names()
    with pytest.raises(ShadError):
        strategies.register(data)
    with pytest.raises(ValueError):
        Skeleton.from_dict({"name": "bad", "stages": [{"name": "a", "depends_on": ["nope"]}]})


# --- classifier and decision -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("goal", "expected"),
    [
        ("survey the literature on water hardness", "research"),
        ("Survey the literature on coffee roasting chemistry", "research"),
        ("implement a REST API for logging roasts", "software"),
        ("Write a Python script that parses my roast logs", "software"),
        ("Plan a two-week roasting schedule with milestones", "planning"),
        ("Write a short story about a coffee roaster", "creative"),
        ("Compare French press and AeroPress: pros and cons", "analysis"),
    ],
)
def test_classifier_picks_the_strategy(goal: str, expected: str) -> None:
    guess = classify(goal)
    assert guess.strategy == expected
    assert guess.confidence >= CONFIDENCE_THRESHOLD
    assert 0.0 <= guess.confidence <= 1.0
    decision = choose_strategy(goal)
    assert (decision.strategy, decision.source) == (expected, "classifier")
    assert decision.scores[expected] == max(decision.scores.values())


def test_classifier_is_transparent() -> None:
    guess = classify("implement a REST API")
    assert set(guess.scores) == set(strategies.names())
    assert "implement" in guess.matched["software"] and "rest api" in guess.matched["software"]
    assert guess.scores["software"] > 0 and guess.scores["creative"] == 0


def test_low_confidence_defaults_to_analysis() -> None:
    d = choose_strategy("How long should beans rest after roasting?")
    assert (d.strategy, d.source) == ("analysis", "default")
    assert d.confidence < CONFIDENCE_THRESHOLD and "default" in d.reason
    # one research word only: a guess, but not a confident one
    d = choose_strategy("Give me some background on Kenya AA")
    assert classify("Give me some background on Kenya AA").strategy == "research"
    assert (d.strategy, d.source, d.guess) == ("analysis", "default", "research")


@pytest.mark.parametrize(
    "goal",
    [
        "Which authenticator apps can I use to protect my account with a second login step, and what code "
        "length do they give?",
        "How do I implement a REST API?",
    ],
)
def test_a_goal_of_questions_only_is_never_a_software_build(goal: str) -> None:
    guess = classify(goal)
    assert guess.scores["software"] == 0 and guess.matched["software"]  # its keywords are still shown
    assert "only asks questions" in guess.set_aside["software"]
    d = choose_strategy(goal)
    assert d.strategy == "analysis" and "software set aside" in d.reason
    assert d.to_dict()["set_aside"] == {"software": guess.set_aside["software"]}


@pytest.mark.parametrize(
    "goal",
    ["Can you write a Python script that parses my roast logs?", "Implement a REST API. What should it log?"],
)
def test_an_instruction_keeps_software_even_beside_questions(goal: str) -> None:
    d = choose_strategy(goal)
    assert d.strategy == "software" and not d.set_aside


def test_override_always_wins() -> None:
    d = choose_strategy("survey the literature on water hardness", "creative")
    assert (d.strategy, d.source, d.confidence) == ("creative", "override", 1.0)
    assert d.guess == "research"  # the classifier's view is still recorded
    d = choose_strategy("How do I brew?", " Software ")
    assert d.strategy == "software"
    with pytest.raises(UnknownStrategyError):
        choose_strategy("anything", "nonsense")


def test_decision_record_is_json() -> None:
    record = choose_strategy("implement a REST API").to_dict()
    assert json.loads(json.dumps(record)) == record
    assert {"strategy", "source", "confidence", "scores", "reason"} <= set(record)


# --- small goals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "goal",
    [
        "What DTR should I aim for?",
        "How many USB devices can a single USB host controller support?",
        "Active Directory is built on a directory protocol. Which port does the secure variant use?",
        "Explain first crack",
        "What training plan should I follow for my first marathon?",
    ],
)
def test_small_goals_run_as_one_node(goal: str) -> None:
    decompose, reason = needs_decomposition(goal)
    assert decompose is False
    assert reason.startswith("single node")


@pytest.mark.parametrize(
    ("goal", "why"),
    [
        ("What is first crack? How long should development last?", "2 separate asks"),
        ("Explain first crack and how long development should last", "2 separate asks"),
        ("1. grind size 2. water temperature 3. brew ratio", "3 separate asks"),
        ("Survey the literature on water hardness", "open-ended"),
        ("Implement a REST API for roast logs", "open-ended"),
        ("Compare French press and AeroPress", "open-ended"),
        (" ".join(["word"] * 70), "long goal"),
    ],
)
def test_multi_part_and_open_ended_goals_decompose(goal: str, why: str) -> None:
    decompose, reason = needs_decomposition(goal)
    assert decompose is True
    assert why in reason


# --- plan validation -----------------------------------------------------------------------------------


def test_valid_plan_is_kept() -> None:
    sk = strategies.get("research")
    data = {
        "nodes": [
            {"id": "scope", "task": "Define hardness", "stage": "clarify_scope"},
            {"id": "src", "task": "What do notes say", "stage": "gather_sources", "depends_on": ["scope"]},
            {"id": "cmp", "task": "Compare views", "stage": "compare_perspectives", "depends_on": ["src"]},
        ],
        "waivers": [],
    }
    plan = validate_plan(data, sk, max_nodes=10, max_branching=10)
    assert plan.source == "model" and _ids(plan) == ["scope", "src", "cmp"]
    assert plan.restored == [] and plan.dropped == []


def test_dropped_required_stage_is_restored_and_recorded() -> None:
    sk = strategies.get("research")
    data = {
        "nodes": [{"id": "src", "task": "What do the notes say about hardness", "stage": "gather_sources"}]
    }
    plan = validate_plan(data, sk, max_nodes=10, max_branching=10, goal="water hardness")
    assert "clarify_scope" in _stages(plan)
    assert plan.restored == [
        {"stage": "clarify_scope", "node_id": "clarify_scope", "reason": plan.restored[0]["reason"]}
    ]
    restored = next(n for n in plan.nodes if n["stage"] == "clarify_scope")
    assert restored["restored"] is True and "water hardness" in restored["task"]
    assert any("clarify_scope" in p and "restored" in p for p in plan.problems)
    assert _ids(plan).index("clarify_scope") < _ids(plan).index("src")  # in the skeleton's stage order


def test_parent_handled_stages_need_no_node() -> None:
    # synthesize and cite are required by the seed but done by the parent: never restored as subtasks
    sk = strategies.get("research")
    nodes = [
        {"id": "a", "task": "t", "stage": "clarify_scope"},
        {"id": "b", "task": "u", "stage": "gather_sources"},
    ]
    plan = validate_plan({"nodes": nodes}, sk, 10, 10)
    assert plan.restored == [] and _stages(plan) == {"clarify_scope", "gather_sources"}
    assert all(d["required"] is False for d in sk.stage_dicts() if d["name"] in ("synthesize", "cite"))


def test_explicit_waiver_with_reason_is_honoured() -> None:
    sk = strategies.get("software")
    nodes = [
        {"id": "req", "task": "Clarify", "stage": "clarify_requirements"},
        {"id": "types", "task": "Types", "stage": "types_contracts"},
        {"id": "impl", "task": "Code", "stage": "implementation"},
        {"id": "test", "task": "Tests", "stage": "verification", "depends_on": ["impl"]},
    ]
    waived = validate_plan(
        {"nodes": nodes, "waivers": [{"stage": "project_layout", "reason": "one file"}]}, sk, 10, 10
    )
    assert "project_layout" not in _stages(waived)
    assert waived.waivers == [{"stage": "project_layout", "reason": "one file"}] and waived.restored == []
    # a waiver without a reason is refused: the stage comes back
    refused = validate_plan({"nodes": nodes, "waivers": [{"stage": "project_layout"}]}, sk, 10, 10)
    assert "project_layout" in _stages(refused) and refused.waivers == []
    assert any("needs a reason" in p for p in refused.problems)
    # the string form "stage: reason" works too
    short = validate_plan({"nodes": nodes, "waivers": ["project_layout: a single script"]}, sk, 10, 10)
    assert "project_layout" not in _stages(short)


def test_constraint_orders_implementation_after_contracts() -> None:
    sk = strategies.get("software")
    nodes = [
        {"id": "impl", "task": "Code", "stage": "implementation"},
        {"id": "types", "task": "Types", "stage": "types_contracts"},
    ]
    plan = validate_plan({"nodes": nodes}, sk, 10, 10)
    impl = next(n for n in plan.nodes if n["id"] == "impl")
    assert "types" in impl["depends_on"]
    assert any("contracts_first" in p for p in plan.problems)


@pytest.mark.parametrize(
    "garbage",
    [None, "", "not json at all", "[1, 2", 42, 3.5, True, [], {}, {"nodes": None}, {"nodes": "x"},
     {"nodes": [None, 1, "a", [], {}]}, {"nodes": [{"id": "a"}]}, {"nodes": [{"task": ""}]}, b"\xff\xfe",
     {"nodes": [{"id": {"x": 1}, "task": ["no"]}]}],
)  # fmt: skip
def test_garbage_gives_the_default_plan(garbage: Any) -> None:
    sk = strategies.get("analysis")
    plan = validate_plan(garbage, sk, max_nodes=10, max_branching=10, goal="why is my espresso sour")
    assert plan.source == "default"
    assert [n["stage"] for n in plan.nodes] == ["frame_question", "gather_evidence", "analyze"]
    assert plan.problems
    _assert_acyclic(plan.nodes)
    json.dumps(plan.to_dict())


def test_json_text_is_parsed() -> None:
    sk = strategies.get("analysis")
    text = json.dumps({"nodes": [{"id": "e", "task": "evidence", "stage": "gather evidence"}]})
    plan = validate_plan(text, sk, 10, 10)
    assert plan.source == "model" and "e" in _ids(plan)
    assert next(n for n in plan.nodes if n["id"] == "e")["stage"] == "gather_evidence"


def test_nulls_unknowns_duplicates_and_self_dependencies() -> None:
    sk = strategies.get("analysis")
    data = {
        "nodes": [
            {
                "id": "a",
                "task": "frame",
                "stage": "frame_question",
                "depends_on": None,
                "soft_depends_on": "b",
            },
            {"id": "b", "task": "evidence", "stage": None, "depends_on": ["a", "ghost", "b", 7, None]},
            {"id": "b", "task": "duplicate", "stage": "analyze"},
            {"id": None, "task": "no id", "stage": "analyze", "depends_on": ["b"]},
            {"id": "bad id!", "task": "x", "stage": "gather_evidence"},
        ],
        "waivers": "everything",
    }
    plan = validate_plan(data, sk, 10, 10)
    ids = _ids(plan)
    assert ids.count("b") == 1 and "bad_id" in ids and "n4" in ids
    assert {"id": "b", "reason": "duplicate id"} in plan.dropped
    b = next(n for n in plan.nodes if n["id"] == "b")
    assert b["stage"] == "gather_evidence"  # unknown stage -> the primary stage
    assert b["depends_on"] == ["a"]
    assert any("ghost" in p for p in plan.problems) and any("itself" in p for p in plan.problems)
    _assert_acyclic(plan.nodes)


def test_cycles_are_broken_and_recorded() -> None:
    sk = strategies.get("analysis")
    data = {"nodes": [
        {"id": "a", "task": "A", "stage": "frame_question", "depends_on": ["c"]},
        {"id": "b", "task": "B", "stage": "gather_evidence", "depends_on": ["a"]},
        {"id": "c", "task": "C", "stage": "analyze", "depends_on": ["b"], "soft_depends_on": ["a"]},
        {"id": "d", "task": "D", "stage": "analyze", "soft_depends_on": ["e"]},
        {"id": "e", "task": "E", "stage": "analyze", "soft_depends_on": ["d"]},
    ]}  # fmt: skip
    plan = validate_plan(data, sk, 10, 10)
    _assert_acyclic(plan.nodes)
    assert sum("cycle" in p for p in plan.problems) >= 2
    b = next(n for n in plan.nodes if n["id"] == "b")
    assert b["depends_on"] == ["a"]  # the backward edges survive; the forward one closing the cycle goes


def test_500_nodes_are_clamped_fast_keeping_required_stages() -> None:
    sk = strategies.get("software")
    nodes = [
        {"id": f"n{i}", "task": f"module {i}", "stage": "implementation",
         "depends_on": [f"n{j}" for j in range(max(0, i - 30), i + 30) if j != i]}
        for i in range(500)
    ]  # fmt: skip
    nodes.append({"id": "check", "task": "tests", "stage": "verification", "depends_on": ["n499"]})
    started = time.perf_counter()
    plan = validate_plan({"nodes": nodes}, sk, max_nodes=12, max_branching=8)
    assert time.perf_counter() - started < 2.0
    assert len(plan.nodes) == 8
    needed = {s.name for s in sk.stages if s.needs_node}
    assert needed <= _stages(plan)  # one node per required stage is kept first
    assert any("clamped" in p for p in plan.problems)
    assert sum(1 for d in plan.dropped if "limit" in d["reason"]) == 501 + len(plan.restored) - 8
    _assert_acyclic(plan.nodes)


def test_limits_of_one_never_raise() -> None:
    sk = strategies.get("research")
    for limits in ((1, 1), (0, 0), (-5, 3), ("x", None)):
        plan = validate_plan({"nodes": [{"id": "a", "task": "t", "stage": "gather_sources"}]}, sk, *limits)
        assert 1 <= len(plan.nodes) <= 50
        _assert_acyclic(plan.nodes)
