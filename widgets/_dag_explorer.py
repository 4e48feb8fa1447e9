"""``DagExplorer``: the run's DAG laid out by dependency level, fitted to its box (zoom and pan), coloured
by status and updated live; a hover card, a timeline of time and tokens per node, a budget strip, a Stop
button, the report on demand, and a details panel for the node the user clicks."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from engine import Run, RunConfig
from engine.errors import ShadError, UsageError
from engine.store.history import find_run

from ._details import node_details, read_dag_node
from ._state import DagState, Snapshot
from ._summary import markdown_summary, plain_summary

__all__ = ["DagExplorer"]

_STATIC = Path(__file__).parent / "static"


class DagExplorer(anywidget.AnyWidget):
    """A live explorer of a Shad run's DAG.

    ``DagExplorer(run)`` shows a finished run (or one loaded with ``Run.load``); ``DagExplorer()`` shows
    a run as it happens when given its events: pass ``explorer.handle_event`` as the engine's
    ``on_event`` (it is safe to call from the engine's thread, at any rate: trait updates are batched).
    ``expect(config)`` shows a run's goal and limits before it starts (``%%shad run`` calls it; a
    resumed run needs it for its new limits). Click a node to see its task, retrieval script, context,
    citations, answer, tokens and timings; in a software run a node carries a badge with its check status
    (✓ pass, ✗ fail with the number of findings, – skipped) and its details list its files, checks and
    repairs.

    The front end fits the DAG to its box (Fit button; Ctrl + wheel and the +/− buttons zoom, a drag
    pans), shows a node's full task on hover, collapses more than 12 siblings into a "+N more" box, and
    draws a timeline of each node's start, end and tokens. Its Stop button sends the custom message
    ``{"type": "stop"}``: the widget calls ``stop_handler`` (the runner that owns the run sets it; the run
    then ends PARTIAL and resumable). ``{"type": "open_report"}`` is answered with the run's report
    (``{"type": "report", "path", "text"}`` or ``"error"``).
    """

    _esm = _STATIC / "dag_explorer.js"
    _css = _STATIC / "dag_explorer.css"

    run_id = t.Unicode("", help="The run shown ('' before the first event).").tag(sync=True)
    goal = t.Unicode("", help="The run's goal.").tag(sync=True)
    status = t.Unicode(
        "", help="The run's status: PENDING, RUNNING, then SUCCESS, PARTIAL, FAILED, NEEDS_HUMAN, ..."
    ).tag(sync=True)
    notice = t.Unicode("", help="Why the run is stopping or stopped (budget, error), if so.").tag(sync=True)
    nodes = t.List(
        t.Dict(),
        help="One light dict per node: id, task (preview), stage, depth, parent, status, tokens, "
        "llm_calls, duration_ms, phase, note, error, items, score, and code: None, or for a node of a "
        "software run {check (pass | fail | skip | None), findings, files, repairs, last_repair}.",
    ).tag(sync=True)
    edges = t.List(
        t.Dict(), help="{source, target, kind}: kind is child (parent to subtask), hard or soft (dependency)."
    ).tag(sync=True)
    budget = t.Dict(
        help="The progress strip: tokens_used, tokens_limit, tokens_over_by (None unless a finished run "
        "spent past its token budget), nodes_done, nodes_total, nodes_limit, wall_s, wall_limit_s (a "
        "limit is None when unknown)."
    ).tag(sync=True)
    selected = t.Unicode("", help="The node the user clicked (set by the front end; '' for none).").tag(
        sync=True
    )
    details = t.Dict(
        help="The selected node's full details, filled by Python when ``selected`` changes."
    ).tag(sync=True)
    can_stop = t.Bool(
        False, help="True when a Stop button can cancel the run (a ``stop_handler`` is set)."
    ).tag(sync=True)
    report_path = t.Unicode(
        "", help="The finished run's report file ('' while running or when it has none)."
    ).tag(sync=True)
    cell_waiting = t.Bool(
        False,
        help="True while a notebook cell blocks on this run: the kernel hears no widget message until the "
        "cell ends, so Stop interrupts the kernel (which cancels the run as Ctrl-C would).",
    ).tag(sync=True)
    stop_handler = t.Callable(
        None,
        allow_none=True,
        help="Called (no arguments) when the user presses Stop; set by whoever owns the run. Not synced.",
    )

    _flush_interval = 0.15  # seconds: at most this often a burst of events reaches the front end

    def __init__(self, run: Run | None = None, **kwargs: Any) -> None:
        if run is not None and not isinstance(run, Run):
            raise UsageError(
                f"DagExplorer takes an engine.Run, not {type(run).__name__}",
                hint="for a run id use DagExplorer(engine.Run.load(run_id))",
            )
        super().__init__(**kwargs)
        self._lock = threading.Lock()  # guards the state below; held only briefly, never while syncing
        self._sync_lock = threading.RLock()  # one writer of traits at a time, in snapshot order
        self._state = DagState()
        self._run: Run | None = None
        self._history_dir: Path | None = None
        self._multi_vault = False
        self._dirty = False
        self._last_flush = 0.0
        self._timer: threading.Timer | None = None
        self._errors: list[str] = []
        self.observe(self._on_selected, names="selected")
        self.observe(self._on_stop_handler, names="stop_handler")
        self.on_msg(self._on_front_message)
        if run is not None:
            self.show_run(run)
        else:
            self._sync(self._state.snapshot(), {})

    # --- the contract --------------------------------------------------------------------------------

    def handle_event(self, record: dict[str, Any]) -> None:
        """Take one engine event. Thread-safe and cheap: the state is updated under a lock and the front
        end sees it at most every ``_flush_interval`` seconds, and at once when the run ends. Never
        raises (a display problem must not break a run); problems show in ``notice``."""
        try:
            data: object = record  # the engine's thread may hand anything over: check, never raise
            if not isinstance(data, dict):
                return
            kind = record.get("type")
            resumed = self._load_resumed(record) if kind == "RUN_RESUMED" else None
            with self._lock:
                if kind == "RUN_STARTED":  # a new run in this widget: forget the previous one's files
                    self._run, self._history_dir = None, None
                if resumed is not None:
                    self._state.adopt(resumed)
                    self._run, self._history_dir = None, resumed.history.dir
                urgent = self._state.apply(record)
                self._dirty = True
                due = urgent or time.monotonic() - self._last_flush >= self._flush_interval
                if not due:
                    self._schedule()
            if due:
                self._flush()
        except Exception as exc:
            self._note_error(exc)

    def show_run(self, run: Run) -> None:
        """Show a finished (or loaded-from-history) run in full: every node, its status and details."""
        if not isinstance(run, Run):
            raise UsageError(
                f"show_run takes an engine.Run, not {type(run).__name__}",
                hint="for a run id use show_run(engine.Run.load(run_id))",
            )
        with self._sync_lock:
            with self._lock:
                self._cancel_timer()
                self._run, self._history_dir = run, run.history.dir
                self._multi_vault = run.config is not None and len(run.config.vaults) > 1
                self._state.load_run(run)
                self._state.pop_changed()
                snapshot, self._dirty, self._last_flush = self._state.snapshot(), False, time.monotonic()
            self._sync(snapshot, self._details_for(self.selected))

    def expect(self, config: RunConfig) -> None:
        """A run of ``config`` is about to start (or resume): show its goal and limits now, clear the
        previous run. Optional: without it the limits arrive with the RUN_STARTED event."""
        if not isinstance(config, RunConfig):
            raise UsageError(f"expect takes an engine.RunConfig, not {type(config).__name__}")
        with self._sync_lock:
            with self._lock:
                self._cancel_timer()
                self._run, self._history_dir = None, None
                self._multi_vault = len(config.vaults) > 1
                self._state.expect(config.goal, config.budgets)
                snapshot, self._dirty, self._last_flush = self._state.snapshot(), False, time.monotonic()
            self.selected = ""
            self._sync(snapshot, {})

    # --- batching ------------------------------------------------------------------------------------

    def _schedule(self) -> None:
        """With ``_lock`` held: make sure one flush is pending for the end of the current interval."""
        if self._timer is None:
            delay = max(0.0, self._last_flush + self._flush_interval - time.monotonic())
            self._timer = threading.Timer(delay, self._on_timer)
            self._timer.daemon = True
            self._timer.name = "shad-dag-flush"
            self._timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self._flush()
        except Exception as exc:
            self._note_error(exc)

    def _flush(self) -> None:
        """Send what changed since the last flush: one comm message for all traits."""
        with self._sync_lock:
            with self._lock:
                if not self._dirty:
                    return
                if self._state.status not in ("RUNNING", "PENDING"):
                    self._cancel_timer()  # the run is over: this is the last flush it needs
                changed = self._state.pop_changed()
                snapshot, self._dirty, self._last_flush = self._state.snapshot(), False, time.monotonic()
            selected = self.selected
            details = self._details_for(selected) if selected and selected in changed else None
            self._sync(snapshot, details)

    def _sync(self, snapshot: Snapshot, details: dict[str, Any] | None) -> None:
        with self._sync_lock, self.hold_sync():
            self.run_id = snapshot.run_id
            self.goal = snapshot.goal
            self.status = snapshot.status
            self.notice = snapshot.notice
            self.nodes = snapshot.nodes
            self.edges = snapshot.edges
            self.budget = snapshot.budget
            self.report_path = self._report_file(snapshot)
            if snapshot.status not in ("RUNNING", "PENDING"):
                self.cell_waiting = False
            if details is not None:
                self.details = details

    # --- the front end's requests: Stop and Open report ------------------------------------------------

    def _on_stop_handler(self, change: dict[str, Any]) -> None:
        self.can_stop = change["new"] is not None

    def _on_front_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "stop":
            self.send({"type": "stop_ack", "stopped": self.stop()})
        elif kind == "open_report":
            self.send(self._report_message())

    def stop(self) -> bool:
        """Cancel the run shown (what the Stop button does): True when a handler was there to ask. The
        run ends PARTIAL with its history written, so ``%shad resume RUN_ID`` continues it."""
        handler: Any = self.stop_handler  # (traitlets types it as never None)
        if handler is None:
            return False
        with self._lock:
            running = self._state.status in ("RUNNING", "PENDING")
            if running:
                self._state.notice, self._dirty = "stopping: asked with the Stop button", True
        if running:
            self._flush()
        try:
            handler()
        except Exception as exc:  # the button must not raise into the comm: say it where it is seen
            self._note_error(exc)
            self._flush()
        return True

    def set_cell_waiting(self, waiting: bool) -> None:
        """The runner says a cell blocks on this run (True) or not (False)."""
        with self._sync_lock:
            self.cell_waiting = bool(waiting)

    def _report_file(self, snapshot: Snapshot) -> str:
        if snapshot.status in ("", "RUNNING", "PENDING"):
            return ""
        with self._lock:
            folder = self._history_dir
        if folder is None and snapshot.run_id:
            folder = self._find_history(snapshot.run_id)
        report = folder / "final.report.md" if folder is not None else None
        return str(report) if report is not None and report.is_file() else ""

    def _report_message(self) -> dict[str, Any]:
        path = self.report_path
        if not path:
            return {"type": "report", "path": "", "error": "this run has no report yet"}
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            return {"type": "report", "path": path, "error": f"could not read the report ({exc})"}
        return {"type": "report", "path": path, "text": text}

    # --- details -------------------------------------------------------------------------------------

    def _on_selected(self, change: dict[str, Any]) -> None:
        with self._sync_lock:
            self.details = self._details_for(str(change["new"] or ""))

    def _details_for(self, node_id: str) -> dict[str, Any]:
        """The node's details from the run object when there is one, else from the run's ``dag.json``
        and script files on disk (the engine saves them as it goes), over what the events said."""
        if not node_id:
            return {}
        with self._lock:
            live = self._state.live_node(node_id)
            run, history_dir, run_id = self._run, self._history_dir, self._state.run_id
        if run is not None:
            saved = run.dag.node(node_id).to_dict() if node_id in run.dag else None
        else:
            if history_dir is None and run_id:
                history_dir = self._find_history(run_id)
            saved = read_dag_node(history_dir, node_id)
        return node_details(
            node_id, saved=saved, live=live, history_dir=history_dir, multi_vault=self._multi_vault
        )

    def _find_history(self, run_id: str) -> Path | None:
        try:
            folder = find_run(run_id).dir
        except ShadError:
            return None  # not registered (yet): the details come from the events alone
        with self._lock:
            if self._state.run_id == run_id:
                self._history_dir = folder
        return folder

    def _load_resumed(self, record: dict[str, Any]) -> Run | None:
        """A resumed run announces no node it adopted: read its DAG from history to show them."""
        try:
            return Run.load(str(record.get("run_id") or ""))
        except (ShadError, OSError, ValueError):
            return None

    def _note_error(self, exc: BaseException) -> None:
        """Keep the problem where a user can see it, without printing from the engine's thread."""
        message = f"the explorer could not show an update ({type(exc).__name__}: {exc})"
        with self._lock:
            self._errors = [*self._errors[-19:], message]
            self._state.notice, self._dirty = message, True

    # --- display -------------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view, plus a markdown table and a text tree of the DAG for places that cannot
        render widgets (nbconvert HTML, a terminal)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if bundle is not None else ({}, {})
        with self._lock:
            snapshot = self._state.snapshot()
        data = {**data, "text/plain": plain_summary(snapshot), "text/markdown": markdown_summary(snapshot)}
        return data, metadata

    def close(self) -> None:
        if hasattr(self, "_lock"):  # close() also runs when __init__ failed half way
            with self._lock:
                self._cancel_timer()
        super().close()
