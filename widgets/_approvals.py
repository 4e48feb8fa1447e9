"""``ApprovalWidget``: one request of the approval queue (a delete or a publish) waiting for a person, with
Approve / Reject and a note box.

A click (or ``decide(action, note)``) calls ``engine.curation.approve`` or ``reject`` as the person at the
notebook: approving executes the request (the note deleted through the vault's writer, or published) unless
the note changed since the request; the outcome shows in ``state`` and ``message``.
"""

from __future__ import annotations

import getpass
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from engine.errors import ShadError, UsageError

from ._decision import answer_decisions, static_text, with_text_views

if TYPE_CHECKING:
    from engine.curation import Approval

__all__ = ["APPROVAL_WIDGET_STATES", "ApprovalWidget"]

APPROVAL_WIDGET_STATES = ("pending", "executed", "rejected", "failed")
_ACTIONS = ("approve", "reject")


class ApprovalWidget(anywidget.AnyWidget):
    """A pending approval with Approve / Reject.

    ``ApprovalWidget(approval, by=None)`` takes an ``engine.curation.Approval`` (or its ``to_dict()``);
    ``by`` is who decides (default: the login name). The front end sends ``{"type": "decide", "action":
    "approve" | "reject", "note": ...}`` and gets ``{"type": "decided" | "refused", "message": ...}``.
    """

    _esm = static_text("approvals.js")  # decision.js, then approvals.js
    _css = static_text("approvals.css")

    approval = t.Dict(help="The approval (engine.curation.Approval.to_dict()), updated once decided.").tag(
        sync=True
    )
    state = t.Enum(
        APPROVAL_WIDGET_STATES,
        default_value="pending",
        help="pending, executed (approved and done), rejected, or failed (approved, nothing done).",
    ).tag(sync=True)
    message = t.Unicode("", help="What happened, or what was wrong (shown under the buttons).").tag(sync=True)

    def __init__(self, approval: Approval | Mapping[str, Any], by: str | None = None, **kwargs: Any):
        from engine import curation  # loaded with the first widget, not with every notebook's import

        if isinstance(approval, curation.Approval):
            data = approval.to_dict()
        elif isinstance(approval, Mapping) and "id" in approval:
            data = dict(approval)
        else:
            raise UsageError(
                f"ApprovalWidget takes an engine.curation.Approval, not {type(approval).__name__}",
                hint="[ApprovalWidget(a) for a in engine.curation.pending_approvals()]",
            )
        super().__init__(**kwargs)
        self.by = by or getpass.getuser()
        self._lock = threading.Lock()  # a click and a decide() from code may race: one decision wins
        self._show(data)
        # {"type": "decide", "action": ..., "note": ...} from a button; the reply: decided or refused
        answer_decisions(self, "note", "refused")

    @property
    def approval_id(self) -> int:
        return int(self.approval["id"])

    def _show(self, data: dict[str, Any], message: str | None = None) -> None:
        status = str(data.get("status", "pending"))
        state = {"approved": "pending"}.get(status, status)
        with self.hold_sync():
            self.approval = data
            self.state = state if state in APPROVAL_WIDGET_STATES else "failed"
            if message is not None:
                self.message = message
            elif status != "pending":
                self.message = f"Already {status}" + (
                    f": {data.get('result')}" if data.get("result") else "."
                )

    def decide(self, action: str, note: str = "") -> bool:
        """Approve or reject as a click would. True when the decision was recorded (an approval whose
        execution failed is recorded too: ``state`` is then ``failed``); otherwise ``message`` says why."""
        from engine import curation

        action = str(action or "").strip().lower()
        with self._lock:
            if action not in _ACTIONS:
                self.message = f"unknown action {action!r}: approve or reject"
                return False
            if self.state != "pending":
                self.message = f"This request is {self.state} already."
                return False
            try:
                if action == "approve":
                    done = curation.approve(self.approval_id, self.by, str(note or ""))
                else:
                    done = curation.reject(self.approval_id, self.by, str(note or ""))
            except ShadError as exc:
                self.message = exc.message + (f" ({exc.hint})" if exc.hint else "")
                if isinstance(exc, curation.AlreadyDecidedError):  # decided elsewhere (the CLI): show it
                    self._show(curation.get_approval(self.approval_id).to_dict(), self.message)
                return False
            text = {
                "executed": f"Approved: {done.result}.",
                "rejected": f"Rejected: the {done.kind} of {done.path} will not happen.",
                "failed": f"Approved, but nothing was done: {done.result}",
            }.get(done.status, done.status)
            self._show(done.to_dict(), text)
        return True

    # --- display ---------------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        return with_text_views(super()._repr_mimebundle_(**kwargs), self.summary)

    def summary(self, markdown: bool = False) -> str:
        """One paragraph: what is asked, by whom, its state, and how to decide without the widget."""
        a = self.approval
        code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
        what = f"{a.get('kind')} {code(a.get('path'))}" + (
            f" to {code(a.get('target'))}" if a.get("target") else ""
        )
        lines = [
            f"Approval #{a.get('id')}: {what} ({self.state})",
            f"Asked by {a.get('requested_by')} at {a.get('requested_at')}: "
            + (a.get("reason") or "no reason given"),
        ]
        if self.state == "pending":
            lines.append("Decide: " + code(f"%shad approvals approve {a.get('id')}") + " or reject")
        elif self.message:
            lines.append(self.message)
        return ("\n\n" if markdown else "\n").join(lines)
