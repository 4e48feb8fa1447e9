"""Every event a run emits: its kind (``EventKind``) and its payload (one frozen dataclass per kind).

The engine emits these objects; ``to_record`` turns one into the line ``events.jsonl`` keeps and the dict
``on_event`` callbacks receive: ``{"ts", "run_id", "type", **payload}``, the payload's keys in the order
the dataclass declares them. Fields marked ``_optional`` are left out of the record when ``None``, so a
record carries exactly the keys that event has always carried. A ``LIVE_ONLY`` kind (``SYNTHESIS_DELTA``:
the report's answer as the model streams it) goes to ``on_event`` callbacks alone, never to
``events.jsonl`` (the answer is kept whole in the report; deltas would multiply the history). Consumers
(the widgets, the CLI's live tree, the history) dispatch on ``EventKind`` and declare for every kind
whether they handle it or ignore it; a test checks that no kind is left undecided.
"""

from __future__ import annotations

from ._base import OPTIONAL, Event, EventKind, kind_of, to_record
from ._code import CodeProduced, CodeRepaired, ContractChangeRequested, FilesWritten, NodeChecked
from ._run import (
    BudgetLimitReached,
    CheckpointDecided,
    CheckpointOpened,
    CitationsUnresolved,
    ConflictsFound,
    DecompositionDecided,
    ExternalCall,
    LlmCall,
    NodeCacheMiss,
    NodeCreated,
    NodeDecomposed,
    NodeFinished,
    NodeNeedsHuman,
    NodePruned,
    NodeRetrieved,
    NodeReverified,
    NodeStarted,
    NoteWritten,
    PlanCacheLookup,
    PlanValidated,
    RetrievalMode,
    RunError,
    RunFinished,
    RunResumed,
    RunStarted,
    SkillsRouted,
    StoreUnavailable,
    StrategyChosen,
)
from ._stream import LIVE_ONLY, SynthesisDelta

__all__ = [
    "LIVE_ONLY",
    "OPTIONAL",
    "BudgetLimitReached",
    "CheckpointDecided",
    "CheckpointOpened",
    "CitationsUnresolved",
    "CodeProduced",
    "CodeRepaired",
    "ConflictsFound",
    "ContractChangeRequested",
    "DecompositionDecided",
    "Event",
    "EventKind",
    "ExternalCall",
    "FilesWritten",
    "LlmCall",
    "NodeCacheMiss",
    "NodeChecked",
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
    "SynthesisDelta",
    "kind_of",
    "to_record",
]
