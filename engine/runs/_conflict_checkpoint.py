"""Unresolved high-impact conflicts become checkpoints (E8).

The root's answer keeps conflicting sources side by side (``_verify``); a model reconciles them when there
is one. When it cannot (no model, or the reconcile call failed) and a conflict is on a number or a yes/no
fact, the answer rests on a value the sources disagree about: a person is asked, with both sides and their
citations, before the answer is final. The checkpoint policy decides as it does for retrieval checkpoints:
``pause`` (and ``ask`` without a decider) lets the root wait in NEEDS_HUMAN (``shad checkpoint`` decides,
the run resumes), ``ask`` with a decider asks at once, ``approve`` and ``skip`` decide by themselves (both
sides stay shown, flagged unresolved), ``off`` opens none. The per-run cap applies too.

A person may approve (keep both sides as shown), give a hint (their reading, kept under the conflict with
attribution) or stop the run. The checkpoint is kept as ``checkpoints/<node>.conflict.json``, beside any
retrieval checkpoint of the same node.
"""

from __future__ import annotations

import re
from typing import Any

from ..events import CheckpointDecided, CheckpointOpened
from ..retrieval.synthesis import Conflict
from . import checkpoints as cp
from ._context import RunContext
from ._leaf_retrieval import NeedsHuman, SkippedByHuman
from .checkpoints import Checkpoint, Decision
from .dag import Node

__all__ = ["KIND", "OPTIONS", "gate", "high_impact"]

KIND = "conflict"
OPTIONS = ["approve", "hint", "stop"]  # editing notes or skipping the root means nothing here
# A value that is a quantity ("30 days", "1:15", "~5 %"), not text with a digit in it (a link, a name).
_NUMBER = re.compile(
    r"^[~≈<>]?\s*\d[\d.,:]*(?:\s*(?:-|–|to)\s*\d[\d.,:]*)?(?:\s*[^\W\d_]{0,12}|\s*[%°]\w?)?$"
)
_YES_NO = re.compile(
    r"^(?:yes|no|true|false|on|off|enabled?|disabled?|required|optional|allowed|not allowed|supported|"
    r"not supported)$",
    re.I,
)


def high_impact(conflicts: list[Conflict]) -> list[Conflict]:
    """The conflicts an answer may not settle alone: on a number, or on a yes/no fact."""
    return [
        c
        for c in conflicts
        if c.kind == "number"
        or all(_NUMBER.match(s.value.strip()) for s in c.sides)
        or all(_YES_NO.match(s.value.strip()) for s in c.sides)
    ]


def _context(conflicts: list[Conflict]) -> list[dict[str, Any]]:
    """Each side as a passage preview: what it says, where, and the citation to open."""
    return [
        {
            "vault": None,
            "path": s.source,
            "heading": None,
            "citation": " ".join(s.citations[:2]) or None,
            "text": f"{c.slot}: {s.value} — “{s.statement}” (found by `{s.node_id}`)"[: cp.PREVIEW_CHARS],
        }
        for c in conflicts
        for s in c.sides
    ]


def _open(ctx: RunContext, node: Node, conflicts: list[Conflict]) -> Checkpoint:
    slots = "; ".join(f"{c.slot} ({' vs '.join(s.value for s in c.sides)})" for c in conflicts)
    checkpoint = Checkpoint(
        ctx.run_id,
        node.id,
        KIND,
        node.task,
        f"the sources disagree and no model reconciled them: {slots}",
        "the answer states a number or a yes/no fact the sources disagree on",
        {"conflicts": [c.to_dict() for c in conflicts]},
        _context(conflicts),
        [],
        list(OPTIONS),
    )
    cp.save(ctx.history, checkpoint)
    ctx.emit(CheckpointOpened(node=node.id, reason=checkpoint.reason, impact=checkpoint.impact))
    return checkpoint


async def _decision_for(ctx: RunContext, checkpoint: Checkpoint) -> Decision | None:
    this = (checkpoint.node_id, KIND)
    others = [c for c in cp.load_all(ctx.history) if (c.node_id, c.kind) != this]
    asked = sum(1 for c in others if c.decision is None or c.decision.by != "cap")
    if asked >= cp.MAX_PER_RUN:
        return Decision("approve", f"over the cap of {cp.MAX_PER_RUN} checkpoints per run", by="cap")
    policy = ctx.config.checkpoints
    if policy in ("approve", "skip"):
        return Decision(policy, by="policy")
    if policy == "ask" and ctx.decider is not None:
        return await ctx.decider(checkpoint)
    return None


async def gate(ctx: RunContext, node: Node, conflicts: list[Conflict]) -> str:
    """For conflicts left unresolved: open (or read back) the node's conflict checkpoint and apply its
    decision. Returns what to add under the conflicts ("" for none); raises ``NeedsHuman`` while it
    waits and ``SkippedByHuman`` when a person stopped the run."""
    high = high_impact(conflicts)
    if not high or ctx.config.checkpoints == "off":
        return ""
    found = cp.load(ctx.history, node.id, KIND)
    checkpoint = found[0] if found is not None else _open(ctx, node, high)
    decision = checkpoint.decision or await _decision_for(ctx, checkpoint)
    if decision is None:
        raise NeedsHuman(checkpoint)
    if checkpoint.decision is None:
        checkpoint.decision = decision
        cp.save(ctx.history, checkpoint)
        ctx.emit(CheckpointDecided(node=node.id, action=decision.action, by=decision.by, text=decision.text))
    if decision.action == "stop":  # this session ends; a resume asks again
        checkpoint.decision = None
        cp.save(ctx.history, checkpoint)
        ctx.state.stop_reason = f"stopped at the conflict checkpoint of node {node.id} by a person"
        raise SkippedByHuman(ctx.state.stop_reason)
    if decision.action == "hint" and decision.text:
        return f"A person's reading of these conflicting findings: {decision.text}"
    if decision.by == "human":
        return "A person reviewed these conflicting findings and kept both sides."
    return "Unresolved: no model reconciled these findings and no person has reviewed them."
