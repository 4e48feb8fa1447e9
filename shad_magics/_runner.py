"""Where runs execute inside a notebook: one long-lived daemon thread with its own asyncio loop.

A cell submits ``engine.arun`` there (``asyncio.run_coroutine_threadsafe``) and waits in short slices,
so a kernel interrupt (KeyboardInterrupt) lands in the waiting cell: the run is cancelled, the engine
writes its history (status PARTIAL, stop reason "interrupted"), and ``ShadRunCancelled`` (a
KeyboardInterrupt) says so in one line with the resume command. The kernel's own event loop is never
nested or patched, and nothing here ever prints.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from engine import Run, RunStatus

from ._errors import ShadPartialWarning, ShadRunCancelled, ShadRunError, short_traceback

__all__ = ["CLEANUP_WAIT", "Job", "RunHandle", "cancelled", "check_outcome", "engine_loop", "wait"]

POLL = 0.1  # seconds per wait slice: how soon an interrupt is noticed
CLEANUP_WAIT = 60.0  # after a cancel, how long to wait for the engine to write the run's history

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def engine_loop() -> asyncio.AbstractEventLoop:
    """The engine's event loop, started on first use in a daemon thread named ``shad-engine``."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=serve, name="shad-engine", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


class Job:
    """One coroutine on the engine loop. ``finished`` is set only once it has really ended (after a
    cancel: once the engine has written the run's history), unlike the future, which a cancel ends at
    once."""

    def __init__(
        self,
        start: Callable[[Callable[[dict[str, Any]], None]], Awaitable[Run]],
        on_event: Callable[[dict[str, Any]], None] | None = None,
        on_done: Callable[[Job], None] | None = None,
    ) -> None:
        self.run: Run | None = None
        self.error: BaseException | None = None
        self.cancelled = False
        self.stopped = False  # cancelled by the DAG widget's Stop button
        # Told (True) when a cell starts blocking on this job: the kernel then cannot hear its widget's
        # Stop message until the cell ends, so the widget interrupts the kernel instead.
        self.on_cell_wait: Callable[[bool], None] | None = None
        self.run_id: str | None = None
        self.events = 0
        self._count_lock = threading.Lock()
        self.finished = threading.Event()
        self.started = threading.Event()  # the engine named the run (RUN_STARTED / RUN_RESUMED) or ended
        self._on_event = on_event
        self._on_done = on_done
        self._task: asyncio.Task[Any] | None = None
        self._cancel_asked = False
        self._loop = engine_loop()
        self.future: concurrent.futures.Future[None] = asyncio.run_coroutine_threadsafe(
            self._main(start), self._loop
        )

    def _event(self, record: dict[str, Any]) -> None:
        # Called on the engine loop and, for a few events, from its worker threads (asyncio.to_thread).
        with self._count_lock:
            self.events += 1
            if self.run_id is None and record.get("run_id"):
                self.run_id = str(record["run_id"])
                self.started.set()
        if self._on_event is not None:
            with contextlib.suppress(Exception):  # a display that cannot keep up must never break the run
                self._on_event(record)

    async def _main(self, start: Callable[[Callable[[dict[str, Any]], None]], Awaitable[Run]]) -> None:
        try:
            self._task = asyncio.current_task()
            if self._cancel_asked:  # cancelled before it started: nothing to clean up
                raise asyncio.CancelledError
            self.run = await start(self._event)
            self.run_id = self.run.id
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        except BaseException as exc:  # handed to the waiting cell
            self.error = exc
        finally:
            if self._on_done is not None:
                with contextlib.suppress(Exception):
                    self._on_done(self)
            self.started.set()
            self.finished.set()

    def cancel(self) -> None:
        """Ask the engine to stop; it finishes the run's history before the job counts as finished."""
        if not self.finished.is_set():
            # Cancel the task itself, on its loop: cancelling the future would end it at once, before
            # the engine wrote anything (and skip our clean-up when the task had not started yet).
            self._loop.call_soon_threadsafe(self._cancel_in_loop)

    def stop(self) -> None:
        """The DAG widget's Stop button: cancel as an interrupt would, so the waiting cell ends the same
        way (one line: PARTIAL and the resume command)."""
        self.stopped = True
        self.cancel()

    def _cancel_in_loop(self) -> None:
        self._cancel_asked = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def wait(self, timeout: float | None = None, tick: Callable[[], None] | None = None) -> bool:
        """Wait in short slices (so an interrupt can land), calling ``tick`` after each (the cell's
        progress line); True once finished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.on_cell_wait is not None and threading.current_thread() is threading.main_thread():
            with contextlib.suppress(Exception):
                self.on_cell_wait(not self.finished.is_set())
        while not self.finished.is_set():
            left = POLL if deadline is None else min(POLL, deadline - time.monotonic())
            if left <= 0:
                return False
            self.finished.wait(left)
            if tick is not None:
                with contextlib.suppress(Exception):  # a display problem must never stop the wait
                    tick()
        return True


def wait(job: Job, tick: Callable[[], None] | None = None) -> Run:
    """Block the cell until the job ends; a KeyboardInterrupt cancels the run cleanly and raises
    ``ShadRunCancelled`` (one line, the resume command). Returns the finished run or raises what the
    run raised."""
    try:
        job.wait(tick=tick)
    except KeyboardInterrupt:
        job.cancel()
        with contextlib.suppress(KeyboardInterrupt):  # a second one: stop waiting for the history
            job.wait(CLEANUP_WAIT)
        raise cancelled(job) from None
    return outcome(job)


def cancelled_status(run_id: str | None) -> str:
    """What the engine wrote for an interrupted run (PARTIAL unless it says otherwise)."""
    if run_id:
        with contextlib.suppress(Exception):
            return Run.load(run_id).status.value
    return RunStatus.PARTIAL.value


def cancelled(job: Job) -> ShadRunCancelled:
    status = cancelled_status(job.run_id) if job.finished.is_set() else RunStatus.PARTIAL.value
    if job.run_id is None:
        return ShadRunCancelled("Run cancelled before it started", status=status)
    return ShadRunCancelled(
        f"Run cancelled: {status}; `%shad resume {job.run_id}`", run_id=job.run_id, status=status
    )


def outcome(job: Job) -> Run:
    if job.error is not None:
        raise short_traceback(job.error)
    if job.run is None:
        if job.stopped:
            raise cancelled(job)
        raise ShadRunError(
            f"run {job.run_id or '(not started)'} was cancelled",
            hint=f"its history is kept: %shad status {job.run_id}" if job.run_id else None,
            run_id=job.run_id or "",
            status=RunStatus.PARTIAL.value,
        )
    return job.run


def check_outcome(run: Run, person_here: bool = False) -> None:
    """FAILED runs raise ``ShadRunError``; PARTIAL / NEEDS_HUMAN warn (the result is still returned; a
    NEEDS_HUMAN run under the ``fail`` policy raised before this). With ``person_here`` (the cell shows
    checkpoint widgets someone can click), NEEDS_HUMAN does not warn: a warning on stderr could never be
    taken back once decided, so the report's banner, replaced in place when the run goes on, says it."""
    import warnings

    status = run.status
    if status in (RunStatus.FAILED, RunStatus.FAILED_WITH_DIAGNOSTIC):
        failures = run.summary.get("failures") or run.failures
        first = failures[0] if failures else {}
        why = f": {first.get('error_class')}: {first.get('message')}" if first else ""
        raise ShadRunError(
            f"run {run.id} {status.value}{why}",
            hint=f"details: %shad trace {run.id} (history: {run.history.dir})",
            run_id=run.id,
            status=status.value,
        )
    if status == RunStatus.NEEDS_HUMAN and person_here:
        return
    if status in (RunStatus.PARTIAL, RunStatus.NEEDS_HUMAN):
        reason = run.summary.get("stop_reason") or "some parts did not finish"
        how = f"continue it with %shad resume {run.id}"
        if status == RunStatus.NEEDS_HUMAN:
            waiting = ", ".join(
                str(c.get("node_id")) for c in run.summary.get("checkpoints") or [] if not c.get("decision")
            )
            reason = f"waiting for a decision at {waiting}" if waiting else "waiting for a decision"
            how = f"decide in its checkpoint widgets or with %shad checkpoint {run.id}"
        # Attributed to "%%shad" rather than to a line of this package: the run is what the warning is about.
        warnings.warn_explicit(
            f"Shad run {run.id} is {status.value} ({reason}); {how}",
            ShadPartialWarning,
            filename="%%shad",
            lineno=1,
            module="shad_magics",
        )


class RunHandle:
    """A run going on in the background (``%%shad run --background``): ``done()``, ``result()``,
    ``cancel()``, ``run_id``; the DAG widget keeps updating meanwhile."""

    def __init__(self, job: Job, finish: Callable[[Run], Any], widget: Any = None) -> None:
        self._job = job
        self._finish = finish
        self._result: Any = None
        self.widget = widget

    @property
    def run_id(self) -> str | None:
        """The run's id, once the engine has named it (waits briefly for that; None if it never
        started, e.g. a bad option)."""
        self._job.started.wait(10.0)
        return self._job.run_id

    def done(self) -> bool:
        return self._job.finished.is_set()

    def result(self, timeout: float | None = None) -> Any:
        """The ``ShadResult`` (waiting up to ``timeout`` seconds; ``TimeoutError`` after that). Raises
        ``ShadRunError`` for a failed or cancelled run, as the blocking magic does."""
        if self._result is None:
            if not self._job.wait(timeout):
                raise TimeoutError(f"run {self._job.run_id or ''} still running after {timeout}s")
            self._result = self._finish(outcome(self._job))
        return self._result

    def cancel(self, wait: bool = True) -> bool:
        """Stop the run; with ``wait``, return once its history is written. True if it was running."""
        running = not self.done()
        self._job.cancel()
        if wait:
            self._job.wait(CLEANUP_WAIT)
        return running

    def _state(self) -> str:
        job = self._job
        if not job.finished.is_set():
            return "RUNNING"
        if job.cancelled:
            return "CANCELLED"
        if job.error is not None:
            return f"ERROR ({type(job.error).__name__})"
        return job.run.status.value if job.run is not None else "UNKNOWN"

    def __repr__(self) -> str:
        return f"<RunHandle {self._job.run_id or '(starting)'} {self._state()} · {self._job.events} events>"

    def _repr_markdown_(self) -> str:
        hint = " — `.result()` waits for it, `.cancel()` stops it" if not self.done() else ""
        return f"**Shad run** `{self._job.run_id or '(starting)'}`: {self._state()}{hint}"
