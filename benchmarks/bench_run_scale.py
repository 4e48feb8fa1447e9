"""A run on a big vault: first note read, a whole offline ``shad run`` with the index built, refresh costs.

    python3 ../shared/tools/make_scale_vault.py --out /tmp/scale100     # ~100 MB, 66k notes (once)
    python benchmarks/bench_run_scale.py --vault /tmp/scale100

Prints one JSON object. Every measure runs in its own process (a fresh ``Vault`` as a run opens it), on one
index built first under a temporary ``SHAD_HOME``; anchors are measured in the same run (the machine may be
busy: compare ratios, not seconds). Targets (issue 18): first ``read_note`` <= 50 ms, ``shad run`` with the
index built <= 3 s, the first retrieval of the run well under a second (from its ``events.jsonl``),
refresh with nothing changed / one note edited <= 0.3 s (anchor: a ``find`` stat walk of the vault).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# One measure, run in a child process: prints a JSON object on its last line.
_CHILD = r"""
import json, random, resource, sys, time
sys.path.insert(0, {root!r})
from engine import Vault
what, vault_root, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {{}}
t0 = time.perf_counter()
v = Vault(vault_root)
if what == "read":
    v.refresh()
    out["open_refresh_s"] = time.perf_counter() - t0
    notes = v.list_notes()
    rng = random.Random(seed)
    first, second = rng.sample(notes, 2)
    def timed(key, fn, *a):
        t = time.perf_counter()
        value = fn(*a)
        out[key] = (time.perf_counter() - t) * 1000
        return value
    note = timed("first_read_note_ms", v.read_note, first)
    timed("second_read_note_ms", v.read_note, second)
    out["first_note_links"] = len(note.links)
    timed("backlinks_ms", v.backlinks, first)
    out["neighbors_depth2"] = len(timed("neighbors_depth2_ms", v.neighbors, first, 2))
    timed("resolve_link_ms", v.resolve_link, note.title or first)
elif what == "refresh":
    stats = v.refresh()
    out["refresh_s"] = time.perf_counter() - t0
    out["updated"] = stats.updated
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent that forked this process.
try:
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
    out["peak_rss_mb"] = int(hwm.split()[1]) / 1024
except (OSError, IndexError):
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(what: str, vault: Path, seed: int) -> dict[str, Any]:
    code = _CHILD.format(root=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code, what, str(vault), str(seed)], capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise SystemExit(f"{what} failed:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def find_walk(vault: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["find", str(vault), "-printf", "%s %T@ %p\n"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def first_retrieval_s(history: Path) -> tuple[float | None, str | None]:
    """Seconds from the run's start to its first NODE_RETRIEVED, from ``events.jsonl``."""
    files = sorted(history.rglob("events.jsonl"))
    if not files:
        return None, None
    started = first = None
    mode = None
    for line in files[0].read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "RUN_STARTED" and started is None:
            started = rec["ts"]
        if rec.get("type") == "RETRIEVAL_MODE" and mode is None:
            mode = rec.get("mode")
        if rec.get("type") == "NODE_RETRIEVED" and first is None:
            first = rec["ts"]
    return (round(first - started, 3) if first is not None and started is not None else None), mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True, help="vault folder (e.g. the 100 MB scale vault)")
    parser.add_argument("--goal", default="How does the espresso extraction time depend on the grind size?")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each timed measure (median)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="shad-bench-run-")
    os.environ["SHAD_HOME"] = home
    root = Path(args.vault).resolve()
    result: dict[str, Any] = {"vault": str(root), "load_average": os.getloadavg()}

    t0 = time.perf_counter()
    build = child("refresh", root, args.seed)
    result["cold_index_s"] = round(time.perf_counter() - t0, 2)
    result["cold_index_peak_rss_mb"] = round(build["peak_rss_mb"], 1)

    finds = [find_walk(root) for _ in range(args.repeat)]
    unchanged = [child("refresh", root, args.seed)["refresh_s"] for _ in range(args.repeat)]
    reads = [child("read", root, args.seed + i) for i in range(args.repeat)]

    notes = sorted(str(p.relative_to(root)) for p in root.rglob("*.md"))
    victim = root / random.Random(args.seed).choice(notes)
    original = victim.read_bytes()
    edits: list[float] = []
    try:
        for i in range(args.repeat):
            victim.write_bytes(original + f"\n\nEdit {i} for the benchmark.\n".encode())
            edits.append(child("refresh", root, args.seed)["refresh_s"])
    finally:
        victim.write_bytes(original)
        child("refresh", root, args.seed)

    runs: list[float] = []
    statuses: list[int] = []
    retrievals: list[float] = []
    mode = None
    for i in range(args.repeat):
        hist = Path(home) / f"hist{i}"
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "engine.cli", "run", args.goal, "--vault", str(root)]
        cmd += ["--provider", "offline", "--offline", "--no-cache", "--history-dir", str(hist)]
        env = {**os.environ, "SHAD_OFFLINE": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
        runs.append(time.perf_counter() - t0)
        statuses.append(proc.returncode)  # 0 SUCCESS, 3 PARTIAL (an offline run rarely covers every ask)
        if proc.returncode not in (0, 3):
            result["run_error"] = proc.stderr[-1000:]
        seconds, mode = first_retrieval_s(hist)
        if seconds is not None:
            retrievals.append(seconds)

    med = statistics.median
    find_s = med(finds)
    result.update(
        {
            "find_stat_walk_s": round(find_s, 3),
            "refresh_unchanged_s": round(med(unchanged), 3),
            "refresh_unchanged_vs_find": round(med(unchanged) / find_s, 2),
            "refresh_one_edit_s": round(med(edits), 3),
            "refresh_one_edit_vs_find": round(med(edits) / find_s, 2),
            "first_read_note_ms": round(med(r["first_read_note_ms"] for r in reads), 2),
            "second_read_note_ms": round(med(r["second_read_note_ms"] for r in reads), 2),
            "first_vs_second_read_note": round(
                med(r["first_read_note_ms"] for r in reads) / med(r["second_read_note_ms"] for r in reads), 1
            ),
            "backlinks_ms": round(med(r["backlinks_ms"] for r in reads), 2),
            "neighbors_depth2_ms": round(med(r["neighbors_depth2_ms"] for r in reads), 2),
            "resolve_link_ms": round(med(r["resolve_link_ms"] for r in reads), 2),
            "open_and_refresh_s": round(med(r["open_refresh_s"] for r in reads), 3),
            "read_process_peak_rss_mb": round(max(r["peak_rss_mb"] for r in reads), 1),
            "shad_run_s": round(med(runs), 2),
            "shad_run_s_all": [round(r, 2) for r in runs],
            "shad_run_exit_codes": statuses,
            "first_retrieval_s": round(med(retrievals), 3) if retrievals else None,
            "retrieval_mode": mode,
        }
    )
    print(json.dumps(result, indent=2))
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
