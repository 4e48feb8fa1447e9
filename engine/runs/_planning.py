"""Planning a run: the strategy, whether to decompose at all, the subtasks of the root from the strategy's
skeleton (the model refines it; a plan that cannot be used falls back to the skeleton's own), and the
further split of a subtask whose wording makes several asks."""

from __future__ import annotations

from typing import Any

from .. import strategies
from ..events import DecompositionDecided, NodeCreated, NodeDecomposed, PlanValidated, StrategyChosen
from ..llm import LLMRequest, ProviderError, Tier
from ..prompts import render
from ._cache_steps import CacheSteps
from ._context import RunContext, failure
from ._model_calls import BudgetExhausted, ModelCalls
from .budget import Envelope, child_envelopes
from .dag import Node, NodeStatus

__all__ = ["Planner"]

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


class Planner:
    """Builds one run's DAG: the root and its plan, and further splits while the budgets allow."""

    def __init__(self, ctx: RunContext, calls: ModelCalls, cache: CacheSteps) -> None:
        self.ctx = ctx
        self.calls = calls
        self.cache = cache

    async def plan(self) -> None:
        """Choose the strategy, decide whether to decompose, make the root and (maybe) its subtasks."""
        ctx = self.ctx
        goal, budgets, dag = ctx.config.goal, ctx.config.budgets, ctx.run.dag
        decision = strategies.choose_strategy(goal, ctx.config.strategy)
        ctx.run.strategy = decision.strategy
        ctx.history.write_json("decisions/strategy.json", decision.to_dict())
        ctx.emit(StrategyChosen(**decision.to_dict()))
        decompose, reason = strategies.needs_decomposition(goal)
        if budgets.max_depth < 2 or budgets.max_nodes < 2:
            decompose, reason = False, "the budget allows a single node only (max_depth or max_nodes is 1)"
        ctx.history.write_json("decisions/decomposition.json", {"decompose": decompose, "reason": reason})
        ctx.emit(DecompositionDecided(decompose=decompose, reason=reason))
        root = dag.add(Node("root", goal, "goal", 0, note=reason))
        envelope = Envelope.for_parent if decompose else Envelope.for_leaf
        ctx.state.envelopes[root.id] = envelope(budgets.max_tokens)
        ctx.emit(NodeCreated(node=root.id, task=goal, stage="goal"))
        if decompose:
            await self.decompose(root, decision.strategy)
        ctx.save_dag(force=True)

    async def decompose(
        self, parent: Node, strategy: str, skeleton: strategies.Skeleton | None = None, min_children: int = 1
    ) -> int:
        """Plan ``parent``'s subtasks and add them to the DAG; returns how many (0, adding nothing, when
        the valid plan has fewer than ``min_children``)."""
        ctx = self.ctx
        budgets = ctx.config.budgets
        skeleton = skeleton or strategies.get(strategy)
        room = min(budgets.max_branching, budgets.max_nodes - len(ctx.run.dag))
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
        key = self.cache.key(parent, f"plan-{skeleton.name}", request.tier.value, {"inputs": inputs})
        found = await self.cache.lookup(parent, key, purpose="plan")
        if found.value is not None:
            data = found.value.get("data")
        else:
            mark = ctx.provider.mark()
            try:
                data = (await self.calls.call(parent, request)).data
                calls = ctx.provider.since(mark, parent.id, ("decompose",))
                # On the loop, before anything else runs: see Orchestrator._run_node.
                ctx.cache.save(key, {"data": data, "calls": calls}, [], verified=True)
            except ProviderError as exc:  # the model's plan is unusable: the skeleton's own plan stands in
                ctx.run.failures.append(failure(parent.id, "decompose", exc, fallback="skeleton plan"))
        plan = strategies.validate_plan(
            data, skeleton, max_nodes=room, max_branching=budgets.max_branching, goal=parent.task
        )
        ctx.history.write_json(f"decisions/plan-{parent.id}.json", plan.to_dict())
        ctx.emit(PlanValidated(node=parent.id, nodes=len(plan.nodes), problems=plan.problems))
        if len(plan.nodes) < min_children:
            return 0
        ids = {p["id"]: f"{parent.id}.{p['id']}" if parent.id != "root" else p["id"] for p in plan.nodes}
        shares = child_envelopes(ctx.state.envelopes[parent.id], len(plan.nodes))
        for p, share in zip(plan.nodes, shares):
            node = ctx.run.dag.add(
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
            ctx.state.envelopes[node.id] = Envelope.for_leaf(share)
            ctx.emit(
                NodeCreated(
                    node=node.id,
                    task=node.task,
                    stage=node.stage,
                    parent=parent.id,
                    hard_deps=node.hard_deps,
                    soft_deps=node.soft_deps,
                )
            )
        ctx.save_dag(force=True)
        return len(plan.nodes)

    async def split_further(self, node: Node) -> bool:
        """Recursion below the first level: a subtask whose own wording makes several asks is split, while
        depth and node budgets allow. The goal's text is left out of the count, so stage tasks that only
        restate the goal ("Gather the evidence on: <goal>") stay leaves."""
        ctx = self.ctx
        budgets, state = ctx.config.budgets, ctx.state
        if node.depth == 0 or node.depth + 1 >= budgets.max_depth or len(ctx.run.dag) + 2 > budgets.max_nodes:
            return False
        goal = " ".join(ctx.config.goal.split())  # stage tasks quote the goal with its spaces folded
        own_words = " ".join(node.task.split()).replace(goal, " ").strip(" :;,.-—")
        # Only several asks split a subtask: the open-ended verbs of stage tasks ("Analyse ...") do not.
        asks = strategies.count_asks(own_words) if own_words else 0
        if asks < 2:
            return False
        reason = f"its own wording makes {asks} separate asks"
        leaf_envelope = state.envelopes.get(node.id, Envelope(0, 0))
        state.envelopes[node.id] = Envelope.for_parent(leaf_envelope.total)
        state.phase[node.id] = "decompose"
        try:
            added = await self.decompose(node, ctx.run.strategy or "analysis", _PARTS, min_children=2)
        except BudgetExhausted:
            added = 0
        if not added:  # no real split (or no budget for planning): the subtask is answered as a leaf
            state.envelopes[node.id] = leaf_envelope
            return False
        node.status, node.started_at, node.note = NodeStatus.CREATED, None, f"split further: {reason}"
        ctx.emit(NodeDecomposed(node=node.id, children=[c.id for c in ctx.run.dag.children(node.id)]))
        return True
