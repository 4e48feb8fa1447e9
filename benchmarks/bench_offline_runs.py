"""End-to-end answer quality with no model: each question of each real vault run as a goal (offline provider).

    python benchmarks/bench_offline_runs.py                       # the four real vaults in ../shared/vaults
    python benchmarks/bench_offline_runs.py --vault obsidian-help --limit 5
    python benchmarks/bench_offline_runs.py --questions F.jsonl --vault DIR
    python benchmarks/bench_offline_runs.py --blind                # the blind question sets
    python benchmarks/bench_offline_runs.py --held-out             # the held-out sets (never tuned on)

Question sets: ``../shared/eval/dev_questions.jsonl`` for zettelkasten-dy (the dev set we tune on), and
``benchmarks/questions/<vault>.jsonl`` for the other vaults; with ``--blind``, the blind sets
(``benchmarks/questions/blind/``, see ``bench_recall.py``). Prints one JSON object with, per vault:

- ``cites_a_gold_note`` (lookup and paraphrase: any gold path among the resolved citations) and
  ``cites_every_gold_note`` (multihop: all of them), as ``hits/questions`` and a rate;
- ``answer_in_report``: the question's ``answer_contains`` phrase appears in the report (case-folded, as
  written or as a report shows it: ``[[Steph Ango]]`` as "Steph Ango", ``<https://x>`` as the URL;
  ``answer_not_in_report`` lists the questions whose report lacks it);
- ``honest_on_absent``: absent questions that end with a non-empty ``uncovered`` list and no status of
  SUCCESS (the vault cannot answer them, and the run must say so);
- ``status_vs_answer``: for the answerable questions with an ``answer_contains`` phrase, how each run's
  status agrees with whether its report holds the answer (``SUCCESS`` without it over-claims; ``PARTIAL``
  with it under-claims: the report says the vault does not plainly answer, and quotes the answer anyway;
  ``success_without_answer`` lists the over-claims);
- ``tokens_per_run`` (median) and ``runs_by_status``.

Histories, indexes and the run cache go to a temporary folder, removed at the end: the vaults are only
read. With ``--shad-home`` the index is kept there (built once); the run cache is still a fresh one unless
``--reuse-cache``: a cached answer would measure the code that wrote it, not the code under test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
VAULTS = ("zettelkasten-dy", "obsidian-help", "obsidian-hub", "kepano-obsidian")


def question_file(vault: str, blind: bool | str = False) -> Path:
    """The vault's tuned question file; with ``blind`` (True: ``blind``, or a folder name such as
    ``held_out``), its file in ``benchmarks/questions/<folder>``."""
    if blind:
        folder = blind if isinstance(blind, str) else "blind"
        return ROOT / "benchmarks" / "questions" / folder / f"{vault}.jsonl"
    if vault == "zettelkasten-dy":
        return SHARED / "eval" / "dev_questions.jsonl"
    return ROOT / "benchmarks" / "questions" / f"{vault}.jsonl"


_WIKILINK = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")


def rendered(phrase: str) -> str:
    """``phrase`` (copied from a note's Markdown) as a report shows it: a wikilink by its alias or target's
    name, an autolink by its URL. The report's own claims cite notes; their answer text is plain."""
    phrase = _WIKILINK.sub(lambda m: m.group(2) or m.group(1).rsplit("/", 1)[-1], phrase)
    return _AUTOLINK.sub(r"\1", phrase)


def load(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(x) for p in paths for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]


def rate(hits: int, total: int) -> dict[str, Any]:
    return {"hits": f"{hits}/{total}", "rate": round(hits / total, 3) if total else None}


def measure(vault: Path, questions: list[dict[str, Any]], history: str) -> dict[str, Any]:
    from engine import run

    found: dict[str, int] = defaultdict(int)
    every: dict[str, int] = defaultdict(int)
    kinds: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    agreement: Counter[str] = Counter()
    answered = asked = honest = absent = 0
    tokens: list[int] = []
    misses: list[str] = []
    partly: list[str] = []  # multi-hop questions that cite some gold note but not all of them
    unanswered: list[str] = []
    overclaimed: list[str] = []  # SUCCESS without the answer
    started = time.perf_counter()
    for q in questions:
        result = run(q["question"], str(vault), provider="offline", history_dir=history)
        summary = result.summary
        statuses[result.status.value] += 1
        tokens.append(int(summary.get("metrics", {}).get("total_tokens", 0)))
        if q["kind"] == "absent":
            absent += 1
            honest += bool(summary.get("uncovered")) and result.status.value != "SUCCESS"
            continue
        cited = {c["path"] for c in summary.get("citations", []) if c.get("resolved")}
        gold = set(q["gold_paths"])
        kinds[q["kind"]] += 1
        found[q["kind"]] += bool(gold & cited)
        every[q["kind"]] += gold <= cited
        if not gold & cited:
            misses.append(q["id"])
        elif q["kind"] == "multihop" and not gold <= cited:
            partly.append(q["id"])
        if q.get("answer_contains"):
            asked += 1
            report_path = summary.get("report_path")
            report = Path(report_path).read_text(encoding="utf-8") if report_path else ""
            holds = any(
                p.casefold() in report.casefold()
                for p in {q["answer_contains"], rendered(q["answer_contains"])}
            )
            answered += holds
            agreement[f"{result.status.value.lower()}_{'with' if holds else 'without'}_answer"] += 1
            if not holds:
                unanswered.append(q["id"])
                if result.status.value == "SUCCESS":
                    overclaimed.append(q["id"])
    single = [k for k in kinds if k != "multihop"]
    return {
        "questions": len(questions),
        "cites_a_gold_note": {
            **{k: rate(found[k], kinds[k]) for k in sorted(single)},
            "lookup+paraphrase": rate(sum(found[k] for k in single), sum(kinds[k] for k in single)),
        },
        "cites_every_gold_note": {"multihop": rate(every["multihop"], kinds["multihop"])},
        "answer_in_report": rate(answered, asked),
        "honest_on_absent": rate(honest, absent),
        "tokens_per_run": statistics.median(tokens) if tokens else 0,
        "runs_by_status": dict(statuses),
        "status_vs_answer": dict(sorted(agreement.items())),
        "missed": misses,
        "multihop_missing_a_gold": partly,
        "answer_not_in_report": unanswered,
        "success_without_answer": overclaimed,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", action="append", help="a vault name in ../shared/vaults, or a folder")
    parser.add_argument("--questions", action="append", help="question file (with one --vault folder)")
    parser.add_argument("--limit", type=int, help="at most this many questions per vault")
    parser.add_argument(
        "--blind", action="store_true", help="the blind question sets (benchmarks/questions/blind)"
    )
    parser.add_argument(
        "--held-out", action="store_true", help="the held-out question sets (benchmarks/questions/held_out)"
    )
    parser.add_argument("--shad-home", help="index location (default: a temporary folder)")
    parser.add_argument(
        "--reuse-cache",
        action="store_true",
        help="answer from the run cache of --shad-home (default: a fresh cache, so that what is measured "
        "is the code, not answers cached by an earlier run of it)",
    )
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="semantic ranking on (the 'embeddings' extra; keep the vectors with --shad-home)",
    )
    args = parser.parse_args()
    group: bool | str = "held_out" if args.held_out else args.blind
    scratch = tempfile.mkdtemp(prefix="shad-offline-")  # removed at the end: histories, run cache
    os.environ["SHAD_HOME"] = args.shad_home or str(Path(scratch) / "home")
    if not args.reuse_cache:  # the index of --shad-home is kept; its run cache is not consulted
        os.environ["SHAD_STORE"] = str(Path(scratch) / "store" / "store.sqlite3")
    history = str(Path(scratch) / "history")
    try:
        run_plan(args, group, history)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_plan(args: argparse.Namespace, group: bool | str, history: str) -> None:

    if args.questions:
        if not args.vault or len(args.vault) != 1:
            raise SystemExit("--questions needs exactly one --vault")
        plan = [(Path(args.vault[0]), load([Path(p) for p in args.questions]))]
    else:
        names = args.vault or [v for v in VAULTS if question_file(v, group).is_file()]
        plan = [(SHARED / "vaults" / n, load([question_file(n, group)])) for n in names]
    out: dict[str, Any] = {"provider": "offline", "embeddings": args.embeddings, "vaults": {}}
    for vault, questions in plan:
        if not vault.is_dir():
            out["vaults"][vault.name] = {"skipped": f"no vault at {vault}"}
            continue
        chosen = questions[: args.limit] if args.limit else questions
        if args.embeddings:
            from engine import Vault

            Vault(vault).embed()
        out["vaults"][vault.name] = measure(vault, chosen, history)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
