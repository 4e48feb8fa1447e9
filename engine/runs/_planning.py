"""Planning a run: the strategy, whether to decompose at all, the subtasks of the root from the strategy's
skeleton (the model refines it; a plan that cannot be used falls back to the skeleton's own, and that
decision is cached like the model's plan), and the further split of a subtask whose wording makes
several asks. Subtasks the limits (max_nodes, max_branching, max_depth) leave out of a plan are kept in
the DAG as cut, pruned nodes: the run ends PARTIAL with them as missing branches, and a resume with
larger limits runs them (``_resume_plan.restore_cut``)."""

from __future__ import annotations

from typing import Any

from .. import strategies
from ..events import DecompositionDecided, NodeCreated, NodeDecomposed, PlanValidated, StrategyChosen
from ..llm import LLMRequest, ProviderError, Tier
from ..prompts import render
from ._cache_steps import CacheSteps
from ._context import RunContext, failure
from ._model_calls import BudgetExhausted, ModelCalls
from ._strategy_switch import consider_switch
from .budget import Envelope, child_envelopes
from .dag import Node, NodeStatus

__all__ = ["Planner"]

_UNUSABLE = ("malformed", "refused")  # the model answered, but with no plan to use
_WHOLE = 100  # the most subtasks of one plan that a resume may add back

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
        # Decisions are written on the history's writer thread: an fsync on the event loop held every node.
        ctx.history.write_json_soon("decisions/strategy.json", decision.to_dict(), compact=False)
        ctx.emit(StrategyChosen(**decision.to_dict()))
        decompose, reason = strategies.needs_decomposition(goal)
        limit = "max_depth" if budgets.max_depth < 2 else "max_nodes" if budgets.max_nodes < 2 else ""
        cut = decompose and bool(limit)  # the goal needs subtasks the budget has no room for
        if limit:
            decompose, reason = False, "the budget allows a single node only (max_depth or max_nodes is 1)"
        decided = {"decompose": decompose, "reason": reason}
        ctx.history.write_json_soon("decisions/decomposition.json", decided, compact=False)
        ctx.emit(DecompositionDecided(decompose=decompose, reason=reason))
        root = dag.add(Node("root", goal, "goal", 0, note=reason))
        envelope = Envelope.for_parent if decompose else Envelope.for_leaf
        ctx.state.envelopes[root.id] = envelope(budgets.max_tokens)
        ctx.emit(NodeCreated(node=root.id, task=goal, stage="goal"))
        if decompose:
            await self.decompose(root, decision.strategy)
        elif cut:  # the root answers alone; the skeleton's stages are the branches it leaves out
            stages = strategies.default_plan(strategies.get(decision.strategy), goal)
            self._add_cut(root, stages, {}, limit, f"{limit} {getattr(budgets, limit)} allows a single node")
        ctx.save_dag(force=True)

    async def decompose(
        self, parent: Node, strategy: str, skeleton: strategies.Skeleton | None = None, min_children: int = 1
    ) -> int:
        """Plan ``parent``'s subtasks and add them to the DAG; returns how many (0, adding nothing, when
        the valid plan has fewer than ``min_children``)."""
        ctx = self.ctx
        budgets = ctx.config.budgets
        skeleton = skeleton or strategies.get(strategy)
        room = min(budgets.max_branching, budgets.max_nodes - ctx.run.dag.planned())
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
            render(
                "decompose",
                goal=parent.task,
                strategy=strategy,
                max_children=room,
                stages=stages,
                others=", ".join(s for s in strategies.names() if s != strategy),
            ),
            system=self.ctx.system_prompt(parent),
            inputs=inputs,
            expect_json=True,
            max_tokens=1500,
            node_id=parent.id,
        )
        key = self.cache.key(parent, f"plan-{skeleton.name}", request.tier.value, {"inputs": inputs})
        data = await self._model_plan(parent, request, key)
        if parent.parent is None:  # planning the root: the model may ask for another strategy, once
            switched = consider_switch(ctx, strategy, data)
            if switched is not None:
                return await self.decompose(parent, switched, None, min_children)
        plan = strategies.validate_plan(
            data, skeleton, max_nodes=room, max_branching=budgets.max_branching, goal=parent.task
        )
        ctx.history.write_json_soon(f"decisions/plan-{parent.id}.json", plan.to_dict(), compact=False)
        ctx.emit(PlanValidated(node=parent.id, nodes=len(plan.nodes), problems=plan.problems))
        if len(plan.nodes) < min_children:
            return 0
        ids = {p["id"]: _child_id(parent, p["id"]) for p in plan.nodes}
        shares = child_envelopes(ctx.state.envelopes[parent.id], len(plan.nodes))
        for p, share in zip(plan.nodes, shares):
            node = self._add(parent, p, ids)
            ctx.state.envelopes[node.id] = Envelope.for_leaf(share)
        # What the limits left out of the plan stays in the DAG, pruned: a missing branch of the report,
        # and the subtasks a resume with larger limits runs.
        whole = strategies.validate_plan(
            data, skeleton, max_nodes=_WHOLE, max_branching=_WHOLE, goal=parent.task
        )
        left_out = [p for p in whole.nodes if p["id"] not in ids]
        if left_out:
            limit = "max_branching" if budgets.max_branching == room else "max_nodes"
            why = f"{limit} {getattr(budgets, limit)} left room for {room} subtask{'s' * (room != 1)} here"
            self._add_cut(parent, left_out, ids, limit, why)
        ctx.save_dag(force=True)
        return len(plan.nodes)

    async def _model_plan(self, parent: Node, request: LLMRequest, key: str) -> Any:
        """The model's plan for ``parent`` (from the cache when an identical run made it). A plan the
        model could not give (prose, a refusal) is a decision too: cached with its failure, so an
        identical run takes the skeleton's plan without asking again; a transport failure is not."""
        ctx = self.ctx
        found = await self.cache.lookup(parent, key, purpose="plan")
        if found.value is not None:
            if found.value.get("fallback"):
                ctx.run.failures.append({**found.value["fallback"], "cached": True})
            return found.value.get("data")
        mark = ctx.provider.mark()
        try:
            value: dict[str, Any] = {"data": (await self.calls.call(parent, request)).data}
        except ProviderError as exc:  # the model's plan is unusable: the skeleton's own plan stands in
            fell = failure(parent.id, "decompose", exc, fallback="skeleton plan")
            ctx.run.failures.append(fell)
            if exc.kind not in _UNUSABLE:
                return None
            value = {"data": None, "fallback": {k: v for k, v in fell.items() if k != "trace"}}
        value["calls"] = ctx.provider.since(mark, parent.id, ("decompose", "repair"))
        # On the loop, before anything else runs: see Orchestrator._run_node.
        ctx.cache.save(key, value, [], verified=True)
        return value["data"]

    def _add(self, parent: Node, p: dict[str, Any], ids: dict[str, str]) -> Node:
        """Add one subtask of a validated plan (``ids``: plan ids -> node ids of the DAG)."""
        node = self.ctx.run.dag.add(
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
        self.ctx.emit(
            NodeCreated(
                node=node.id,
                task=node.task,
                stage=node.stage,
                parent=parent.id,
                hard_deps=node.hard_deps,
                soft_deps=node.soft_deps,
            )
        )
        return node

    def _add_cut(
        self, parent: Node, plan: list[dict[str, Any]], kept: dict[str, str], limit: str, why: str
    ) -> None:
        """Add the subtasks ``limit`` left out of ``parent``'s plan, pruned (``kept``: the plan ids that
        made it into the DAG, with their node ids)."""
        ids = kept | {p["id"]: _child_id(parent, p["id"]) for p in plan}
        for p in plan:
            node = self._add(parent, p, ids)
            node.cut = limit
            self.ctx.prune(node, f"left out of the plan: {why}")

    async def split_further(self, node: Node) -> bool:
        """Recursion below the first level: a subtask whose own wording makes several asks is split, while
        depth and node budgets allow. The goal's text is left out of the count, so stage tasks that only
        restate the goal ("Gather the evidence on: <goal>") stay leaves."""
        ctx = self.ctx
        budgets, state = ctx.config.budgets, ctx.state
        if (
            node.depth == 0
            or node.depth + 1 >= budgets.max_depth
            or ctx.run.dag.planned() + 2 > budgets.max_nodes
        ):
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


def _child_id(parent: Node, plan_id: str) -> str:
    return plan_id if parent.id == "root" else f"{parent.id}.{plan_id}"
