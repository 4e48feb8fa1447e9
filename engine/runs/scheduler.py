"""Concurrency for a run: separate limits for model calls and local work, adaptive on rate limits.

``adaptive`` mode halves the number of model calls in flight when the provider says 429 and creeps
back up by one after a stable stretch of successful calls; ``fixed`` never changes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["AdaptiveLimiter"]

STABLE_CALLS = 8  # successful calls in a row before one more call may be in flight


class AdaptiveLimiter:
    """An async semaphore whose size can shrink (on 429) and grow back, between 1 and ``cap``."""

    def __init__(self, cap: int, *, adaptive: bool = True) -> None:
        self.cap = max(1, cap)
        self.limit = self.cap
        self.adaptive = adaptive
        self.in_flight = 0
        self.peak = 0
        self.backoffs = 0
        self._streak = 0
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            yield
        finally:
            async with self._cond:
                self.in_flight -= 1
                self._cond.notify_all()

    async def rate_limited(self) -> None:
        """The provider pushed back: halve the calls in flight."""
        if not self.adaptive:
            return
        async with self._cond:
            self.limit = max(1, self.limit // 2)
            self._streak = 0
            self.backoffs += 1

    async def succeeded(self) -> None:
        """A call went through: after a stable stretch, allow one more in flight (up to the cap)."""
        if not self.adaptive:
            return
        async with self._cond:
            self._streak += 1
            if self._streak >= STABLE_CALLS and self.limit < self.cap:
                self.limit += 1
                self._streak = 0
                self._cond.notify_all()
