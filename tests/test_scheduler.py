"""``AdaptiveLimiter``: a concurrency limit that halves on 429 (adaptive mode), creeps back after a stable
stretch, and is never exceeded. Event-driven: no timing asserts."""

from __future__ import annotations

import asyncio

import pytest

from engine.runs.scheduler import STABLE_CALLS, AdaptiveLimiter


async def _settle(rounds: int = 20) -> None:
    """Let every runnable task take a few steps."""
    for _ in range(rounds):
        await asyncio.sleep(0)


class Probe:
    """Counts tasks inside the limiter, independently of the limiter's own bookkeeping."""

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.done = 0

    async def task(self, limiter: AdaptiveLimiter, steps: int = 3) -> None:
        async with limiter.slot():
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            for _ in range(steps):
                await asyncio.sleep(0)
            self.active -= 1
            self.done += 1


# --- the limit holds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [1, 3, 8])
def test_never_more_than_limit_in_flight(cap: int) -> None:
    async def main() -> tuple[Probe, AdaptiveLimiter]:
        limiter, probe = AdaptiveLimiter(cap), Probe()
        await asyncio.gather(*(probe.task(limiter, steps=i % 5) for i in range(200)))
        return probe, limiter

    probe, limiter = asyncio.run(main())
    assert probe.done == 200
    assert probe.max_active == cap  # reached, never exceeded
    assert limiter.peak == cap
    assert limiter.in_flight == 0


def test_peak_records_the_most_calls_in_flight() -> None:
    async def main() -> AdaptiveLimiter:
        limiter, probe = AdaptiveLimiter(10), Probe()
        await asyncio.gather(*(probe.task(limiter) for _ in range(4)))
        return limiter

    limiter = asyncio.run(main())
    assert limiter.peak == 4  # only four ever ran at once, although ten were allowed


def test_a_slot_is_released_when_the_call_raises() -> None:
    async def main() -> AdaptiveLimiter:
        limiter = AdaptiveLimiter(1)
        for _ in range(3):
            with pytest.raises(RuntimeError):
                async with limiter.slot():
                    raise RuntimeError("the model call broke")
        async with limiter.slot():  # would wait forever if a slot had leaked
            pass
        return limiter

    limiter = asyncio.run(asyncio.wait_for(main(), timeout=10))
    assert limiter.in_flight == 0


def test_a_cap_below_one_is_raised_to_one() -> None:
    assert AdaptiveLimiter(0).cap == AdaptiveLimiter(0).limit == 1
    assert AdaptiveLimiter(-3).limit == 1


# --- backing off on 429 ------------------------------------------------------------------------------------


def test_rate_limited_halves_the_limit_down_to_one() -> None:
    async def main() -> list[int]:
        limiter = AdaptiveLimiter(8)
        limits = []
        for _ in range(5):
            await limiter.rate_limited()
            limits.append(limiter.limit)
        assert limiter.backoffs == 5
        assert limiter.cap == 8
        return limits

    assert asyncio.run(main()) == [4, 2, 1, 1, 1]


def test_odd_limits_halve_downwards() -> None:
    async def main() -> int:
        limiter = AdaptiveLimiter(5)
        await limiter.rate_limited()
        return limiter.limit

    assert asyncio.run(main()) == 2


def test_fixed_mode_ignores_rate_limits_and_successes() -> None:
    async def main() -> AdaptiveLimiter:
        limiter = AdaptiveLimiter(6, adaptive=False)
        for _ in range(3):
            await limiter.rate_limited()
        for _ in range(STABLE_CALLS * 3):
            await limiter.succeeded()
        return limiter

    limiter = asyncio.run(main())
    assert limiter.limit == 6
    assert limiter.backoffs == 0


def test_after_a_backoff_the_lower_limit_is_enforced() -> None:
    async def main() -> Probe:
        limiter, probe = AdaptiveLimiter(8), Probe()
        await limiter.rate_limited()
        await limiter.rate_limited()  # 8 -> 4 -> 2
        await asyncio.gather(*(probe.task(limiter) for _ in range(50)))
        return probe

    probe = asyncio.run(main())
    assert probe.max_active == 2


def test_shrinking_while_calls_are_in_flight_holds_new_calls_back() -> None:
    async def main() -> None:
        limiter = AdaptiveLimiter(4)
        release = [asyncio.Event() for _ in range(4)]
        entered: list[int] = []

        async def hold(i: int) -> None:
            async with limiter.slot():
                entered.append(i)
                await release[i].wait()

        holders = [asyncio.create_task(hold(i)) for i in range(4)]
        await _settle()
        assert limiter.in_flight == 4
        await limiter.rate_limited()  # limit 2, but 4 are already running

        late_entered = asyncio.Event()

        async def late() -> None:
            async with limiter.slot():
                late_entered.set()

        newcomer = asyncio.create_task(late())
        for i in range(3):  # in flight: 3, 2, 1 — the newcomer may only start once fewer than 2 run
            await _settle()
            assert not late_entered.is_set(), f"entered with {limiter.in_flight} in flight, limit 2"
            release[i].set()
            await _settle()
        assert late_entered.is_set()
        release[3].set()
        await asyncio.gather(*holders, newcomer)
        assert limiter.in_flight == 0

    asyncio.run(asyncio.wait_for(main(), timeout=10))


# --- creeping back -----------------------------------------------------------------------------------------


def test_succeeded_grows_the_limit_by_one_per_stable_stretch_up_to_the_cap() -> None:
    async def main() -> list[int]:
        limiter = AdaptiveLimiter(8)
        await limiter.rate_limited()  # 4
        limits = [limiter.limit]
        for _ in range(STABLE_CALLS * 6):
            await limiter.succeeded()
            limits.append(limiter.limit)
        return limits

    limits = asyncio.run(main())
    assert STABLE_CALLS > 1
    assert limits[STABLE_CALLS - 1] == 4  # one success short of a stable stretch
    assert limits[STABLE_CALLS] == 5
    assert limits[2 * STABLE_CALLS - 1] == 5
    assert limits[2 * STABLE_CALLS] == 6
    assert limits[4 * STABLE_CALLS] == 8
    assert max(limits) == 8  # never beyond the cap
    assert limits[-1] == 8


def test_a_rate_limit_resets_the_stable_stretch() -> None:
    async def main() -> int:
        limiter = AdaptiveLimiter(8)
        await limiter.rate_limited()  # 4
        for _ in range(STABLE_CALLS - 1):
            await limiter.succeeded()
        await limiter.rate_limited()  # 2, and the streak starts over
        await limiter.succeeded()
        return limiter.limit

    assert asyncio.run(main()) == 2


def test_successes_at_the_cap_do_not_raise_it() -> None:
    async def main() -> int:
        limiter = AdaptiveLimiter(3)
        for _ in range(STABLE_CALLS * 4):
            await limiter.succeeded()
        return limiter.limit

    assert asyncio.run(main()) == 3


def test_growing_the_limit_lets_a_waiting_call_in() -> None:
    async def main() -> None:
        limiter = AdaptiveLimiter(2)
        await limiter.rate_limited()  # limit 1
        release = asyncio.Event()
        second_in = asyncio.Event()

        async def first() -> None:
            async with limiter.slot():
                await release.wait()

        async def second() -> None:
            async with limiter.slot():
                second_in.set()

        t1 = asyncio.create_task(first())
        await _settle()
        t2 = asyncio.create_task(second())
        await _settle()
        assert not second_in.is_set()
        for _ in range(STABLE_CALLS):
            await limiter.succeeded()  # limit back to 2 while the first call still runs
        await _settle()
        assert second_in.is_set()
        assert limiter.peak == 2
        release.set()
        await asyncio.gather(t1, t2)

    asyncio.run(asyncio.wait_for(main(), timeout=10))
