"""Events handed to listeners only, never written to ``events.jsonl``: the text of a synthesis as the
model writes it. A report's answer is already kept whole (the report, the node, the replay recording);
hundreds of deltas per run would multiply the history's size for nothing a later reader needs."""

from __future__ import annotations

from dataclasses import dataclass

from ._base import Event, EventKind

__all__ = ["LIVE_ONLY", "SynthesisDelta"]


@dataclass(frozen=True)
class SynthesisDelta(Event):
    """A piece of the report's answer (the root node's answer or synthesis) as the model streams it.
    ``first``: an attempt starts (a retry's text replaces the failed attempt's)."""

    KIND = EventKind.SYNTHESIS_DELTA
    node: str
    text: str
    first: bool


LIVE_ONLY = frozenset({EventKind.SYNTHESIS_DELTA})
