"""The kinds of events, the ``Event`` base class and the record format (``events.jsonl``)."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, fields
from typing import Any, ClassVar

__all__ = ["OPTIONAL", "Event", "EventKind", "kind_of", "to_record"]


class EventKind(str, enum.Enum):
    """The ``type`` of an event record."""

    RUN_STARTED = "RUN_STARTED"
    RUN_RESUMED = "RUN_RESUMED"
    RUN_ERROR = "RUN_ERROR"
    RUN_FINISHED = "RUN_FINISHED"
    RETRIEVAL_MODE = "RETRIEVAL_MODE"
    STRATEGY_CHOSEN = "STRATEGY_CHOSEN"
    SKILLS_ROUTED = "SKILLS_ROUTED"
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
    NODE_FAILED_WITH_DIAGNOSTIC = "NODE_FAILED_WITH_DIAGNOSTIC"
    LLM_CALL = "LLM_CALL"
    CITATIONS_UNRESOLVED = "CITATIONS_UNRESOLVED"
    CONFLICTS_FOUND = "CONFLICTS_FOUND"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    CHECKPOINT_OPENED = "CHECKPOINT_OPENED"
    CHECKPOINT_DECIDED = "CHECKPOINT_DECIDED"
    CODE_PRODUCED = "CODE_PRODUCED"
    NODE_CHECKED = "NODE_CHECKED"
    CODE_REPAIRED = "CODE_REPAIRED"
    CONTRACT_CHANGE_REQUESTED = "CONTRACT_CHANGE_REQUESTED"
    FILES_WRITTEN = "FILES_WRITTEN"
    NOTE_WRITTEN = "NOTE_WRITTEN"
    EXTERNAL_CALL = "EXTERNAL_CALL"
    SYNTHESIS_DELTA = "SYNTHESIS_DELTA"  # live only: handed to listeners, never written to events.jsonl


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
        for name, optional in _recorded_fields(type(self)):
            value = getattr(self, name)
            if value is None and optional:
                continue
            out[name] = value
        return out


_RECORDED: dict[type, tuple[tuple[str, bool], ...]] = {}


def _recorded_fields(kind: type) -> tuple[tuple[str, bool], ...]:
    """The fields a record of this event class carries (name, optional): looked up once per class, not
    on every event of a run."""
    found = _RECORDED.get(kind)
    if found is None:
        found = _RECORDED[kind] = tuple(
            (f.name, bool(f.metadata.get("optional"))) for f in fields(kind) if not f.metadata.get("internal")
        )
    return found


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
