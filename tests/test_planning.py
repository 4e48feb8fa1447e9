"""Planning (``engine.runs._planning``): subtasks the limits cut from a plan make the run PARTIAL (exit 3),
are listed as missing branches with the limit that cut them, and run on a resume whose limits make room;
a plan the model could not give (prose) falls back to the skeleton's and is cached like any decision."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _fake_llm import FakeLLMServer

from engine import Budgets, RunConfig
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.runs import Run, RunStatus, aresume, start_run
from engine.runs.dag import NodeStatus

COMPARE = "Compare pour-over versus French press brewing"
KEY = "sk-ant-test-planning-00000000000000"


pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    shutil.copytree(demo_vault, tmp_path / "vault")
    return tmp_path / "vault"


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def finished(summary: dict[str, Any]) -> bool:
    """Nothing is missing any more: SUCCESS, or PARTIAL only for asks the vault does not answer."""
    ok = summary["status"] == "SUCCESS" or (summary["status"] == "PARTIAL" and bool(summary.get("uncovered")))
    return ok and summary["missing_branches"] == [] and summary["failures"] == []


def resumed_event(run_id: str) -> dict[str, Any]:
    return [e for e in Run.load(run_id).events if e["type"] == "RUN_RESUMED"][-1]


# --- a plan cut by the limits ----------------------------------------------------------------------------


def test_max_nodes_cut_is_partial_with_missing_branches_and_resume_runs_them(shad: Any, vault: Path) -> None:
    args = ("--vault", str(vault), "--provider", "offline", "--no-checkpoints")
    r = shad("run", COMPARE, *args, "--max-nodes", "2", "--json")
    assert r.code == 3, r.err
    summary = r.json()
    run_id = summary["run_id"]
    assert summary["status"] == "PARTIAL"
    missing = {b["node_id"]: b for b in summary["missing_branches"]}
    assert set(missing) == {"gather_evidence", "analyze"}  # the required stages the limit left out
    assert all(b["limit"] == "max_nodes" and b["status"] == "PRUNED" for b in missing.values())
    assert "max_nodes 2" in missing["analyze"]["reason"]
    assert summary["resume_command"] == f"shad resume {run_id} --max-nodes 4"
    report = Path(summary["report_path"]).read_text("utf-8")
    assert "## Missing branches" in report and "`gather_evidence`" in report
    assert f"`shad resume {run_id} --max-nodes 4`" in report
    assert "missing" in shad("status", run_id).out

    same = shad("resume", run_id, "--json")  # the same limits: nothing more can run
    assert same.code == 3 and same.json()["status"] == "PARTIAL"
    assert {b["node_id"] for b in same.json()["missing_branches"]} == set(missing)
    assert resumed_event(run_id)["rerun"] == []

    done = shad(*shlex.split(same.json()["resume_command"])[1:], "--json")  # the printed command
    assert finished(done.json()) and done.code == (0 if done.json()["status"] == "SUCCESS" else 3), done.err
    assert set(resumed_event(run_id)["rerun"]) == {"gather_evidence", "analyze", "root"}
    final = Run.load(run_id)
    for node_id in ("gather_evidence", "analyze"):
        node = final.dag.node(node_id)
        assert node.status is NodeStatus.SUCCEEDED and node.answer and not node.cut
    assert {c.id for c in final.dag.children("root")} == {"frame_question", "gather_evidence", "analyze"}


def test_max_depth_one_keeps_the_stages_as_missing_branches_of_a_one_node_run(shad: Any, vault: Path) -> None:
    r = shad("run", COMPARE, "--vault", str(vault), "--provider", "offline", "--max-depth", "1", "--json")
    assert r.code == 3, r.err
    summary = r.json()
    assert {b["limit"] for b in summary["missing_branches"]} == {"max_depth"}
    assert {b["node_id"] for b in summary["missing_branches"]} == {
        "frame_question",
        "gather_evidence",
        "analyze",
    }
    assert summary["resume_command"] == f"shad resume {summary['run_id']} --max-depth 2"
    run = Run.load(summary["run_id"])
    assert run.dag.root().status.ok and run.dag.children("root") == []  # the root answered alone
    done = shad("resume", summary["run_id"], "--max-depth", "2", "--json")
    assert finished(done.json()), done.err
    final = Run.load(summary["run_id"])
    assert len(final.dag.children("root")) == 3 and all(n.status.ok for n in final.dag)


class WidePlan:
    """The offline provider, except that the root's plan has five subtasks of one stage."""

    name = "wide"

    def __init__(self) -> None:
        self.offline = OfflineProvider()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if request.purpose == "decompose" and request.node_id == "root":
            topics = ["grind size", "water temperature", "brew time", "filter paper", "bean freshness"]
            plan = {
                "nodes": [
                    {"id": f"t{i}", "task": f"How does {t} change the cup?", "stage": "gather_evidence"}
                    for i, t in enumerate(topics)
                ],
                "waivers": [
                    {"stage": "frame_question", "reason": "clear"},
                    {"stage": "analyze", "reason": "the parts are the analysis"},
                ],
            }
            return LLMResponse("", self.name, "wide-1", input_tokens=50, output_tokens=50, data=plan)
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        return None


def test_max_branching_cut_names_its_limit_and_a_resume_with_room_runs_the_rest(vault: Path) -> None:
    config = RunConfig(
        COMPARE, (str(vault),), strategy="analysis", code_mode=False, checkpoints="off",
        budgets=Budgets(max_branching=3),
    )  # fmt: skip
    first = asyncio.run(start_run(config, provider=WidePlan()))
    assert first.status is RunStatus.PARTIAL and first.exit_code == 3
    cut = [b for b in first.summary["missing_branches"] if b.get("limit")]
    assert [b["node_id"] for b in cut] == ["t3", "t4"] and {b["limit"] for b in cut} == {"max_branching"}
    assert first.summary["resume_command"] == f"shad resume {first.id} --max-branching 5"
    done = asyncio.run(aresume(first.id, max_branching=5, provider=WidePlan()))
    assert finished(done.summary)
    assert sorted(n.id for n in done.dag.children("root")) == ["t0", "t1", "t2", "t3", "t4"]
    assert all(n.status.ok for n in done.dag)


# --- a plan the model could not give ---------------------------------------------------------------------


@pytest.fixture
def prose_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """A stand-in model that answers everything in prose (no JSON plan, ever)."""
    with FakeLLMServer(reply=lambda body: "Happy to help! Coffee is brewed from roasted beans.") as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def test_the_fallback_plan_is_cached_so_an_identical_run_makes_no_model_call(
    vault: Path, tmp_path: Path, prose_server: FakeLLMServer
) -> None:
    config = RunConfig(
        COMPARE, (str(vault),), provider="anthropic", code_mode=False, checkpoints="off", max_llm=1,
        history_dir=str(tmp_path / "runs"),
    )  # fmt: skip
    first = asyncio.run(start_run(config))
    calls = prose_server.count
    plan = json.loads((first.history.dir / "decisions" / "plan-root.json").read_text("utf-8"))
    assert plan["source"] == "default" and calls >= 3  # the plan, its repair, and the answers
    failure = next(f for f in first.summary["failures"] if f["phase"] == "decompose")
    assert failure["fallback"] == "skeleton plan"
    second = asyncio.run(start_run(config))
    assert prose_server.count == calls  # not one request more: the fallback was a cached decision
    assert second.summary["metrics"]["llm_calls"] == 0
    assert {n.id for n in second.dag} == {n.id for n in first.dag}
    assert second.status is first.status  # the failure is reported again, from the cache
    again = next(f for f in second.summary["failures"] if f["phase"] == "decompose")
    assert again["cached"] is True and again["message"] == failure["message"]
