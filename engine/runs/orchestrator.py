"""One run, top to bottom: open the vaults, choose a strategy, decide whether to decompose, run the DAG
(retrieve -> answer -> verify at the leaves, synthesize at the parents), then write the cited report.

The orchestrator takes the run's context (``_context.RunContext``: config, run and history, provider,
store, ledger, cache, vaults, event sink) and hands it to its collaborators: ``Planner`` (strategy and
subtasks), ``ModelCalls`` (every model call, within the budgets), ``CacheSteps`` (never paying twice),
``LeafRetrieval`` (the recovery ladder and human checkpoints), ``adopt`` (resume), ``finish_run``
(the report) and ``apply_voice`` (``--voice``). Every model call's system prompt carries the guidance of
the skills its node routes to (``ctx.system_prompt``, ``_skills_step``). Everything a run does is an
event in ``events.jsonl``. A failing node fails alone: its parent synthesizes what its other children
found, and the report lists the failure. A leaf whose retrieval stays weak after the whole ladder ends
FAILED_WITH_DIAGNOSTIC with its best answer, flagged (``_exhausted``: the max-iteration policy).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from ..errors import ShadError
from ..events import (
    NodeFinished,
    NodeNeedsHuman,
    NodeRetrieved,
    NodeStarted,
    RunError,
    RunResumed,
    StoreUnavailable,
)
from ..llm import LLMRequest, Tier
from ..prompts import render
from ..retrieval import REFERENTS, Findings, RetrievalResult, Retriever
from ..store import StoreUnavailableError
from ..text import section_heading
from ._cache_steps import CacheSteps
from ._context import RunContext, failure
from ._curating import garden, learn
from ._exhausted import event as exhausted_event
from ._exhausted import mark, retrieval_diagnostic, usable
from ._leaf_retrieval import LeafRetrieval, NeedsHuman, SkippedByHuman
from ._model_calls import BudgetExhausted, ModelCalls
from ._novelty import Novelty, RedundantNode
from ._planning import Planner
from ._report import finish_run
from ._resume_plan import adopt, replayed
from ._run import Run
from ._software import SoftwareBuild
from ._verify import check_root, verify_citations
from ._voice_step import apply_voice
from .dag import Node, NodeStatus

__all__ = ["Orchestrator"]


class Orchestrator:
    """Carries one run (its context) from the first step to the report."""

    def __init__(self, ctx: RunContext, *, retriever: Retriever | None = None) -> None:
        self.ctx = ctx
        self.calls = ModelCalls(ctx)
        self.cache = CacheSteps(ctx)
        self.planner = Planner(ctx, self.calls, self.cache)
        self.retrieval = LeafRetrieval(ctx, self.calls, retriever)
        self.software = SoftwareBuild(ctx, self.calls, self.cache)
        self.novelty = Novelty(ctx.run)  # E10: a leaf whose passages others hold already is pruned

    # --- the run -------------------------------------------------------------------------------------

    async def execute(self) -> Run:
        """Run the goal; a resumed context continues its stopped run in the same history: finished nodes
        are kept, everything else (and every parent above it) runs again within what is left."""
        ctx, run = self.ctx, self.ctx.run
        try:
            try:
                # Started with the context (``open_context``); a context made without it refreshes here.
                await (ctx.refreshing or asyncio.to_thread(ctx.vaults.refresh))
                await asyncio.to_thread(self.retrieval.open)
                previous = ctx.resumed
                if previous is not None and any(  # a node whose retries ran out is progress too
                    n.status.ok
                    or n.status is NodeStatus.FAILED_WITH_DIAGNOSTIC
                    or previous.dag.children(n.id)
                    for n in previous.dag
                ):
                    adopt(ctx, previous)
                else:  # nothing finished and no plan made: plan again (a plan that was made is in the cache)
                    if previous is not None:
                        ctx.emit(RunResumed(kept=[], rerun=[], replanned=True, replay=ctx.replay))
                    await self.planner.plan()
                    if previous is not None:
                        ctx.state.fresh = replayed(ctx.replay, run.dag)
                await self._run_dag()
                await self.software.finish()
                await garden(ctx)
                await learn(ctx)
            except asyncio.CancelledError:
                ctx.state.stop_reason = "interrupted"
                ctx.prune_unstarted("run interrupted")
                await asyncio.shield(asyncio.to_thread(finish_run, ctx, self.calls.tokens_spent()))
                raise
            except BudgetExhausted as exc:  # too little left even to plan: stopped, resumable with more
                self.calls.stop(exc.message)
            except Exception as exc:  # a run always ends with a report, whatever broke
                run.failures.append(failure("run", "run", exc))
                ctx.emit(RunError(error=type(exc).__name__, message=str(exc)))
            await asyncio.to_thread(finish_run, ctx, self.calls.tokens_spent())
            await apply_voice(ctx, self.calls)  # --voice: the written report's wording, checked
        finally:
            self.retrieval.close()
            await ctx.close()
        return run

    # --- the DAG -------------------------------------------------------------------------------------

    async def _run_dag(self) -> None:
        dag, running = self.ctx.run.dag, set[asyncio.Task[None]]()
        while True:
            self.calls.check_clock()
            for node in dag.ready():
                if self.ctx.state.stop_reason and not dag.children(node.id):
                    self.ctx.prune(node, self.ctx.state.stop_reason)
                    continue
                node.status = NodeStatus.STARTED
                running.add(asyncio.create_task(self._run_tracked(node), name=node.id))
            if not running:
                if not dag.ready():
                    return
                continue
            done, running = await asyncio.wait(running, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # node errors are caught inside; anything else is a bug and should surface

    async def _run_tracked(self, node: Node) -> None:
        try:
            await self._run_node(node)
        finally:  # however it ended, a sibling waiting to judge its own novelty goes on
            self.novelty.finished(node)

    async def _run_node(self, node: Node) -> None:
        ctx, state = self.ctx, self.ctx.state
        node.started_at, node.diagnostic = time.time(), {}
        ctx.emit(NodeStarted(node=node.id, task=node.task))
        phase = "synthesize" if ctx.run.dag.children(node.id) else "retrieve"
        state.phase[node.id] = phase
        if phase == "retrieve" and await self.planner.split_further(node):
            return  # it has children now: it runs again, to synthesize them, once they have finished
        calls_mark = ctx.provider.mark()
        try:
            hit = await (self._synthesize(node) if phase == "synthesize" else self._answer_leaf(node))
            # What dependents read, set before the status says "done" (the await below lets them run).
            node.packet = {"summary": node.answer[:400], "keywords": node.retrieval.get("queries", [])}
            if node.diagnostic:  # its retries ran out: the answer is kept, flagged, and never cached
                mark(ctx, node, node.diagnostic, emit=False)
            else:
                node.status = NodeStatus.CACHE_HIT if hit else NodeStatus.SUCCEEDED
            if not hit:
                state.reexecuted += node.id in state.previous_ok
            if not hit and not node.diagnostic:
                # On the loop, before anything else runs: once the model slot is free another call
                # may start, and a kill then must not lose an answer that was already paid for.
                self.cache.save_result(node, calls_mark)
            await self.software.after_node(node)  # a software run's code step (nothing for other runs)
        except BudgetExhausted as exc:
            state.stop_reason = exc.message
            ctx.prune(node, exc.message)
            return
        except NeedsHuman as exc:  # it waits at its checkpoint; whatever does not need it goes on
            node.status, node.note = NodeStatus.NEEDS_HUMAN, exc.checkpoint.reason
            c = exc.checkpoint
            ctx.emit(
                NodeNeedsHuman(
                    node=node.id, kind=c.kind, task=c.task, reason=c.reason, impact=c.impact,
                    signals=c.signals, context=c.context, queries=c.queries, options=c.options,
                )
            )  # fmt: skip
            ctx.save_dag(force=True)
            return
        except SkippedByHuman as exc:
            ctx.prune(node, exc.message)
            return
        except RedundantNode as exc:  # pruned by novelty: done, not missing (its holders answered)
            if node.diagnostic:  # its retrieval stayed weak too: what it found nowhere is kept for coverage
                missing = node.diagnostic.get("failure_report", {}).get("missing_words", [])
                node.retrieval["weak"] = {"reason": node.diagnostic["reason"], "missing_words": missing}
            node.redundant_with, node.diagnostic, node.answer = exc.holders, {}, ""
            ctx.prune(node, exc.message)
            ctx.history.append("metrics/nodes.jsonl", ctx.run.node_metrics(node))
            ctx.save_dag()
            return
        except StoreUnavailableError as exc:  # the shared store is gone: stop cleanly, resumable later
            state.stop_reason = f"the cache and ledger store is unavailable: {exc.message}"
            ctx.emit(StoreUnavailable(node=node.id, message=exc.message))
            if not node.status.ok:  # a result already made (only its caching failed) is kept
                ctx.prune(node, state.stop_reason)
                return
        except Exception as exc:  # one node failing must not end the run
            node.status = NodeStatus.FAILED
            node.error = failure(node.id, state.phase.get(node.id, phase), exc)
            ctx.run.failures.append(node.error)
            ctx.history.write_json(f"errors/{node.id}.json", node.error)
        node.finished_at = time.time()
        ctx.history.append("metrics/nodes.jsonl", ctx.run.node_metrics(node))
        hit = node.status is NodeStatus.CACHE_HIT
        ctx.emit(
            exhausted_event(node)
            if node.status is NodeStatus.FAILED_WITH_DIAGNOSTIC
            else NodeFinished(
                node=node.id,
                tokens=node.tokens,
                duration_ms=node.duration_ms,
                error=(node.error or {}).get("message"),
                key=node.cache_key if hit else None,
                status=node.status.value,
            )
        )
        ctx.save_dag()

    # --- leaves and parents --------------------------------------------------------------------------

    async def _answer_leaf(self, node: Node) -> bool:
        """Retrieve, answer, verify; returns True when the cache answered instead."""
        ctx, dag = self.ctx, self.ctx.run.dag
        deps = [dag.node(d) for d in node.soft_deps + node.hard_deps if d in dag]
        done = [dep for dep in deps if dep.status.ok]
        packets = [dep.packet | {"node_id": dep.id} for dep in done]
        node.cache_key = self.cache.key(node, "answer", _tier(node).value, {"packets": packets})
        if await self.cache.answer_from_cache(node):
            await self._prune_if_redundant(node)  # judged as when it ran, so a re-run prunes the same
            return True
        # A step that builds on another of its own stage (a two-step question: "in *that* protocol, ...")
        # retrieves knowing what that one found; stages of a strategy (frame, gather, analyze) build on
        # each other's work, not on what it names, and their retrieval stays their own.
        # A dependency whose retrieval stayed weak still answered from the best it found: still the lead.
        hops = [
            dep
            for dep in deps
            if dep.stage == node.stage
            and dep.answer
            and (dep.status.ok or dep.status is NodeStatus.FAILED_WITH_DIAGNOSTIC)
        ]
        found = Findings.of((dep.id, dep.answer or "", dep.retrieval or {}) for dep in hops)
        result: RetrievalResult = await self.retrieval.retrieve(node, found)  # tier C may ask a person
        context_dicts = [c.to_dict() for c in result.context]
        notes = ctx.cache.notes_used(context_dicts)  # index lookups by path: cheap, no thread hop
        # The result's other fields as ``to_dict`` gives them, without converting the context twice.
        rest = replace(result, context=[]).to_dict() | {"citations": result.citations}
        node.retrieval = {**rest, "context": context_dicts, "notes": [list(n) for n in notes]}
        ctx.emit(NodeRetrieved(node=node.id, items=len(result.context), score=result.retrieval_score))
        problem = self.retrieval.problem(node, result)
        if problem:  # every rung tried: it answers from the best context found, and says it ran out
            node.diagnostic = retrieval_diagnostic(ctx, node, result, problem)
        if not result.context:
            node.answer = "The vault holds nothing relevant to this subtask."
            node.note = "; ".join(filter(None, [node.note, "no relevant notes found; no model call made"]))
            return False
        await self._prune_if_redundant(node)  # E10: passages a sibling or a dependency holds add nothing
        ctx.state.phase[node.id] = "answer"
        goal = ctx.config.goal
        context = "\n\n".join(f"{c.text}\n{c.citation}" for c in result.context)
        findings = "\n".join(f"- from {p['node_id']}: {p['summary']}" for p in packets)
        request = LLMRequest(
            "answer",
            _tier(node),
            render(
                "answer",
                goal=goal,
                task=node.task,
                context=context,
                packets=f"\nFindings of related subtasks:\n{findings}\n" if findings else "",
            ),
            system=ctx.system_prompt(node),
            node_id=node.id,
            max_tokens=900,
            inputs={
                "task": node.task,
                "goal": goal,
                "packets": packets,
                "context": context_dicts,
                REFERENTS: result.signals.get(REFERENTS, []),
            },
        )
        node.answer = (await self.calls.call(node, request)).text.strip()
        ctx.state.phase[node.id] = "verify"
        verify_citations(ctx, node)
        if node.depth == 0:  # the report's answer: repeats, conflicts and support checked, then cached
            await check_root(ctx, self.calls, node)
        return False

    async def _prune_if_redundant(self, node: Node) -> None:
        """Raise ``RedundantNode`` when finished siblings or dependencies hold all ``node`` retrieved."""
        if node.parent is not None and node.retrieval.get("context"):
            holders = await self.novelty.redundant_with(node)
            if holders:
                raise RedundantNode(holders)

    async def _synthesize(self, node: Node) -> bool:
        """Merge the children's answers; returns True when the cache answered instead."""
        ctx = self.ctx
        # A subtask whose retries ran out still gives its best answer, marked as resting on weak evidence.
        children = [c for c in ctx.run.dag.children(node.id) if usable(c) and c.answer]
        if not children:
            if ctx.state.stop_reason:  # the budget (or the time) stopped them: stopped too, resumable
                raise BudgetExhausted(ctx.state.stop_reason, hint="resume with a larger budget")
            raise ShadError("every subtask failed or was pruned: nothing to synthesize")
        goal = ctx.config.goal
        # A section's heading is the subtask's own words: a task that repeats the goal ("Define the key
        # terms and scope of: <goal>") would make a model repeat the goal above every section.
        items = [
            {
                "node_id": c.id,
                "task": c.task,
                "heading": section_heading(c.task, goal, c.id),
                "answer": c.answer,
                "citations": c.citations,
            }
            | ({"weak": c.diagnostic.get("reason", "")} if c.diagnostic else {})
            for c in children
        ]
        notes = {tuple(n) for c in children for n in c.retrieval.get("notes", [])}
        node.retrieval = {"notes": sorted([list(n) for n in notes])}
        tier = (Tier.ORCHESTRATOR if node.depth == 0 else Tier.WORKER).value
        node.cache_key = self.cache.key(node, "synthesize", tier, {"children": items})
        if await self.cache.answer_from_cache(node):
            return True
        text = "\n\n".join(
            f"## {c['heading']}"
            + (" (weak evidence: its retrieval stayed weak)" if c.get("weak") else "")
            + f"\n{c['answer']}"
            for c in items
        )
        request = LLMRequest(
            "synthesize",
            Tier(tier),
            render("synthesize", goal=goal, task=node.task, children=text),
            system=ctx.system_prompt(node),
            inputs={"goal": goal, "task": node.task, "children": items},
            node_id=node.id,
            max_tokens=1800,
        )
        node.answer = (await self.calls.call(node, request, synthesis=True)).text.strip()
        verify_citations(ctx, node)
        if node.depth == 0:  # the report's answer: repeats, conflicts and support checked, then cached
            await check_root(ctx, self.calls, node)
        return False


def _has_progress(previous: Run) -> bool:
    """Did the stopped run finish a node or plan subtasks? Then a resume takes its DAG over."""
    return any(n.status.ok or previous.dag.children(n.id) for n in previous.dag)


def _tier(node: Node) -> Tier:
    """Degrade by depth: the root answers with the worker tier, deeper nodes with the leaf tier."""
    return Tier.WORKER if node.depth <= 1 else Tier.LEAF
