"""Gap analysis (C3): which topics the vault's recorded runs struggled with, and what to add.

    report = analyze_vault("path/to/vault", llm_audit=False)
    report.topics[0].topic, report.topics[0].gap_score, report.to_dict()
    write_report(report)   # the markdown note Shad/Reports/Vault analysis <date>.md, through VaultWriter

Per topic (``_analyze_topics``: the runs' goals, node tasks and retrieval queries grouped by shared words):

- **history pain** (0..1), the weighted mean of the signals the topic has data for (weights renormalised
  over those): ``low_score`` 0.30 (share of its retrievals scoring below 0.45), ``fallback`` 0.20 (share
  that needed the recovery ladder: broadened direct search, or a checkpoint), ``trouble`` 0.25 (share of
  its attempted nodes that failed, were pruned, wait for a person or opened a checkpoint; a subtask
  pruned as redundant is a saving, counted apart as ``pruned_redundant`` and ``tokens_saved_est``),
  ``nothing_found`` 0.15 (share of its attempted nodes whose retrieval found nothing or whose answer says
  the vault holds nothing relevant) and ``repeated`` 0.10 (share of its asks asked again in another run);
- **coverage miss** (0..1, ``_analyze_coverage``): the mean miss of its asks (goals and tasks; the
  queries when it has neither) against the vault's own index;
- **model audit** (0..1, ``_analyze_audit``): only with ``llm_audit`` and a real model.

``gap = 0.55·pain + 0.25·coverage + 0.20·audit``. Without an audit (not asked for, no model, or the call
failed) the audit weight is redistributed: ``0.55/0.80·pain + 0.25/0.80·coverage``, and the report says
so; a topic the model left unscored is weighted the same way.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..llm import Provider
from ..vault import Vault
from ._analyze_audit import AuditResult, audit_topics, vault_summary
from ._analyze_coverage import CoverageChecker
from ._analyze_runs import LOW_SCORE, load_runs
from ._analyze_topics import Topic, cluster, wordings

__all__ = [
    "COLUMNS",
    "PAIN_WEIGHTS",
    "WEIGHTS",
    "GapReport",
    "TopicGap",
    "analyze_vault",
    "gap_weights",
]

WEIGHTS = {"history_pain": 0.55, "coverage_miss": 0.25, "audit": 0.20}
PAIN_WEIGHTS = {"low_score": 0.30, "fallback": 0.20, "trouble": 0.25, "nothing_found": 0.15, "repeated": 0.10}
# The columns of ``GapReport.rows()`` (and of the DataFrame ``%shad analyze`` returns).
COLUMNS = ("topic", "gap_score", "history_pain", "coverage_miss", "audit", "runs", "queries", "suggestion")
DEFAULT_TOP = 10


def gap_weights(audit_used: bool) -> dict[str, float]:
    """The weights of the gap score; without an audit its 0.20 goes to pain and coverage pro rata."""
    if audit_used:
        return dict(WEIGHTS)
    rest = WEIGHTS["history_pain"] + WEIGHTS["coverage_miss"]
    return {
        "history_pain": round(WEIGHTS["history_pain"] / rest, 4),
        "coverage_miss": round(WEIGHTS["coverage_miss"] / rest, 4),
        "audit": 0.0,
    }


@dataclass
class TopicGap:
    topic: str
    terms: list[str]
    gap_score: float
    history_pain: float
    coverage_miss: float
    audit: float | None
    priority: str  # high | medium | low
    runs: list[str]
    queries: list[str]  # every distinct wording asked: goals, node tasks, retrieval queries
    asks: int  # queries across runs: each distinct wording (goal, task, query) counted once per run
    nodes: list[dict[str, Any]]
    signals: dict[str, Any]
    closest: list[dict[str, Any]]
    suggestions: list[str]
    audit_reason: str = ""
    # subtasks pruned by novelty: budget saved, not trouble (run_id, node, task, same_as, tokens_saved_est)
    redundant: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "terms": self.terms,
            "gap_score": self.gap_score,
            "history_pain": self.history_pain,
            "coverage_miss": self.coverage_miss,
            "audit": self.audit,
            "priority": self.priority,
            "runs": len(self.runs),
            "queries": self.asks,
            "signals": self.signals,
            "evidence": {
                "runs": self.runs,
                "queries": self.queries,
                "nodes": self.nodes,
                "pruned_redundant": self.redundant,
            },
            "closest_notes": self.closest,
            "suggestions": self.suggestions,
            **({"audit_reason": self.audit_reason} if self.audit_reason else {}),
        }


@dataclass
class GapReport:
    vault: str  # the vault folder
    vault_id: str
    runs_analyzed: int
    weights: dict[str, float]
    audit: str  # used | not requested | no model | failed | not run: no runs
    weights_note: str
    topics: list[TopicGap] = field(default_factory=list)
    topics_total: int = 0
    message: str = ""  # set when there was nothing to analyse
    audit_provider: str | None = None
    audit_model: str | None = None
    model_suggestions: list[dict[str, str]] = field(default_factory=list)
    report_path: str | None = None  # vault-relative, once written

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "vault": self.vault,
            "runs_analyzed": self.runs_analyzed,
            "weights": self.weights,
            "audit": self.audit,
            "weights_note": self.weights_note,
            "topics_total": self.topics_total,
            "topics": [t.to_dict() for t in self.topics],
            "report": self.report_path,
        }
        if self.audit == "used":
            data["audit_provider"] = {"provider": self.audit_provider, "model": self.audit_model}
            data["model_suggestions"] = self.model_suggestions
        if self.message:
            data["message"] = self.message
        return data

    def rows(self) -> list[dict[str, Any]]:
        """One row per topic, ranked, with the columns ``COLUMNS``."""
        return [
            {
                "topic": t.topic,
                "gap_score": t.gap_score,
                "history_pain": t.history_pain,
                "coverage_miss": t.coverage_miss,
                "audit": t.audit,
                "runs": len(t.runs),
                "queries": t.asks,
                "suggestion": t.suggestions[0] if t.suggestions else "",
            }
            for t in self.topics
        ]


def _weights_note(audit: AuditResult, requested: bool) -> str:
    w = gap_weights(False)
    moved = (
        f"the audit weight {WEIGHTS['audit']:.2f} was redistributed to history pain and coverage "
        f"({w['history_pain']:g} and {w['coverage_miss']:g})"
    )
    if not requested:
        return f"no model audit (not requested: --llm-audit): {moved}"
    if audit.status == "no model":
        return f"no model: {moved}; set ANTHROPIC_API_KEY or OPENAI_BASE_URL for a model audit"
    if audit.status == "failed":
        return f"the model audit failed ({audit.error}): {moved}"
    return f"model audit by {audit.provider} ({audit.model}), weight {WEIGHTS['audit']:.2f}"


def analyze_vault(
    vault: str | Path,
    *,
    llm_audit: bool = False,
    provider: Provider | str | None = None,
    top: int | None = DEFAULT_TOP,
) -> GapReport:
    """The ranked gaps of ``vault`` from its recorded runs (``top`` of them; None for all)."""
    root = Path(vault).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"no vault folder at {root}", hint="pass --vault DIR, a folder of .md notes")
    runs = load_runs(root)
    v = Vault(root)
    if not runs:
        return GapReport(
            str(root),
            v.id,
            0,
            gap_weights(False),
            "not run: no runs" if llm_audit else "not requested",
            "",
            message=f'no runs recorded in {root}; run shad run "..." --vault {root} first',
        )
    v.refresh()
    topics = cluster(runs)
    checker = CoverageChecker(v)
    measured = [_measure(t, checker) for t in topics]
    audit = AuditResult("not requested")
    if llm_audit:
        audit = audit_topics(
            vault_summary(v), [_audit_input(t, m) for t, m in zip(topics, measured)], provider
        )
    used = audit.status == "used"
    gaps = [_gap(t, m, audit, str(root)) for t, m in zip(topics, measured)]
    gaps.sort(key=lambda g: (-g.gap_score, -len(g.runs), g.topic))
    return GapReport(
        str(root),
        v.id,
        len(runs),
        gap_weights(used),
        audit.status,
        _weights_note(audit, llm_audit),
        gaps[:top] if top else gaps,
        len(gaps),
        audit_provider=audit.provider if used else None,
        audit_model=audit.model if used else None,
        model_suggestions=audit.missing,
    )


@dataclass
class _Measure:
    pain: float
    signals: dict[str, Any]
    coverage: float
    closest: list[dict[str, Any]]
    lacking: list[str]


def _share(items: list[Any], test: Any) -> float | None:
    return sum(1 for x in items if test(x)) / len(items) if items else None


def _pain(topic: Topic) -> tuple[float, dict[str, Any]]:
    retrieved = [n for n in topic.nodes if n.retrieved]
    attempted = [n for n in topic.nodes if n.attempted]
    parts: dict[str, float | None] = {
        "low_score": _share(retrieved, lambda n: n.low),
        "fallback": _share(retrieved, lambda n: n.fallback),
        "trouble": _share(attempted, lambda n: n.troubled),
        "nothing_found": _share(attempted, lambda n: n.nothing_found),
        "repeated": _share(topic.asks, lambda a: len(a.runs) > 1),
    }
    known = {k: v for k, v in parts.items() if v is not None}
    total = sum(PAIN_WEIGHTS[k] for k in known)
    pain = sum(PAIN_WEIGHTS[k] * v for k, v in known.items()) / total if total else 0.0
    scores = [n.score for n in retrieved if n.score is not None]
    signals: dict[str, Any] = {k: (round(v, 3) if v is not None else None) for k, v in parts.items()}
    redundant = [n for n in topic.nodes if n.redundant]
    signals.update(
        retrievals=len(retrieved),
        attempted_nodes=len(attempted),
        median_retrieval_score=round(statistics.median(scores), 3) if scores else None,
        low_score_threshold=LOW_SCORE,
        pruned_redundant=len(redundant),  # a saving: not in ``trouble``
        tokens_saved_est=sum(n.tokens_saved for n in redundant),
    )
    return round(pain, 3), signals


def _measure(topic: Topic, checker: CoverageChecker) -> _Measure:
    pain, signals = _pain(topic)
    asked = [a for a in topic.asks if a.kinds & {"goal", "task"}] or topic.asks
    asked = sorted(asked, key=lambda a: (-len(a.runs), -a.count))  # the most asked first
    checks = [checker.check(a) for a in asked]
    coverage = sum(c.miss for c in checks) / len(checks) if checks else 1.0
    best: dict[str, float] = {}
    for c in checks:
        for path, support in c.closest:
            best[path] = max(best.get(path, 0.0), support)
    closest = [{"path": p, "support": s} for p, s in sorted(best.items(), key=lambda kv: -kv[1])[:3]]
    lacking: list[str] = []
    for c in checks:
        lacking += [w for w in c.missing_words if w not in lacking]
    signals["asks_checked"] = len(checks)
    signals["asks_supported"] = sum(1 for c in checks if c.miss == 0.0)
    return _Measure(pain, signals, round(coverage, 3), closest, lacking)


def _audit_input(topic: Topic, m: _Measure) -> dict[str, Any]:
    return {
        "topic": topic.name,
        "terms": topic.terms,
        "questions": [t for a in topic.asks for t in a.texts][:8],
        "closest_notes": [c["path"] for c in m.closest],
    }


def _priority(gap: float) -> str:
    return "high" if gap >= 0.5 else "medium" if gap >= 0.25 else "low"


def _gap(topic: Topic, m: _Measure, audit: AuditResult, vault: str) -> TopicGap:
    score = audit.scores.get(topic.name) if audit.status == "used" else None
    w = gap_weights(score is not None)
    gap = w["history_pain"] * m.pain + w["coverage_miss"] * m.coverage + w["audit"] * (score or 0.0)
    gap = round(gap, 3)
    return TopicGap(
        topic=topic.name,
        terms=topic.terms,
        gap_score=gap,
        history_pain=m.pain,
        coverage_miss=m.coverage,
        audit=score,
        priority=_priority(gap),
        runs=topic.runs,
        queries=wordings(topic.asks),
        asks=sum(len(a.uses) for a in topic.asks),
        nodes=[n.to_evidence() for n in topic.nodes if n.attempted and not n.redundant],
        signals=m.signals,
        closest=m.closest,
        suggestions=_suggest(topic, m, gap, vault),
        audit_reason=audit.reasons.get(topic.name, ""),
        redundant=[
            {
                "run_id": n.run_id,
                "node": n.node_id,
                "task": n.task,
                "same_as": n.redundant_with,
                "tokens_saved_est": n.tokens_saved,
            }
            for n in topic.nodes
            if n.redundant
        ],
    )


def _link(path: str) -> str:
    return "[[" + (path[:-3] if path.endswith(".md") else path) + "]]"


def _suggest(topic: Topic, m: _Measure, gap: float, vault: str) -> list[str]:
    about = ", ".join(topic.terms[:3])
    title = topic.title or " ".join(topic.terms[:3]).capitalize()
    near = m.closest[0] if m.closest else None
    near_text = f"{_link(near['path'])} ({near['support']:.0%} of the key words)" if near else ""
    out: list[str] = []
    # A note holding less than half the key words is not the place to add them (coverage is the miss:
    # 0.25 is a note with half of them, at SUPPORTED = 2/3); a new note is.
    if m.coverage > 0.25:
        out.append(
            f"a note on {about} (e.g. “{title}”): no note covers it"
            + (f"; closest: {near_text}" if near else "")
        )
        out.append(f"or bring a source on {about} in: shad ingest PATH_OR_URL --vault {vault}")
    elif near and m.lacking:
        out.append(f"expand {_link(near['path'])} with: {', '.join(m.lacking[:6])}")
    elif near and gap >= 0.25:
        out.append(
            f"{_link(near['path'])} holds the words but runs still struggled: give it focused sections "
            "on these questions and link it from related notes"
        )
    elif near:
        out.append(f"no addition needed: {near_text} covers it")
    else:
        out.append(f"a note on {about} (e.g. “{title}”)")
    return out
