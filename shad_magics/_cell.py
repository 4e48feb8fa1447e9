"""The cell's own output for a run: one progress line and one report, each a display updated in place.

``RunView`` shows a compact line while the run works ("Shad run ID: 5/12 nodes · 3.1k tokens · 4 s"),
visible even when the DAG widget has scrolled away, with the synthesis text streaming below it as the
model writes it. When the run ends, the line says how it ended and the report appears below it (the
report's own display, ``ShadResult._ipython_display_``). Every display of a run is registered under its
id: when the run goes on (a checkpoint decided in its widget, ``%shad checkpoint``, ``%shad resume``),
each earlier line and report of that run in this kernel is replaced by the new state, so a notebook never
keeps a stale NEEDS_HUMAN report below a finished one.

Updates are sent from the waiting cell's thread (``tick`` in its wait loop) or, for a background run or
a resume started by a click, from the engine thread: ipykernel sends those with the latest request's
parent header, and front ends route ``update_display_data`` by display id, not by parent.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

__all__ = ["Progress", "RunView", "displays_of", "line_of", "short_count"]

REFRESH = 0.25  # seconds between two updates of the line: a front end must not drown in messages
STREAM_CHARS = 6000  # the streamed preview keeps its tail: the final report shows the whole text
_FINISHED_OK = ("SUCCEEDED", "CACHE_HIT")
_FAILED = ("FAILED", "FAILED_WITH_DIAGNOSTIC")


def short_count(n: int) -> str:
    """``950``, ``3.1k``, ``1.2M``: a token count that fits a short line."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


class Progress:
    """What the events of one run say so far: node states, tokens, the streamed synthesis text.
    ``handle`` is called from the engine thread, ``line`` from the cell's: one lock between them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.run_id: str | None = None
        self.nodes: dict[str, str] = {}
        self.tokens = 0
        self.stream = ""
        self.stream_node: str | None = None
        self.started = time.monotonic()
        self.version = 0  # bumped on every change: the view sends an update only when it moved

    def handle(self, record: dict[str, Any]) -> None:
        kind, node = str(record.get("type", "")), record.get("node")
        with self._lock:
            if self.run_id is None and record.get("run_id"):
                self.run_id = str(record["run_id"])
            if kind == "NODE_CREATED" and isinstance(node, str):
                self.nodes.setdefault(node, "PENDING")
            elif kind == "RUN_RESUMED":
                for kept in record.get("kept") or []:
                    self.nodes[str(kept)] = "SUCCEEDED"
            elif kind.startswith("NODE_") and isinstance(node, str):
                self.nodes[node] = kind.removeprefix("NODE_")
            elif kind == "LLM_CALL":
                self.tokens += int(record.get("tokens") or 0)
            elif kind == "SYNTHESIS_DELTA":
                if record.get("first") or node != self.stream_node:  # a new attempt starts afresh
                    self.stream, self.stream_node = "", node if isinstance(node, str) else None
                self.stream = (self.stream + str(record.get("text") or ""))[-STREAM_CHARS:]
            else:
                return
            self.version += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            states = list(self.nodes.values())
        return {
            "done": sum(s in _FINISHED_OK for s in states),
            "pruned": states.count("PRUNED"),
            "failed": sum(s in _FAILED for s in states),
            "waiting": states.count("NEEDS_HUMAN"),
            "total": len(states),
        }

    def line(self, status: str | None = None) -> str:
        """``Shad run ID: 5/12 nodes · 1 pruned · 3.1k tokens · 4 s`` (and the end status once known)."""
        c = self.counts()
        parts = [f"{c['done']}/{c['total']} nodes"]
        parts += [f"{c[k]} {k}" for k in ("pruned", "failed", "waiting") if c[k]]
        parts += [f"{short_count(self.tokens)} tokens", f"{time.monotonic() - self.started:.0f} s"]
        head = f"Shad run {self.run_id or '(starting)'}"
        return f"{head}: {status} · " + " · ".join(parts) if status else f"{head}: " + " · ".join(parts)


def line_of(run: Any) -> str:
    """The line of a finished run, from its whole DAG and summary (a resumed run counts its earlier
    sessions too): ``Shad run ID: PARTIAL · 5/7 nodes · 2 pruned · 3.1k tokens · 4 s``."""
    states = [n.status.value for n in run.dag]
    metrics = run.summary.get("metrics", {}) if isinstance(run.summary, dict) else {}
    c = {
        "done": sum(s in _FINISHED_OK for s in states),
        "pruned": states.count("PRUNED"),
        "failed": sum(s in _FAILED for s in states),
        "waiting": states.count("NEEDS_HUMAN"),
    }
    parts = [f"{c['done']}/{len(states)} nodes"] + [
        f"{c[k]} {k}" for k in ("pruned", "failed", "waiting") if c[k]
    ]
    parts.append(f"{short_count(int(metrics.get('total_tokens') or 0))} tokens")
    if metrics.get("duration_ms") is not None:
        parts.append(f"{float(metrics['duration_ms']) / 1000:.0f} s")
    return f"Shad run {run.id}: {run.status.value} · " + " · ".join(parts)


# run id -> every view of it in this kernel (a run shown in one cell and resumed in another)
_registry: dict[str, list[RunView]] = {}
_registry_lock = threading.Lock()


def displays_of(run_id: str) -> list[RunView]:
    with _registry_lock:
        return list(_registry.get(run_id, []))


class RunView:
    """The progress line (and streamed text) of one run in the cell, and the report's display id.
    ``enabled`` False (a terminal: nothing can be updated there) makes every method a no-op."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.progress = Progress()
        self.line_id = f"shad-line-{uuid.uuid4().hex}"
        self.report_id = f"shad-report-{uuid.uuid4().hex}"
        self._shown_version = -1
        self._sent_at = 0.0
        self._lock = threading.Lock()
        self.final: str | None = None  # the line once the run ended
        self.result: Any = None  # the result whose report this view displayed (set when displayed)

    def show(self) -> None:
        """The line, before the run starts (below the DAG widget)."""
        if self.enabled:
            self._send(self._bundle(), update=False)

    def handle_event(self, record: dict[str, Any]) -> None:
        self.progress.handle(record)

    def sink(self, live: bool) -> Any:
        """The job's event sink: counts every event; ``live`` (a background run or a resume started by
        a click, where no cell waits to tick) also refreshes the line from the engine thread."""

        def on_event(record: dict[str, Any]) -> None:
            self.progress.handle(record)
            self.tick()

        return on_event if live else self.progress.handle

    def ended(self, job: Any) -> None:
        """A background run ended (on the engine thread): the line says how, before any ``.result()``."""
        if self.enabled and job.run is not None and self.final is None:
            self.final = line_of(job.run)
            self._send(self._bundle())

    def restart(self) -> None:
        """The run goes on (a checkpoint decided by a click): count it afresh on the same line."""
        self.progress = Progress()
        self.progress.run_id = self.result.run_id if self.result is not None else None
        self.final = None

    def tick(self, force: bool = False) -> None:
        """Refresh the line if something changed and the last refresh is old enough."""
        if not self.enabled or self.final is not None:
            return
        now = time.monotonic()
        with self._lock:
            if self.progress.version == self._shown_version and not force:
                if now - self._sent_at < 1.0:  # the clock still moves: once a second at least
                    return
            elif now - self._sent_at < REFRESH and not force:
                return
            self._shown_version, self._sent_at = self.progress.version, now
        self._send(self._bundle())

    def _bundle(self) -> dict[str, Any]:
        line = self.final or self.progress.line()
        stream = "" if self.final is not None else self.progress.stream
        if not stream:
            return {"text/plain": line}
        return {"text/plain": f"{line}\n\n{stream}", "text/markdown": f"`{line}`\n\n{stream}"}

    def _send(self, bundle: dict[str, Any], update: bool = True) -> None:
        from IPython.display import display

        display(bundle, raw=True, display_id=self.line_id, update=update)  # type: ignore[no-untyped-call]

    def cancelled(self, status: str) -> None:
        """The run was interrupted: the line says so (the error below says how to resume)."""
        if self.enabled:
            self.final = self.progress.line(f"cancelled, {status}")
            self._send(self._bundle())

    def finish(self, result: Any) -> None:
        """The run ended: the line says how, and ``result`` will show (and be replaced) under this view's
        report id. Every earlier display of the same run in this kernel now shows this state."""
        result._display_id = self.report_id
        result._view = self  # once it is displayed (not when the cell raised), replaces update it
        run_id = result.run_id
        self.progress.run_id = run_id
        with _registry_lock:
            earlier = [v for v in _registry.get(run_id, []) if v is not self]
            views = _registry.setdefault(run_id, [])
            if self not in views:
                views.append(self)
        self.final = line_of(result.run)
        if self.enabled:
            self._send(self._bundle())
        for view in earlier:
            view.replace(result)

    def replace(self, result: Any) -> None:
        """A later state of the run: the line and the report shown here become ``result``'s."""
        if not self.enabled:
            return
        self.final = line_of(result.run)
        self._send(self._bundle())
        if self.result is not None:
            from IPython.display import update_display

            data, metadata = result._repr_mimebundle_()
            update_display(data, raw=True, metadata=metadata, display_id=self.report_id)  # type: ignore[no-untyped-call]
            result._display_id = result._display_id or self.report_id
            self.result = result
