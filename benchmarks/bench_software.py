"""The cost of verification inside a software run (issue 13): the same offline software run on the demo
vault (its code notes give a 10-file package) at ``--verify off``, ``basic``, ``build`` and ``strict``.

    python benchmarks/bench_software.py [--runs 3]

Prints one JSON object: per level, the median (min, max) wall time of the whole run and of its checks
(``verify`` durations as the run recorded them), the files in the manifest and whether the checks passed;
and the overhead of each level over ``off`` (median difference and ratio), all measured in this one
process, one level after another in each round so machine noise hits every level alike. Each run uses a
fresh history and no cache, so every level does all its work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import RunConfig  # noqa: E402
from engine.runs import start_run  # noqa: E402

GOAL = "Build a Python package with a command-line tool that computes coffee brew ratios"
LEVELS = ("off", "basic", "build", "strict")


def one_run(vault: Path, level: str) -> dict[str, object]:
    config = RunConfig(
        GOAL, (str(vault),), provider="offline", strategy="software", verify=level, use_cache=False
    )
    started = time.perf_counter()
    run = asyncio.run(start_run(config))
    wall = time.perf_counter() - started
    software = run.summary.get("software") or {}
    verify_file = run.history.dir / "artifacts" / "verify.json"
    checks = json.loads(verify_file.read_text()) if verify_file.exists() else None
    return {
        "wall_s": wall,
        "status": run.status.value,
        "files": software.get("files"),
        "ok": software.get("ok"),
        "checks": software.get("checks"),
        "isolation": checks.get("isolation") if checks else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SHAD_HOME"] = str(Path(tmp) / "home")
        vault = Path(tmp) / "vault"
        shutil.copytree(ROOT / "example_notebooks" / "vault", vault, ignore=shutil.ignore_patterns("Shad"))
        one_run(vault, "off")  # warm imports and the index once, outside the measurements
        results: dict[str, list[dict[str, object]]] = {level: [] for level in LEVELS}
        for _ in range(args.runs):
            for level in LEVELS:
                results[level].append(one_run(vault, level))
    out: dict[str, object] = {"goal": GOAL, "runs": args.runs, "cpus": os.cpu_count(), "levels": {}}
    base = statistics.median(float(r["wall_s"]) for r in results["off"])  # type: ignore[arg-type]
    for level, rows in results.items():
        walls = [float(r["wall_s"]) for r in rows]  # type: ignore[arg-type]
        median = statistics.median(walls)
        last = rows[-1]
        out["levels"][level] = {  # type: ignore[index]
            "median_s": round(median, 3),
            "min_s": round(min(walls), 3),
            "max_s": round(max(walls), 3),
            "overhead_s": round(median - base, 3),
            "ratio_to_off": round(median / base, 2),
            "status": last["status"],
            "files": last["files"],
            "ok": last["ok"],
            "checks": last["checks"],
            "isolation": last["isolation"],
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
