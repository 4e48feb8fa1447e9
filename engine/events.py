"""Every event a run emits: its kind (``EventKind``) and its payload (one frozen dataclass per kind).

The engine emits these objects; ``to_record`` turns one into the line ``events.jsonl`` keeps and the dict
``on_event`` callbacks receive: ``{"ts", "run_id", "type", **payload}``, the payload's keys in the order
the dataclass declares them. Fields marked ``_optional`` are left out of the record when ``None``, so a
record carries exactly the keys that event has always carried. Consumers (the widgets, the CLI's live
tree, the history) dispatch on ``EventKind`` and declare for every kind whether they handle it or ignore
it; a test checks that no kind is left undecided.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

__all__ = [
    "BudgetLimitReached",
    "CheckpointDecided",
    "CheckpointOpened",
    "CitationsUnresolved",
    "ConflictsFound",
    "DecompositionDecided",
    "Event",
    "EventKind",
    "LlmCall",
    "NodeCacheMiss",
    "NodeCreated",
    "NodeDecomposed",
    "NodeFinished",
    "NodeNeedsHuman",
    "NodePruned",
    "NodeRetrieved",
    "NodeReverified",
    "NodeStarted",
    "PlanCacheLookup",
    "PlanValidated",
    "RetrievalMode",
    "RunError",
    "RunFinished",
    "RunResumed",
    "RunStarted",
    "StoreUnavailable",
    "StrategyChosen",
    "kind_of",
    "to_record",
]


class EventKind(str, enum.Enum):
    """The ``type`` of an event record."""

    RUN_STARTED = "RUN_STARTED"
    RUN_RESUMED = "RUN_RESUMED"
    RUN_ERROR = "RUN_ERROR"
    RUN_FINISHED = "RUN_FINISHED"
    RETRIEVAL_MODE = "RETRIEVAL_MODE"
    STRATEGY_CHOSEN = "STRATEGY_CHOSEN"
    DECOMPOSITION_DECIDED = "DECOMPOSITION_DECIDED"
    PLAN_VALIDATED = "PLAN_VALIDATED"
    PLAN_CACHE_HIT = "PLAN_CACHE_HIT"
    PLAN_CACHE_MISS = "PLAN_CACHE_MISS"
    NODE_CREATED = "NODE_CREATED"
    NODE_STARTED = "NODE_STARTED"
    NODE_DECOMPOSED = "NODE_DECOMPOSED"
    NODE_CACHE_MISS = "NODE_CACHE_MISS"
    NODE_RETRIEVED = "NODE_RETRIEVED"
    NODE_REVERIFIED = "NODE_REVERIFIED"
    NODE_SUCCEEDED = "NODE_SUCCEEDED"
    NODE_CACHE_HIT = "NODE_CACHE_HIT"
    NODE_FAILED = "NODE_FAILED"
    NODE_PRUNED = "NODE_PRUNED"
    NODE_NEEDS_HUMAN = "NODE_NEEDS_HUMAN"
    LLM_CALL = "LLM_CALL"
    CITATIONS_UNRESOLVED = "CITATIONS_UNRESOLVED"
    CONFLICTS_FOUND = "CONFLICTS_FOUND"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    CHECKPOINT_OPENED = "CHECKPOINT_OPENED"
    CHECKPOINT_DECIDED = "CHECKPOINT_DECIDED"


# A payload field that only some events of the kind carry: left out of the record when None.
OPTIONAL = {"optional": True}


@dataclass(frozen=True)
class Event:
    """One thing that happened in a run. Subclasses set ``KIND`` (or override ``event_kind``)."""

    KIND: ClassVar[EventKind]

    @property
    def event_kind(self) -> EventKind:
        return self.KIND

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("internal") or (value is None and f.metadata.get("optional")):
                continue
            out[f.name] = value
        return out


def to_record(event: Event, run_id: str, ts: float | None = None) -> dict[str, Any]:
    """The event as ``events.jsonl`` keeps it."""
    stamp = round(time.time(), 3) if ts is None else ts
    return {"ts": stamp, "run_id": run_id, "type": event.event_kind.value, **event.payload()}


def kind_of(record: dict[str, Any]) -> EventKind | None:
    """The kind of an event record, or None for a type this version does not know (a newer writer)."""
    try:
        return EventKind(str(record.get("type", "")))
    except ValueError:
        return None


# --- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunStarted(Event):
    KIND = EventKind.RUN_STARTED
    goal: str
    provider: str
    budgets: dict[str, Any]


@dataclass(frozen=True)
class RunResumed(Event):
    """A stopped run continues: what it keeps, re-verifies and runs again (or that it plans anew)."""

    KIND = EventKind.RUN_RESUMED
    kept: list[str]
    reverified: list[str] | None = field(default=None, metadata=OPTIONAL)
    stale: list[str] | None = field(default=None, metadata=OPTIONAL)
    rerun: list[str] = field(default_factory=list)
    fresh: list[str] | None = field(default=None, metadata=OPTIONAL)
    replanned: bool | None = field(default=None, metadata=OPTIONAL)
    replay: str | None = None
    budget_left: int | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class RunError(Event):
    KIND = EventKind.RUN_ERROR
    error: str
    message: str


@dataclass(frozen=True)
class RunFinished(Event):
    KIND = EventKind.RUN_FINISHED
    status: str
    tokens: int
    duration_ms: float


@dataclass(frozen=True)
class RetrievalMode(Event):
    """Code Mode or direct search, and why."""

    KIND = EventKind.RETRIEVAL_MODE
    mode: str
    reason: str | None = field(default=None, metadata=OPTIONAL)
    isolation: str | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class StrategyChosen(Event):
    """``decisions/strategy.json``, as an event."""

    KIND = EventKind.STRATEGY_CHOSEN
    strategy: str
    source: str
    confidence: float
    scores: dict[str, float]
    reason: str
    guess: str | None
    matched: dict[str, list[str]]
    threshold: float


@dataclass(frozen=True)
class DecompositionDecided(Event):
    KIND = EventKind.DECOMPOSITION_DECIDED
    decompose: bool
    reason: str


@dataclass(frozen=True)
class PlanValidated(Event):
    KIND = EventKind.PLAN_VALIDATED
    node: str
    nodes: int
    problems: list[str]


@dataclass(frozen=True)
class PlanCacheLookup(Event):
    """A plan looked up in the cache: PLAN_CACHE_HIT or PLAN_CACHE_MISS."""

    node: str
    key: str
    reason: str
    tier: str
    hit: bool = field(default=False, metadata={"internal": True})

    @property
    def event_kind(self) -> EventKind:
        return EventKind.PLAN_CACHE_HIT if self.hit else EventKind.PLAN_CACHE_MISS


@dataclass(frozen=True)
class BudgetLimitReached(Event):
    """A budget (tokens, time, money) is used up: the run stops starting work."""

    KIND = EventKind.BUDGET_EXHAUSTED
    reason: str


@dataclass(frozen=True)
class LlmCall(Event):
    KIND = EventKind.LLM_CALL
    node: str
    purpose: str
    provider: str
    model: str
    tokens: int
    retries: int
    latency_ms: float


# --- nodes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeCreated(Event):
    KIND = EventKind.NODE_CREATED
    node: str
    task: str
    stage: str
    parent: str | None = field(default=None, metadata=OPTIONAL)
    hard_deps: list[str] | None = field(default=None, metadata=OPTIONAL)
    soft_deps: list[str] | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class NodeStarted(Event):
    KIND = EventKind.NODE_STARTED
    node: str
    task: str


@dataclass(frozen=True)
class NodeDecomposed(Event):
    """A subtask whose wording makes several asks was split further."""

    KIND = EventKind.NODE_DECOMPOSED
    node: str
    children: list[str]


@dataclass(frozen=True)
class NodeCacheMiss(Event):
    KIND = EventKind.NODE_CACHE_MISS
    node: str
    key: str
    purpose: str
    reason: str


@dataclass(frozen=True)
class NodeRetrieved(Event):
    KIND = EventKind.NODE_RETRIEVED
    node: str
    items: int
    score: float


@dataclass(frozen=True)
class NodeReverified(Event):
    """Resume: a finished node whose notes changed keeps its answer (none of its cited notes changed)."""

    KIND = EventKind.NODE_REVERIFIED
    node: str


@dataclass(frozen=True)
class NodeFinished(Event):
    """A node ended: NODE_SUCCEEDED, NODE_CACHE_HIT (with the cache ``key``) or NODE_FAILED."""

    node: str
    tokens: int
    duration_ms: float
    error: str | None
    key: str | None = field(default=None, metadata=OPTIONAL)
    status: str = field(default="SUCCEEDED", metadata={"internal": True})

    @property
    def event_kind(self) -> EventKind:
        return EventKind(f"NODE_{self.status}")


@dataclass(frozen=True)
class NodePruned(Event):
    KIND = EventKind.NODE_PRUNED
    node: str
    reason: str


@dataclass(frozen=True)
class NodeNeedsHuman(Event):
    """A node waits at its checkpoint; the payload is the checkpoint (engine.runs.checkpoints)."""

    KIND = EventKind.NODE_NEEDS_HUMAN
    node: str
    kind: str
    task: str
    reason: str
    impact: str
    signals: dict[str, Any]
    context: list[dict[str, Any]]
    queries: list[str]
    options: list[str]


@dataclass(frozen=True)
class CitationsUnresolved(Event):
    KIND = EventKind.CITATIONS_UNRESOLVED
    node: str
    count: int


@dataclass(frozen=True)
class ConflictsFound(Event):
    KIND = EventKind.CONFLICTS_FOUND
    node: str
    count: int


@dataclass(frozen=True)
class StoreUnavailable(Event):
    KIND = EventKind.STORE_UNAVAILABLE
    node: str
    message: str


@dataclass(frozen=True)
class CheckpointOpened(Event):
    KIND = EventKind.CHECKPOINT_OPENED
    node: str
    reason: str
    impact: str


@dataclass(frozen=True)
class CheckpointDecided(Event):
    KIND = EventKind.CHECKPOINT_DECIDED
    node: str
    action: str
    by: str
    text: str
