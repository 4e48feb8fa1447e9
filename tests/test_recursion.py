"""Decomposition below the first level: a subtask with several asks is split, within max_depth."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import Budgets, RunConfig
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.runs import Run, start_run
from engine.runs.dag import NodeStatus

GOAL = "Compare the roasting and brewing choices that give better coffee at home, and list the sources."
MULTI_ASK = "Explain what first crack is, how long to rest beans, and which grind size suits French press?"


class PlanningModel:
    """The offline provider, except that the root's plan has one subtask with three asks."""

    name = "planner"

    def __init__(self) -> None:
        self.offline = OfflineProvider()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if request.purpose == "decompose" and request.node_id == "root":
            plan = {
                "nodes": [
                    {"id": "basics", "task": MULTI_ASK, "stage": "gather_evidence"},
                    {"id": "water", "task": "What water hardness suits brewing?", "stage": "gather_evidence"},
                ],
                "waivers": [
                    {"stage": "frame_question", "reason": "the goal is clear"},
                    {"stage": "analyze", "reason": "covered by the parts"},
                ],
            }
            return LLMResponse("", "planner", "planner-1", input_tokens=50, output_tokens=50, data=plan)
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    shutil.copytree(DEMO, tmp_path / "vault")
    return tmp_path / "vault"


def _run(vault: Path, **budgets: Any) -> Run:
    config = RunConfig(GOAL, (str(vault),), strategy="analysis", code_mode=False, budgets=Budgets(**budgets))
    return asyncio.run(start_run(config, provider=PlanningModel()))


def test_a_subtask_with_several_asks_is_split_and_synthesized(vault: Path) -> None:
    run = _run(vault, max_depth=3)
    assert run.status.value == "SUCCESS"
    basics = run.dag.node("basics")
    parts = run.dag.children("basics")
    assert len(parts) >= 2 and all(p.depth == 2 for p in parts)
    assert all(p.status is NodeStatus.SUCCEEDED for p in parts)
    assert basics.status is NodeStatus.SUCCEEDED and basics.answer  # it synthesized its parts
    assert "split further" in basics.note
    assert any(e["type"] == "NODE_DECOMPOSED" and e["node"] == "basics" for e in run.events)
    assert (run.history.dir / "decisions" / "plan-basics.json").is_file()
    assert not run.dag.children("water")  # one ask: stays a leaf


def test_max_depth_two_keeps_every_subtask_a_leaf(vault: Path) -> None:
    run = _run(vault, max_depth=2)
    assert run.status.value == "SUCCESS"
    assert max(n.depth for n in run.dag) == 1
    assert not run.dag.children("basics")


def test_max_nodes_limits_splitting(vault: Path) -> None:
    run = _run(vault, max_depth=3, max_nodes=3)
    assert len(run.dag) <= 3
    assert run.status.value == "SUCCESS"
