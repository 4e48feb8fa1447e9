"""Search speed at scale: cold index, re-index after one change, query latency, grep baseline, RSS.

    python3 ../shared/tools/make_scale_vault.py --out /tmp/scale100     # ~100 MB, 66k notes (once)
    python benchmarks/bench_search.py --vault /tmp/scale100

Prints one JSON object. Targets on a 2-core machine: cold index <= 30 s, re-index after touching one
note <= 0.5 s, in-process query p50 <= 2 ms and p95 <= 10 ms, and >= 50x faster than ``grep -r``.
Queries are realistic: the eval questions (natural language), note titles, and heading phrases
sampled from the vault with a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def realistic_queries(vault_root: Path, notes: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    for f in sorted((SHARED / "eval").glob("*.jsonl")) if (SHARED / "eval").exists() else []:
        queries += [json.loads(line)["question"] for line in f.read_text().splitlines() if line.strip()]
    sample = rng.sample(notes, min(len(notes), n))
    for i, path in enumerate(sample):
        title = re.sub(r"\s*\([^)]*\)$", "", Path(path).stem)  # drop the scale vault's replica tag
        words = re.findall(r"[A-Za-z]{3,}", title)
        if i % 3 == 0 and words:
            queries.append(" ".join(words[:4]))
            continue
        text = (vault_root / path).read_text(errors="replace")
        body_words = re.findall(r"[A-Za-z]{4,}", text[:4000])
        if len(body_words) >= 8:
            start = rng.randrange(0, len(body_words) - 3)
            phrase = " ".join(body_words[start : start + rng.choice((2, 3, 4))])
            queries.append(f"what about {phrase}?" if i % 3 == 1 else phrase)
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True, help="vault folder (e.g. the 100 MB scale vault)")
    parser.add_argument("--queries", type=int, default=300, help="sampled queries besides the eval questions")
    parser.add_argument("--grep-queries", type=int, default=10, help="queries to time with grep -r")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="shad-bench-")
    os.environ["SHAD_HOME"] = home

    from engine import Vault
    from engine.text import parse_query

    root = Path(args.vault).resolve()
    vault = Vault(root)
    t0 = time.perf_counter()
    stats = vault.refresh()
    cold = time.perf_counter() - t0

    t0 = time.perf_counter()
    Vault(root).refresh()  # a fresh object on the existing index: what opening a vault costs
    open_and_check = time.perf_counter() - t0

    notes = vault.list_notes()
    rng = random.Random(args.seed)
    victim = root / rng.choice(notes)
    original = victim.read_bytes()
    try:
        victim.write_bytes(original + b"\n\nAn added line about benchmark zebrafish.\n")
        t0 = time.perf_counter()
        one = vault.refresh()
        reindex_one = time.perf_counter() - t0
        found = any(
            h.path == str(victim.relative_to(root)) for h in vault.search("benchmark zebrafish", limit=5)
        )
    finally:
        victim.write_bytes(original)
        vault.refresh()

    queries = realistic_queries(root, notes, args.queries, args.seed)
    for q in queries[:20]:
        vault.search(q, limit=10)  # warm the page cache and statement cache
    latencies = []
    for q in queries:
        t0 = time.perf_counter()
        vault.search(q, limit=10)
        latencies.append((time.perf_counter() - t0) * 1000)

    grep = shutil.which("grep")
    grep_ms: list[float] = []
    shad_ms: list[float] = []
    if grep:
        for q in rng.sample(queries, min(args.grep_queries, len(queries))):
            words = parse_query(q).words() or [q]
            term = max(words, key=len)
            t0 = time.perf_counter()
            subprocess.run(
                [grep, "-r", "-i", "-l", "-F", "--", term, str(root)], capture_output=True, check=False
            )
            grep_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            vault.search(q, limit=10)
            shad_ms.append((time.perf_counter() - t0) * 1000)

    md_bytes = sum((root / p).stat().st_size for p in notes)
    result = {
        "vault": str(root),
        "notes": len(notes),
        "markdown_mb": round(md_bytes / 1e6, 1),
        "cold_index_s": round(cold, 2),
        "cold_index_notes_added": stats.added,
        "open_and_check_unchanged_s": round(open_and_check, 3),
        "reindex_one_change_s": round(reindex_one, 3),
        "reindex_one_change_updated": one.updated,
        "changed_note_found": found,
        "queries": len(latencies),
        "query_ms_p50": round(statistics.median(latencies), 3),
        "query_ms_p95": round(pct(latencies, 0.95), 3),
        "query_ms_max": round(max(latencies), 3),
        "grep_ms_median": round(statistics.median(grep_ms), 1) if grep_ms else None,
        "shad_ms_median_same_queries": round(statistics.median(shad_ms), 3) if shad_ms else None,
        "speedup_vs_grep": round(statistics.median(grep_ms) / statistics.median(shad_ms), 1)
        if grep_ms
        else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_children_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "index_mb": round(sum(p.stat().st_size for p in Path(home).rglob("*") if p.is_file()) / 1e6, 1),
    }
    print(json.dumps(result, indent=2))
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
