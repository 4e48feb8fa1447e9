"""Retrieval with Code Mode (E6): the model writes a short script against the ``obsidian`` API, the
sandbox runs it, and only its distilled result enters the context.

The script's result is untrusted: each context item must name a note of the vaults and its text must
occur in that note (fabricated passages are dropped and recorded); the engine scores the retrieval
itself, whatever confidence the script claims. The recovery ladder (seed 000 §2.4.3): when the script
fails or scores low, regenerate it once with hints (at most 5 regenerations per run), then fall back to
a broadened direct search, merged with whatever the script did find. Every script, its result or error
and its stats are kept in the run's history under ``artifacts/scripts/``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from ..codemode import Sandbox, SandboxError
from ..config import HISTORY_FOLDER, UNCITED_FOLDERS
from ..llm import LLMRequest, LLMResponse, ProviderError, Tier
from ..strategies import stage_subject
from ..vault import Note, VaultSet, indexed_text, is_conflict_copy, properties_text
from ._direct import (
    LINKED_FROM,
    REFERENTS,
    SCRIPT_LINKS_FOLLOWED,
    ContextItem,
    DirectSearchRetriever,
    RetrievalResult,
    citation_link,
    merge_context,
    retrieval_score,
)
from ._findings import Findings

__all__ = ["API_DESCRIPTION", "CodeModeRetriever", "RecoveryPolicy", "api_description"]

API_DESCRIPTION = """\
obsidian.search(query: str, limit: int = 10, path: str | None = None, type: str | None = None,
                tags: list[str] | None = None, vault: str | None = None) -> list[dict]
    hits: {vault, path, title, score, snippet, heading, type, tags, passage}; plain questions work as
    queries; passage: the whole passage that matched (a note's properties lead its first one)
obsidian.read_note(path: str, vault: str | None = None) -> dict
    {path, title, frontmatter, properties, body, tags, headings: [{level, text, offset}], links, hash};
    path: vault-relative, or a note's name as a wikilink names it ("First crack")
obsidian.list_notes(folder: str | None = None) -> list[str]
obsidian.get_frontmatter(path) -> dict            obsidian.links(path) / obsidian.backlinks(path) -> list[str]
obsidian.neighbors(path, depth=1) -> list[str]    obsidian.create_wikilink(path, heading=None) -> str
obsidian.vaults() -> list[str]
Allowed imports: json, re, datetime, collections, itertools, functools, math, hashlib, pathlib (pure), typing,
dataclasses, enum, yaml (safe_load). No files, no network, no eval/exec/open, no _underscore attributes.
Set __result__ = {"context": [{"vault", "path", "heading", "text", "citation"}], "citations": [...],
                  "queries": [...], "signals": {...}, "confidence": 0.0-1.0, "why": "..."}
Example:
    hits = obsidian.search("first crack temperature", limit=5)
    best = hits[0]
    link = obsidian.create_wikilink(best["path"], best["heading"])
    __result__ = {"context": [{"vault": best["vault"], "path": best["path"], "heading": best["heading"],
                  "text": best["passage"], "citation": link}],
                  "citations": [], "queries": ["first crack temperature"], "signals": {},
                  "confidence": 0.8, "why": "the note on first crack"}
"""


def api_description(sandbox: Sandbox) -> str:
    """The API a script may use in ``sandbox``: the vault's, plus what its profile adds (read-only folders,
    HTTP GET to allowed hosts)."""
    broker = getattr(sandbox, "broker", None)
    if broker is None:  # no sandbox to ask (a retriever only used to validate results)
        return API_DESCRIPTION
    extra = []
    if broker.roots:
        ids = ", ".join(r.id for r in broker.roots)
        extra.append(
            "obsidian.read_file(path, root=None) -> str     obsidian.list_files(folder=None, root=None) -> "
            f"list[str]\nobsidian.roots() -> list[str]   (read-only folders: {ids}; what they say can guide "
            "which notes to read, but only vault notes can be cited)"
        )
    if broker.net is not None:
        hosts = ", ".join(broker.net.allow)
        extra.append(
            "obsidian.http_get(url) -> dict {url, status, headers, text, truncated}   "
            f"(https GET to {hosts} only; pages cannot be cited)"
        )
    return API_DESCRIPTION + "".join(f"{line}\n" for line in extra)


Ask = Callable[[str, LLMRequest], Awaitable[LLMResponse]]
Audit = Callable[[str, dict[str, Any]], None]  # (node id, {"kind", "target", "allowed", "reason"?})
Record = Callable[[str, Any], None]
MAX_ITEMS = 12
MAX_ITEM_CHARS = 4000
PROBE_CHARS = 80  # how much of an item's text must occur in its note, from its start


class RecoveryPolicy:
    """Thresholds of seed 000 §2.4.3, and the per-run regeneration cap.

    The seed's ``min_context_chars`` (2000) is not a trigger: on vaults of short notes a relevant, well
    scored context is often shorter, and regenerating it costs a model call for the same notes. The
    engine's own score (keyword overlap, coverage, diversity) and ``min_citations`` judge it instead.
    """

    low_score = 0.45
    low_confidence = 0.5
    min_citations = 2
    regens_per_node = 1
    regens_per_run = 5

    def __init__(self) -> None:
        self.regens_used = 0

    def weak(self, result: RetrievalResult) -> str | None:
        """Why a retrieval is not good enough, or None."""
        if result.retrieval_score < self.low_score:
            return f"retrieval score {result.retrieval_score:.2f} < {self.low_score}"
        if result.confidence < self.low_confidence:
            return f"the script's confidence {result.confidence:.2f} < {self.low_confidence}"
        if len({(c.vault, c.path) for c in result.context}) < self.min_citations:
            return f"fewer than {self.min_citations} notes cited"
        return None


class CodeModeRetriever:
    def __init__(
        self,
        vaults: VaultSet,
        sandbox: Sandbox,
        ask: Ask,
        record: Record,
        *,
        include_history: bool = False,
        audit: Audit | None = None,
    ) -> None:
        self.vaults = vaults
        self.sandbox = sandbox
        self.ask = ask
        self.record = record
        self.audit = audit  # told of every call a script tried to make out of the machine
        self.fallback = DirectSearchRetriever(vaults, include_history=include_history)
        self.include_history = include_history
        self.policy = RecoveryPolicy()
        self.api = api_description(sandbox)

    async def retrieve(
        self, task: str, goal: str, node_id: str, findings: Findings | None = None
    ) -> RetrievalResult:
        found = findings or Findings()
        hints: list[str] = []
        queries: list[str] = []  # what the hints suggest searching for (a template provider uses these)
        best: RetrievalResult | None = None
        ladder: list[dict[str, Any]] = []  # each rung tried, its score and what was wrong with it
        attempts = 1 + self.policy.regens_per_node
        for attempt in range(1, attempts + 1):
            result, problem = await self._attempt(task, goal, node_id, attempt, hints, queries, found)
            if result is not None and (best is None or result.retrieval_score > best.retrieval_score):
                best = result
            problem = problem or (self.policy.weak(result) if result is not None else "no result")
            score = result.retrieval_score if result is not None else None
            ladder.append({"rung": f"retrieval script {attempt}", "score": score, "problem": problem})
            if problem is None:
                assert result is not None
                result.signals["ladder"] = ladder
                return result
            if attempt == attempts or self.policy.regens_used >= self.policy.regens_per_run:
                break
            self.policy.regens_used += 1
            hints = [f"The previous script {problem}. Try other words for the task, or the goal: {goal}"]
            queries = [goal] if goal and goal != task else []
        # Tier B: a broadened direct search, merged with whatever the scripts found (the goal and what the
        # task asks beyond it; a stage's instruction around the goal asks nothing more).
        asked = stage_subject(task)
        direct = await self.fallback.retrieve(
            f"{goal} {asked}" if goal and goal != asked else asked, goal, node_id, found
        )
        merged = merge_context(best.context if best else [], direct.context)
        score, signals = retrieval_score(task, merged)
        added = len(direct.context)
        why = f"code mode fell short ({problem}); broadened direct search added {added} section(s)"
        queries = (best.queries if best else []) + direct.queries
        merged_result = RetrievalResult(
            merged, queries, "codemode+direct", signals, confidence=score, why=why, retrieval_score=score
        )
        rung = {"rung": "broadened direct search", "score": score, "added": added}
        signals["ladder"] = [*ladder, {**rung, "problem": self.policy.weak(merged_result)}]
        return merged_result

    async def hint(self, task: str, goal: str, node_id: str, hint: str) -> RetrievalResult:
        """A person's hint at a checkpoint: one more script written with it (beyond the per-run cap of
        regenerations: a person asked for it), then a direct search of the hint, merged."""
        hints = [f"A person reviewing this subtask says: {hint}"]
        result, _ = await self._attempt(task, goal, node_id, "hint", hints, [hint])
        direct = await self.fallback.hint(task, goal, node_id, hint)
        items = merge_context(result.context if result else [], direct.context)
        score, signals = retrieval_score(task, items)
        queries = (result.queries if result else []) + direct.queries
        why = f"script and direct search with the hint {hint[:80]!r}: {len(items)} section(s)"
        method = "codemode" if result and result.context else "direct"
        hinted = RetrievalResult(
            items, queries, method, signals, confidence=score, why=why, retrieval_score=score
        )
        signals["ladder"] = [
            {"rung": f"hint {hint[:60]!r}", "score": score, "problem": self.policy.weak(hinted)}
        ]
        return hinted

    async def _attempt(
        self,
        task: str,
        goal: str,
        node_id: str,
        attempt: int | str,
        hints: list[str],
        queries: list[str],
        findings: Findings | None = None,
    ) -> tuple[RetrievalResult | None, str | None]:
        found = findings or Findings()
        inputs: dict[str, Any] = {"task": task, "goal": goal, "api": self.api, "hints": queries}
        if found.answers:  # only then: the request (and its cache key) of a step on its own is unchanged
            inputs["findings"] = [text for _, text in found.answers]
        request = LLMRequest(
            "script",
            Tier.LEAF,
            f"Write a Python retrieval script for this subtask.\nGoal: {goal}\nSubtask: {task}\n"
            + found.prompt()
            + (f"Hints: {' '.join(hints)}\n" if hints else "")
            + f"\nThe obsidian API:\n{self.api}\nReply with the script only.",
            inputs=inputs,
            max_tokens=1200,
            node_id=node_id,
        )
        try:
            script = _strip_fences((await self.ask(node_id, request)).text)
        except ProviderError as exc:  # no usable script (empty, refused, malformed): the ladder goes on
            self.record(
                f"artifacts/scripts/{node_id}-{attempt}.json",
                {"error": {"kind": exc.kind, "message": exc.message}},
            )
            return None, f"got no usable script from the model ({exc.kind})"
        name = f"artifacts/scripts/{node_id}-{attempt}"
        self.record(f"{name}.py", script)
        try:
            outcome = await asyncio.to_thread(self.sandbox.run, script)
        except SandboxError as exc:
            info = {
                "error": {
                    "kind": exc.kind,
                    "type": getattr(exc, "type", type(exc).__name__),
                    "message": exc.message,
                },
                "stats": getattr(exc, "stats", {}),
            }
            self._audit(node_id, info["stats"])
            self.record(f"{name}.json", info)
            return None, f"failed ({exc.kind}: {exc.message})"
        self._audit(node_id, outcome.stats)
        result, dropped = self._validate(outcome.result, task)
        result = await asyncio.to_thread(self._follow_links, task, result, found.notes)
        self.record(
            f"{name}.json",
            {
                "result": outcome.result,
                "stdout": outcome.stdout[:20_000],
                "stats": outcome.stats,
                "dropped": dropped,
                "linked": result.signals.get("linked", []),
                "retrieval_score": result.retrieval_score,
            },
        )
        return result, None

    def _follow_links(
        self, task: str, result: RetrievalResult, first: tuple[tuple[str, str], ...] = ()
    ) -> RetrievalResult:
        """The second step of a two-step question is one link away from what the script found: when the
        task has words the script's context lacks, the engine adds the sections of the notes linked from
        or to its notes that match the task best (no model call; the script's own items stay first).
        ``first``: the notes the node's dependencies read, whose links are followed first; then the linked
        sections go before the script's items."""
        seeds = [*first, *((c.vault, c.path) for c in result.context)]
        linked = self.fallback.linked(
            task, seeds, result.context, most=LINKED_FROM + len(first), hop=bool(first)
        )
        if not linked:
            return result
        # A second step's own search did not know what the first found ("that developer"): the sections one
        # link from the first step's notes are the likelier answer and go first; otherwise the script's do.
        items = [*linked, *result.context] if first else [*result.context, *linked]
        items = items[: MAX_ITEMS + len(linked)]
        score, signals = retrieval_score(task, items)
        signals["script_signals"] = result.signals.get("script_signals", {})
        signals["linked"] = [c.citation for c in linked]
        if first:
            signals[REFERENTS] = signals["linked"]
        return RetrievalResult(
            items,
            [*result.queries, SCRIPT_LINKS_FOLLOWED],
            result.method,
            signals,
            confidence=result.confidence,
            why=f"{result.why}; the engine followed links to {len(linked)} more section(s)".lstrip("; "),
            retrieval_score=score,
        )

    def _audit(self, node_id: str, stats: dict[str, Any]) -> None:
        if self.audit is not None:
            for attempt in (stats.get("broker") or {}).get("external", []):
                self.audit(node_id, attempt)

    def _validate(self, raw: Any, task: str) -> tuple[RetrievalResult, list[dict[str, Any]]]:
        """Keep only context items that name a real note and quote it; the engine scores the rest."""
        data = raw if isinstance(raw, dict) else {}
        items_raw = data.get("context")
        if isinstance(items_raw, str):
            items_raw = [
                {"text": items_raw, **c} for c in data.get("citations", [])[:1] if isinstance(c, dict)
            ]
        items: list[ContextItem] = []
        dropped: list[dict[str, Any]] = []
        multi = len(self.vaults) > 1
        for item in items_raw if isinstance(items_raw, list) else []:
            if len(items) >= MAX_ITEMS or not isinstance(item, dict):
                continue
            text = str(item.get("text", ""))[:MAX_ITEM_CHARS].strip()
            vault_id, path = str(item.get("vault") or self.vaults.ids[0]), str(item.get("path", ""))
            heading = item.get("heading") if isinstance(item.get("heading"), str) else None
            reason, path = self._check(vault_id, path, text)
            if reason:
                dropped.append({"vault": vault_id, "path": path, "reason": reason})
                continue
            items.append(
                ContextItem(vault_id, path, heading, text, citation_link(vault_id, path, heading, multi))
            )
        queries = [str(q) for q in data.get("queries", []) if isinstance(q, (str, int, float))][:10]
        confidence = data.get("confidence")
        confidence = float(confidence) if isinstance(confidence, (int, float)) else 0.0
        score, signals = retrieval_score(task, items)  # against the task, not what the script says
        signals["script_signals"] = data.get("signals") if isinstance(data.get("signals"), dict) else {}
        return (
            RetrievalResult(
                items,
                queries,
                "codemode",
                signals,
                confidence=max(0.0, min(1.0, confidence)),
                why=str(data.get("why", ""))[:500],
                retrieval_score=score,
            ),
            dropped,
        )

    def _check(self, vault_id: str, path: str, text: str) -> tuple[str | None, str]:
        """Why the item cannot be cited (None: it can), and the note's path: a script may name a note as a
        link does ("Grind size"), and the citation is then to its full path."""
        if not text:
            return "empty text", path
        reason = self._uncitable(path)
        if reason:
            return reason, path
        try:
            note = self.vaults.get(vault_id).read_note(path)
        except Exception as exc:  # a name the script invented, or a path outside the vault
            return f"not a note of the vaults ({type(exc).__name__})", path
        path = note.path
        reason = self._uncitable(path)  # what a name led to
        if reason:
            return reason, path
        # A search hit's passage leads with the note's properties, as Obsidian shows them above the body
        # (the index leaves their web addresses out), and leaves out what a reader never sees (a comment
        # between two list items); a script may also quote the note as written. A hit's passage joins
        # passages of its note that need not be adjacent (the note's opening, then the section that
        # matched), one per line: the text's first characters are looked for line by line.
        made: list[str] = []  # the renderings made so far: the note as indexed only when needed
        pending = _renderings(note)

        def occurs(probe: str) -> bool:
            if any(probe in source for source in made):
                return True
            for source in pending:
                made.append(source)
                if probe in source:
                    return True
            return False

        # (a search hit's snippet is a window of its passage, marked "…" where it was cut)
        probes = _leading_lines(text.strip().strip("…").strip(), PROBE_CHARS)
        found = bool(probes) and all(occurs(probe) for probe in probes)
        return (None if found else "text does not occur in the cited note"), path

    def _uncitable(self, path: str) -> str | None:
        if not self.include_history and path.startswith(HISTORY_FOLDER + "/"):
            return "run history is not cited unless asked (--include-history)"
        if any(path.startswith(folder + "/") for folder in UNCITED_FOLDERS):
            return "Shad's working notes (reports, unreviewed learnings, scratch) are not sources"
        if is_conflict_copy(path):  # search leaves them out; a script may still read one by name
            return "a sync-conflict copy duplicates a real note and is never a source"
        return None


def _renderings(note: Note) -> Iterator[str]:
    """The note's text, whitespace squashed, as a script may quote it: as written, then as indexed;
    each led by its properties with and without their web addresses."""

    def led(body: str) -> Iterator[str]:
        for web in (True, False):
            yield _squash(properties_text(note.frontmatter, note.body, web=web) + "\n" + body)

    yield from led(note.body)
    yield from led(indexed_text(note.body))  # (only reached when the note as written did not do)


def _leading_lines(text: str, chars: int) -> list[str]:
    """The first ``chars`` characters of ``text`` (whitespace squashed), as the lines they are on."""
    lines: list[str] = []
    left = chars
    for line in text.splitlines():
        squashed = _squash(line)[:left]
        if squashed:
            lines.append(squashed)
            left -= len(squashed)
        if left <= 0:
            break
    return lines


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _strip_fences(text: str) -> str:
    match = re.search(r"```(?:python|py)?\s*\n(.*?)```", text, re.S)
    return match.group(1) if match else text
