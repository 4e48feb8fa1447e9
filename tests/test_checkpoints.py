"""``engine.checkpoints``: which nodes are high-impact, how decisions are checked and recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine
from engine.errors import UsageError
from engine.runs import checkpoints as cp
from engine.runs.dag import Dag, Node, NodeStatus
from engine.store.history import History


def dag_of(*nodes: Node) -> Dag:
    dag = Dag()
    for n in nodes:
        dag.add(n)
    return dag


@pytest.mark.parametrize(
    ("task", "category"),
    [
        ("How does OAuth login work for the API?", "security"),
        ("Which permissions does the admin role have?", "security"),
        ("What is the database schema of orders?", "data model"),
        ("Summarise the architecture of the ingest service", "architecture"),
        ("Which interfaces does the billing contract promise?", "contracts"),
    ],
)
def test_impact_categories_at_shallow_depth(task: str, category: str) -> None:
    node = Node("a", task, "gather", 1, parent="root")
    reason = cp.high_impact(node, dag_of(Node("root", "goal", "goal", 0), node))
    assert reason is not None and category in reason


def test_words_that_merely_look_like_categories_do_not_count() -> None:
    node = Node("a", "Who was the author of this essay, and who authored the reply?", "gather", 1)
    assert cp.high_impact(node, dag_of(node)) is None


def test_depth_two_needs_fan_out_to_be_high_impact() -> None:
    deep = Node("a.b", "What is the security model?", "part", 2, parent="a")
    assert cp.high_impact(deep, dag_of(deep)) is None
    users = [Node(f"u{i}", "Use it", "part", 2, hard_deps=["a.b"]) for i in range(2)]
    reason = cp.high_impact(deep, dag_of(deep, *users))
    assert reason is not None and "2 subtasks depend on it" in reason


def test_later_stages_that_retrieve_on_their_own_do_not_make_a_node_gating() -> None:
    """gather_evidence waits for frame_question, but retrieves for its own clause: a weak framing of a
    two-part question does not stop the run for a person."""
    frame = Node("frame_question", "Frame the question: A, and B?", "frame_question", 1, parent="root")
    gathers = [
        Node(f"gather_{i}", f"clause {i}", "gather_evidence", 1, parent="root", hard_deps=["frame_question"])
        for i in range(3)
    ]
    assert cp.high_impact(frame, dag_of(Node("root", "goal", "goal", 0), frame, *gathers)) is None


def test_note_lists_become_wikilinks() -> None:
    assert cp.parse_note_list("[[A/B]], C/D.md\nwork:E/F#Part") == ["[[A/B]]", "[[C/D]]", "[[work:E/F#Part]]"]
    assert cp.parse_note_list(" , \n") == []


def test_checkpoint_and_decision_round_trip() -> None:
    c = cp.Checkpoint(
        "r1", "n1", "retrieval", "task", "weak", "security at depth 1", {"retrieval_score": 0.1}
    )
    assert c.pending and set(c.options) == set(engine.CHECKPOINT_ACTIONS)
    c.decision = cp.Decision("hint", "look in Roasting", "human", 5.0)
    back = cp.Checkpoint.from_dict(c.to_dict())
    assert back == c and not back.pending
    assert any(cmd.endswith("--stop") for cmd in c.commands())


@pytest.fixture
def run_with_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_vault: object) -> str:
    """A real paused run (one checkpoint), plus a second checkpoint file, so both paths can be tried."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    vault = tmp_path / "vault"
    (vault / "Coffee").mkdir(parents=True)
    (vault / "Coffee" / "Resting.md").write_text("# Resting\n\nRest beans for a week.\n")
    run = engine.run(
        "What is our authentication architecture for the payment API contract?",
        str(vault),
        provider="offline",
        use_cache=False,
    )
    assert run.status is engine.RunStatus.NEEDS_HUMAN
    cp.save(
        run.history, cp.Checkpoint(run.id, "other", "retrieval", "t", "weak", "security at depth 1"), None
    )
    return run.id


def test_decide_refuses_what_it_cannot_do(run_with_two: str) -> None:
    rid = run_with_two
    with pytest.raises(UsageError, match="unknown checkpoint action"):
        cp.decide(rid, "root", "maybe")
    with pytest.raises(UsageError, match="2 pending checkpoints: name the node") as info:
        cp.decide(rid, None, "approve")
    assert "other" in (info.value.hint or "") and "root" in (info.value.hint or "")
    with pytest.raises(UsageError, match="needs its text"):
        cp.decide(rid, "root", "hint", "  ")
    with pytest.raises(UsageError, match="do not have"):
        cp.decide(rid, "root", "edit", "Coffee/Missing")
    with pytest.raises(UsageError, match="not waiting"):
        cp.decide(rid, "nope", "approve")
    assert len(engine.pending_checkpoints(rid)) == 2  # a refused decision records nothing


def test_decide_records_once(run_with_two: str) -> None:
    rid = run_with_two
    decided = cp.decide(rid, "root", "EDIT", "[[Coffee/Resting]]")
    assert decided.decision is not None and decided.decision.action == "edit"
    assert [c.node_id for c in engine.pending_checkpoints(rid)] == ["other"]
    with pytest.raises(UsageError, match="already decided"):
        cp.decide(rid, "root", "approve")
    history: History = engine.Run.load(rid).history
    assert history.read_json("checkpoints/root.json")["retrieval"] is not None  # kept through the decision
    assert any(e["type"] == "CHECKPOINT_DECIDED" for e in history.read_lines("events.jsonl"))
    assert engine.Run.load(rid).dag.node("root").status is NodeStatus.NEEDS_HUMAN
