"""What a leaf retrieves with: the retriever's own recovery ladder (regenerate the script, then a broadened
direct search), then tier C: if the result is still weak and the node is high-impact, a checkpoint opens
and the policy, a decider or a person's earlier decision says what happens. A resumed node finds its
checkpoint, and the retrieval judged there, in the history: the retrieval is not paid for twice.

``problem`` says whether the ladder ran out (H4, ``_exhausted``): the result is still weak after every
rung, and no person decided at its checkpoint (a person who approved, chose the notes or gave a hint took
that evidence). A resume with ``--hint`` adds the hint as one more rung for the nodes that had run out.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from .. import strategies
from ..codemode import Sandbox
from ..config import HISTORY_FOLDER, UNCITED_FOLDERS
from ..errors import ShadError
from ..events import CheckpointDecided, CheckpointOpened, ExternalCall, RetrievalMode
from ..llm import LLMRequest, LLMResponse
from ..retrieval import (
    CodeModeRetriever,
    ContextItem,
    DirectSearchRetriever,
    Findings,
    RecoveryPolicy,
    RetrievalResult,
    Retriever,
    citation_link,
    merge_context,
    retrieval_score,
    section,
)
from . import checkpoints as cp
from ._context import RunContext
from ._model_calls import ModelCalls
from .checkpoints import Checkpoint, Decision
from .dag import Node

__all__ = ["LeafRetrieval", "NeedsHuman", "SkippedByHuman"]

EDIT_NOTE_CHARS = 4000  # a note a person named is given more room than a search hit


def _takes_findings(retriever: Retriever) -> bool:
    """Whether ``retriever.retrieve`` takes ``findings``: a retriever of one's own (``start_run(...,
    retriever=)``) written for ``retrieve(task, goal, node_id)`` is called as it was written."""
    try:
        params = inspect.signature(retriever.retrieve).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it the old way
        return False
    return any(p.name == "findings" or p.kind is p.VAR_KEYWORD for p in params)


class NeedsHuman(ShadError):
    """The node waits for a decision at its checkpoint."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        super().__init__(f"node {checkpoint.node_id} waits for a person: {checkpoint.reason}")
        self.checkpoint = checkpoint


class SkippedByHuman(ShadError):
    """The checkpoint's decision was skip or stop: the node is pruned."""


class LeafRetrieval:
    """Retrieval for the leaves of one run, gated by human checkpoints."""

    def __init__(self, ctx: RunContext, calls: ModelCalls, retriever: Retriever | None = None) -> None:
        self.ctx = ctx
        self.calls = calls
        self._given = retriever is not None
        self.retriever: Retriever = retriever or DirectSearchRetriever(
            ctx.vaults, include_history=ctx.config.include_history
        )
        self.sandbox: Sandbox | None = None
        self._ask_lock = asyncio.Lock()  # one question to a person at a time, whatever runs in parallel
        self.accepted: set[str] = set()  # nodes whose evidence a person accepted, weak or not

    def problem(self, node: Node, result: RetrievalResult) -> str | None:
        """Why the node's retrieval ran out of rungs, or None: it is still weak after a ladder that had
        more than one rung (with ``--no-code-mode`` one search is all there is: no retry ran out), and no
        person decided at its checkpoint."""
        if node.id in self.accepted or len(result.signals.get("ladder") or []) < 2:
            return None
        return RecoveryPolicy().weak(result)

    def open(self) -> None:
        """Code Mode (model-written scripts in the sandbox) unless turned off or impossible here; called
        once the vaults are open."""
        ctx = self.ctx
        if self._given:
            return
        if not ctx.config.code_mode:
            ctx.emit(RetrievalMode(mode="direct", reason="--no-code-mode"))
            return
        try:
            exclude = UNCITED_FOLDERS + (() if ctx.config.include_history else (HISTORY_FOLDER,))
            config = ctx.config
            self.sandbox = Sandbox(
                ctx.vaults,
                profile=config.profile,
                fs_read=config.fs_read,
                net_allow=() if config.offline else config.net_allow,
                exclude=exclude,
            )
        except ShadError as exc:
            ctx.emit(RetrievalMode(mode="direct", reason=f"sandbox unavailable: {exc.message}"))
            return
        ctx.emit(RetrievalMode(mode="codemode", isolation=self.sandbox.isolation))
        self.retriever = CodeModeRetriever(
            ctx.vaults,
            self.sandbox,
            self._ask,
            ctx.record,
            include_history=ctx.config.include_history,
            audit=self._audit,
        )

    def _audit(self, node_id: str, attempt: dict[str, Any]) -> None:
        self.ctx.emit(
            ExternalCall(
                node=node_id,
                kind=str(attempt.get("kind", "")),
                target=str(attempt.get("target", "")),
                allowed=bool(attempt.get("allowed")),
                reason=attempt.get("reason"),
            )
        )

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()

    async def _ask(self, node_id: str, request: LLMRequest) -> LLMResponse:
        return await self.calls.call(self.ctx.run.dag.node(node_id), request)

    async def retrieve(self, node: Node, findings: Findings | None = None) -> RetrievalResult:
        """``findings``: what the node's finished dependencies found (their answers, their notes)."""
        ctx = self.ctx
        history = ctx.history
        found = cp.load(history, node.id)
        if found is not None and node.id in ctx.state.fresh:  # replayed on purpose: judge a new retrieval
            history.write_json(
                f"{cp.FOLDER}/replaced/{node.id}.json", history.read_json(f"{cp.FOLDER}/{node.id}.json")
            )
            (history.dir / cp.FOLDER / f"{node.id}.json").unlink()
            found = None
        saved = found[1] if found is not None else None
        if found is not None and saved is not None:
            checkpoint, result = found[0], RetrievalResult.from_dict(saved)
        else:
            async with ctx.local:
                task, goal = cp.strip_markers(node.task), cp.strip_markers(ctx.config.goal)
                if findings and _takes_findings(self.retriever):
                    result = await self.retriever.retrieve(task, goal, node.id, findings=findings)
                else:
                    result = await self.retriever.retrieve(task, goal, node.id)
            hint = ctx.state.retry_hint
            if hint and node.id in ctx.state.retry and RecoveryPolicy().weak(result):
                result = await self._hinted(node, hint, result)  # resume --hint: one more rung
            opened = self._open_checkpoint(node, result)
            if opened is None:
                return result
            checkpoint = opened
        decision = checkpoint.decision or await self._decision_for(checkpoint)
        if decision is None:
            raise NeedsHuman(checkpoint)
        if checkpoint.decision is None:
            checkpoint.decision = decision
            cp.save(history, checkpoint)
            ctx.emit(
                CheckpointDecided(node=node.id, action=decision.action, by=decision.by, text=decision.text)
            )
        return await self._apply(node, checkpoint, result)

    def _open_checkpoint(self, node: Node, result: RetrievalResult) -> Checkpoint | None:
        ctx = self.ctx
        if ctx.config.checkpoints == "off":
            return None
        asked = self._asked(node)
        problem = RecoveryPolicy().weak(result)
        impact = cp.high_impact(node, ctx.run.dag) if problem else None
        if asked is not None:  # a person asked to see this evidence, weak or not
            problem, impact = problem or "a person asked to review this evidence", asked
        elif problem is None or impact is None:
            return None
        signals = {k: v for k, v in result.signals.items() if k not in ("script_signals", "ladder")}
        reason = (
            f"{asked}: review the evidence before it is answered ({result.method})"
            if asked is not None
            else f"retrieval stayed weak after the recovery ladder ({result.method}): {problem}"
        )
        checkpoint = Checkpoint(
            ctx.run_id,
            node.id,
            "review" if asked is not None else "retrieval",
            node.task,
            reason,
            impact,
            {"retrieval_score": result.retrieval_score, "confidence": result.confidence, **signals},
            cp.preview([c.to_dict() for c in result.context]),
            list(result.queries),
        )
        cp.save(ctx.history, checkpoint, result.to_dict())
        ctx.emit(CheckpointOpened(node=node.id, reason=checkpoint.reason, impact=impact))
        return checkpoint

    def _asked(self, node: Node) -> str | None:
        ctx = self.ctx
        primary = None
        if ctx.run.strategy:
            try:
                primary = strategies.get(ctx.run.strategy).primary.name
            except ShadError:
                primary = None
        return cp.requested(node, ctx.run.dag, ctx.config.goal, ctx.config.checkpoint_on, primary)

    async def _decision_for(self, checkpoint: Checkpoint) -> Decision | None:
        """The policy's decision, the decider's, or None (the node waits)."""
        others = [c for c in cp.load_all(self.ctx.history) if c.node_id != checkpoint.node_id]
        asked = sum(1 for c in others if c.decision is None or c.decision.by != "cap")
        if asked >= cp.MAX_PER_RUN:  # later ones are approved and listed for review at the end
            return Decision("approve", f"over the cap of {cp.MAX_PER_RUN} checkpoints per run", by="cap")
        policy, decider = self.ctx.config.checkpoints, self.ctx.decider
        if policy in ("approve", "skip"):
            return Decision(policy, by="policy")
        if policy == "ask" and decider is not None:
            async with self._ask_lock:
                return await decider(checkpoint)
        return None

    async def _apply(self, node: Node, checkpoint: Checkpoint, result: RetrievalResult) -> RetrievalResult:
        ctx, decision = self.ctx, checkpoint.decision
        assert decision is not None
        if decision.by == "human":  # a person took this evidence, chose it or steered it: not a failure
            self.accepted.add(node.id)
        who = {"human": "a person", "policy": f"the {ctx.config.checkpoints} policy", "cap": "the cap"}
        node.note = f"checkpoint: {decision.action} by {who.get(decision.by, decision.by)}"
        if decision.action == "approve":
            return result
        if decision.action == "skip":
            ctx.state.skipped_by_human.add(node.id)
            raise SkippedByHuman(f"skipped at its checkpoint by {who.get(decision.by, decision.by)}")
        if decision.action == "stop":
            # The stop ends this session only: a resume asks again rather than stopping again.
            checkpoint.decision = None
            cp.save(ctx.history, checkpoint)
            ctx.state.stop_reason = f"stopped at the checkpoint of node {node.id} by a person"
            raise SkippedByHuman(ctx.state.stop_reason)
        if decision.action == "edit":
            return await asyncio.to_thread(self._edited, node, decision.text)
        return await self._hinted(node, decision.text, result)

    def _edited(self, node: Node, text: str) -> RetrievalResult:
        """The notes a person named become the node's whole context."""
        vaults = self.ctx.vaults
        multi = len(vaults) > 1
        items = []
        for ref in cp.check_edit(text, vaults):
            note = vaults.get(ref.vault).read_note(ref.path)
            body = section(note, ref.heading, "") if ref.heading else note.body[:EDIT_NOTE_CHARS].strip()
            items.append(
                ContextItem(
                    ref.vault,
                    ref.path,
                    ref.heading,
                    body,
                    citation_link(ref.vault, ref.path, ref.heading, multi),
                )
            )
        score, signals = retrieval_score(node.task, items)
        why = f"a person chose {len(items)} note(s) at the checkpoint"
        return RetrievalResult(items, [], "human", signals, confidence=1.0, why=why, retrieval_score=score)

    async def _hinted(self, node: Node, hint: str, before: RetrievalResult) -> RetrievalResult:
        """One more retrieval round with the person's hint; what it finds comes first, then the rest."""
        ctx = self.ctx
        retrieve_with_hint: Any = getattr(self.retriever, "hint", None)
        async with ctx.local:
            if retrieve_with_hint is not None:
                found: RetrievalResult = await retrieve_with_hint(node.task, ctx.config.goal, node.id, hint)
            else:
                direct = DirectSearchRetriever(ctx.vaults, include_history=ctx.config.include_history)
                found = await direct.hint(node.task, ctx.config.goal, node.id, hint)
        merged = merge_context(found.context, before.context)
        score, signals = retrieval_score(node.task, merged)
        why = f"a person's hint ({hint[:80]!r}) found {len(found.context)} section(s)"
        queries = found.queries + before.queries
        method = f"{found.method}+hint"
        hinted = RetrievalResult(
            merged, queries, method, signals, confidence=score, why=why, retrieval_score=score
        )
        earlier = list(
            before.signals.get("ladder") or [{"rung": before.method, "score": before.retrieval_score}]
        )
        rung = {"rung": f"hint {hint[:60]!r}", "score": score, "problem": RecoveryPolicy().weak(hinted)}
        signals["ladder"] = [*earlier, rung]
        return hinted
