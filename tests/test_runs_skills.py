"""Skills in a run: each node's model calls carry the guidance of the skills it routes to (the vault's
override wins), the routing is recorded, a changed skill is a cache miss, and a skill that would
re-trigger itself in a subtask is stopped by the loop guard while its guidance still flows down."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import RunConfig
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.prompts import render
from engine.runs import Run, start_run

pytestmark = pytest.mark.usefixtures("shad_home")
HOW_TO = "How do I dial in espresso?"


class Capturing:
    """The offline provider's answers; remembers each call's purpose, node and system prompt."""

    name = "capturing"

    def __init__(self) -> None:
        self.offline = OfflineProvider()
        self.calls: list[tuple[str, str | None, str]] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append((request.purpose, request.node_id, request.system))
        answer = await self.offline.complete(request)
        return LLMResponse(answer.text, "capturing", "m", 10, 10, data=answer.data)

    async def aclose(self) -> None:
        return None


def _skill(vault: Path, name: str, body: str, extra: str = "") -> None:
    folder = vault / "Shad" / "Skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {name} rules\nuse_when: ['how do i *']\n{extra}---\n{body}\n",
        encoding="utf-8",
    )


def _run(vault: Path, goal: str, **options: Any) -> tuple[Run, Capturing]:
    provider = Capturing()
    config = RunConfig(goal, (str(vault),), code_mode=False, **options)
    return asyncio.run(start_run(config, provider=provider)), provider


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def _node_systems(provider: Capturing, nodes: set[str] | list[str]) -> list[str]:
    """The system prompts of the nodes' own calls (the judge's support check keeps Shad's plain one)."""
    return [system for purpose, node, system in provider.calls if node in nodes and purpose != "support"]


def test_a_nodes_calls_carry_its_skills_guidance(vault: Path) -> None:
    run, provider = _run(vault, HOW_TO)  # the package's how-to, which composes exact-details
    systems = _node_systems(provider, {"root"})
    assert systems and all("Skill: how-to (primary)" in s for s in systems)
    assert all("Skill: exact-details (support)" in s for s in systems)
    decisions = run.history.read_json("decisions/skills.json")
    assert decisions["nodes"]["root"]["primary"] == "how-to"
    assert decisions["nodes"]["root"]["in_force"] == ["how-to", "exact-details"]
    routed = [e for e in run.events if e["type"] == "SKILLS_ROUTED"]
    assert routed[0]["node"] == "root" and routed[0]["primary"] == "how-to"

    _skill(vault, "how-to", "ZEBRA: number every step.")  # the vault's own how-to replaces it whole
    run, provider = _run(vault, "How do I clean a burr grinder?")
    systems = _node_systems(provider, {"root"})
    assert systems and all("ZEBRA: number every step." in s and "exact-details" not in s for s in systems)

    _, provider = _run(vault, "What is first crack?")
    assert all(system == render("system") for _, _, system in provider.calls)  # no skill, no guidance


def test_a_changed_skill_is_a_new_answer(vault: Path) -> None:
    _skill(vault, "how-to", "ZEBRA: number every step.")
    _run(vault, HOW_TO)
    again, provider = _run(vault, HOW_TO)
    assert again.summary["metrics"]["cache_hits"] >= 1 and not provider.calls
    _skill(vault, "how-to", "OKAPI: one sentence per step.")
    _, provider = _run(vault, HOW_TO)
    assert provider.calls and any("OKAPI" in s for _, _, s in provider.calls)


def test_the_loop_guard_stops_a_skill_in_its_own_subtasks(vault: Path) -> None:
    goal = "How do I dial in espresso, and how do I clean the grinder afterwards, step by step?"
    _skill(vault, "how-to", "ZEBRA: number every step.", extra="composes_with: []\n")
    run, provider = _run(vault, goal, strategy="planning")
    decisions = run.history.read_json("decisions/skills.json")["nodes"]
    children = [nid for nid in decisions if nid != "root"]
    assert children, decisions
    guarded = [g for nid in children for g in decisions[nid]["guarded"]]
    assert guarded and all(g["skill"] == "how-to" and "loop guard" in g["reason"] for g in guarded)
    assert all(decisions[nid]["in_force"] == ["how-to"] for nid in children)  # inherited, not re-triggered
    child_calls = _node_systems(provider, children)
    assert child_calls and all("ZEBRA" in s for s in child_calls)


def test_the_routing_record_is_written_with_the_checkpoints_not_per_node(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """decisions/skills.json goes with each dag.json checkpoint and at the end, holding every node's
    routing: rebuilding and queueing it for every node routed grew with the square of the nodes."""
    from engine.store.history import History

    queued: list[str] = []
    write_soon = History.write_json_soon

    def counting(self: History, rel: str, data: Any, **options: Any) -> None:
        queued.append(rel)
        write_soon(self, rel, data, **options)

    monkeypatch.setattr(History, "write_json_soon", counting)
    goal = "How do I dial in espresso, and how do I clean the grinder afterwards, step by step?"
    run, _ = _run(vault, goal, strategy="planning")
    routed = run.history.read_json("decisions/skills.json")["nodes"]
    assert set(routed) == {n.id for n in run.dag} and len(routed) >= 4
    assert queued.count("decisions/skills.json") <= queued.count("dag.json") + 1
