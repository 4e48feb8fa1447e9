"""The explorer's Stop and Open report actions, with a real run on the engine thread: the front end's
``stop`` message reaches the runner's job through ``stop_handler`` (set by ``shad_magics``' launcher),
the run ends PARTIAL with its history and report written, the waiting cell gets one line with the resume
command, and ``open_report`` is answered with the report's text. Only the model is a stand-in (the
offline provider, slowed down so the run is still working when Stop comes)."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO
from _notebook_helpers import RecordingComm

from engine import Budgets, Run, RunConfig
from engine.llm import LLMRequest, LLMResponse, register
from engine.llm.offline import OfflineProvider
from shad_magics import ShadRunError, _launch
from shad_magics._runner import outcome
from widgets import DagExplorer

GOAL = "Compare the roasting and brewing choices that give better coffee at home, and list the sources."


class SlowOffline:
    """The offline provider, a little slower per call (long enough to press Stop mid-run)."""

    name = "slow-offline"

    def __init__(self) -> None:
        self.offline = OfflineProvider()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(0.4)
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        return None


register("slow-offline", lambda **_: SlowOffline())


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    shutil.copytree(DEMO, tmp_path / "vault")
    return tmp_path / "vault"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def front_end_sends(explorer: DagExplorer, content: dict[str, Any]) -> None:
    """What ``model.send(content)`` in the JS does: a custom message on the widget's comm."""
    explorer._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def sent(comms: list[RecordingComm], explorer: DagExplorer) -> list[Any]:
    return next(c for c in comms if c.comm_id == explorer.model_id).custom()


def test_stop_without_a_runner_says_so_and_does_nothing(comms: list[RecordingComm]) -> None:
    explorer = DagExplorer()
    assert explorer.can_stop is False and explorer.cell_waiting is False
    front_end_sends(explorer, {"type": "stop"})
    front_end_sends(explorer, {"type": "open_report"})
    front_end_sends(explorer, {"type": "no such action"})
    assert sent(comms, explorer) == [
        {"type": "stop_ack", "stopped": False},
        {"type": "report", "path": "", "error": "this run has no report yet"},
    ]
    calls: list[str] = []
    explorer.stop_handler = lambda: calls.append("stop")
    assert explorer.can_stop is True
    front_end_sends(explorer, {"type": "stop"})
    assert calls == ["stop"] and sent(comms, explorer)[-1] == {"type": "stop_ack", "stopped": True}

    def broken() -> None:
        raise RuntimeError("the runner is gone")

    explorer.stop_handler = broken
    front_end_sends(explorer, {"type": "stop"})  # never raises into the comm
    assert "the runner is gone" in explorer.notice
    explorer.stop_handler = None
    assert explorer.can_stop is False


def test_the_stop_button_cancels_a_running_run(vault: Path, comms: list[RecordingComm]) -> None:
    config = RunConfig(GOAL, (str(vault),), strategy="analysis", provider="slow-offline", budgets=Budgets())
    explorer = DagExplorer()
    job = _launch.start(_launch.run_launcher(config), widget=explorer, config=config)
    assert explorer.can_stop is True and explorer.status == "PENDING"
    waiting: list[bool] = []
    explorer.observe(lambda change: waiting.append(change["new"]), names="cell_waiting")

    def press_stop() -> None:  # from another thread, as the front end's message would come while waiting
        wait_for(lambda: sum(n["status"] == "SUCCEEDED" for n in explorer.nodes) >= 1, "a node to finish")
        front_end_sends(explorer, {"type": "stop"})

    presser = threading.Thread(target=press_stop)
    presser.start()
    assert job.wait(120)  # on the main thread, as a cell waits
    presser.join()
    assert waiting[0] is True and explorer.cell_waiting is False  # the cell blocked; now it is free
    with pytest.raises(ShadRunError) as err:
        outcome(job)
    lines = err.value._render_traceback_()  # type: ignore[attr-defined]
    assert len(lines) == 1 and "PARTIAL" in lines[0] and f"%shad resume {job.run_id}" in lines[0], lines
    run = Run.load(str(job.run_id))
    assert run.status.value == "PARTIAL" and run.summary.get("stop_reason") == "interrupted"
    assert len(list(run.dag)) > sum(1 for n in run.dag if n.status.value == "SUCCEEDED")  # cut short
    assert sent(comms, explorer)[0] == {"type": "stop_ack", "stopped": True}
    wait_for(lambda: explorer.status == "PARTIAL", "the widget to show the stopped run")
    assert explorer.report_path == str(run.history.dir / "final.report.md")

    front_end_sends(explorer, {"type": "open_report"})
    reply = sent(comms, explorer)[-1]
    assert reply == {
        "type": "report",
        "path": explorer.report_path,
        "text": Path(explorer.report_path).read_text(encoding="utf-8"),
    }
    front_end_sends(explorer, {"type": "stop"})  # too late: the run is over, nothing happens
    assert explorer.status == "PARTIAL" and run.status.value == Run.load(run.id).status.value


def test_a_finished_run_offers_its_report(vault: Path) -> None:
    config = RunConfig(GOAL, (str(vault),), strategy="analysis", provider="offline")
    explorer = DagExplorer()
    job = _launch.start(_launch.run_launcher(config), widget=explorer, config=config)
    assert job.wait(120)
    run = outcome(job)
    assert explorer.status == run.status.value and explorer.report_path == run.report_path
    assert all(n["started_at"] is not None for n in explorer.nodes)  # the timeline's bars
    assert all(n["finished_at"] >= n["started_at"] for n in explorer.nodes)
