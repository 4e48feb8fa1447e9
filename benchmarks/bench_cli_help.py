"""``shad --help`` and every ``shad <command> --help``: how long they take and which heavy modules they load.

    python benchmarks/bench_cli_help.py [--repeat 7]

Prints one JSON object: the median wall time of ``shad --help`` and of ``python -c pass`` (the floor: an
interpreter that starts and stops), their difference, and for every help screen the heavy modules it
imported (target: none of pandas, anthropic, openai, networkx, nbclient, papermill, RestrictedPython).
Each measurement is a fresh process running the installed ``shad`` entry point's code
(``python -m engine.cli``), so nothing is cached between runs except the OS's file cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "anthropic", "openai", "networkx", "nbclient", "papermill", "RestrictedPython")
HELP_SCREENS = [
    [],
    ["run"],
    ["resume"],
    ["replay"],
    ["status"],
    ["trace"],
    ["trace", "tree"],
    ["export"],
    ["runs"],
    ["checkpoint"],
    ["cache"],
    ["cache", "stats"],
    ["batch"],
    ["sandbox"],
    ["vault"],
    ["vault", "search"],
]


def heavy_modules(args: list[str]) -> list[str]:
    """The heavy top-level packages that ``shad ARGS --help`` imports (from ``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "engine.cli", *args, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in proc.stderr.splitlines() if "|" in line]
    loaded = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in lines}
    return sorted(m for m in HEAVY if m in loaded)


def median_seconds(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    help_s = median_seconds([sys.executable, "-m", "engine.cli", "--help"], repeat)
    floor_s = median_seconds([sys.executable, "-c", "pass"], repeat)
    screens = {" ".join(["shad", *args, "--help"]): heavy_modules(args) for args in HELP_SCREENS}
    print(
        json.dumps(
            {
                "repeat": repeat,
                "shad_help_median_s": help_s,
                "python_pass_median_s": floor_s,
                "shad_help_over_python_s": round(help_s - floor_s, 4),
                "heavy_modules_checked": list(HEAVY),
                "heavy_modules_imported": screens,
                "screens_with_heavy_imports": sorted(k for k, v in screens.items() if v),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
