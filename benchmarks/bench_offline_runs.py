"""End-to-end quality with no model: each eval question run as a goal with the offline provider.

    python benchmarks/bench_offline_runs.py [--questions F.jsonl ...] [--vault DIR]

Prints one JSON object: for each kind, how many runs cite a gold note (any gold path for lookup and
paraphrase; for multihop, ``all`` needs every gold path), plus statuses. History goes to a temporary
folder: the vault is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", action="append")
    parser.add_argument("--vault", default=str(SHARED / "vaults" / "zettelkasten-dy"))
    args = parser.parse_args()
    os.environ["SHAD_HOME"] = tempfile.mkdtemp(prefix="shad-offline-")
    history = tempfile.mkdtemp(prefix="shad-offline-history-")

    from engine import run

    files = args.questions or [str(SHARED / "eval" / "dev_questions.jsonl")]
    questions = [json.loads(x) for f in files for x in Path(f).read_text().splitlines() if x.strip()]
    cited_any: dict[str, int] = defaultdict(int)
    cited_all: dict[str, int] = defaultdict(int)
    counts: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    started = time.perf_counter()
    for q in questions:
        result = run(q["question"], args.vault, provider="offline", history_dir=history)
        statuses[result.status.value] += 1
        if q["kind"] == "absent":
            continue
        cited = {c["path"] for c in result.summary["citations"] if c["resolved"]}
        gold = set(q["gold_paths"])
        counts[q["kind"]] += 1
        cited_any[q["kind"]] += bool(gold & cited)
        cited_all[q["kind"]] += gold <= cited
    print(
        json.dumps(
            {
                "questions": len(questions),
                "runs_by_status": dict(statuses),
                "cites_a_gold_note": {k: f"{cited_any[k]}/{n}" for k, n in sorted(counts.items())},
                "cites_every_gold_note": {k: f"{cited_all[k]}/{n}" for k, n in sorted(counts.items())},
                "seconds": round(time.perf_counter() - started, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
