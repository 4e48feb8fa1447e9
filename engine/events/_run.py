"""The payloads of a run's own events: the run, its plan, its nodes, checkpoints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._base import OPTIONAL, Event, EventKind

__all__ = [
    "BudgetLimitReached",
    "CheckpointDecided",
    "CheckpointOpened",
    "CitationsUnresolved",
    "ConflictsFound",
    "DecompositionDecided",
    "ExternalCall",
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
    "NoteWritten",
    "PlanCacheLookup",
    "PlanValidated",
    "RetrievalMode",
    "RunError",
    "RunFinished",
    "RunResumed",
    "RunStarted",
    "SkillsRouted",
    "StoreUnavailable",
    "StrategyChosen",
]


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
    set_aside: dict[str, str] | None = field(default=None, metadata=OPTIONAL)  # strategy -> why not counted


@dataclass(frozen=True)
class ExternalCall(Event):
    """A call out of the machine that a run's script tried (``http_get``), allowed or refused: the
    audit trail (model calls are ``LLM_CALL`` events)."""

    KIND = EventKind.EXTERNAL_CALL
    node: str
    kind: str
    target: str
    allowed: bool
    reason: str | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class NoteWritten(Event):
    """A run wrote a note into a vault (the audit trail of every write): ``action`` created | updated |
    deleted; ``role`` the writer's (root, person, subtask), ``bytes`` and ``hash`` (sha256) what was
    written. Never the note's text."""

    KIND = EventKind.NOTE_WRITTEN
    vault: str
    path: str
    action: str
    why: str
    role: str | None = field(default=None, metadata=OPTIONAL)
    bytes: int | None = field(default=None, metadata=OPTIONAL)
    hash: str | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class SkillsRouted(Event):
    """The skills a node uses (``primary`` and ``support``) and those a loop guard stopped."""

    KIND = EventKind.SKILLS_ROUTED
    node: str
    primary: str | None
    support: list[str]
    guarded: list[dict[str, str]]


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
    cost_usd: float | None = None  # None: no price is known for the model (free providers cost 0)


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
    """A node ended: NODE_SUCCEEDED, NODE_CACHE_HIT (with the cache ``key``), NODE_FAILED, or
    NODE_FAILED_WITH_DIAGNOSTIC (its retries ran out: ``error`` says why, ``diagnostic`` holds the failure
    report and the suggested next inputs)."""

    node: str
    tokens: int
    duration_ms: float
    error: str | None
    key: str | None = field(default=None, metadata=OPTIONAL)
    diagnostic: dict[str, Any] | None = field(default=None, metadata=OPTIONAL)
    status: str = field(default="SUCCEEDED", metadata={"internal": True})

    @property
    def event_kind(self) -> EventKind:
        return EventKind(f"NODE_{self.status}")


@dataclass(frozen=True)
class NodePruned(Event):
    KIND = EventKind.NODE_PRUNED
    node: str
    reason: str
    # Pruned by novelty (E10): the siblings whose passages it repeats (``Node.redundant_with``)
    redundant_with: list[str] | None = field(default=None, metadata=OPTIONAL)


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
