"""Gap analysis, part 5: the markdown report note, written into the vault through ``VaultWriter``.

The note goes to ``Shad/Reports/Vault analysis <YYYY-MM-DD>.md`` (Shad's own folder; a second analysis
on the same day replaces that day's note). Its layout follows seed 000 §2.12.2: a ranked table, then per
topic its evidence (runs, queries, the nodes that struggled) and the suggested additions.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from ..vault import NoteWrite, VaultWriter
from ._analyze import WEIGHTS, GapReport, TopicGap
from ._audit import logged

__all__ = ["REPORTS_FOLDER", "report_markdown", "report_path", "write_report"]

REPORTS_FOLDER = "Shad/Reports"
ACTOR = "shad vault analyze"
MAX_QUERIES = 12
MAX_NODES = 12


def report_path(day: dt.date | None = None) -> str:
    """The vault-relative path of the report note of ``day`` (today by default)."""
    return f"{REPORTS_FOLDER}/Vault analysis {(day or dt.date.today()).isoformat()}.md"


def _cell(text: Any) -> str:
    """Text safe in a table cell and outside any wikilink: no pipes, no ``[[``, one line."""
    return _plain(text).replace("|", "\\|")


def _plain(text: Any) -> str:
    return " ".join(str(text).replace("[[", "[ [").replace("]]", "] ]").split())


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _saved(signals: dict[str, Any]) -> str:
    """Subtasks pruned as redundant, said as the saving they are (empty when there were none)."""
    count = int(signals.get("pruned_redundant") or 0)
    if not count:
        return ""
    saved = signals.get("tokens_saved_est", 0)
    return f"; {_count(count, 'subtask')} pruned as redundant (~{saved} tokens saved)"


def _topic_section(i: int, t: TopicGap) -> list[str]:
    s = t.signals
    lines = [
        f"### {i}. {_plain(t.topic)}",
        "",
        f"- **Priority**: {t.priority.capitalize()} (gap {t.gap_score:.2f}: history pain "
        f"{t.history_pain:.2f}, coverage miss {t.coverage_miss:.2f}, audit {_num(t.audit)})",
        f"- **Evidence**: {_count(len(t.runs), 'run')}, {_count(t.asks, 'query', 'queries')}, "
        "median retrieval score "
        f"{_num(s.get('median_retrieval_score'))}, "
        f"{_pct(s.get('low_score'))} below {s['low_score_threshold']}, "
        f"{_pct(s.get('fallback'))} fallback, {_pct(s.get('trouble'))} failed/pruned/checkpointed, "
        f"{_pct(s.get('nothing_found'))} nothing found, {_pct(s.get('repeated'))} asked again; "
        f"{s.get('asks_supported', 0)} of {s.get('asks_checked', 0)} asks supported by a note" + _saved(s),
        "- **Runs**: " + ", ".join(f"`{r}`" for r in t.runs),
        "- **Queries**:",
    ]
    lines += [f"  - “{_plain(q)}”" for q in t.queries[:MAX_QUERIES]]
    if len(t.queries) > MAX_QUERIES:
        lines.append(f"  - … and {len(t.queries) - MAX_QUERIES} more")
    struggled = [n for n in t.nodes if n["problem"] or n["nothing_found"] or n["checkpoint"]] or t.nodes
    if struggled:
        lines.append("- **Nodes**:")
        for n in struggled[:MAX_NODES]:
            score = _num(n["retrieval_score"])
            why = f" — {_plain(n['problem'])}" if n["problem"] else ""
            lines.append(
                f"  - `{n['run_id']}` `{n['node']}` {n['status']}, retrieval {score} "
                f"({n['method'] or 'no retrieval'}){', nothing found' if n['nothing_found'] else ''}{why}"
            )
    if t.redundant:  # a saving: never among the nodes that struggled
        lines.append("- **Pruned as redundant** (budget saved, not a problem):")
        for r in t.redundant[:MAX_NODES]:
            saved = f", ~{r['tokens_saved_est']} tokens saved" if r["tokens_saved_est"] else ""
            lines.append(
                f"  - `{r['run_id']}` `{r['node']}` repeats {', '.join(f'`{h}`' for h in r['same_as'])}"
                f"{saved}: {_plain(r['task'])}"
            )
    if t.closest:
        lines.append(
            "- **Closest notes**: "
            + ", ".join(f"[[{c['path'][:-3]}]] ({c['support']:.0%})" for c in t.closest)
        )
    if t.audit_reason:
        lines.append(f"- **Model audit**: {_plain(t.audit_reason)}")
    lines.append("- **Suggested additions**:")
    lines += [f"  - {s}" for s in t.suggestions]
    return [*lines, ""]


def report_markdown(report: GapReport, day: dt.date | None = None) -> str:
    """The body of the report note."""
    day = day or dt.date.today()
    w = report.weights
    lines = [
        f"# Vault analysis {day.isoformat()}",
        "",
        f"Gaps of the vault `{report.vault_id}` found from {report.runs_analyzed} recorded run(s): "
        f"{report.topics_total} topic(s), the top {len(report.topics)} below.",
        "",
        f"gap score = {WEIGHTS['history_pain']:.2f}·history pain + {WEIGHTS['coverage_miss']:.2f}·coverage "
        f"miss + {WEIGHTS['audit']:.2f}·model audit; used here: {w['history_pain']:g}·pain + "
        f"{w['coverage_miss']:g}·coverage + {w['audit']:g}·audit.",
        "",
        f"> [!note] Model audit: {report.audit}",
        f"> {_plain(report.weights_note)}",
        "",
    ]
    if report.message:
        return "\n".join([*lines, report.message, ""])
    lines += [
        "## Top gaps (ranked)",
        "",
        "| # | Topic | Gap | History pain | Coverage miss | Audit | Runs | Queries |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, t in enumerate(report.topics, 1):
        lines.append(
            f"| {i} | {_cell(t.topic)} | {t.gap_score:.2f} | {t.history_pain:.2f} | {t.coverage_miss:.2f} "
            f"| {_num(t.audit)} | {len(t.runs)} | {t.asks} |"
        )
    lines.append("")
    for i, t in enumerate(report.topics, 1):
        lines += _topic_section(i, t)
    if report.model_suggestions:
        lines += ["## Notes the model suggests", ""]
        lines += [f"- **{_plain(m['title'])}**: {_plain(m['why'])}" for m in report.model_suggestions]
        lines.append("")
    lines += [
        "## How this was computed",
        "",
        "History pain: the share of the topic's retrievals scoring below 0.45 (weight 0.30), that needed the "
        "recovery ladder (0.20), of its nodes that failed, were pruned or opened a checkpoint (0.25; a "
        "subtask pruned as redundant repeated a sibling's passages: a saving, not counted), that "
        "found nothing (0.15), and of its asks asked again in another run (0.10). Coverage miss: how far "
        "the best matching note falls short of holding two thirds of each ask's key words. Generated by "
        "`shad vault analyze`.",
        "",
    ]
    return "\n".join(lines)


def write_report(report: GapReport, day: dt.date | None = None) -> NoteWrite:
    """Write the report note into the analysed vault through the vault's one writer, as a person's
    command; ``report.report_path`` is set to where it went."""
    day = day or dt.date.today()
    path = report_path(day)
    frontmatter = {
        "type": "report",
        "report": "vault-analysis",
        "created": day.isoformat(),
        "generator": ACTOR,
        "runs_analyzed": report.runs_analyzed,
        "topics": report.topics_total,
        "audit": report.audit,
        "tags": ["shad/report"],
    }
    writer = VaultWriter(
        Path(report.vault),
        role="person",
        actor=ACTOR,
        on_write=logged(report.vault, "vault gap report", "person"),
    )
    done = writer.write_note(path, report_markdown(report, day), frontmatter, overwrite=True)
    report.report_path = done.path
    return done
