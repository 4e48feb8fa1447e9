"""The run's tree on the terminal (``engine/cli/_live.py``): live from a run's events, and for a finished
run (``shad trace tree``, ``shad status``), a pruned node says why it never answered: "pruned: repeats
SIBLING" when novelty pruned it (a saving), the recorded reason otherwise (a limit cut it from the plan, a
budget ran out). Real runs over a copy of the demo vault: the offline provider, and the real Anthropic SDK
against the local stand-in server for a plan that asks one thing twice."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _fake_llm import FakeLLMServer, prompt_of, well_behaved
from rich.console import Console

from engine import Budgets, RunConfig
from engine.cli._live import LiveTree, pruned_reason, render_tree
from engine.runs import Run, RunStatus, start_run
from engine.runs.dag import Node, NodeStatus

REST = "How long should roasted beans rest?"
GOAL = f"{REST} What grind size suits a French press?"
PLAN = {  # the model asks the same thing twice (as plans do), and once something else
    "nodes": [
        {"id": "rest", "task": REST, "stage": "gather_evidence"},
        {"id": "rest_again", "task": REST, "stage": "gather_evidence"},
        {"id": "grind", "task": "What grind size suits a French press?", "stage": "gather_evidence"},
    ]
}
COMPARE = "Compare pour-over versus French press brewing"


pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    return Path(shutil.copytree(demo_vault, tmp_path / "vault"))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    def model(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
            return json.dumps(PLAN)
        return well_behaved(prompt)

    with FakeLLMServer(reply=model) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-live-tree")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def live_run(config: RunConfig) -> tuple[Run, LiveTree, list[dict[str, Any]]]:
    """The run, with its events folded into a live tree as they came (``on_event``, as ``shad run``)."""
    tree, seen = LiveTree(), []

    def on_event(record: dict[str, Any]) -> None:
        seen.append(record)
        tree.apply(record)

    return asyncio.run(start_run(config, on_event=on_event)), tree, seen


def text(renderable: Any) -> str:
    console = Console(width=300, file=io.StringIO())
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def line_of(tree_text: str, node_id: str) -> str:
    return next(ln for ln in tree_text.splitlines() if f" {node_id} " in ln)


def test_a_subtask_pruned_as_redundant_says_which_sibling_it_repeats(
    vault: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = RunConfig(GOAL, (str(vault),), provider="anthropic", code_mode=False, max_parallel=1)
    r, tree, seen = live_run(config)
    assert r.status is RunStatus.SUCCESS and r.dag.node("rest_again").redundant_with == ["rest"]
    (pruned,) = [e for e in seen if e["type"] == "NODE_PRUNED"]
    assert pruned["node"] == "rest_again" and pruned["redundant_with"] == ["rest"]
    # live: the tree the terminal showed while the run went on
    live = line_of(text(tree.render()), "rest_again")
    assert "PRUNED" in live and live.rstrip().endswith("pruned: repeats rest"), live
    assert "pruned" not in line_of(text(tree.render()), "grind")  # a node that answered says nothing
    # finished: shad trace tree (from dag.json) and shad status (from the summary)
    shad = caller(capsys)
    traced = shad("trace", "tree", r.id)
    assert traced.code == 0 and "pruned: repeats rest" in line_of(traced.out, "rest_again")
    status = shad("status", r.id).out
    saved = r.summary["pruned_redundant"][0]["tokens_saved_est"]
    assert f"pruned rest_again: repeats rest, ~{saved} tokens saved" in status
    assert "missing" not in status  # a repeat is a saving, not a missing branch


def test_a_subtask_a_limit_cut_from_the_plan_says_so(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = RunConfig(
        COMPARE,
        (str(vault),),
        provider="offline",
        checkpoints="off",
        budgets=Budgets(max_nodes=2),
    )
    r, tree, _ = live_run(config)
    assert r.status is RunStatus.PARTIAL
    cut = r.dag.node("analyze")
    assert cut.status is NodeStatus.PRUNED and cut.cut == "max_nodes" and not cut.redundant_with
    shown = line_of(text(tree.render()), "analyze")
    assert "pruned: left out of the plan:" in shown and "repeats" not in shown, shown
    traced = caller(capsys)("trace", "tree", r.id).out
    assert f"pruned: {cut.note}" in line_of(traced, "analyze")


@pytest.mark.parametrize("tokens", [1500, 5000])
def test_subtasks_a_token_budget_stopped_say_so(vault: Path, tokens: int) -> None:
    """5000: the plan runs, then the budget stops its subtasks; 1500: it stops before the root's first
    call (the root, started and never finished, is pruned as the run ends)."""
    config = RunConfig(
        COMPARE, (str(vault),), provider="offline", checkpoints="off", budgets=Budgets(max_tokens=tokens)
    )
    r, tree, seen = live_run(config)
    assert r.status is RunStatus.PARTIAL
    stopped = [n for n in r.dag if n.status is NodeStatus.PRUNED]
    assert stopped and all(n.note.startswith("token budget exhausted") for n in stopped)
    assert {e["node"] for e in seen if e["type"] == "NODE_PRUNED"} == {n.id for n in stopped}
    shown = text(tree.render())
    for n in stopped:
        assert "PRUNED" in line_of(shown, n.id) and "pruned: token budget exhausted" in line_of(shown, n.id)


def test_a_pruned_node_without_a_recorded_reason_and_the_live_view_of_a_long_one() -> None:
    assert pruned_reason(Node("b", "task", "gather", 1, "root", status=NodeStatus.PRUNED)) == "pruned"
    ok = Node("c", "task", "gather", 1, "root", status=NodeStatus.SUCCEEDED, note="answered by the cache")
    assert "pruned" not in text(render_tree([ok]))
    long = Node("d", "t", "gather", 0, None, status=NodeStatus.PRUNED, note="budget " + "very " * 40 + "long")
    shown = text(render_tree([long], task_limit=40))  # the live view keeps it to one short line
    assert "pruned: budget very" in shown and "long" not in shown
    assert "long" in text(render_tree([long]))  # shad trace tree: whole
