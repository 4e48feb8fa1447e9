"""Token budgets: an atomic ledger behind a small interface, the hierarchical envelopes, and the
reservations that keep calls in flight within the budget.

Every model call is charged from the provider's reported usage (retries included) after it returns.
Before it goes, the call reserves its worst case (``CallCost``: a conservative count of its prompt plus
its ``max_tokens``; a JSON call also the one repair request it may need) against what the ledger says is
left, minus what calls in flight already hold and minus the root's synthesis reserve; ``max_tokens``
shrinks to fit, and a call that cannot fit even alone is refused. So concurrent calls cannot together
spend more than the budget: only a provider reporting more than a call was allowed (retried attempts
that were charged, an answer longer than its ``max_tokens``, a prompt the estimate under-counted) can
take a run past it, and then the run says so (``overspend``).

Reservations live in the run's process (``InFlight``), not in the ledger: a run's DAG runs in one
process (a Dask batch spreads *runs* over processes, each with its own budget id), so nothing else
reserves against the same budget; a process killed mid-call cannot leave a reservation behind that a
resume would have to clean up; and a call costs no extra round trip to Redis. The ledger stays the
shared, atomic record of what was spent.

Parents reserve ``max(800, 25%)`` of their envelope for synthesis; children get a 300-token base grant
and at most 35% of the spendable pool. SQLite and Redis ledgers implement the same ``Ledger`` protocol.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BASE_GRANT",
    "CHILD_CAP",
    "CallCost",
    "Envelope",
    "InFlight",
    "InProcessLedger",
    "Ledger",
    "child_envelopes",
    "estimate_prompt",
    "extra_tokens",
    "overspend",
    "overspend_lines",
    "synthesis_reserve",
]

BASE_GRANT = 300
CHILD_CAP = 0.35
RESERVE_MIN = 800
RESERVE_SHARE = 0.25
FRAMING = 16  # tokens a provider counts around a prompt's text (roles, message boundaries)
REPAIR_EXTRA = 150  # the JSON repair prompt's own words (engine.llm._json.REPAIR_PROMPT), counted high


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


# --- reservations: the worst case of the calls in flight ----------------------------------------------------


def estimate_prompt(*texts: str) -> int:
    """A cheap, conservative count of the tokens ``texts`` cost as a prompt: UTF-8 bytes / 3, rounded up,
    plus the framing. English runs near 4 characters a token and other scripts near one character
    (2-4 bytes) a token, so this over-counts rather than under-counts, without a tokenizer."""
    return sum(-(-len(t.encode("utf-8")) // 3) for t in texts) + FRAMING


@dataclass(frozen=True)
class CallCost:
    """A call's worst case in tokens: ``fixed + per_output * max_tokens``.

    A plain call reads its prompt and writes at most ``max_tokens``. A call expecting JSON may need the
    one repair request (``engine.llm._json``) made inside the same provider call: the prompt again, the
    unusable answer (at most ``max_tokens``), the repair's own words, and a second answer."""

    fixed: int
    per_output: int = 1

    @classmethod
    def of(cls, prompt_tokens: int, expect_json: bool = False) -> CallCost:
        if expect_json:
            return cls(2 * prompt_tokens + REPAIR_EXTRA, 3)
        return cls(prompt_tokens, 1)

    def at(self, max_tokens: int) -> int:
        """The worst case with this ``max_tokens``."""
        return self.fixed + self.per_output * max_tokens

    def largest_within(self, tokens: int) -> int:
        """The largest ``max_tokens`` whose worst case fits in ``tokens`` (negative: none does)."""
        return (tokens - self.fixed) // self.per_output


class InFlight:
    """The tokens one run's model calls in flight hold against its budget (worst cases reserved, not yet
    charged). Used from the run's event loop; the lock keeps the counts right if a thread ever calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held = 0
        self.calls = 0
        self._released = asyncio.Event()

    def hold(self, tokens: int) -> None:
        with self._lock:
            self.held += tokens
            self.calls += 1

    def release(self, tokens: int) -> None:
        with self._lock:
            self.held -= tokens
            self.calls -= 1
            released, self._released = self._released, asyncio.Event()
        released.set()  # wakes every call waiting for room; each checks the ledger again

    async def wait(self) -> None:
        """Until a call in flight is charged and lets its reservation go."""
        await self._released.wait()


def overspend(spent: int, total: int, overruns: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the summary says of a run that spent more than its budget (None: it did not): how much, and
    the calls whose reported usage went past what was reserved for them."""
    if spent <= total:
        return None
    return {"max_tokens": total, "spent": spent, "over_by": spent - total, "calls": overruns}


def overspend_lines(over: dict[str, Any] | None) -> list[str]:
    """The report's callout for a run over its budget (nothing when it is within it)."""
    if over is None:
        return []
    calls = len(over["calls"])
    why = (
        f"{calls} model call{'s' if calls != 1 else ''} reported more tokens than were reserved for "
        f"{'them' if calls != 1 else 'it'} (attempts the provider retried, or an answer longer than "
        "its max_tokens)"
        if calls
        else "an earlier session of this run spent past it, or the budget was set below what was spent"
    )
    return [
        "> [!warning] Over budget",
        f"> This run spent {over['spent']} tokens of its {over['max_tokens']}-token budget "
        f"({over['over_by']} over): {why}. Every reported token is counted.",
        "",
    ]
