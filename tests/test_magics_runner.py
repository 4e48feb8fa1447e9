"""The engine thread (shad_magics._runner) and ``shad_magics.arun``: one long-lived loop, interruptible
waits, clean cancellation, handles, and the outcome rules (FAILED raises, PARTIAL warns)."""

from __future__ import annotations

import _thread
import asyncio
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO
from _fake_llm import FakeLLMServer, stall

import shad_magics
from engine import Run, RunStatus, run
from shad_magics import RunHandle, ShadPartialWarning, ShadResult, ShadRunError, ShadUsageError, _runner
from shad_magics._runner import Job, check_outcome, engine_loop, outcome, wait

GOAL = "How long should I rest beans after roasting, and why?"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    for name in ("SHAD_VAULT", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def main_thread_is_waiting() -> bool:
    """Is the main thread inside ``_runner.wait`` (where an interrupt must land)?"""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        code = frame.f_code
        if getattr(code, "co_qualname", code.co_name) == "wait" and code.co_filename == _runner.__file__:
            return True
        frame = frame.f_back
    return False


def forever(seen: list[str] | None = None) -> Callable[[Callable[[dict[str, Any]], None]], Any]:
    """A job body that names its run, then waits until it is cancelled."""

    async def body(sink: Callable[[dict[str, Any]], None]) -> Run:
        sink({"type": "RUN_STARTED", "run_id": "r-forever"})
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if seen is not None:
                seen.append("cleaned up")  # the engine writes its history here
            raise
        raise AssertionError("unreachable")

    return body


def test_one_engine_thread_for_every_run() -> None:
    loop = engine_loop()
    assert engine_loop() is loop and loop.is_running()
    names = [t.name for t in threading.enumerate() if t.name == "shad-engine"]
    assert names == ["shad-engine"]
    engine_thread = next(t for t in threading.enumerate() if t.name == "shad-engine")
    assert engine_thread.daemon


def test_wait_returns_the_run_and_events_come_from_the_engine_thread(tmp_path: Path) -> None:
    threads: set[str] = set()
    live: list[dict[str, Any]] = []

    def seen(record: dict[str, Any]) -> None:
        threads.add(threading.current_thread().name)
        if record["type"] == "SYNTHESIS_DELTA":
            live.append(record)

    job = Job(
        lambda sink: shad_magics._launch.engine.arun(
            GOAL, str(DEMO), provider="offline", history_dir=str(tmp_path), on_event=sink
        ),
        on_event=seen,
    )
    finished = wait(job)
    assert finished.status is RunStatus.SUCCESS and job.run_id == finished.id
    # From the engine's loop (or its worker threads), never from the waiting cell's thread.
    assert "shad-engine" in threads and threading.main_thread().name not in threads
    assert job.events == len(finished.events) + len(live)  # streamed text is handed over, not recorded


def test_errors_reach_the_waiting_cell() -> None:
    async def broken(sink: Callable[[dict[str, Any]], None]) -> Run:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        wait(Job(broken))


def test_a_broken_event_sink_does_not_break_the_run() -> None:
    def sink(record: dict[str, Any]) -> None:
        raise RuntimeError("widget fell over")

    job = Job(forever(), on_event=sink)
    assert job.started.wait(30) and job.run_id == "r-forever"
    job.cancel()
    assert job.wait(30) and job.cancelled and job.error is None


def test_interrupt_cancels_then_reraises() -> None:
    seen: list[str] = []
    job = Job(forever(seen))

    def interrupt() -> None:
        wait_for(lambda: job.started.is_set() and main_thread_is_waiting(), "the cell to wait")
        _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        wait(job)
    assert job.finished.is_set() and job.cancelled and seen == ["cleaned up"]


def test_cancel_before_the_job_starts_still_finishes_it() -> None:
    release = threading.Event()
    hogging = threading.Event()

    async def hog(sink: Callable[[dict[str, Any]], None]) -> Run:
        hogging.set()
        release.wait(30)  # blocks the engine loop: the next job cannot start yet
        raise ValueError("hog done")

    first = Job(hog)
    # Only once the loop is blocked are the second job and its cancel queued behind it, in that order;
    # otherwise the loop may schedule the second job's first step before the cancel arrives.
    assert hogging.wait(30)
    started: list[str] = []

    async def never(sink: Callable[[dict[str, Any]], None]) -> Run:
        started.append("started")
        raise AssertionError("must not start")

    second = Job(never)
    second.cancel()
    release.set()
    assert second.wait(30) and second.cancelled and started == []
    with pytest.raises(ShadRunError, match="cancelled"):
        outcome(second)
    with pytest.raises(ValueError, match="hog done"):
        wait(first)


def test_handle_timeout_and_cancel() -> None:
    seen: list[str] = []
    handle = RunHandle(Job(forever(seen)), finish=lambda r: r)
    assert handle.run_id == "r-forever" and not handle.done()
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.05)
    assert "RUNNING" in handle._repr_markdown_()
    assert handle.cancel() is True and handle.done() and seen == ["cleaned up"]
    assert handle.cancel() is False
    assert repr(handle).startswith("<RunHandle r-forever CANCELLED")


def test_check_outcome(tmp_path: Path) -> None:
    partial = run(GOAL, str(DEMO), provider="offline", history_dir=str(tmp_path), max_tokens=1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_outcome(partial)
    (warning,) = caught
    assert issubclass(warning.category, ShadPartialWarning) and warning.filename == "%%shad"
    assert f"%shad resume {partial.id}" in str(warning.message)
    partial.status = RunStatus.FAILED_WITH_DIAGNOSTIC
    with pytest.raises(ShadRunError) as info:
        check_outcome(partial)
    assert (info.value.run_id, info.value.status) == (partial.id, "FAILED_WITH_DIAGNOSTIC")
    assert info.value._render_traceback_() == [
        f"ShadRunError: run {partial.id} FAILED_WITH_DIAGNOSTIC",
        f"hint: details: %shad trace {partial.id} (history: {partial.history.dir})",
    ]


# --- shad_magics.arun ------------------------------------------------------------------------------------


def test_arun_from_async_code(tmp_path: Path) -> None:
    threads: set[str] = set()

    async def main() -> ShadResult:
        return await shad_magics.arun(
            GOAL,
            str(DEMO),
            provider="offline",
            history_dir=str(tmp_path),
            context={"memo": "The quokka blend tastes of blueberry jam and cocoa nibs."},
            on_event=lambda record: threads.add(threading.current_thread().name),
        )

    res = asyncio.run(main())
    assert isinstance(res, ShadResult) and res.status is RunStatus.SUCCESS
    assert "shad-engine" in threads and threading.main_thread().name not in threads
    assert res.run.config.vaults[0] == str(DEMO) and not Path(res.run.config.vaults[1]).exists()


def test_arun_context_is_cited(tmp_path: Path) -> None:
    memo = {"memo": "The quokka blend tastes of blueberry jam and cocoa nibs."}
    res = asyncio.run(
        shad_magics.arun(
            "What does the quokka blend taste of?",
            [str(DEMO)],
            provider="offline",
            history_dir=str(tmp_path),
            context=memo,
        )
    )
    assert ("context", "memo.md") in {(c["vault"], c["path"]) for c in res.citations}


def test_arun_default_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ShadUsageError, match="no vault given"):
        asyncio.run(shad_magics.arun(GOAL, provider="offline"))
    monkeypatch.setenv("SHAD_VAULT", str(DEMO))
    res = asyncio.run(shad_magics.arun(GOAL, provider="offline", history_dir=str(tmp_path)))
    assert res.run.config.vaults == (str(DEMO),)


def test_arun_unknown_option_is_a_usage_error() -> None:
    with pytest.raises(ShadUsageError, match="unknown run option"):
        asyncio.run(shad_magics.arun(GOAL, str(DEMO), colour="red"))


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=lambda body: "ok") as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("SHAD_OPENAI_MODEL", "fake-model")
        yield fake


def test_cancelling_arun_cancels_the_run(tmp_path: Path, fake_openai: FakeLLMServer) -> None:
    fake_openai.script(stall(60))

    async def main() -> None:
        task = asyncio.create_task(
            shad_magics.arun(GOAL, str(DEMO), provider="openai", history_dir=str(tmp_path / "h"))
        )
        await asyncio.to_thread(wait_for, lambda: len(fake_openai.posts) >= 1, "the first model call")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    (folder,) = (tmp_path / "h").iterdir()
    cancelled = Run.load(str(folder))
    assert cancelled.status is RunStatus.PARTIAL and cancelled.summary["stop_reason"] == "interrupted"
