"""One run, top to bottom: open the vaults, choose a strategy, decide whether to decompose, run the DAG
(retrieve -> answer -> verify at the leaves, synthesize at the parents), then write the cited report.

Everything a run does is an event in ``events.jsonl``; every model call goes through ``_call``, which
checks the budget before and charges the provider's reported usage after. A failing node fails alone:
its parent synthesizes what its other children found, and the report lists the failure.
"""

from __future__ import annotations

import asyncio
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

from .. import strategies
from ..codemode import Sandbox
from ..config import RunConfig
from ..errors import ShadError
from ..llm import LLMRequest, LLMResponse, Provider, ProviderError, Recorder, Tier, default_provider_name
from ..llm import get as get_provider
from ..prompts import render
from ..retrieval import citations as cite
from ..retrieval._codemode import CodeModeRetriever
from ..retrieval._direct import DirectSearchRetriever, RetrievalResult, Retriever
from ..retrieval.synthesis import detect_conflicts, render_conflicts
from ..store import Store, StoreUnavailableError, open_store
from ..store.history import HISTORY_FOLDER, History, find_run, new_run_id
from ..vault import VaultSet
from ._cache_steps import CachedSteps
from ._checkpoint_steps import CheckpointSteps, Decider, NeedsHuman, SkippedByHuman
from ._model_calls import BudgetExhausted, ModelCalls
from ._report import finish_run
from ._resume_plan import plan_resume, replayed
from ._run import Run, RunStatus
from .budget import Envelope, Ledger, child_envelopes
from .cache import NodeCache
from .dag import Node, NodeStatus
from .scheduler import AdaptiveLimiter

__all__ = ["BudgetExhausted", "Orchestrator"]

EventSink = Callable[[dict[str, Any]], None]
MIN_CALL_TOKENS = 200  # below this, a call cannot do useful work: the budget counts as spent
DAG_SAVE_INTERVAL = 0.25  # seconds between dag.json checkpoints
FREE_PROVIDERS = frozenset({"offline", "replay", "stub"})  # no money changes hands


class Orchestrator(CachedSteps, CheckpointSteps, ModelCalls):
    def __init__(
        self,
        config: RunConfig,
        *,
        provider: Provider | None = None,
        ledger: Ledger | None = None,
        store: Store | None = None,
        retriever: Retriever | None = None,
        on_event: EventSink | None = None,
        run_id: str | None = None,
        replay: str | None = None,
        decider: Decider | None = None,
    ) -> None:
        self.config = config
        self.decider = decider  # answers checkpoints under the "ask" policy (a prompt, a widget)
        self.skipped_by_human: set[str] = set()
        self._ledger = ledger
        self._store = store
        self.replay = replay  # resume: which nodes to run again regardless (NODE | subtree:NODE | stale)
        self._provider = provider
        self._retriever = retriever
        self.on_event = on_event
        self.run_id = run_id or new_run_id()
        self.llm = AdaptiveLimiter(
            min(config.max_llm, config.max_parallel), adaptive=config.concurrency_mode == "adaptive"
        )
        self.local = asyncio.Semaphore(config.max_parallel)
        self.stop_reason: str | None = None
        self.started = time.monotonic()
        self.envelopes: dict[str, Envelope] = {}
        self.sandbox: Sandbox | None = None
        self.spent_before = 0  # tokens earlier sessions of this run spent (resume)
        self.phase: dict[str, str] = {}
        self.cost_usd = 0.0
        self.cost_known = True
        self.fresh: set[str] = set()  # nodes that must not be answered from the cache
        self.previous_ok: set[str] = set()  # nodes a resumed run had finished before
        self.reexecuted = 0
        self.stale_nodes = 0
        self._dag_saved = -DAG_SAVE_INTERVAL

    # --- the run -------------------------------------------------------------------------------------

    async def execute(self, resume: Run | None = None) -> Run:
        """Run the goal; with ``resume``, continue that run in its own history: finished nodes are kept,
        everything else (and every parent above it) runs again within what is left of the budget."""
        # The provider first: an unknown one must fail before a run folder exists.
        provider = self._provider or self._make_provider()
        if self._store is not None:
            self.store = self._store
        else:
            url = self.config.store_url or os.environ.get("SHAD_STORE") or None
            self.store = await asyncio.to_thread(open_store, url)
        self.ledger: Ledger = self._ledger if self._ledger is not None else self.store
        if resume is None:
            history = History.create(self.run_id, self.config.vaults[0], self.config.history_dir)
        else:
            history, self.run_id = resume.history, resume.id
        self.provider = Recorder(provider)
        self.run = run = Run(self.run_id, self.config, history, provider_name=self.provider.name)
        run.status = RunStatus.RUNNING
        history.write_json("run.manifest.json", run.manifest())
        await asyncio.to_thread(self._open_ledger, resume)
        if resume is None:
            self.event(
                "RUN_STARTED",
                goal=self.config.goal,
                provider=self.provider.name,
                budgets=self.config.budgets.__dict__,
            )
        try:
            self.vaults = await asyncio.to_thread(self._open_vaults)
            self.cache = NodeCache(
                self.store,
                self.vaults,
                run_id=self.run_id,
                enabled=self.config.use_cache and self.config.provider != "replay",
                refresh=self.config.refresh_cache,
                vault_ttls=self.config.cache_ttls,
            )
            self.retriever: Retriever = (
                self._retriever
                if self._retriever is not None
                else await asyncio.to_thread(self._make_retriever)
            )
            if resume is not None and any(n.status.ok or resume.dag.children(n.id) for n in resume.dag):
                self._adopt(resume)
            else:  # nothing finished and no plan made: plan again (a plan that was made is in the cache)
                if resume is not None:
                    self.event("RUN_RESUMED", kept=[], rerun=[], replanned=True, replay=self.replay)
                await self._plan()
                if resume is not None:
                    self.fresh = replayed(self.replay, self.run.dag)
            await self._run_dag()
        except asyncio.CancelledError:
            self.stop_reason = "interrupted"
            self._prune_unstarted("run interrupted")
            await asyncio.shield(asyncio.to_thread(finish_run, self))
            if self.sandbox is not None:
                self.sandbox.close()
            raise
        except Exception as exc:  # a run always ends with a report, whatever broke
            run.failures.append(_failure("run", "run", exc))
            self.event("RUN_ERROR", error=type(exc).__name__, message=str(exc))
        await asyncio.to_thread(finish_run, self)
        await self.provider.aclose()
        if self.sandbox is not None:
            self.sandbox.close()
        if self._store is None:
            self.store.close()
        return run

    def _make_provider(self) -> Provider:
        name = self.config.provider or default_provider_name()
        if name == "replay" and self.config.replay_from:
            return get_provider(name, path=str(find_run(self.config.replay_from).dir))
        return get_provider(name)

    def _open_ledger(self, resume: Run | None) -> None:
        """A shared ledger remembers what earlier sessions of the run spent; a fresh in-process one is
        told from the stopped run's summary."""
        total = self.config.budgets.max_tokens
        summarized = int(resume.summary.get("metrics", {}).get("total_tokens", 0)) if resume else 0
        self.spent_before = max(0, summarized - self.ledger.spent(self.run_id)) if resume else 0
        self.ledger.open(self.run_id, total - self.spent_before)
        if resume is not None and (resume.history.dir / "replay" / "manifest.json").exists():
            calls = resume.history.read_json("replay/manifest.json").get("calls", [])
            self.provider.adopt(calls, origin="earlier session")

    def _adopt(self, previous: Run) -> None:
        """Take over a stopped run's DAG: trust finished nodes whose notes are unchanged, re-verify or
        re-run the stale ones, run what did not finish (and the parents above it)."""
        dag, self.run.dag = previous.dag, previous.dag
        self.run.strategy = previous.strategy
        self.previous_ok = {n.id for n in dag if n.status.ok}
        plan = plan_resume(dag, self.cache, self.replay)
        self.fresh, self.stale_nodes = set(plan.fresh), len(plan.stale)
        for node_id in plan.reverified:
            self.event("NODE_REVERIFIED", node=node_id)
        root = dag.root()
        total = self.ledger.remaining(self.run_id)
        self.envelopes[root.id] = (Envelope.for_parent if dag.children(root.id) else Envelope.for_leaf)(total)
        self.event("RUN_RESUMED", **plan.to_dict(), replay=self.replay, budget_left=total)
        self._save_dag(force=True)

    def _make_retriever(self) -> Retriever:
        """Code Mode (model-written scripts in the sandbox) unless turned off or impossible here."""
        direct = DirectSearchRetriever(self.vaults, include_history=self.config.include_history)
        if not self.config.code_mode:
            self.event("RETRIEVAL_MODE", mode="direct", reason="--no-code-mode")
            return direct
        try:
            exclude = () if self.config.include_history else (HISTORY_FOLDER,)
            self.sandbox = Sandbox(self.vaults, profile=self.config.profile, exclude=exclude)
        except ShadError as exc:
            self.event("RETRIEVAL_MODE", mode="direct", reason=f"sandbox unavailable: {exc.message}")
            return direct
        self.event("RETRIEVAL_MODE", mode="codemode", isolation=self.sandbox.isolation)
        return CodeModeRetriever(
            self.vaults, self.sandbox, self._ask, self._record, include_history=self.config.include_history
        )

    async def _ask(self, node_id: str, request: LLMRequest) -> LLMResponse:
        return await self._call(self.run.dag.node(node_id), request)

    def _record(self, rel: str, data: Any) -> None:
        if isinstance(data, str):
            self.run.history.write_text(rel, data)
        else:
            self.run.history.write_json(rel, data)

    def _open_vaults(self) -> VaultSet:
        vaults = VaultSet(list(self.config.vaults), include_history=self.config.include_history)
        for v in vaults:
            v.refresh()
        return vaults

    # --- planning ------------------------------------------------------------------------------------

    async def _plan(self) -> None:
        goal, budgets, dag = self.config.goal, self.config.budgets, self.run.dag
        decision = strategies.choose_strategy(goal, self.config.strategy)
        self.run.strategy = decision.strategy
        self.run.history.write_json("decisions/strategy.json", decision.to_dict())
        self.event("STRATEGY_CHOSEN", **decision.to_dict())
        decompose, reason = strategies.needs_decomposition(goal)
        if budgets.max_depth < 2 or budgets.max_nodes < 2:
            decompose, reason = False, "the budget allows a single node only (max_depth or max_nodes is 1)"
        self.run.history.write_json(
            "decisions/decomposition.json", {"decompose": decompose, "reason": reason}
        )
        self.event("DECOMPOSITION_DECIDED", decompose=decompose, reason=reason)
        root = dag.add(Node("root", goal, "goal", 0, note=reason))
        self.envelopes[root.id] = (Envelope.for_parent if decompose else Envelope.for_leaf)(
            budgets.max_tokens
        )
        self.event("NODE_CREATED", node=root.id, task=goal, stage="goal")
        if decompose:
            await self._decompose(root, decision.strategy)
        self._save_dag(force=True)

    async def _decompose(
        self, parent: Node, strategy: str, skeleton: strategies.Skeleton | None = None, min_children: int = 1
    ) -> int:
        """Plan ``parent``'s subtasks and add them to the DAG; returns how many (0, adding nothing, when
        the valid plan has fewer than ``min_children``)."""
        budgets = self.config.budgets
        skeleton = skeleton or strategies.get(strategy)
        room = min(budgets.max_branching, budgets.max_nodes - len(self.run.dag))
        inputs = {
            "goal": parent.task,
            "strategy": strategy,
            "stages": skeleton.stage_dicts(),
            "max_children": room,
        }
        stages = "\n".join(
            f"- {s['name']}{' (required)' if s['required'] else ''}: {s['description']}"
            for s in skeleton.stage_dicts()
        )
        request = LLMRequest(
            "decompose",
            Tier.ORCHESTRATOR,
            render("decompose", goal=parent.task, strategy=strategy, max_children=room, stages=stages),
            system=render("system"),
            inputs=inputs,
            expect_json=True,
            max_tokens=1500,
            node_id=parent.id,
        )
        data: Any = None
        key = self._node_key(parent, f"plan-{skeleton.name}", request.tier.value, {"inputs": inputs})
        found = await self._lookup(parent, key, purpose="plan")
        if found.value is not None:
            data = found.value.get("data")
        else:
            mark = self.provider.mark()
            try:
                data = (await self._call(parent, request)).data
                calls = self.provider.since(mark, parent.id, ("decompose",))
                self.cache.save(
                    key, {"data": data, "calls": calls}, [], verified=True
                )  # on the loop: see _run_node
            except ProviderError as exc:  # the model's plan is unusable: the skeleton's own plan stands in
                self.run.failures.append(_failure(parent.id, "decompose", exc, fallback="skeleton plan"))
        plan = strategies.validate_plan(
            data, skeleton, max_nodes=room, max_branching=budgets.max_branching, goal=parent.task
        )
        self.run.history.write_json(f"decisions/plan-{parent.id}.json", plan.to_dict())
        self.event("PLAN_VALIDATED", node=parent.id, nodes=len(plan.nodes), problems=plan.problems)
        if len(plan.nodes) < min_children:
            return 0
        ids = {p["id"]: f"{parent.id}.{p['id']}" if parent.id != "root" else p["id"] for p in plan.nodes}
        shares = child_envelopes(self.envelopes[parent.id], len(plan.nodes))
        for p, share in zip(plan.nodes, shares):
            node = self.run.dag.add(
                Node(
                    ids[p["id"]],
                    p["task"],
                    p["stage"],
                    parent.depth + 1,
                    parent=parent.id,
                    hard_deps=[ids[d] for d in p.get("depends_on", []) if d in ids],
                    soft_deps=[ids[d] for d in p.get("soft_depends_on", []) if d in ids],
                )
            )
            self.envelopes[node.id] = Envelope.for_leaf(share)
            self.event(
                "NODE_CREATED",
                node=node.id,
                task=node.task,
                stage=node.stage,
                parent=parent.id,
                hard_deps=node.hard_deps,
                soft_deps=node.soft_deps,
            )
        self._save_dag(force=True)
        return len(plan.nodes)

    # --- the DAG -------------------------------------------------------------------------------------

    async def _run_dag(self) -> None:
        dag, running = self.run.dag, set[asyncio.Task[None]]()
        while True:
            self._check_clock()
            for node in dag.ready():
                if self.stop_reason and not dag.children(node.id):
                    self._prune(node, self.stop_reason)
                    continue
                node.status = NodeStatus.STARTED
                running.add(asyncio.create_task(self._run_node(node), name=node.id))
            if not running:
                if not dag.ready():
                    return
                continue
            done, running = await asyncio.wait(running, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # node errors are caught inside; anything else is a bug and should surface

    async def _run_node(self, node: Node) -> None:
        node.started_at = time.time()
        self.event("NODE_STARTED", node=node.id, task=node.task)
        phase = "synthesize" if self.run.dag.children(node.id) else "retrieve"
        self.phase[node.id] = phase
        if phase == "retrieve" and await self._split_further(node):
            return  # it has children now: it runs again, to synthesize them, once they have finished
        mark = self.provider.mark()
        try:
            if phase == "synthesize":
                hit = await self._synthesize(node)
            else:
                hit = await self._answer_leaf(node)
            # What dependents read, set before the status says "done" (the await below lets them run).
            node.packet = {"summary": node.answer[:400], "keywords": node.retrieval.get("queries", [])}
            node.status = NodeStatus.CACHE_HIT if hit else NodeStatus.SUCCEEDED
            if not hit:
                self.reexecuted += node.id in self.previous_ok
                # On the loop, before anything else runs: once the model slot is free another call
                # may start, and a kill then must not lose an answer that was already paid for.
                self._save_result(node, mark)
        except BudgetExhausted as exc:
            self.stop_reason = exc.message
            self._prune(node, exc.message)
            return
        except NeedsHuman as exc:  # it waits at its checkpoint; whatever does not need it goes on
            node.status, node.note = NodeStatus.NEEDS_HUMAN, exc.checkpoint.reason
            data = exc.checkpoint.to_dict()
            for key in ("run_id", "node_id", "decision", "created"):
                data.pop(key)
            self.event("NODE_NEEDS_HUMAN", node=node.id, **data)
            self._save_dag(force=True)
            return
        except SkippedByHuman as exc:
            self._prune(node, exc.message)
            return
        except StoreUnavailableError as exc:  # the shared store is gone: stop cleanly, resumable later
            self.stop_reason = f"the cache and ledger store is unavailable: {exc.message}"
            self.event("STORE_UNAVAILABLE", node=node.id, message=exc.message)
            if not node.status.ok:  # a result already made (only its caching failed) is kept
                self._prune(node, self.stop_reason)
                return
        except Exception as exc:  # one node failing must not end the run
            node.status = NodeStatus.FAILED
            node.error = _failure(node.id, self.phase.get(node.id, phase), exc)
            self.run.failures.append(node.error)
            self.run.history.write_json(f"errors/{node.id}.json", node.error)
        node.finished_at = time.time()
        self.run.history.append("metrics/nodes.jsonl", self.run.node_metrics(node))
        self.event(
            f"NODE_{node.status.value}",
            node=node.id,
            tokens=node.tokens,
            duration_ms=node.duration_ms,
            error=(node.error or {}).get("message"),
            **({"key": node.cache_key} if node.status is NodeStatus.CACHE_HIT else {}),
        )
        self._save_dag()

    async def _split_further(self, node: Node) -> bool:
        """Recursion below the first level: a subtask whose own wording makes several asks is split, while
        depth and node budgets allow. The goal's text is left out of the count, so stage tasks that only
        restate the goal ("Gather the evidence on: <goal>") stay leaves."""
        budgets = self.config.budgets
        if (
            node.depth == 0
            or node.depth + 1 >= budgets.max_depth
            or len(self.run.dag) + 2 > budgets.max_nodes
        ):
            return False
        goal = " ".join(self.config.goal.split())  # stage tasks quote the goal with its spaces folded
        own_words = " ".join(node.task.split()).replace(goal, " ").strip(" :;,.-—")
        # Only several asks split a subtask: the open-ended verbs of stage tasks ("Analyse ...") do not.
        asks = strategies.count_asks(own_words) if own_words else 0
        if asks < 2:
            return False
        reason = f"its own wording makes {asks} separate asks"
        leaf_envelope = self.envelopes.get(node.id, Envelope(0, 0))
        self.envelopes[node.id] = Envelope.for_parent(leaf_envelope.total)
        self.phase[node.id] = "decompose"
        try:
            added = await self._decompose(node, self.run.strategy or "analysis", _PARTS, min_children=2)
        except BudgetExhausted:
            added = 0
        if not added:  # no real split (or no budget for planning): the subtask is answered as a leaf
            self.envelopes[node.id] = leaf_envelope
            return False
        node.status, node.started_at, node.note = NodeStatus.CREATED, None, f"split further: {reason}"
        self.event("NODE_DECOMPOSED", node=node.id, children=[c.id for c in self.run.dag.children(node.id)])
        return True

    async def _answer_leaf(self, node: Node) -> bool:
        """Retrieve, answer, verify; returns True when the cache answered instead."""
        packets = [
            self.run.dag.node(d).packet | {"node_id": d}
            for d in node.soft_deps + node.hard_deps
            if d in self.run.dag and self.run.dag.node(d).status.ok
        ]
        node.cache_key = self._node_key(node, "answer", _tier(node).value, {"packets": packets})
        if await self._from_cache(node):
            return True
        result: RetrievalResult = await self._retrieve_gated(node)  # tier C may ask a person here
        context_dicts = [c.to_dict() for c in result.context]
        notes = self.cache.notes_used(context_dicts)  # index lookups by path: cheap, no thread hop
        node.retrieval = {**result.to_dict(), "context": context_dicts, "notes": [list(n) for n in notes]}
        self.event("NODE_RETRIEVED", node=node.id, items=len(result.context), score=result.retrieval_score)
        if not result.context:
            node.answer = "The vault holds nothing relevant to this subtask."
            node.note = "; ".join(filter(None, [node.note, "no relevant notes found; no model call made"]))
            return False
        self.phase[node.id] = "answer"
        context = "\n\n".join(f"{c.text}\n{c.citation}" for c in result.context)
        findings = "\n".join(f"- from {p['node_id']}: {p['summary']}" for p in packets)
        request = LLMRequest(
            "answer",
            _tier(node),
            render(
                "answer",
                goal=self.config.goal,
                task=node.task,
                context=context,
                packets=f"\nFindings of related subtasks:\n{findings}\n" if findings else "",
            ),
            system=render("system"),
            node_id=node.id,
            max_tokens=900,
            inputs={
                "task": node.task,
                "goal": self.config.goal,
                "packets": packets,
                "context": [c.to_dict() for c in result.context],
            },
        )
        node.answer = (await self._call(node, request)).text.strip()
        self.phase[node.id] = "verify"
        self._verify(node)
        return False

    async def _synthesize(self, node: Node) -> bool:
        """Merge the children's answers; returns True when the cache answered instead."""
        children = [c for c in self.run.dag.children(node.id) if c.status.ok and c.answer]
        if not children:
            raise ShadError("every subtask failed or was pruned: nothing to synthesize")
        items = [
            {"node_id": c.id, "task": c.task, "answer": c.answer, "citations": c.citations} for c in children
        ]
        notes = {tuple(n) for c in children for n in c.retrieval.get("notes", [])}
        node.retrieval = {"notes": sorted([list(n) for n in notes])}
        tier = (Tier.ORCHESTRATOR if node.depth == 0 else Tier.WORKER).value
        node.cache_key = self._node_key(node, "synthesize", tier, {"children": items})
        if await self._from_cache(node):
            return True
        text = "\n\n".join(f"## {c['task']}\n{c['answer']}" for c in items)
        request = LLMRequest(
            "synthesize",
            Tier(tier),
            render("synthesize", goal=self.config.goal, task=node.task, children=text),
            system=render("system"),
            inputs={"goal": self.config.goal, "task": node.task, "children": items},
            node_id=node.id,
            max_tokens=1800,
        )
        node.answer = (await self._call(node, request, synthesis=True)).text.strip()
        conflicts = detect_conflicts(items)
        if conflicts:
            node.answer += "\n\n" + render_conflicts(conflicts)
            self.event("CONFLICTS_FOUND", node=node.id, count=len(conflicts))
        self._verify(node)
        return False

    def _verify(self, node: Node) -> None:
        """Every citation must resolve in the vaults; unresolved ones are flagged in the answer."""
        resolved = cite.resolve_citations(cite.extract_citations(node.answer), self.vaults)
        node.citations, unresolved = cite.summarize(resolved)
        if unresolved:
            node.answer = cite.flag_unresolved(node.answer, resolved)
            self.event("CITATIONS_UNRESOLVED", node=node.id, count=len(unresolved))

    # --- bookkeeping ----------------------------------------------------------------------------------

    def _save_dag(self, force: bool = False) -> None:
        """dag.json after changes (at most every quarter second), so a killed run resumes from where it
        was; a node that finished in between is answered by the cache on resume, not paid twice."""
        now = time.monotonic()
        if force or now - self._dag_saved >= DAG_SAVE_INTERVAL:
            self.run.history.write_json("dag.json", self.run.dag.to_json())
            self._dag_saved = now

    def _prune(self, node: Node, reason: str) -> None:
        node.status, node.note, node.finished_at = NodeStatus.PRUNED, reason, time.time()
        self.event("NODE_PRUNED", node=node.id, reason=reason)

    def _prune_unstarted(self, reason: str) -> None:
        for node in self.run.dag:
            if not node.status.finished:
                self._prune(node, reason)

    def event(self, kind: str, /, **data: Any) -> None:
        record = {"ts": round(time.time(), 3), "run_id": self.run_id, "type": kind, **data}
        self.run.events.append(record)
        self.run.history.append("events.jsonl", record)
        if self.on_event is not None:
            self.on_event(record)


# The plan of a subtask that is split further: one kind of part, one part per ask.
_PARTS = strategies.Skeleton.from_dict(
    {
        "name": "parts",
        "description": "The asks of one subtask, each answered on its own.",
        "stages": [
            {"name": "part", "primary": True, "task": "{goal}", "description": "One ask of the subtask."}
        ],
    }
)


def _tier(node: Node) -> Tier:
    """Degrade by depth: the root answers with the worker tier, deeper nodes with the leaf tier."""
    return Tier.WORKER if node.depth <= 1 else Tier.LEAF


def _failure(node_id: str, phase: str, exc: BaseException, **extra: Any) -> dict[str, Any]:
    return {
        "node_id": node_id,
        "phase": phase,
        "error_class": type(exc).__name__,
        "message": getattr(exc, "message", None) or str(exc),
        "trace": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=4))[-2000:],
        **extra,
    }
