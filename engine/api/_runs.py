"""The server's runs: each an asyncio task in the server's loop with its own fan-out of event records to
subscribers (SSE streams). A run that breaks ends its own task only; a cancelled one ends PARTIAL
(the orchestrator writes its report) and resumes like any stopped run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import RunConfig
from ..events import LIVE_ONLY
from ..runs import Run, aresume, start_run
from ..store.history import find_run, new_run_id, scrub
from ._security import ApiError

_LIVE_ONLY = frozenset(kind.value for kind in LIVE_ONLY)

__all__ = ["LiveRun", "RunManager", "sse", "summary_event"]

log = logging.getLogger("shad.api")
_END = object()  # closes a subscriber's queue


def sse(
    event: str, data: dict[str, Any], event_id: int | None = None, clean: Callable[[str], str] = scrub
) -> bytes:
    """One server-sent event; the data is one JSON line, secrets scrubbed (``clean``)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    payload = clean(json.dumps(data, ensure_ascii=False, default=str))
    return f"{head}event: {event}\ndata: {payload}\n\n".encode()


def summary_event(run: Run) -> dict[str, Any]:
    """What the final ``summary`` event carries."""
    summary = run.summary or {}
    return {
        "run_id": run.id,
        "status": summary.get("status", run.status.value),
        "report_path": summary.get("report_path", ""),
        "citations": summary.get("citations", []),
        "resume_command": summary.get("resume_command"),
    }


@dataclass
class LiveRun:
    """A run this server is carrying: its records so far and who listens."""

    run_id: str
    task: asyncio.Task[Run] | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    subscribers: set[asyncio.Queue[Any]] = field(default_factory=set)
    final: dict[str, Any] | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()


class RunManager:
    """Starts, resumes, cancels and streams runs in one event loop."""

    def __init__(self, clean: Callable[[str], str] = scrub) -> None:
        self.clean = clean  # what scrubs an outgoing event (the server's token, the environment's keys)
        self.live: dict[str, LiveRun] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    def running(self) -> list[str]:
        return [run_id for run_id, live in self.live.items() if live.running]

    def _emit(self, live: LiveRun, record: dict[str, Any]) -> None:
        """``on_event``: called on the loop or from a worker thread (the report is written in one)."""
        loop = self._loop
        if loop is None or record.get("type") in _LIVE_ONLY:
            return  # the stream is the records events.jsonl keeps (streamed answer text is not one)
        if threading.get_ident() == self._thread:
            self._deliver(live, record)
        else:
            loop.call_soon_threadsafe(self._deliver, live, record)

    @staticmethod
    def _deliver(live: LiveRun, record: dict[str, Any]) -> None:
        live.records.append(record)
        for queue in live.subscribers:
            queue.put_nowait(("record", record))

    def _finish(self, live: LiveRun, task: asyncio.Task[Run]) -> None:
        if task.cancelled():
            live.error = None  # a cancelled run wrote its report (PARTIAL); one cancelled earlier, none
        elif task.exception() is not None:
            exc = task.exception()
            live.error = scrub(f"{type(exc).__name__}: {exc}")
            log.warning("run %s ended with an error: %s", live.run_id, live.error)
        else:
            live.final = summary_event(task.result())
        final = live.final or self._final_from_history(live.run_id, live.error)
        live.final, live.records = final, []  # a finished run streams from its history
        for queue in live.subscribers:
            queue.put_nowait(("summary", final))
            queue.put_nowait(_END)

    @staticmethod
    def _final_from_history(run_id: str, error: str | None) -> dict[str, Any]:
        try:
            return {**summary_event(Run.load(run_id)), **({"error": error} if error else {})}
        except Exception:  # the run never got a history (refused, or cancelled before it opened)
            why = error or "the run ended before it opened its history"
            return {"run_id": run_id, "status": "FAILED", "report_path": "", "citations": [], "error": why}

    def _launch(self, run_id: str, make: Callable[[LiveRun], Awaitable[Run]]) -> LiveRun:
        self._loop, self._thread = asyncio.get_running_loop(), threading.get_ident()
        live = LiveRun(run_id)
        old = self.live.get(run_id)
        if old is not None:
            live.subscribers = old.subscribers  # listeners of a resumed run hear the resume too
        self.live[run_id] = live
        task = asyncio.create_task(_guard(make(live)), name=f"shad-run-{run_id}")
        live.task = task
        task.add_done_callback(lambda t: self._finish(live, t))
        return live

    def start(self, config: RunConfig) -> LiveRun:
        """Start a run; returns at once (the run goes on in the loop). A goal with nothing to look for is
        refused here, as a request error, not as a run that fails later."""
        config.check_new_goal()
        run_id = new_run_id()
        return self._launch(
            run_id,
            lambda live: start_run(config, run_id=run_id, on_event=lambda r: self._emit(live, r)),
        )

    def resume(self, run_id: str, **options: Any) -> LiveRun:
        """Continue a stopped run in its own history (``aresume``'s options)."""
        current = self.live.get(run_id)
        if current is not None and current.running:
            raise ApiError(409, "Conflict", f"run {run_id} is still running", hint="wait, or cancel it first")
        return self._launch(
            run_id, lambda live: aresume(run_id, on_event=lambda r: self._emit(live, r), **options)
        )

    async def cancel(self, run_id: str, timeout: float = 30.0) -> bool:
        """Cancel a running run and wait until it has written its report; False if it was not running."""
        live = self.live.get(run_id)
        if live is None or live.task is None or not live.running:
            return False
        live.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(live.task), timeout)
        return True

    async def stream(self, run_id: str, *, replay_history: bool = True) -> AsyncIterator[bytes]:
        """SSE bytes: the run's records so far (from the history when this server did not run it),
        then live ones, then ``event: summary``."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        live = self.live.get(run_id)
        if live is not None and live.running:
            live.subscribers.add(queue)  # no await between this and the snapshot: nothing is missed
            backlog = _merge(_history_records(run_id), live.records) if replay_history else []
        else:
            backlog = _history_records(run_id) if replay_history else []
            final = (live.final if live is not None else None) or self._final_from_history(run_id, None)
            queue.put_nowait(("summary", final))
            queue.put_nowait(_END)
        n = 0
        try:
            for record in backlog:
                n += 1
                yield sse(str(record.get("type", "event")), record, n, self.clean)
            while True:
                item = await queue.get()
                if item is _END:
                    return
                kind, data = item
                n += 1
                yield sse(str(data.get("type", "event")) if kind == "record" else kind, data, n, self.clean)
        finally:
            if live is not None:
                live.subscribers.discard(queue)

    async def close(self) -> None:
        """Cancel every run still going (server shutdown): each ends PARTIAL and resumable."""
        for run_id in [r for r, live in self.live.items() if live.running]:
            await self.cancel(run_id, timeout=10.0)


async def _guard(work: Awaitable[Run]) -> Run:
    return await work


def _history_records(run_id: str) -> list[dict[str, Any]]:
    try:
        path = find_run(run_id).dir / "events.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
    except Exception:
        return []
    records = []
    for line in lines:
        with contextlib.suppress(json.JSONDecodeError):
            records.append(json.loads(line))
    return records


def _merge(history: list[dict[str, Any]], live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's records, then live ones it does not hold yet."""
    seen = {json.dumps(r, sort_keys=True, default=str) for r in history}
    return history + [r for r in live if json.dumps(r, sort_keys=True, default=str) not in seen]
