"""Code Mode sandbox latency: cold (new Sandbox + first script) and warm (a fork of the warm process).

    python benchmarks/bench_sandbox.py [--vault DIR] [--cold 10] [--warm 60]

Prints one JSON object with, for each isolation path that works here (bubblewrap, subprocess), the
median and p95 per-script latency of a typical retrieval script (search, read a note, count words) and
of an empty script. Targets on a 2-core machine: warm median <= 25 ms, cold <= 250 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.codemode import Sandbox, bwrap_status  # noqa: E402
from engine.vault import Vault, VaultSet  # noqa: E402

RETRIEVAL = """
import re
from collections import Counter
hits = obsidian.search("espresso grind size", limit=5)
note = obsidian.read_note(hits[0]["path"])
words = Counter(w for w in re.findall(r"[a-z]+", note["body"].lower()) if len(w) > 4)
__result__ = {"paths": [h["path"] for h in hits], "top": words.most_common(5)}
"""
EMPTY = "__result__ = None"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values), 2),
        "p95_ms": round(pct(values, 0.95), 2),
        "n": len(values),
    }


def measure(isolation: str, vault: Path, index: Path, cold_n: int, warm_n: int) -> dict[str, object]:
    def vaults() -> VaultSet:
        return VaultSet([Vault(vault, index_path=index)])

    cold: list[float] = []
    for _ in range(cold_n):
        t0 = time.perf_counter()
        with Sandbox(vaults(), isolation=isolation) as sb:
            sb.run(RETRIEVAL)
            cold.append((time.perf_counter() - t0) * 1000)
    warm: list[float] = []
    empty: list[float] = []
    with Sandbox(vaults(), isolation=isolation) as sb:
        for _ in range(3):
            stats = sb.run(RETRIEVAL).stats
        for _ in range(warm_n):
            t0 = time.perf_counter()
            sb.run(RETRIEVAL)
            warm.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            sb.run(EMPTY)
            empty.append((time.perf_counter() - t0) * 1000)
    return {
        "cold": summary(cold),
        "warm": summary(warm),
        "warm_empty_script": summary(empty),
        "seccomp": stats["seccomp"],
        "uid": stats.get("uid"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=ROOT / "example_notebooks" / "vault")
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--warm", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["SHAD_HOME"] = home
        index = Path(home) / "bench.sqlite"
        Vault(args.vault, index_path=index).refresh()  # index once: cold measures the sandbox, not indexing
        usable, why = bwrap_status()
        paths = ["bubblewrap", "subprocess"] if usable else ["subprocess"]
        with Sandbox(VaultSet([Vault(args.vault, index_path=index)]), isolation=paths[-1]) as sb:
            sb.run(EMPTY)  # one-time process costs (seccomp program, bwrap probe) out of the numbers
        out: dict[str, object] = {
            "benchmark": "sandbox",
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "bubblewrap": {"usable": usable, "note": why},
            "targets": {"warm_median_ms": 25, "cold_ms": 250},
            "isolation": {},
        }
        results: dict[str, object] = {}
        for isolation in paths:
            results[isolation] = measure(isolation, args.vault, index, args.cold, args.warm)
        out["isolation"] = results
        default = results[paths[0]]
        assert isinstance(default, dict)
        out["default_isolation"] = paths[0]
        out["meets_targets"] = bool(
            default["warm"]["median_ms"] <= 25 and default["cold"]["median_ms"] <= 250  # type: ignore[index]
        )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
