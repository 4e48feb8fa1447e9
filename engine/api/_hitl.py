"""Human in the loop over HTTP: the open checkpoints of runs and the pending approvals, in one queue with
stable ids (``checkpoint:RUN_ID:NODE_ID``, ``approval:ID``), and the decisions that answer them."""

from __future__ import annotations

from typing import Any

from ..curation import AlreadyDecidedError, approve, get_approval, pending_approvals, reject
from ..errors import UsageError
from ..runs import Run
from ..runs import checkpoints as cp
from ..store.history import list_runs
from ._security import ApiError, Settings

__all__ = ["APPROVAL_ACTIONS", "decide_approval", "decide_checkpoint", "parse_id", "queue"]

APPROVAL_ACTIONS = {"approve": "approve", "reject": "reject", "skip": "reject", "stop": "reject"}
RUNS_SCANNED = 200


def parse_id(item_id: str) -> tuple[str, str, str]:
    """``checkpoint:RUN:NODE`` -> ("checkpoint", RUN, NODE); ``approval:ID`` -> ("approval", ID, "")."""
    kind, _, rest = item_id.partition(":")
    if kind == "checkpoint":
        run_id, sep, node_id = rest.partition(":")
        if sep and run_id and node_id:
            return kind, run_id, node_id
    elif kind == "approval" and rest.isdigit():
        return kind, rest, ""
    raise ApiError(
        404,
        "NotFound",
        f"no queue item {item_id!r}",
        hint="ids look like checkpoint:RUN_ID:NODE_ID or approval:ID (GET /v1/hitl/queue)",
    )


def queue(settings: Settings) -> list[dict[str, Any]]:
    """What waits for a person, in the server's vaults: open checkpoints (newest runs first), then
    pending approvals (oldest first)."""
    items: list[dict[str, Any]] = []
    for info in list_runs(RUNS_SCANNED):
        if info.get("status") not in ("NEEDS_HUMAN", "RUNNING", "UNKNOWN"):
            continue
        try:
            run = Run.load(info["run_id"])
        except Exception:  # a folder that is gone or half-written is not a question for anyone
            continue
        if run.config is None or not settings.allows_run(run.config.vaults):
            continue
        for c in cp.load_all(run.history):
            if c.pending:
                items.append(
                    {
                        "id": f"checkpoint:{run.id}:{c.node_id}",
                        "kind": "checkpoint",
                        "run_id": run.id,
                        "node_id": c.node_id,
                        "actions": list(cp.ACTIONS),
                        "checkpoint": c.to_dict(),
                    }
                )
    for root in settings.roots:
        for a in pending_approvals(root):
            items.append(
                {
                    "id": f"approval:{a.id}",
                    "kind": "approval",
                    "actions": ["approve", "reject"],
                    "approval": a.to_dict(),
                }
            )
    return items


def checkpoint_run(settings: Settings, run_id: str) -> Run:
    """The run a checkpoint decision is about, if the server may touch it."""
    run = Run.load(run_id)
    if run.config is None or not settings.allows_run(run.config.vaults):
        raise ApiError(403, "Forbidden", f"run {run_id} is not over this server's vaults")
    return run


def decide_checkpoint(
    settings: Settings, run_id: str, node_id: str, action: str, text: str
) -> dict[str, Any]:
    """Record the decision (as ``shad checkpoint --no-resume``); the caller resumes the run."""
    checkpoint_run(settings, run_id)
    decided = cp.decide(run_id, node_id, action, text)
    return decided.to_dict()


def decide_approval(settings: Settings, approval_id: int, action: str, notes: str) -> dict[str, Any]:
    """Approve (and execute) or reject a pending approval of one of the server's vaults."""
    verb = APPROVAL_ACTIONS.get(action)
    if verb is None:
        raise ApiError(
            422,
            "UsageError",
            f"an approval is approved or rejected, not {action!r}",
            hint="approve or reject",
        )
    try:
        found = get_approval(approval_id)
    except UsageError:
        found = None
    if found is None or not any(str(r) == found.vault for r in settings.roots):
        raise ApiError(404, "NotFound", f"no approval {approval_id} in this server's vaults")
    try:
        done = approve(approval_id, "api", notes) if verb == "approve" else reject(approval_id, "api", notes)
    except AlreadyDecidedError as exc:
        raise ApiError(409, "Conflict", exc.message, hint=exc.hint) from exc
    return done.to_dict()
