"""``%shad approvals`` and ``%shad learnings``: the approval queue (a table and one ``ApprovalWidget`` per
pending request: Approve / Reject) and the vault's learnings as a DataFrame.

``%shad approvals approve ID [--note TEXT]`` and ``reject ID`` decide without a widget (a headless notebook
can); ``%shad approvals log`` lists every decision. Errors raise, as every magic's do.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Sequence
from typing import Any

from engine import curation
from engine.errors import ShadError

from ._errors import ShadUsageError
from ._lines import Info, _md

__all__ = ["LEARNING_COLUMNS", "ApprovalList", "approvals", "learnings"]

# The columns of ``%shad learnings`` (engine.curation.Learning's fields, in this order).
LEARNING_COLUMNS = [
    "path",
    "slug",
    "title",
    "status",
    "kind",
    "proposed_by",
    "proposed_at",
    "sources",
    "promoted_by",
    "promoted_at",
    "rejected_by",
    "rejected_at",
    "rejection_reason",
    "hash",
]


class ApprovalList(Info):
    """``%shad approvals``: the requests as a markdown table (``.data``: their dicts) and, in a notebook,
    ``.panel`` (an ``ipywidgets.VBox``) holding one ``ApprovalWidget`` per pending request
    (``.widgets[0].decide("approve")``)."""

    def __init__(self, markdown: str, data: Any, panel: Any = None) -> None:
        super().__init__(markdown, data)
        self.panel = panel

    @property
    def widgets(self) -> list[Any]:
        return list(self.panel.children) if self.panel is not None else []


def _table(items: Sequence[curation.Approval]) -> str:
    rows = ["| id | status | kind | path | target | reason | asked by | decided by | result |"]
    rows.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for a in items:
        rows.append(
            f"| {a.id} | {a.status} | {a.kind} | `{a.path}` | {_md(a.target) or '–'} | {_md(a.reason)} "
            f"| {_md(a.requested_by)} | {_md(a.decided_by) or '–'} | {_md(a.result) or '–'} |"
        )
    return "\n".join(rows)


def approvals(ns: Any, display: Callable[[Any], None] | None = None) -> Any:
    """``%shad approvals [--all] [--vault DIR]``, ``approve ID [--note]``, ``reject ID [--note]``, ``log``.
    ``display`` shows the pending requests' widgets (None where none can show: a terminal)."""
    action = ns.action
    if action == "log":
        entries = [e.to_dict() for e in curation.approval_log(ns.id)]
        return _log_frame(entries)
    if action in ("approve", "reject"):
        if ns.id is None:
            raise ShadUsageError(f"%shad approvals {action} needs the approval's id", hint="%shad approvals")
        decide = curation.approve if action == "approve" else curation.reject
        done = decide(ns.id, getpass.getuser(), ns.note)
        if done.status == "failed":
            # nothing was done: the cell fails (papermill must see it), the log keeps why
            raise ShadError(f"approval {done.id} failed: {done.result}", hint="see %shad approvals log")
        what = done.result or f"the {done.kind} of {done.path} will not happen"
        return Info(f"#{done.id} {done.status}: {_md(what)}", done.to_dict())
    items = curation.approvals(ns.vault, None if ns.all else "pending")
    if not items:
        text = "the approval queue is empty" if ns.all else "nothing waits for a decision"
        return ApprovalList(text, [])
    panel = None
    pending = [a for a in items if a.status == "pending"]
    if pending and display is not None:
        import ipywidgets  # type: ignore[import-untyped]

        from widgets import ApprovalWidget

        panel = ipywidgets.VBox([ApprovalWidget(a) for a in pending])
        display(panel)
    head = f"{len(pending)} request(s) wait for a decision" + (f" ({len(items)} in all)" if ns.all else "")
    if pending:
        head += ": `%shad approvals approve ID` or `reject ID` (`--note TEXT`)"
    return ApprovalList(f"{head}\n\n{_table(items)}", [a.to_dict() for a in items], panel)


def _log_frame(entries: list[dict[str, Any]]) -> Any:
    import pandas as pd

    columns = ["seq", "approval_id", "action", "by", "at", "kind", "vault", "path", "target", "hash"]
    return pd.DataFrame(entries, columns=[*columns, "note", "result"])


def learnings(vault: str, status: str | None = None) -> Any:
    """The vault's learnings (newest proposal first) as a DataFrame with ``LEARNING_COLUMNS``."""
    import pandas as pd

    rows = [item.to_dict() for item in curation.learnings(vault, status)]
    return pd.DataFrame(rows, columns=LEARNING_COLUMNS)
