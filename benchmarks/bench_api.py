"""The HTTP API under load: requests per second of ``GET /v1/vault/search``, and the latency of the first
server-sent event after ``POST /v1/run`` (offline provider).

    python benchmarks/bench_api.py                          # the demo vault
    python3 ../shared/tools/make_scale_vault.py --out /tmp/scale100     # ~100 MB (once)
    python benchmarks/bench_api.py --vault /tmp/scale100

Starts ``shad serve`` as a subprocess on a free loopback port (with a token, ``$SHAD_HOME`` in a temporary
folder), warms the index with one search, then runs ``--clients`` concurrent clients for ``--seconds``,
then ``--runs`` runs one after the other, timing each to its first event. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "example_notebooks" / "vault"
TOKEN = "bench-api-token"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def queries(vault: Path, n: int, seed: int) -> list[str]:
    """Note titles and heading words sampled from the vault (fixed seed), plus plain questions."""
    rng = random.Random(seed)
    notes = [p for p in vault.rglob("*.md") if "Shad" not in p.relative_to(vault).parts[:1]]
    picked = rng.sample(notes, min(n, len(notes)))
    found = [" ".join(re.findall(r"[A-Za-z]{3,}", p.stem)[:3]) for p in picked]
    return [q for q in found if q] + ["how long should beans rest", "grind size", "water temperature"]


def start_server(vault: Path, home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SHAD_HOME": str(home)}
    for name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    command = [sys.executable, "-m", "engine.cli", "serve", "--port", str(port), "--token", TOKEN]
    command += ["--vault", str(vault), "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the server did not start")


def search_load(url: str, qs: list[str], clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(seed: int) -> None:
        nonlocal errors
        rng = random.Random(seed)
        mine: list[float] = []
        bad = 0
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as c:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                r = c.get("/v1/vault/search", params={"q": rng.choice(qs), "limit": 10})
                mine.append(time.perf_counter() - t0)
                bad += r.status_code != 200
        with lock:
            latencies.extend(mine)
            errors += bad

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    return {
        "requests": len(latencies),
        "errors": errors,
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "latency_p50_ms": round(pct(latencies, 0.5) * 1000, 2),
        "latency_p95_ms": round(pct(latencies, 0.95) * 1000, 2),
    }


def first_event_latency(url: str, runs: int) -> dict[str, float]:
    firsts: list[float] = []
    totals: list[float] = []
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"}
    goals = ["How long should I rest beans after roasting, and why?", "What grind size suits a French press?"]
    with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
        for i in range(runs):
            body = {"goal": goals[i % len(goals)], "provider": "offline", "no_cache": True}
            t0 = time.perf_counter()
            first = None
            with c.stream("POST", "/v1/run", json=body) as r:
                for line in r.iter_lines():
                    if first is None and line.startswith("event:"):
                        first = time.perf_counter() - t0
            totals.append(time.perf_counter() - t0)
            if first is not None:
                firsts.append(first)
    return {
        "runs": runs,
        "first_event_median_ms": round(statistics.median(firsts) * 1000, 1) if firsts else -1,
        "first_event_max_ms": round(max(firsts) * 1000, 1) if firsts else -1,
        "run_to_summary_median_ms": round(statistics.median(totals) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, help="vault folder (default: a copy of the demo vault)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=7, help="runs timed to their first SSE event")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-"))
    vault = args.vault
    if vault is None:  # a copy: the runs write their history into the vault
        vault = tmp / "demo"
        shutil.copytree(DEMO, vault, ignore=lambda d, names: ["Shad"] if Path(d) == DEMO else [])
    vault = vault.resolve()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(vault, tmp / "home", port)
    try:
        t0 = time.perf_counter()
        warm = httpx.get(
            f"{url}/v1/vault/search",
            params={"q": "warm up"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=600,
        )
        warm.raise_for_status()
        index_s = time.perf_counter() - t0
        notes = sum(1 for _ in vault.rglob("*.md"))
        result = {
            "vault": str(vault) if args.vault else "demo",
            "notes": notes,
            "first_search_with_index_s": round(index_s, 2),
            "search": {"clients": args.clients, "seconds": args.seconds}
            | search_load(url, queries(vault, 200, args.seed), args.clients, args.seconds),
            "sse": first_event_latency(url, args.runs),
        }
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
