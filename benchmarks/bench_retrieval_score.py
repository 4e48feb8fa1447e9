"""Does the retrieval score tell a weak retrieval from a good one? ``retrieval_score`` (engine/retrieval)
judges what direct retrieval found for each question of the real vaults' question sets; absent questions
(the vault does not hold the answer) should score weak, lookup questions strong. Weak is the threshold the
recovery ladder, checkpoints and FAILED_WITH_DIAGNOSTIC use (``RecoveryPolicy.low_score``).

    python benchmarks/bench_retrieval_score.py                 # every real vault with a question file
    python benchmarks/bench_retrieval_score.py --only obsidian-help

The previous, lax formula (0.5 keyword overlap + 0.25 coverage + 0.25 diversity: any set of distinct
notes that each hold one of the words earned half) is measured beside it, on the same retrievals.
Prints one JSON object: per vault and kind, the mean score and the share judged weak, for both; plus the
demo vault's "Japanese tea ceremony" case.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_recall import load_questions, question_sets  # noqa: E402

from engine.retrieval import ContextItem, DirectSearchRetriever, retrieval_score  # noqa: E402
from engine.retrieval._codemode import RecoveryPolicy  # noqa: E402
from engine.text import parse_query, stem  # noqa: E402
from engine.vault import VaultSet  # noqa: E402

WEAK = RecoveryPolicy.low_score


def lax_score(task: str, items: list[ContextItem]) -> float:
    """The formula before this change, for comparison."""
    words = {stem(w) for w in parse_query(task).words()}
    if not items or not words:
        return 0.0
    texts = [c.text.lower() for c in items]
    found = {w for w in words if any(re.search(r"\b" + re.escape(w), t) for t in texts)}
    overlap = len(found) / len(words)
    coverage = sum(1 for t in texts if any(re.search(r"\b" + re.escape(w), t) for w in words)) / len(items)
    diversity = len({(c.vault, c.path) for c in items}) / len(items)
    boilerplate = sum(1 for t in texts if len(t) < 80) / len(items)
    boilerplate += (len(texts) - len(set(texts))) / len(items)
    score = 0.5 * overlap + 0.25 * coverage + 0.25 * diversity - 0.3 * min(1.0, boilerplate)
    return round(max(0.0, min(1.0, score)), 3)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        out[kind] = {
            "n": len(mine),
            "mean_new": round(statistics.mean(r["new"] for r in mine), 3),
            "mean_lax": round(statistics.mean(r["lax"] for r in mine), 3),
            "weak_new": round(sum(r["new"] < WEAK for r in mine) / len(mine), 2),
            "weak_lax": round(sum(r["lax"] < WEAK for r in mine) / len(mine), 2),
        }
    return out


def score_questions(vault_dir: Path, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    vaults = VaultSet([str(vault_dir)])
    vaults.refresh()
    retriever = DirectSearchRetriever(vaults)
    rows = []
    for q in questions:
        found = asyncio.run(retriever.retrieve(q["question"], q["question"], "bench"))
        new, _ = retrieval_score(q["question"], found.context)
        rows.append(
            {
                "id": q["id"],
                "kind": q.get("kind", "?"),
                "new": new,
                "lax": lax_score(q["question"], found.context),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one vault by name")
    parser.add_argument("--verbose", action="store_true", help="every question's scores too")
    parser.add_argument("--shad-home", help="index location (default: one under the temporary folder)")
    args = parser.parse_args()
    os.environ["SHAD_HOME"] = args.shad_home or str(Path(tempfile.gettempdir()) / "shad-score-home")
    result: dict[str, Any] = {"weak_below": WEAK, "vaults": {}}
    every: list[dict[str, Any]] = []
    for name, vault_dir, qfile in question_sets():
        if args.only and name != args.only:
            continue
        rows = score_questions(vault_dir, load_questions(qfile))
        every += rows
        result["vaults"][name] = summarize(rows) | ({"questions": rows} if args.verbose else {})
    if every:
        result["all"] = summarize(every)
    demo = ROOT / "example_notebooks" / "vault"
    if demo.is_dir():
        (row,) = score_questions(
            demo, [{"id": "demo", "question": "Japanese tea ceremony", "kind": "absent"}]
        )
        result["demo_japanese_tea_ceremony"] = {"new": row["new"], "lax": row["lax"]}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
