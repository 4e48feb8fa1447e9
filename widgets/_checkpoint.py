"""``CheckpointWidget``: one node of a run waiting for a person (Approve / Edit / Hint / Skip / Stop).

It shows what the person needs to decide (the node's task, why the engine stopped, why the node matters,
the confidence signals and what retrieval found), records the decision with ``engine.decide`` and, once
no checkpoint of the run is left pending, calls the continuation its creator gave it (``%%shad run``
resumes the run there). The engine does not resume by itself: a decision is only written to history.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import anywidget
import traitlets as t

import engine
from engine.errors import ShadError, UsageError

from ._decision import answer_decisions, static_text, with_text_views

__all__ = ["STATES", "CheckpointWidget"]

STATES = ("waiting", "resuming", "resumed", "failed")
# What an action needs in the text box, and how to say it is missing (the engine checks again).
_NEEDS_TEXT = {
    "hint": "a hint needs its text: write it in the box, then press Hint",
    "edit": "edit needs the notes to use: name them in the box (Folder/Note, comma-separated)",
}
_TAKES_TEXT = ("hint", "edit")

Continuation = Callable[[str], object]


class CheckpointWidget(anywidget.AnyWidget):
    """A checkpoint of a paused run, with the five decisions as buttons and one text box.

    ``CheckpointWidget(checkpoint, on_resume=callback)`` takes an ``engine.Checkpoint`` (or its
    ``to_dict()``). A click (or ``decide(action, text)``) validates, records the decision with
    ``engine.decide`` and, when every pending checkpoint of the run is decided, calls
    ``on_resume(run_id)`` once; whoever resumes the run reports back with ``set_state``. Problems show
    in ``message`` and leave the buttons usable.
    """

    _esm = static_text("checkpoint.js")  # decision.js, then checkpoint.js
    _css = static_text("checkpoint.css")

    run_id = t.Unicode("", help="The paused run.").tag(sync=True)
    node_id = t.Unicode("", help="The node waiting for a decision.").tag(sync=True)
    checkpoint = t.Dict(
        help="The checkpoint (engine.Checkpoint.to_dict()): task, reason, impact, signals, context, "
        "queries, options, created, decision."
    ).tag(sync=True)
    decision = t.Dict(help="The decision once taken ({} until then): action, text, by, at.").tag(sync=True)
    state = t.Enum(
        STATES,
        default_value="waiting",
        help="waiting (for this or the run's other decisions), resuming, resumed, or failed.",
    ).tag(sync=True)
    message = t.Unicode("", help="What happened, or what was wrong (shown under the buttons).").tag(sync=True)

    def __init__(
        self,
        checkpoint: engine.Checkpoint | Mapping[str, Any],
        on_resume: Continuation | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(checkpoint, engine.Checkpoint):
            data = checkpoint.to_dict()
        elif isinstance(checkpoint, Mapping):
            data = dict(checkpoint)
        else:
            raise UsageError(
                f"CheckpointWidget takes an engine.Checkpoint, not {type(checkpoint).__name__}",
                hint="for a paused run: [CheckpointWidget(c) for c in engine.pending_checkpoints(run_id)]",
            )
        if not data.get("run_id") or not data.get("node_id"):
            raise UsageError(
                "the checkpoint names no run_id or node_id", hint="pass engine.Checkpoint objects"
            )
        super().__init__(**kwargs)
        self._on_resume = on_resume
        self._lock = threading.Lock()  # a click and a decide() from code may race: one decision wins
        decided = data.get("decision") or {}
        with self.hold_sync():
            self.run_id, self.node_id = str(data["run_id"]), str(data["node_id"])
            self.checkpoint = data
            self.decision = dict(decided)
            if decided:
                self.message = f"Already decided: {decided.get('action')}."
        # {"type": "decide", "action": ..., "text": ...} from a button; the reply: decided or rejected
        answer_decisions(self, "text", "rejected")

    # --- deciding ------------------------------------------------------------------------------------

    def decide(self, action: str, text: str = "") -> bool:
        """Decide this checkpoint as a click would. True when recorded; otherwise ``message`` says why
        and the widget still waits for a decision."""
        action = str(action or "").strip().lower()
        text = str(text or "").strip() if action in _TAKES_TEXT else ""
        with self._lock:
            problem = self._check(action, text)
            if problem:
                self.message = problem
                return False
            try:
                decided = engine.decide(self.run_id, self.node_id, action, text)
            except ShadError as exc:
                self.message = exc.message + (f" ({exc.hint})" if exc.hint else "")
                return False
            try:
                remaining = [c.node_id for c in engine.pending_checkpoints(self.run_id)]
            except ShadError:
                remaining = []  # the decision is written: resuming will tell what is left
            with self.hold_sync():
                self.checkpoint = decided.to_dict()
                self.decision = decided.decision.to_dict() if decided.decision else {"action": action}
                if remaining and self._on_resume is not None:
                    self.message = (
                        f"Decided: {action}. The run resumes once its other checkpoints are decided "
                        f"({', '.join(remaining)})."
                    )
                elif remaining:
                    self.message = (
                        f"Decided: {action}. Still waiting: {', '.join(remaining)}; then continue the "
                        f"run with %shad resume {self.run_id}."
                    )
                elif self._on_resume is None:
                    self.message = f"Decided: {action}. Continue the run with %shad resume {self.run_id}."
        if not remaining and self._on_resume is not None:
            self._resume()
        return True

    def _check(self, action: str, text: str) -> str:
        if self.decision:
            return f"This checkpoint is already decided ({self.decision.get('action')})."
        actions = tuple(self.checkpoint.get("options") or engine.CHECKPOINT_ACTIONS)
        if action not in engine.CHECKPOINT_ACTIONS or action not in actions:
            return f"unknown action {action!r}: choose one of {', '.join(actions)}"
        if action in _NEEDS_TEXT and not text:
            return _NEEDS_TEXT[action]
        return ""

    def _resume(self) -> None:
        assert self._on_resume is not None
        self.set_state("resuming", f"Decided: {self.decision.get('action')}. Resuming the run…")
        try:
            self._on_resume(self.run_id)
        except Exception as exc:  # the decision stands; the run can still be resumed by hand
            reason = exc.message if isinstance(exc, ShadError) else f"{type(exc).__name__}: {exc}"
            self.set_state("failed", f"Could not resume the run: {reason}. Try %shad resume {self.run_id}.")

    def set_state(self, state: str, message: str | None = None) -> None:
        """Say how the run is doing after the decision (called by whoever resumes it; any thread)."""
        if state not in STATES:
            raise UsageError(
                f"unknown checkpoint widget state {state!r}", hint=f"states: {', '.join(STATES)}"
            )
        with self.hold_sync():
            self.state = state
            if message is not None:
                self.message = message

    # --- display -------------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view, plus text for places that cannot render widgets (a terminal, nbconvert)."""
        return with_text_views(super()._repr_mimebundle_(**kwargs), self.summary)

    def summary(self, markdown: bool = False) -> str:
        """One paragraph: node, task, why it waits, and how to decide without the widget."""
        cp = self.checkpoint
        code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
        done = self.decision.get("action")
        head = f"Checkpoint {code(self.node_id)} of run {code(self.run_id)}"
        lines = [
            f"{head}: " + (f"decided ({done})" if done else "waiting for a decision"),
            f"Task: {cp.get('task', '')}",
            f"Why: {cp.get('reason', '')} ({cp.get('impact', '')})",
        ]
        if not done:
            lines.append("Decide: " + code(f"%shad checkpoint {self.run_id} {self.node_id} --approve"))
        return ("\n\n" if markdown else "\n").join(lines)
