"""A strategy switch (E3): the model planning the root may ask for another strategy with evidence; the
switch is taken once, recorded, and never overrides ``--strategy``."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import RunConfig, strategies
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.runs import Run, start_run

pytestmark = pytest.mark.usefixtures("shad_home")
GOAL = "Compare pour-over and French press: grind size, water temperature and brew time?"


class Switching:
    """The offline provider, except that every root plan asks to switch to ``target``."""

    name = "switching"

    def __init__(self, target: str, evidence: str = "the goal asks for sources, not a comparison") -> None:
        self.offline = OfflineProvider()
        self.target, self.evidence = target, evidence
        self.plans: list[str] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        answer = await self.offline.complete(request)
        if request.purpose == "decompose" and request.node_id == "root":
            self.plans.append(str(request.inputs["strategy"]))
            data = dict(answer.data or {})
            data["switch_strategy"] = {"to": self.target, "evidence": self.evidence}
            return LLMResponse(json.dumps(data), "switching", "m", 10, 10, data=data)
        return LLMResponse(answer.text, "switching", "m", 10, 10, data=answer.data)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def _run(vault: Path, provider: Any, **options: Any) -> Run:
    config = RunConfig(GOAL, (str(vault),), code_mode=False, use_cache=False, **options)
    return asyncio.run(start_run(config, provider=provider))


def _switches(run: Run) -> list[dict[str, Any]]:
    return list(run.history.read_json("decisions/strategy_switch.json")["requests"])


def test_the_model_switches_once_with_evidence(vault: Path) -> None:
    provider = Switching("research")
    run = _run(vault, provider)
    assert run.strategy == "research" and provider.plans == ["analysis", "research"]
    first, second = _switches(run)
    assert first["taken"] and first["from"] == "analysis" and "sources" in first["evidence"]
    assert not second["taken"] and "at most once" in second["refused"]
    chosen = [e for e in run.events if e["type"] == "STRATEGY_CHOSEN"]
    assert [e["strategy"] for e in chosen] == ["analysis", "research"] and chosen[1]["source"] == "switch"
    research = {s.name for s in strategies.get("research").stages}
    assert {n.stage for n in run.dag if n.parent == "root"} <= research  # planned with research's stages
    assert run.summary["strategy"] == "research"


def test_a_users_strategy_and_bad_requests_are_refused(vault: Path) -> None:
    forced = _run(vault, Switching("research"), strategy="analysis")
    assert forced.strategy == "analysis"
    assert "--strategy is never overridden" in _switches(forced)[0]["refused"]
    unknown = _run(vault, Switching("astrology"))
    assert (
        unknown.strategy == "analysis" and "no strategy named 'astrology'" in _switches(unknown)[0]["refused"]
    )
    silent = _run(vault, Switching("research", evidence="  "))
    assert silent.strategy == "analysis" and "needs evidence" in _switches(silent)[0]["refused"]
