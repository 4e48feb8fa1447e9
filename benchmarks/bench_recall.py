"""Retrieval quality: recall@1/5/10 of ``Vault.search`` on question files with gold note paths.

    python benchmarks/bench_recall.py                      # dev questions over zettelkasten-dy
    python benchmarks/bench_recall.py --questions F.jsonl --vault DIR

Prints one JSON object. For lookup/paraphrase questions any gold path counts; for multihop questions
``recall_all`` needs every gold path in the top k (``recall_any`` needs one). Absent questions have no
gold note; they are reported separately (the top score, to see how confident a miss looks).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", action="append", help="JSON-lines question file (repeatable)")
    parser.add_argument("--vault", default=str(SHARED / "vaults" / "zettelkasten-dy"))
    parser.add_argument("--shad-home", help="index location (default: a temporary folder)")
    parser.add_argument("--verbose", action="store_true", help="print each question's gold ranks to stderr")
    args = parser.parse_args()
    files = args.questions or [str(SHARED / "eval" / "dev_questions.jsonl")]
    os.environ["SHAD_HOME"] = args.shad_home or tempfile.mkdtemp(prefix="shad-recall-")

    from engine import Vault

    vault = Vault(args.vault)
    started = time.perf_counter()
    vault.refresh()
    index_s = time.perf_counter() - started
    questions = [json.loads(line) for f in files for line in Path(f).read_text().splitlines() if line.strip()]

    ks = (1, 5, 10)
    hits_all: dict[str, dict[int, int]] = defaultdict(lambda: dict.fromkeys(ks, 0))
    hits_any: dict[str, dict[int, int]] = defaultdict(lambda: dict.fromkeys(ks, 0))
    counts: dict[str, int] = defaultdict(int)
    absent_scores: list[float] = []
    latencies: list[float] = []
    for q in questions:
        t0 = time.perf_counter()
        hits = vault.search(q["question"], limit=10)
        latencies.append((time.perf_counter() - t0) * 1000)
        paths = [h.path for h in hits]
        if q["kind"] == "absent":
            absent_scores.append(hits[0].score if hits else 0.0)
            continue
        gold = set(q["gold_paths"])
        for kind in (q["kind"], "all"):
            counts[kind] += 1
            for k in ks:
                top = set(paths[:k])
                hits_any[kind][k] += bool(gold & top)
                hits_all[kind][k] += gold <= top if q["kind"] == "multihop" else bool(gold & top)
        if args.verbose:
            ranks = [paths.index(g) + 1 if g in paths else None for g in q["gold_paths"]]
            print(f"{q['id']:>8} {q['kind']:<10} gold ranks {ranks}  top: {paths[:2]}", file=sys.stderr)

    def table(src: dict[str, dict[int, int]]) -> dict[str, dict[str, float]]:
        return {
            kind: {f"r@{k}": round(src[kind][k] / n, 3) for k in ks} for kind, n in sorted(counts.items())
        }

    print(
        json.dumps(
            {
                "vault": str(args.vault),
                "questions": sum(counts[k] for k in counts if k != "all") + len(absent_scores),
                "answerable": counts["all"],
                "recall_all": table(hits_all),
                "recall_any": table(hits_any),
                "absent": {
                    "n": len(absent_scores),
                    "top_score_median": round(statistics.median(absent_scores), 3) if absent_scores else None,
                },
                "query_ms_median": round(statistics.median(latencies), 3) if latencies else None,
                "index_seconds": round(index_s, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
