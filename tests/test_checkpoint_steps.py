"""Tier C of the recovery ladder through real runs: a high-impact leaf whose retrieval stayed weak opens
a checkpoint; each policy, each decision (approve, edit, hint, skip, stop), the per-run cap and the
resume that applies a decision without paying for the retrieval again.

The offline provider writes the retrieval scripts (so Code Mode and its sandbox run for real); the
vault is about coffee, the goals about payment security, so retrieval is weak by construction.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_data import SECURITY_GOAL as SINGLE
from _fake_llm import FakeLLMServer, prompt_of

import engine
from engine import Checkpoint, Decision, RunStatus
from engine.runs import Run
from engine.runs.dag import NodeStatus

PIPELINE = (
    "Compare the security architecture, the API contracts and the database schema of our payment "
    "service, and plan the migration to OAuth"
)


@pytest.fixture
def vault(coffee_vault: Path) -> Path:
    return coffee_vault


def go(goal: str, vault: Path, **options: Any) -> Run:
    options.setdefault("use_cache", False)
    return engine.run(goal, str(vault), provider="offline", **options)


def events(run: Run) -> list[dict[str, Any]]:
    return run.history.read_lines("events.jsonl")


def since_last_resume(run: Run) -> list[dict[str, Any]]:
    records = events(run)
    starts = [i for i, e in enumerate(records) if e["type"] == "RUN_RESUMED"]
    return records[starts[-1] :] if starts else records


def script_calls(records: list[dict[str, Any]]) -> int:
    return sum(1 for e in records if e["type"] == "LLM_CALL" and e.get("purpose") == "script")


def test_a_weak_high_impact_leaf_pauses_the_run_with_everything_a_person_needs(vault: Path) -> None:
    run = go(SINGLE, vault)
    assert run.status is RunStatus.NEEDS_HUMAN and run.exit_code == 4
    root = run.dag.root()
    assert root.status is NodeStatus.NEEDS_HUMAN
    saved = run.history.read_json("checkpoints/root.json")
    assert saved["decision"] is None and saved["retrieval"]["method"].startswith("codemode")
    assert "security" in saved["impact"] and "retrieval" in saved["reason"]
    assert {"retrieval_score", "confidence"} <= set(saved["signals"])
    kinds = [e["type"] for e in events(run)]
    assert "CHECKPOINT_OPENED" in kinds and "NODE_NEEDS_HUMAN" in kinds
    waiting = next(e for e in events(run) if e["type"] == "NODE_NEEDS_HUMAN")
    assert waiting["node"] == "root" and waiting["options"] == list(engine.CHECKPOINT_ACTIONS)
    assert run.summary["resume_command"] == f"shad checkpoint {run.id}"
    assert f"shad checkpoint {run.id} root --approve" in run.report
    assert [c.node_id for c in engine.pending_checkpoints(run.id)] == ["root"]


def test_approve_resumes_with_the_judged_retrieval_and_no_new_script(vault: Path) -> None:
    paused = go(SINGLE, vault)
    scripts_before = script_calls(events(paused))
    assert scripts_before >= 1
    engine.decide(paused.id, "root", "approve")
    done = engine.resume(paused.id)
    # Finished (no checkpoint left); PARTIAL only because the coffee vault does not answer the question.
    assert done.status is RunStatus.PARTIAL and done.summary["uncovered"] == [SINGLE]
    assert script_calls(since_last_resume(done)) == 0  # the retrieval judged at the checkpoint is reused
    assert done.dag.root().note.startswith("checkpoint: approve by a person")
    assert engine.pending_checkpoints(done.id) == []
    assert "Decided: approve" in done.report
    decided = [e for e in events(done) if e["type"] == "CHECKPOINT_DECIDED"]
    assert decided and decided[0]["by"] == "human"


def test_edit_makes_the_named_notes_the_context(vault: Path) -> None:
    paused = go(SINGLE, vault)
    engine.decide(paused.id, None, "edit", "[[Coffee/Resting]], Coffee/Water.md")
    done = engine.resume(paused.id)
    root = done.dag.root()
    assert root.status.ok and root.retrieval["method"] == "human"
    assert [c["path"] for c in root.retrieval["context"]] == ["Coffee/Resting.md", "Coffee/Water.md"]
    assert "carbon dioxide" in root.retrieval["context"][0]["text"]


def test_hint_runs_one_more_script_and_search_and_keeps_it_in_history(vault: Path) -> None:
    paused = go(SINGLE, vault)
    engine.decide(paused.id, "root", "hint", "resting beans carbon dioxide")
    done = engine.resume(paused.id)
    root = done.dag.root()
    assert root.status.ok and root.retrieval["method"].endswith("+hint")
    assert any(c["path"] == "Coffee/Resting.md" for c in root.retrieval["context"])
    assert script_calls(since_last_resume(done)) == 1
    script = done.history.dir / "artifacts" / "scripts" / "root-hint.py"
    assert script.exists() and json.loads((script.with_suffix(".json")).read_text())


def test_skip_prunes_the_node_and_the_rest_of_the_run_goes_on(vault: Path) -> None:
    paused = go(PIPELINE, vault)
    waiting = [n.id for n in paused.dag if n.status is NodeStatus.NEEDS_HUMAN]
    assert paused.status is RunStatus.NEEDS_HUMAN and waiting
    # The nodes that need the waiting one wait too (not pruned: they run once it is decided).
    behind = [n for n in paused.dag if set(waiting) & set(n.hard_deps)]
    assert behind and all(n.status is NodeStatus.CREATED and "waits for" in n.note for n in behind)
    assert "waits for a person before it can answer" in paused.report
    for node_id in waiting:
        engine.decide(paused.id, node_id, "skip")
    done = engine.resume(paused.id, checkpoints="approve")
    assert done.status is RunStatus.PARTIAL
    for node_id in waiting:
        node = done.dag.node(node_id)
        assert node.status is NodeStatus.PRUNED and "skipped at its checkpoint" in node.note
    assert done.dag.root().status.ok


def test_stop_ends_the_session_and_a_resume_asks_again(vault: Path) -> None:
    paused = go(PIPELINE, vault)
    first = next(n.id for n in paused.dag if n.status is NodeStatus.NEEDS_HUMAN)
    engine.decide(paused.id, first, "stop")
    stopped = engine.resume(paused.id)
    assert stopped.status is RunStatus.PARTIAL
    assert "stopped at the checkpoint" in (stopped.summary["stop_reason"] or "")
    assert first in [c.node_id for c in engine.pending_checkpoints(stopped.id)]
    again = engine.resume(stopped.id)
    assert again.status is RunStatus.NEEDS_HUMAN


@pytest.mark.parametrize(
    ("policy", "status", "opened"),
    # PARTIAL, not SUCCESS: the run goes on without a person, and the vault does not answer the question.
    [("approve", RunStatus.PARTIAL, True), ("off", RunStatus.PARTIAL, False), ("skip", None, True)],
)
def test_policies_that_decide_without_a_person(
    vault: Path, policy: str, status: RunStatus | None, opened: bool
) -> None:
    run = go(SINGLE, vault, checkpoints=policy)
    assert run.status is not RunStatus.NEEDS_HUMAN
    if status is not None:
        assert run.status is status
    files = list((run.history.dir / "checkpoints").glob("*.json"))
    assert bool(files) is opened
    if opened:
        decision = json.loads(files[0].read_text())["decision"]
        assert decision["action"] == policy and decision["by"] == "policy"


def test_ask_awaits_the_decider_once_per_checkpoint(vault: Path) -> None:
    asked: list[Checkpoint] = []

    async def decider(checkpoint: Checkpoint) -> Decision | None:
        asked.append(checkpoint)
        return Decision("hint", "carbon dioxide resting")

    run = asyncio.run(
        engine.arun(
            SINGLE, str(vault), provider="offline", checkpoints="ask", decider=decider, use_cache=False
        )
    )
    assert run.status is RunStatus.PARTIAL and [c.node_id for c in asked] == ["root"]  # finished
    assert run.summary["uncovered"] == [SINGLE]
    assert asked[0].context == []  # what the person saw: nothing was found
    assert asked[0].decision is not None and asked[0].decision.action == "hint"

    async def later(checkpoint: Checkpoint) -> Decision | None:
        return None  # "decide later": the node waits

    waiting = asyncio.run(
        engine.arun(SINGLE, str(vault), provider="offline", checkpoints="ask", decider=later, use_cache=False)
    )
    assert waiting.status is RunStatus.NEEDS_HUMAN


def test_a_weak_leaf_that_is_not_high_impact_goes_on_unasked(vault: Path) -> None:
    run = go("What is the history of the espresso machine in Italy?", vault)
    assert run.status is not RunStatus.NEEDS_HUMAN
    assert not (run.history.dir / "checkpoints").exists()


def test_replaying_a_node_judges_a_new_retrieval(vault: Path) -> None:
    paused = go(SINGLE, vault)
    again = engine.resume(paused.id, replay="root")
    assert again.status is RunStatus.NEEDS_HUMAN
    assert (again.history.dir / "checkpoints" / "replaced" / "root.json").exists()
    assert script_calls(since_last_resume(again)) >= 1


# --- the cap: at most five checkpoints ask; later ones are approved and listed for review ------------

SECURITY_TASKS = [f"Which security control protects payment step {i}?" for i in range(1, 8)]


def _model(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        nodes = [{"id": f"s{i}", "task": t, "stage": "gather_evidence"} for i, t in enumerate(SECURITY_TASKS)]
        return json.dumps({"nodes": nodes[:6]})
    return "Nothing in the vault covers it."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=_model) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-checkpoints-00000000000")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def test_after_five_checkpoints_the_rest_are_approved_for_review(vault: Path, server: FakeLLMServer) -> None:
    goal = "Compare the security controls of our six payment steps: list each step, its controls, its gaps."
    run = engine.run(
        goal,
        str(vault),
        provider="anthropic",
        checkpoints="pause",
        code_mode=False,
        use_cache=False,
        strategy="research",
    )
    checkpoints = run.summary["checkpoints"]
    assert len(checkpoints) == 6
    by_cap = [c for c in checkpoints if c["decision"] and c["decision"]["by"] == "cap"]
    waiting = [c for c in checkpoints if c["decision"] is None]
    assert len(waiting) == 5 and len(by_cap) == 1
    assert run.status is RunStatus.NEEDS_HUMAN
    assert "review it" in run.report
