"""``max_usd``: the cost of every model call, from reported usage and the prices the user gives."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import Budgets, RunConfig
from engine.errors import UsageError
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.runs import Run, start_run

GOAL = "Compare pour-over and French press: grind size, water temperature and brew time?"


class PaidModel:
    """The offline provider's answers, billed as a paid model that uses 1000 in + 500 out per call."""

    name = "paid"

    def __init__(self) -> None:
        self.offline = OfflineProvider()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        answer = await self.offline.complete(request)
        return LLMResponse(answer.text, "paid", "m-1", input_tokens=1000, output_tokens=500, data=answer.data)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    shutil.copytree(DEMO, tmp_path / "vault")
    return tmp_path / "vault"


def _run(vault: Path, provider: Any, **options: Any) -> Run:
    config = RunConfig(GOAL, (str(vault),), code_mode=False, **options)
    return asyncio.run(start_run(config, provider=provider))


def test_cost_is_computed_from_usage_and_prices(vault: Path) -> None:
    run = _run(vault, PaidModel(), prices={"m-1": (3.0, 15.0)})
    calls = run.summary["metrics"]["llm_calls"]
    assert calls >= 2
    # 1000 input tokens at $3/M and 500 output tokens at $15/M per call.
    assert run.summary["metrics"]["cost_usd"] == pytest.approx(calls * (0.003 + 0.0075))


def test_max_usd_stops_the_run_and_leaves_it_resumable(vault: Path) -> None:
    run = _run(vault, PaidModel(), prices={"m-1": (3.0, 15.0)}, budgets=Budgets(max_usd=0.02), max_llm=1)
    assert run.status.value == "PARTIAL"
    assert "cost limit reached" in run.summary["stop_reason"]
    assert run.summary["missing_branches"]
    assert run.summary["resume_command"] == f"shad resume {run.id}"
    # Past the limit only the call that crossed it and the synthesis of what finished are allowed.
    assert run.summary["metrics"]["cost_usd"] <= 0.02 + 2 * 0.0105
    assert run.summary["metrics"]["llm_calls"] < 6


def test_max_usd_without_a_price_stops_with_a_clear_reason(vault: Path) -> None:
    run = _run(vault, PaidModel(), budgets=Budgets(max_usd=1.0))
    assert run.status.value == "PARTIAL"
    assert "no price is known for model 'm-1'" in run.summary["stop_reason"]
    assert run.summary["metrics"]["cost_usd"] is None


def test_offline_runs_cost_nothing(vault: Path) -> None:
    run = _run(vault, OfflineProvider(), budgets=Budgets(max_usd=0.01))
    assert run.status.value == "SUCCESS"
    assert run.summary["metrics"]["cost_usd"] == 0.0


def test_bad_prices_are_usage_errors(vault: Path) -> None:
    with pytest.raises(UsageError):
        RunConfig(GOAL, (str(vault),), prices={"m-1": (3.0,)})  # type: ignore[dict-item]
    with pytest.raises(UsageError):
        RunConfig(GOAL, (str(vault),), prices={"m-1": (-1.0, 2.0)})


def test_every_model_call_event_carries_its_cost(vault: Path) -> None:
    import json

    priced = _run(vault, PaidModel(), prices={"m-1": (3.0, 15.0)})
    events = [json.loads(x) for x in (priced.history.dir / "events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "LLM_CALL"]
    assert calls and all(e["cost_usd"] == pytest.approx(0.0105) for e in calls)
    unpriced = _run(vault, PaidModel(), refresh_cache=True)
    events = [json.loads(x) for x in (unpriced.history.dir / "events.jsonl").read_text().splitlines()]
    unpriced_calls = [e for e in events if e["type"] == "LLM_CALL"]
    assert unpriced_calls and all(e["cost_usd"] is None for e in unpriced_calls)
