"""Token budgets: an atomic ledger behind a small interface, and the hierarchical envelopes.

Every model call is charged from the provider's reported usage (retries included) after it returns;
before a call the engine asks whether the run can afford it. Parents reserve ``max(800, 25%)`` of their
envelope for synthesis; children get a 300-token base grant and at most 35% of the spendable pool.
The store issue adds SQLite and Redis ledgers behind the same ``Ledger`` protocol.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "BASE_GRANT",
    "CHILD_CAP",
    "Envelope",
    "InProcessLedger",
    "Ledger",
    "child_envelopes",
    "extra_tokens",
    "synthesis_reserve",
]

BASE_GRANT = 300
CHILD_CAP = 0.35
RESERVE_MIN = 800
RESERVE_SHARE = 0.25


@runtime_checkable
class Ledger(Protocol):
    """Tokens a run may still spend. Implementations must make ``charge`` atomic."""

    def open(self, run_id: str, total: int) -> None: ...

    def charge(self, run_id: str, tokens: int) -> int:
        """Record tokens already spent; returns what is left (may go below zero: usage is a fact)."""
        ...

    def add(self, run_id: str, tokens: int) -> int:
        """Raise the budget (resume with more); returns what is left."""
        ...

    def remaining(self, run_id: str) -> int: ...

    def spent(self, run_id: str) -> int: ...


class InProcessLedger:
    """A ledger for one process (the default until a shared store is configured)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total: dict[str, int] = {}
        self._spent: dict[str, int] = {}

    def open(self, run_id: str, total: int) -> None:
        with self._lock:
            self._total[run_id] = total
            self._spent.setdefault(run_id, 0)

    def charge(self, run_id: str, tokens: int) -> int:
        with self._lock:
            self._spent[run_id] = self._spent.get(run_id, 0) + max(0, int(tokens))
            return self._total.get(run_id, 0) - self._spent[run_id]

    def add(self, run_id: str, tokens: int) -> int:
        with self._lock:
            self._total[run_id] = self._total.get(run_id, 0) + int(tokens)
            return self._total[run_id] - self._spent.get(run_id, 0)

    def remaining(self, run_id: str) -> int:
        with self._lock:
            return self._total.get(run_id, 0) - self._spent.get(run_id, 0)

    def spent(self, run_id: str) -> int:
        with self._lock:
            return self._spent.get(run_id, 0)


def extra_tokens(budget: str | None, base_max_tokens: int) -> int:
    """``--budget +20000`` or ``+25%`` (of ``base_max_tokens``) -> the tokens to add (0 for none)."""
    from ..errors import UsageError

    if not budget:
        return 0
    text = budget.strip().lstrip("+")
    try:
        value = int(base_max_tokens * float(text[:-1]) / 100) if text.endswith("%") else int(text)
    except ValueError as exc:
        raise UsageError(f"--budget takes +N or +P%, got {budget!r}", hint="e.g. --budget +25%") from exc
    if value < 0:
        raise UsageError(f"--budget adds tokens, got {budget!r}", hint="e.g. --budget +25%")
    return value


def synthesis_reserve(envelope: int) -> int:
    """What a node with children keeps back for its own synthesis."""
    return min(envelope, max(RESERVE_MIN, int(RESERVE_SHARE * envelope)))


@dataclass(frozen=True)
class Envelope:
    """A node's share of the budget: ``total`` tokens, of which ``reserve`` is kept for synthesis."""

    total: int
    reserve: int

    @property
    def spendable(self) -> int:
        return max(0, self.total - self.reserve)

    @classmethod
    def for_parent(cls, total: int) -> Envelope:
        return cls(total, synthesis_reserve(total))

    @classmethod
    def for_leaf(cls, total: int) -> Envelope:
        return cls(total, 0)


def child_envelopes(parent: Envelope, n: int) -> list[int]:
    """Split a parent's spendable pool over ``n`` children: an even share, at least the base grant,
    at most 35% of the pool (so one child cannot starve its siblings)."""
    if n <= 0:
        return []
    pool = parent.spendable
    cap = max(BASE_GRANT, int(CHILD_CAP * pool)) if n > 1 else pool
    share = max(BASE_GRANT, pool // n)
    return [min(share, cap)] * n
