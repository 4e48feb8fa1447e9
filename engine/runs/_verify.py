"""A node's answer checked: its citations against the vaults as they are now (every node), and the root's
answer before it is cached: repeated list items dropped, conflicting sources kept side by side
(reconciled by the model when there is one), and every claim checked against the passage it cites
(a batched JUDGE-tier call with a model; the lexical check of ``retrieval.support`` without one).

``check_body`` then settles the report's body at the end of the run: the claims' verdicts (the root's,
or lexical ones for a body the root did not write), the goal's asks that no supported claim covers, and
the counts for the run's metrics. When no ask is covered, the passages found are kept under a warning
that they are the closest the vault holds, not an answer (a lexical check can miss a paraphrase: the
passages stay for a person to check, but none is presented as the answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShadError
from ..events import CitationsUnresolved, ConflictsFound
from ..llm import LLMRequest, ProviderError, Tier, parse_json_text
from ..prompts import render
from ..retrieval import citations as cite
from ..retrieval import coverage as cover
from ..retrieval import support as sup
from ..retrieval.synthesis import Conflict, detect_conflicts, drop_repeated_bullets, render_conflicts
from ..text import section_heading
from ._conflict_checkpoint import gate as conflict_gate
from ._context import RunContext
from ._model_calls import ModelCalls
from ._weak_evidence import note_key, weak_asks, weak_notes, weak_retrieval
from .dag import Node

__all__ = ["BodyChecks", "check_body", "check_root", "verify_citations"]

JUDGE_BATCH = 25  # claims per judge call
NOT_AN_ANSWER = (
    "> [!warning] Not found in the vault\n"
    "> No cited passage plainly answers this. The passages below are the closest the vault holds: they are\n"
    "> quoted for you to check, not presented as an answer."
)
NO_MODEL = frozenset({"offline"})


def verify_citations(ctx: RunContext, node: Node) -> None:
    """Resolve the answer's citations into ``node.citations``; unresolved ones are flagged in the answer."""
    resolved = cite.resolve_citations(cite.extract_citations(node.answer), ctx.vaults)
    node.citations, unresolved = cite.summarize(resolved)
    if unresolved:
        node.answer = cite.flag_unresolved(node.answer, resolved)
        ctx.emit(CitationsUnresolved(node=node.id, count=len(unresolved)))


def _context(ctx: RunContext, node: Node) -> list[dict[str, Any]]:
    """Every context item the run's nodes were given (what the root's claims may cite)."""
    items = [c for n in ctx.run.dag for c in n.retrieval.get("context", []) if isinstance(c, dict)]
    return items + [c for c in node.retrieval.get("context", []) if isinstance(c, dict) and c not in items]


def clause_headings(ctx: RunContext) -> set[str]:
    """The report headings of the subtasks that are one of the goal's own clauses (a report's repeated
    items stay in those sections rather than in a strategy stage's, such as the framing)."""
    goal = ctx.config.goal
    lowered = " ".join(goal.split()).lower()
    return {
        section_heading(n.task, goal, n.id)
        for n in ctx.run.dag
        if n.depth == 1 and n.task.strip() and " ".join(n.task.split()).lower() in lowered
    }


async def check_root(ctx: RunContext, calls: ModelCalls, node: Node) -> None:
    """The root's answer before it is cached (see the module docstring); what was found is kept in
    ``node.retrieval`` ("repeats_dropped", "conflicts", "support"), so a cache hit keeps it too."""
    node.answer, dropped = drop_repeated_bullets(node.answer, clause_headings(ctx))
    node.retrieval["repeats_dropped"] = dropped
    await _conflicts(ctx, calls, node)
    claims = sup.claims_of(node.answer)
    context = _context(ctx, node)
    spans = sup.span_texts([c for claim in claims for c in claim.citations], context, ctx.vaults)
    verdicts, method = await _judge(ctx, calls, node, claims, spans)
    node.answer = sup.flag_unsupported(node.answer, verdicts)
    node.retrieval["support"] = {"method": method, "verdicts": [v.to_dict() for v in verdicts]}
    verify_citations(ctx, node)


async def _judge(
    ctx: RunContext, calls: ModelCalls, node: Node, claims: list[sup.Claim], spans: dict[str, tuple[str, str]]
) -> tuple[list[sup.Verdict], str]:
    """Verdicts from the model (batched, within the budget), lexical for what it did not judge."""
    lexical = sup.check_lexically(claims, spans)
    if not claims or ctx.provider.name in NO_MODEL:
        return lexical, "lexical"
    if ctx.state.stop_reason:  # the budget is spent: no model call past it
        return lexical, f"lexical (no judge call: {ctx.state.stop_reason})"
    judged: dict[int, tuple[bool, str]] = {}
    note = ""
    for at in range(0, len(claims), JUDGE_BATCH):
        batch = claims[at : at + JUDGE_BATCH]
        items = sup.judge_items(batch, spans)
        request = LLMRequest(
            "support",
            Tier.JUDGE,
            render("support", claims=json.dumps(items, ensure_ascii=False, indent=1)),
            system=render("system"),
            inputs={"claims": items},
            node_id=node.id,
            max_tokens=200 + 60 * len(batch),
        )
        try:
            response = await calls.call(node, request, synthesis=True)
            found = sup.parse_verdicts(parse_json_text(response.text), len(batch))
        except (ShadError, ProviderError, ValueError) as exc:  # budget, provider, a reply that is no JSON
            note = f" for {len(claims) - len(judged)} claim(s): the judge failed ({exc})"[:300]
            break
        judged.update({at + k: v for k, v in found.items()})
    verdicts = []
    for k, v in enumerate(lexical):
        if k in judged:
            ok, why = judged[k]
            v = sup.Verdict(v.claim, v.citations, ok, why, "judge", v.line)
        verdicts.append(v)
    return verdicts, ("judge" if judged else "lexical") + note


async def _conflicts(ctx: RunContext, calls: ModelCalls, node: Node) -> None:
    """Conflicting sources among what the run's leaves found: reconciled by the model (every side kept,
    each with its citation) or, without one, both values shown each with its citation; unreconciled ones
    on a number or a yes/no fact open a conflict checkpoint (``_conflict_checkpoint``)."""
    dag = ctx.run.dag
    leaves = [n for n in dag if n.answer and not dag.children(n.id) and n.status.ok] or [node]
    if node not in leaves and not dag.children(node.id):
        leaves = [node]
    items = [{"node_id": n.id, "task": n.task, "answer": n.answer, "citations": n.citations} for n in leaves]
    conflicts = detect_conflicts(items)
    node.retrieval["conflicts"] = [c.to_dict() for c in conflicts]
    if not conflicts:
        return
    reconciled = ""
    if ctx.provider.name not in NO_MODEL and not ctx.state.stop_reason:
        reconciled = await _reconcile(ctx, calls, node, conflicts)
    ctx.emit(ConflictsFound(node=node.id, count=len(conflicts)))
    section = reconciled or render_conflicts(conflicts)
    if not reconciled:  # on a number or a yes/no fact, a person is asked (the policy permitting)
        said = await conflict_gate(ctx, node, conflicts)
        section = section.rstrip() + (f"\n\n{said}\n" if said else "\n")
    node.answer = node.answer.rstrip() + "\n\n" + section


async def _reconcile(ctx: RunContext, calls: ModelCalls, node: Node, conflicts: list[Conflict]) -> str:
    """The model's reconciliation, with any side it left out added back as written; "" when it failed."""
    lines = []
    for c in conflicts:
        lines.append(f"- {c.slot}:")
        lines += [f"  - {s.value}: “{s.statement}” {' '.join(s.citations[:2])}" for s in c.sides]
    request = LLMRequest(
        "reconcile",
        Tier.WORKER,
        render("reconcile", goal=ctx.config.goal, conflicts="\n".join(lines)),
        system=render("system"),
        inputs={"goal": ctx.config.goal, "conflicts": [c.to_dict() for c in conflicts]},
        node_id=node.id,
        max_tokens=600,
    )
    try:
        text = (await calls.call(node, request, synthesis=True)).text.strip()
    except (ShadError, ProviderError):
        return ""
    if not text:
        return ""
    left_out = [
        f"- {c.slot}: {s.value} — “{s.statement}” {' '.join(s.citations[:2])}"
        for c in conflicts
        for s in c.sides
        if s.citations and not any(x in text for x in s.citations)
    ]
    out = ["### Conflicting findings", "", text]
    if left_out:
        out += ["", "Sides the reconciliation above does not cite:", "", *left_out]
    return "\n".join(out) + "\n"


@dataclass
class BodyChecks:
    """What the end of a run found about the report's body."""

    body: str
    verdicts: list[sup.Verdict] = field(default_factory=list)
    method: str = "lexical"
    uncovered: list[cover.Ask] = field(default_factory=list)
    asks: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    repeats_dropped: int = 0
    answered: bool = (
        True  # False: no ask is covered, and the passages are shown as the closest, not an answer
    )

    @property
    def unsupported(self) -> list[sup.Verdict]:
        return [v for v in self.verdicts if not v.supported]

    def metrics(self) -> dict[str, Any]:
        return {
            "claims_checked": len(self.verdicts),
            "claims_unsupported": len(self.unsupported),
            "support_check": self.method,
            "asks": self.asks,
            "asks_uncovered": len(self.uncovered),
            "conflicts": len(self.conflicts),
            "repeats_dropped": self.repeats_dropped,
        }


def check_body(ctx: RunContext, body: str, root: Node | None) -> BodyChecks:
    """Settle the body: the root's verdicts where it wrote the body, lexical ones otherwise (flagged in
    the text), then the asks no supported claim covers. A body whose every ask is uncovered presents no
    citation as an answer: it says plainly that the vault does not answer."""
    dropped = 0
    wrote = root is not None and root.status.ok and bool(root.answer.strip()) and root.answer.strip() in body
    recorded = root.retrieval.get("support") if root is not None and wrote else None
    claims = sup.claims_of(body)
    context = _context(ctx, root) if root is not None else []
    spans = sup.span_texts([c for claim in claims for c in claim.citations], context, ctx.vaults)
    if isinstance(recorded, dict):
        known = {(v["claim"], tuple(v["citations"])): v for v in recorded.get("verdicts", [])}
        verdicts = [
            sup.Verdict(c.text, c.citations, bool(v["supported"]), str(v["reason"]), str(v["method"]), c.line)
            if (v := known.get((c.text, tuple(c.citations))))
            else sup.check_lexically([c], spans)[0]
            for c in claims
        ]
        method = str(recorded.get("method", "lexical"))
    else:  # the subtasks' answers, each under its task: they may repeat each other
        body, dropped = drop_repeated_bullets(body, clause_headings(ctx))
        claims = sup.claims_of(body)
        verdicts, method = sup.check_lexically(claims, spans), "lexical"
        body = sup.flag_unsupported(body, verdicts)
    weak = weak_notes(ctx.run.dag)  # what only weak retrievals found covers no ask (``_weak_evidence``)
    evidence = [
        cover.CoverEvidence(v.claim, spans.get(raw, ("", ""))[1] or raw, spans.get(raw, ("", ""))[0])
        for v in verdicts
        if v.supported
        for raw in v.citations
        if note_key(raw) not in weak
    ]
    # A software run answers with code, checked by its own checks: its goal's asks are not looked up.
    asks = [] if ctx.run.strategy == "software" else cover.goal_asks(ctx.config.goal)
    lacking = cover.uncovered_asks(asks, evidence) + weak_asks(asks, ctx.run.dag, evidence)
    checks = BodyChecks(body, verdicts, method, [a for a in asks if a in lacking], len(asks))
    if root is not None and wrote:
        checks.conflicts = list(root.retrieval.get("conflicts", []))
        checks.repeats_dropped = int(root.retrieval.get("repeats_dropped", 0))
    elif not isinstance(recorded, dict):
        checks.repeats_dropped = dropped
    # A run that stopped early has not looked everywhere (a subtask pruned as redundant did: its holders;
    # one whose retrieval stayed weak after the whole ladder did too)
    finished = all(n.status.ok or n.redundant or weak_retrieval(n) for n in ctx.run.dag)
    if asks and len(checks.uncovered) == len(asks) and claims and finished:
        checks.answered = False
        checks.body = NOT_AN_ANSWER + "\n\n" + body.strip()
    return checks
