"""Checkpoints in a notebook: the session policy (auto, fail, approve, skip, pause, off) and what it means for
the engine, the error a headless run raises when it needs a human, and ``CheckpointPanel``, the cell's
checkpoint widgets, whose last decision resumes the run in the background with the DAG widget live.

The engine only knows ``pause`` here (a notebook never blocks a cell on a decider): ``fail`` is a pause
that the magic turns into ``ShadRunError`` once the run ends, so the history keeps the checkpoints
and ``%shad checkpoint RUN NODE --approve`` can still continue the run.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import engine
from engine import Run, RunStatus

from . import _launch
from ._args import CHECKPOINT_POLICIES
from ._cell import displays_of
from ._errors import ShadRunError
from ._lines import Info, _md
from ._result import ShadResult
from ._runner import Job

__all__ = [
    "CHECKPOINT_POLICIES",
    "CheckpointList",
    "CheckpointPanel",
    "engine_policy",
    "interactive_frontend",
    "listing",
    "needs_human_error",
    "resolve_policy",
]


def interactive_frontend(shell: Any) -> bool:
    """Can a person answer in this cell? Lab, Notebook and VS Code send ``execute_request`` with
    ``allow_stdin=True``; nbclient (and so papermill and nbval) sends False. Without a kernel, only a
    terminal IPython has a person at its prompt."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return type(shell).__name__ == "TerminalInteractiveShell"
    with contextlib.suppress(Exception):
        parent = kernel.get_parent("shell")  # ipykernel >= 6: the request being executed
        content = parent.get("content") if isinstance(parent, dict) else None
        if isinstance(content, dict) and "allow_stdin" in content:
            return bool(content["allow_stdin"])
    return bool(getattr(kernel, "_allow_stdin", False))  # set from the same field for input()


def resolve_policy(policy: str, shell: Any) -> str:
    """The session/line policy with ``auto`` made concrete: pause where a person can click, fail where
    nobody can (a headless run must never wait)."""
    policy = policy.strip().lower()
    if policy == "auto":
        return "pause" if interactive_frontend(shell) else "fail"
    return policy


def engine_policy(policy: str) -> str:
    """A resolved magic policy -> the engine's (``RunConfig.checkpoints``)."""
    return policy if policy in ("approve", "skip", "off") else "pause"


def _pending(run: Run) -> list[engine.Checkpoint]:
    try:
        return engine.pending_checkpoints(run.id)
    except engine.ShadError:
        return []


def needs_human_error(run: Run) -> ShadRunError:
    """Why the run stopped, for a cell that may not wait: each pending node, why it waits, and the
    ``%shad checkpoint`` lines that decide it."""
    pending = _pending(run)
    if not pending:
        what = "needs a human"
        how = f"%shad checkpoint {run.id}"
    else:
        what = "needs a human at " + "; ".join(
            f"node {c.node_id} ({c.task[:80]!r}): {c.reason}; high-impact: {c.impact}" for c in pending
        )
        first = pending[0].node_id
        how = f"%shad checkpoint {run.id} {first} --approve (or --edit NOTES, --hint TEXT, --skip, --stop)"
    return ShadRunError(
        f"run {run.id} {what}",
        hint=f"decide with {how}; or run with --checkpoints pause (interactive), approve or skip",
        run_id=run.id,
        status=RunStatus.NEEDS_HUMAN.value,
    )


class CheckpointList(Info):
    """``%shad checkpoint RUN``: the pending checkpoints as a markdown table (``.data``: their dicts) and,
    in a notebook, ``.panel`` holding their widgets (``.panel.widgets[0].decide("approve")``)."""

    def __init__(self, markdown: str, data: Any, panel: CheckpointPanel | None = None) -> None:
        super().__init__(markdown, data)
        self.panel = panel


def listing(
    run_id: str, checkpoints: list[engine.Checkpoint], panel: CheckpointPanel | None = None
) -> CheckpointList:
    """The pending checkpoints as a markdown table."""
    if not checkpoints:
        return CheckpointList(f"run `{run_id}` waits for no decision", [], panel)
    rows = [
        "| node | task | why | impact | retrieval score | confidence | decide |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in checkpoints:
        score, conf = c.signals.get("retrieval_score"), c.signals.get("confidence")
        rows.append(
            f"| `{c.node_id}` | {_md(c.task[:120])} | {_md(c.reason)} | {_md(c.impact)} "
            f"| {_num(score)} | {_num(conf)} | `%shad checkpoint {run_id} {c.node_id} --approve` |"
        )
    head = f"run `{run_id}` waits for {len(checkpoints)} decision(s): --approve, --edit NOTES, --hint TEXT, "
    markdown = head + "--skip or --stop\n\n" + "\n".join(rows)
    return CheckpointList(markdown, [c.to_dict() for c in checkpoints], panel)


def _num(x: Any) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "–"


class CheckpointPanel:
    """The checkpoint widgets of one cell, in one ``ipywidgets.VBox`` shown below its DAG widget.

    ``show(run)`` adds a widget per pending checkpoint not shown yet (safe from the engine thread: it
    only creates widgets and sets traits). The widgets' continuation is ``resume``: it continues the
    run on the engine loop with the cell's DAG widget following it, and shows the checkpoints of a
    run that pauses again in the same box.
    """

    def __init__(
        self,
        dag: Any = None,
        *,
        make_dag: bool = False,
        format: str = "markdown",
        bind: Callable[[ShadResult], None] | None = None,
        view: Any = None,
    ) -> None:
        import ipywidgets  # type: ignore[import-untyped]

        self.box = ipywidgets.VBox()
        self.dag = dag
        self._make_dag = make_dag and dag is None  # a listing has no DAG widget: one appears on resume
        self._format = format
        self._bind = bind  # e.g. rebinds the cell's -o NAME to the finished run
        self.view = view  # the cell's RunView: its line and report follow the resumed run in place
        self._lock = threading.Lock()
        self._shown: dict[tuple[str, str], Any] = {}
        self.job: Job | None = None
        self.result: ShadResult | None = None  # the last resumed run, once it ended

    @property
    def widgets(self) -> list[Any]:
        with self._lock:
            return list(self._shown.values())

    def show(self, run_id: str, checkpoints: list[engine.Checkpoint] | None = None) -> list[Any]:
        """Add widgets for the run's pending checkpoints (or those given) not shown yet; the new ones."""
        from widgets import CheckpointWidget

        if checkpoints is None:
            checkpoints = engine.pending_checkpoints(run_id)
        added = []
        with self._lock:
            for c in checkpoints:
                key = (c.run_id, c.node_id)
                old = self._shown.get(key)
                if old is not None and not old.decision:
                    continue  # still waiting in its widget
                self._shown[key] = CheckpointWidget(c, on_resume=self.resume)
                added.append(self._shown[key])
            if added:
                kept = [w for w in self.box.children if w not in added]
                self.box.children = (*kept, *added)
        return added

    def resume(self, run_id: str) -> None:
        """Continue ``run_id`` (every checkpoint decided) in the background, the DAG widget live."""
        previous = Run.load(run_id)
        for w in self._of(run_id):
            w.set_state("resuming", f"Decided: {w.decision.get('action', '?')}. Resuming the run…")
        if self.dag is None and self._make_dag:
            self.dag = _launch.make_widget(True)
            if self.dag is not None:
                self.box.children = (*self.box.children, self.dag)

        def launch(sink: Any) -> Any:
            return engine.aresume(run_id, on_event=sink, checkpoints="pause")

        def done(job: Job) -> None:
            self._resumed(run_id, job)

        sink = None
        if self.view is not None:  # the cell's line counts the resumed run live
            self.view.restart()
            sink = self.view.sink(True)
        self.job = _launch.start(launch, widget=self.dag, config=previous.config, on_event=sink, on_done=done)

    def _of(self, run_id: str) -> list[Any]:
        with self._lock:
            return [w for (rid, _), w in self._shown.items() if rid == run_id and w.state != "resumed"]

    def _resumed(self, run_id: str, job: Job) -> None:
        """On the engine thread: say how the resume went in the decided widgets; show new checkpoints."""
        decided = [w for w in self._of(run_id) if w.decision]
        run = job.run
        if run is None:
            why = f"{type(job.error).__name__}: {job.error}" if job.error is not None else "it was cancelled"
            for w in decided:
                w.set_state("failed", f"The run did not resume ({why}). Try %shad resume {run_id}.")
            return
        status = run.status.value
        if run.status in (RunStatus.FAILED, RunStatus.FAILED_WITH_DIAGNOSTIC):
            text, state = f"The resumed run ended {status}: see %shad trace {run.id}.", "failed"
        elif run.status == RunStatus.NEEDS_HUMAN:
            text, state = "The resumed run paused again: decide the new checkpoint(s) below.", "resumed"
        else:
            text, state = f"The run resumed and ended {status}.", "resumed"
        # What the resume brought (new checkpoints, or the report) is shown before the widgets say it
        # ended: whoever watches their state then finds it in place.
        if run.status == RunStatus.NEEDS_HUMAN:
            self.show(run.id)
        else:
            self._show_result(run)
        for w in decided:
            w.set_state(state, text)

    def _show_result(self, run: Run) -> None:
        """The resumed run's report replaces the paused one wherever this kernel showed the run (its
        line and report displays, updated in place); a listing with no report shown yet gets it below
        the widgets (an Output's outputs are a trait: thread-safe)."""
        result = ShadResult(run, format=self._format, widget=self.dag)
        result.checkpoints = self
        views = displays_of(run.id)
        if self.view is not None and self.view not in views:
            views.append(self.view)
        shown = False
        for view in views:
            with contextlib.suppress(Exception):  # no front end to update (plain Python): the DAG shows
                view.replace(result)
                shown = shown or view.result is not None
        if not shown:
            self._append_report(result)
        self.result = result
        if self._bind is not None:
            with contextlib.suppress(Exception):
                self._bind(result)

    def _append_report(self, result: ShadResult) -> None:
        import ipywidgets

        data, metadata = result._repr_mimebundle_()
        out = ipywidgets.Output()
        out.outputs = ({"output_type": "display_data", "data": data, "metadata": metadata},)
        self.box.children = (*self.box.children, out)
