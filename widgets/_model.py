"""The explorer's plain data: a node as the graph draws it, the snapshot the widget syncs, and the
budget limits (from ``Budgets`` or its dict form), kept apart from the event folding in ``_state``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine import Run

__all__ = [
    "FINISHED",
    "TASK_CHARS",
    "DagNode",
    "Snapshot",
    "budget_limits",
    "elapsed",
    "manifest_budgets",
    "number",
]

FINISHED = frozenset({"SUCCEEDED", "CACHE_HIT", "FAILED", "PRUNED", "FAILED_WITH_DIAGNOSTIC"})
TASK_CHARS = 1000  # the node list carries the task for the hover card (a longer one is cut; the details
# panel has it whole)


@dataclass
class Snapshot:
    """What the widget syncs: plain JSON-able values, fresh objects on every call."""

    run_id: str
    goal: str
    status: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, str]]
    budget: dict[str, Any]
    notice: str


@dataclass
class DagNode:
    """One node as the graph draws it (the light fields; the details panel reads the rest)."""

    id: str
    task: str
    stage: str
    depth: int
    parent: str | None
    order: int
    status: str = "CREATED"
    tokens: int = 0
    llm_calls: int = 0
    duration_ms: float = 0.0
    phase: str = ""
    note: str = ""
    error: str = ""
    items: int | None = None
    score: float | None = None
    started_ts: float | None = None
    finished_ts: float | None = None
    hard_deps: list[str] = field(default_factory=list)
    soft_deps: list[str] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        task = self.task if len(self.task) <= TASK_CHARS else self.task[: TASK_CHARS - 1] + "…"
        return {
            "id": self.id,
            "task": task,
            "stage": self.stage,
            "depth": self.depth,
            "parent": self.parent,
            "status": self.status,
            "tokens": self.tokens,
            "llm_calls": self.llm_calls,
            "duration_ms": self.duration_ms,
            "phase": self.phase,
            "note": self.note,
            "error": self.error,
            "items": self.items,
            "score": self.score,
            "started_at": self.started_ts,  # epoch seconds: the timeline's bars
            "finished_at": self.finished_ts,
        }


def budget_limits(budgets: Any) -> dict[str, Any]:
    """Token, node and wall-time limits from a ``Budgets`` object or its dict form (RUN_STARTED)."""
    data = budgets if isinstance(budgets, dict) else getattr(budgets, "__dict__", {})

    def number(key: str) -> float | None:
        value = data.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    tokens, nodes, wall = number("max_tokens"), number("max_nodes"), number("max_wall_time")
    return {
        "tokens_limit": int(tokens) if tokens is not None else None,
        "nodes_limit": int(nodes) if nodes is not None else None,
        "wall_limit_s": float(wall) if wall is not None else None,
    }


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def elapsed(run: Run) -> float:
    finished = run.finished_at or max((n.finished_at or 0.0 for n in run.dag), default=0.0)
    return max(0.0, finished - run.started_at) if finished else 0.0


def manifest_budgets(run: Run) -> dict[str, Any]:
    """A run loaded from history whose vaults have moved has no config object; its manifest still
    records the budgets."""
    try:
        manifest = run.history.read_json("run.manifest.json")
    except (OSError, ValueError):
        return {}
    budgets = manifest.get("config", {}).get("budgets", {}) if isinstance(manifest, dict) else {}
    return budgets if isinstance(budgets, dict) else {}
