"""The offline provider: Shad's main job done honestly with no language model at all (DESIGN.md §2).

It works from each request's ``purpose`` and structured ``inputs`` (never from the prompt text):

- ``decompose``: the strategy's stages plus the goal's own clauses (sentences, ";", enumerations,
  " and " before a new question); each clause becomes a subtask under the stage whose keywords and
  description fit it best (else the strategy's primary stage); required stages with no clause get the
  stage's own task. Stage default dependencies become node dependencies.
- ``answer``: extractive. The passages of ``inputs["context"]`` that best answer ``inputs["task"]``
  (stemmed keyword overlap weighted by rarity; see ``_offline_text``), ranked, de-duplicated, at most
  ``MAX_PASSAGES``, each quoted as written and followed by its item's ``citation`` exactly as given.
  A passage whose text and heading hold less than ``MIN_COVERAGE`` (15 %) of the task's weighted terms
  is not quoted. When nothing is left it says so plainly.
- ``synthesize``: a one-paragraph lead made of the children's best cited sentences, then each child's
  answer under ``### <task>``, so every citation is kept.
- ``support``: ``judge`` for each of ``inputs["claims"]`` (``{"id", "claim", "source"}``), as
  ``{"verdicts": [{"id", "supported", "reason"}]}``.
- ``reconcile``: every side of each of ``inputs["conflicts"]`` with its value, statement and citations
  (no model: nothing is settled, both sides are kept).
- ``judge``: ``supported`` when at least ``JUDGE_THRESHOLD`` (60 %) of the claim's content-word stems
  occur in ``source_text`` and every number in the claim does too.
- ``script``: a retrieval script from a fixed template that calls ``obsidian.search`` and
  ``obsidian.read_note`` and sets ``__result__``.
- ``repair``: the original purpose run again on the original inputs.

Responses say ``provider="offline"``, ``model="offline-extractive"``, ``stop_reason="offline"``; token
counts are estimates (about four characters per token). The same inputs always give the same output.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from ..strategies import split_clauses, stage_subject
from ..text import points_back, section_heading
from ._base import LLMRequest, LLMResponse, ProviderError
from ._offline_answer import MAX_PASSAGES, NOTHING_FOUND, answer
from ._offline_script import retrieval_script
from ._offline_text import as_text as _str
from ._offline_text import (
    clip,
    estimate_tokens,
    norm_key,
    split_sentences,
    stream_text,
    terms,
    with_antecedent,
)
from ._offline_units import CODE_SPAN

__all__ = ["JUDGE_THRESHOLD", "MAX_PASSAGES", "MODEL", "NOTHING_FOUND", "OfflineProvider"]

MODEL = "offline-extractive"
JUDGE_THRESHOLD = 0.6
LEAD_SENTENCES = 4
_CITE = re.compile(r"\[\[[^\[\]\n]+?\]\]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")


class OfflineProvider:
    """No model: extractive answers with citations, plans from strategy skeletons."""

    name = "offline"

    def __init__(self, **options: Any) -> None:
        self.options = options  # accepted and ignored: nothing to configure without a model

    async def aclose(self) -> None:
        return None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        text, data = self.run(request.purpose, request.inputs or {})
        if request.on_text is not None and request.purpose in ("answer", "synthesize"):
            await stream_text(text, request.on_text)
        read = (
            request.system + request.prompt if request.prompt else json.dumps(request.inputs, sort_keys=True)
        )
        return LLMResponse(
            text=text,
            provider=self.name,
            model=MODEL,
            input_tokens=estimate_tokens(read),
            output_tokens=estimate_tokens(text),
            data=data,
            stop_reason="offline",  # token counts are estimates: ~4 characters per token
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def run(self, purpose: str, inputs: dict[str, Any]) -> tuple[str, Any]:
        """(text, data) for one purpose; deterministic."""
        if purpose == "decompose":
            plan = decompose(inputs)
            return json.dumps(plan, ensure_ascii=False), plan
        if purpose == "answer":
            return answer(inputs), None
        if purpose == "synthesize":
            return synthesize(inputs), None
        if purpose == "judge":
            verdict = judge(inputs)
            return json.dumps(verdict, ensure_ascii=False), verdict
        if purpose == "support":  # the batched judge: one verdict per claim
            verdicts = {
                "verdicts": [_support_verdict(c) for c in inputs.get("claims") or () if isinstance(c, dict)]
            }
            return json.dumps(verdicts, ensure_ascii=False), verdicts
        if purpose == "reconcile":
            return reconcile(inputs), None
        if purpose == "script":
            task = stage_subject(_str(inputs.get("task")))  # a strategy's wording off; a model's kept
            if not inputs.get("findings"):  # (a step handed what the one before found has its subject)
                task = with_antecedent(task, _str(inputs.get("goal")))
            return retrieval_script(task, inputs.get("hints")), None
        if purpose == "repair":
            return self._repair(inputs)
        raise ProviderError(
            f"the offline provider has no answer for purpose {purpose!r}",
            kind="bad_request",
            provider=self.name,
        )

    def _repair(self, inputs: dict[str, Any]) -> tuple[str, Any]:
        purpose = _str(inputs.get("purpose"))
        original = _original_inputs(inputs)
        if purpose not in ("", "repair") and original is not None:
            return self.run(purpose, original)
        if purpose == "decompose":  # an empty plan: validation puts the skeleton's plan in its place
            empty: dict[str, Any] = {"nodes": [], "waivers": []}
            return json.dumps(empty), empty
        return "The offline provider cannot repair this output: the original inputs were not given.", None


def _original_inputs(inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The failed request's inputs: ``inputs["inputs"]``, or ``previous["inputs"]``, or ``previous``
    itself when it is an inputs dict (has a goal or a task)."""
    for candidate in (inputs.get("inputs"), inputs.get("original_inputs")):
        if isinstance(candidate, dict):
            return candidate
    previous = inputs.get("previous")
    if isinstance(previous, dict):
        if isinstance(previous.get("inputs"), dict):
            return dict(previous["inputs"])
        if "goal" in previous or "task" in previous or "claim" in previous:
            return previous
    return None


# --- decompose -------------------------------------------------------------------------------------------


def _stage_fit(clause: str, stage: dict[str, Any], spread: dict[str, int]) -> float:
    """How well a clause fits a stage: 2 / (stages sharing the keyword) per keyword it contains, +1 per
    word of the stage's name or description, +2 when the clause's leading word is one of its keywords."""
    words = terms(clause)  # ordered and unique: sums below add in a fixed order (same result every run)
    keywords = _stage_keywords(stage)
    described = set(terms(f"{stage.get('name', '')} {stage.get('description', '')}".replace("_", " ")))
    score = sum(2.0 / spread.get(w, 1) for w in words if w in keywords)
    score += sum(1 for w in words if w in described)
    if words and words[0] in keywords:
        score += 2.0
    return score


def _stage_keywords(stage: dict[str, Any]) -> set[str]:
    return {t for k in stage.get("keywords") or () if isinstance(k, str) for t in terms(k)}


def decompose(inputs: dict[str, Any]) -> dict[str, Any]:
    """A plan from the stages in ``inputs["stages"]`` and the clauses of ``inputs["goal"]``."""
    goal = " ".join(_str(inputs.get("goal")).split())
    limit = inputs.get("max_children")
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else 8
    stages = [s for s in inputs.get("stages") or () if isinstance(s, dict) and isinstance(s.get("name"), str)]
    stages = [s for s in stages if s.get("handled_by", "node") == "node"]
    if not stages:
        return {"nodes": [{"id": "answer", "task": goal, "stage": "answer", "depends_on": []}], "waivers": []}
    primary = next((s for s in stages if s.get("primary")), None) or next(
        (s for s in stages if s.get("required")), stages[0]
    )
    spread: dict[str, int] = {}
    for s in stages:
        for t in _stage_keywords(s):
            spread[t] = spread.get(t, 0) + 1
    per_stage: dict[str, list[str]] = {s["name"]: [] for s in stages}
    for clause, _ in split_clauses(goal):
        fits = [(_stage_fit(clause, s, spread), -i) for i, s in enumerate(stages)]
        best, neg_i = max(fits)  # ties: the earlier stage
        per_stage[(stages[-neg_i] if best > 0 else primary)["name"]].append(clause)
    nodes: list[dict[str, Any]] = []
    must: list[str] = []  # ids that cover a required stage: kept first when clamping
    for s in stages:
        name = s["name"]
        tasks = per_stage[name] or ([_stage_task(s, goal)] if s.get("required") else [])
        for k, task in enumerate(tasks, 1):
            node_id = name if k == 1 else f"{name}_{k}"
            nodes.append(
                {"id": node_id, "task": task, "stage": name, "depends_on": [], "soft_depends_on": []}
            )
            if k == 1 and s.get("required"):
                must.append(node_id)
    if len(nodes) > limit:
        keep = set(must[:limit])
        for n in nodes:
            if len(keep) < limit:
                keep.add(n["id"])
        nodes = [n for n in nodes if n["id"] in keep]
    by_stage: dict[str, list[str]] = {}
    for n in nodes:
        by_stage.setdefault(n["stage"], []).append(n["id"])
    deps = {s["name"]: s for s in stages}
    for n in nodes:
        stage = deps[n["stage"]]
        for key in ("depends_on", "soft_depends_on"):
            for dep_stage in stage.get(key) or ():
                n[key] += [d for d in by_stage.get(dep_stage, []) if d not in n["depends_on"] + n[key]]
    _link_back_references(nodes, by_stage)
    return {"nodes": nodes, "waivers": []}


def _link_back_references(nodes: list[dict[str, Any]], by_stage: dict[str, list[str]]) -> None:
    """A clause that points back ("what website does *that developer* list?", "in *that* protocol") is the
    second step of a two-step question: it depends on the clause before it in its stage, so it runs
    knowing what that one found (the orchestrator hands a same-stage dependency's findings to retrieval)."""
    by_id = {n["id"]: n for n in nodes}
    for ids in by_stage.values():
        for earlier, later in itertools.pairwise(ids):
            node = by_id[later]
            if points_back(node["task"]) and earlier not in node["depends_on"]:
                node["depends_on"].append(earlier)


def _stage_task(stage: dict[str, Any], goal: str) -> str:
    template = stage.get("task")
    if isinstance(template, str) and "{goal}" in template:
        return template.replace("{goal}", goal)
    return f"{stage.get('description') or stage['name']} — for: {goal}"


# --- answer ----------------------------------------------------------------------------------------------


# --- synthesize ------------------------------------------------------------------------------------------


def _cited_units(text: str) -> list[tuple[str, list[str]]]:
    """(sentence without citations, its citations) for each cited line or sentence of an answer."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip()
        if not line or line.startswith("#") or NOTHING_FOUND in line:
            continue
        for sentence in split_sentences(line) if len(_citations_in(line)) > 1 else [line]:
            spans = _citations_in(sentence)
            cites = list(dict.fromkeys(sentence[a:b] for a, b in spans))
            kept, at = [], 0
            for a, b in spans:
                kept.append(sentence[at:a])
                at = b
            bare = " ".join("".join([*kept, sentence[at:]]).split())
            if cites and bare:
                out.append((bare, cites))
    return out


def _citations_in(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s citations are: its wikilinks outside code spans. A link inside one is the syntax a
    note shows (`` `![[Note#^block]]` ``), quoted as written, never taken out of its code span as a source."""
    blanked = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    return [m.span() for m in _CITE.finditer(blanked)]


def synthesize(inputs: dict[str, Any]) -> str:
    """A lead paragraph from the children's best sentences, then each child's answer under its task.

    Lead: each child's first cited sentence (its own best passage), children whose task is one of the
    goal's own clauses first (in goal order), then the others; duplicates skipped; at most
    ``LEAD_SENTENCES`` sentences."""
    goal = " ".join((_str(inputs.get("goal")) + " " + _str(inputs.get("task"))).split()).lower()
    children = [c for c in inputs.get("children") or () if isinstance(c, dict)]
    lead: list[tuple[int, int, str, str]] = []  # (is stage task, position, key, sentence)
    for i, child in enumerate(children):
        units = _cited_units(_str(child.get("answer")))
        if not units:
            continue
        text, cites = units[0]
        task = " ".join(_str(child.get("task")).split()).lower()
        at = goal.find(task) if task else -1
        lead.append(
            (int(at < 0), at if at >= 0 else i, norm_key(text), f"{clip(text, 300)} {' '.join(cites)}")
        )
    lead.sort(key=lambda x: (x[0], x[1]))
    chosen: list[str] = []
    keys: set[str] = set()
    for _, _, key, sentence in lead:
        if key not in keys and len(chosen) < LEAD_SENTENCES:
            keys.add(key)
            chosen.append(sentence)
    parts = [
        " ".join(chosen) if chosen else "None of the subtasks found passages in the vault that answer this."
    ]
    for child in children:
        node_id = _str(child.get("node_id"))
        task = section_heading(_str(child.get("task")), _str(inputs.get("goal")), node_id) or "Subtask"
        body = _str(child.get("answer")).strip() or "(no answer)"
        parts.append(f"### {task}\n\n{body}")
    return "\n\n".join(parts)


# --- judge -----------------------------------------------------------------------------------------------


def judge(inputs: dict[str, Any]) -> dict[str, Any]:
    """Term overlap between claim and source (threshold ``JUDGE_THRESHOLD``); numbers must all match."""
    claim = _CITE.sub(" ", _str(inputs.get("claim")))
    source = _str(inputs.get("source_text"))
    claim_terms = terms(claim)
    if not claim_terms:
        return {"supported": False, "reason": "the claim has no content words to check"}
    if not source.strip():
        return {"supported": False, "reason": "the cited source text is empty"}
    source_terms = set(terms(source))
    found = [t for t in claim_terms if t in source_terms]
    share = len(found) / len(claim_terms)
    source_numbers = {n.replace(",", ".") for n in _NUMBER.findall(source)}
    missing_numbers = [n for n in _NUMBER.findall(claim) if n.replace(",", ".") not in source_numbers]
    supported = share >= JUDGE_THRESHOLD and not missing_numbers
    reason = (
        f"{len(found)}/{len(claim_terms)} claim terms ({share:.0%}) occur in the source "
        f"(threshold {JUDGE_THRESHOLD:.0%})"
    )
    if missing_numbers:
        reason += f"; number(s) {', '.join(missing_numbers)} not in the source"
    return {"supported": supported, "reason": reason, "overlap": round(share, 3)}


def _support_verdict(item: dict[str, Any]) -> dict[str, Any]:
    verdict = judge({"claim": item.get("claim"), "source_text": item.get("source")})
    return {"id": item.get("id"), "supported": verdict["supported"], "reason": verdict["reason"]}


def reconcile(inputs: dict[str, Any]) -> str:
    """Both sides of each conflict, each with its citations: without a model nothing is settled."""
    lines = []
    for c in inputs.get("conflicts") or ():
        if not isinstance(c, dict):
            continue
        sides = [s for s in c.get("sides") or () if isinstance(s, dict)]
        said = "; ".join(
            f"{_str(s.get('value'))} per “{_str(s.get('statement'))}” {' '.join(s.get('citations') or [])}"
            for s in sides
        )
        lines.append(f"- {_str(c.get('slot'))}: the sources differ: {said}. They are not reconciled here.")
    return "\n".join(lines)
