"""Content-addressed resume: which nodes of a stopped run to trust, re-verify or run again.

A finished node records the notes it used with their content hashes. On resume a node whose notes
still hash the same is trusted as it is. A node whose notes changed is *stale*: if none of the notes it
cites changed, its answer still stands (re-verified); otherwise it runs again, bypassing the cache.
Every node that did not finish runs again, and so does every parent above a node that runs again (its
synthesis is then usually a cache hit, since the children's answers are part of its key).

Subtasks the limits cut from a plan (``Node.cut``) stay out until the resume's limits make room for them
(``restore_cut``); ``cover_cut`` says which limits would.

``--replay`` forces work: ``NODE_ID`` runs that node again, ``subtree:NODE_ID`` the node and everything
below it, ``stale`` every stale node (no re-verification).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import Budgets
from ..errors import UsageError
from ..events import NodeReverified, RunResumed
from ..vault import location
from ._context import RunContext
from ._run import Run
from .budget import Envelope
from .cache import NodeCache
from .dag import Dag, NodeStatus

__all__ = ["ResumePlan", "adopt", "cover_cut", "parse_replay", "plan_resume", "replayed", "restore_cut"]


@dataclass
class ResumePlan:
    kept: list[str] = field(default_factory=list)
    reverified: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    redo: set[str] = field(default_factory=set)  # reset to CREATED: they run again (the cache may answer)
    fresh: set[str] = field(default_factory=set)  # they run again without asking the cache

    def to_dict(self) -> dict[str, Any]:
        return {
            "kept": sorted(self.kept),
            "reverified": sorted(self.reverified),
            "stale": sorted(self.stale),
            "rerun": sorted(self.redo),
            "fresh": sorted(self.fresh),
        }


def parse_replay(spec: str | None, dag: Dag) -> tuple[str, str | None]:
    """``None`` -> ("", None); ``stale`` -> ("stale", None); ``subtree:X`` -> ("subtree", X);
    ``X`` -> ("node", X)."""
    if not spec:
        return "", None
    if spec == "stale":
        return "stale", None
    kind, node_id = ("subtree", spec.split(":", 1)[1]) if spec.startswith("subtree:") else ("node", spec)
    if node_id not in dag:
        known = ", ".join(sorted(n.id for n in dag)[:12])
        raise UsageError(f"--replay names no node of this run: {node_id!r}", hint=f"nodes: {known}")
    return kind, node_id


def _subtree(dag: Dag, node_id: str) -> set[str]:
    out, todo = set(), [node_id]
    while todo:
        current = todo.pop()
        out.add(current)
        todo += [c.id for c in dag.children(current)]
    return out


def replayed(spec: str | None, dag: Dag) -> set[str]:
    """The nodes ``--replay`` names in a freshly planned DAG (a resumed run that had to plan again)."""
    kind, target = parse_replay(spec, dag) if spec and spec != "stale" else ("", None)
    if target is None or target not in dag:
        return set()
    return _subtree(dag, target) if kind == "subtree" else {target}


def plan_resume(dag: Dag, cache: NodeCache, replay: str | None = None) -> ResumePlan:
    """Decide, node by node, what a resume keeps and what it runs again; resets the latter in ``dag``."""
    kind, target = parse_replay(replay, dag)
    plan = ResumePlan()
    roots = {v.id: location(v) for v in cache.vaults}
    for node in dag:
        if node.cut:  # still left out by the limits: not run, and nothing reads it
            continue
        if node.redundant:  # pruned by novelty: kept so, unless a node holding its passages runs again
            plan.kept.append(node.id)
            continue
        if not node.status.ok:
            plan.redo.add(node.id)
            continue
        changed = set(cache.changed(node.retrieval.get("notes") or []))
        if not changed:
            plan.kept.append(node.id)
            continue
        plan.stale.append(node.id)
        cited = {f"{roots.get(c.get('vault', ''), '')}/{c.get('path', '')}" for c in node.citations}
        if kind != "stale" and not (cited & changed):
            plan.reverified.append(node.id)
        else:
            plan.redo.add(node.id)
            plan.fresh.add(node.id)
    if kind == "node" and target is not None:
        plan.fresh.add(target)
    elif kind == "subtree" and target is not None:
        plan.fresh |= _subtree(dag, target)
    plan.redo |= plan.fresh
    # Whatever read a re-run node's findings, and every parent above it, runs again too.
    changed_ids = set(plan.redo)
    grew = True
    while grew:
        grew = False
        for node in dag:
            if node.id in plan.redo or node.cut:
                continue
            reads = set(node.hard_deps) | set(node.soft_deps) | {c.id for c in dag.children(node.id)}
            reads |= set(node.redundant_with)  # its novelty was judged against them
            if reads & changed_ids:
                plan.redo.add(node.id)
                changed_ids.add(node.id)
                grew = True
    plan.kept = [n for n in plan.kept if n not in plan.redo]
    plan.reverified = [n for n in plan.reverified if n not in plan.redo]
    for node_id in plan.redo:
        node = dag.node(node_id)
        node.status, node.answer, node.error, node.note = NodeStatus.CREATED, "", None, ""
        node.diagnostic, node.redundant_with = {}, []
        node.started_at = node.finished_at = None
        node.tokens = node.llm_calls = 0
    return plan


def restore_cut(dag: Dag, budgets: Budgets) -> list[str]:
    """Give back to the run the cut subtasks its (new) limits make room for, in plan order: a node
    within ``max_depth``, while the run has fewer than ``max_nodes`` nodes and its parent fewer than
    ``max_branching`` subtasks. They stay PRUNED here, so ``plan_resume`` runs them (and the parents
    above them) again. Returns their ids."""
    planned, restored = dag.planned(), []
    for node in dag:
        parent = node.parent
        if not node.cut or parent is None or parent not in dag or dag.node(parent).cut:
            continue
        if planned >= budgets.max_nodes or node.depth >= budgets.max_depth:
            continue
        if len(dag.children(parent)) >= budgets.max_branching:
            continue
        node.cut = ""
        planned += 1
        restored.append(node.id)
    return restored


def cover_cut(dag: Dag, budgets: Budgets) -> dict[str, int]:
    """The limits a resume needs to run every cut subtask: ``{"max_nodes": N, ...}``, only those above
    the current ones (empty when nothing is cut)."""
    cut = [n for n in dag if n.cut]
    if not cut:
        return {}
    parents = {n.parent for n in cut if n.parent is not None}
    need = {
        "max_nodes": len(dag),
        "max_branching": max((len(dag.children(p, cut=True)) for p in parents), default=0),
        "max_depth": max(n.depth for n in cut) + 1,
    }
    return {name: value for name, value in need.items() if value > getattr(budgets, name)}


def adopt(ctx: RunContext, previous: Run) -> None:
    """Take over a stopped run's DAG: trust finished nodes whose notes are unchanged, re-verify or re-run
    the stale ones, run what did not finish (and the parents above it)."""
    dag = ctx.run.dag = previous.dag
    ctx.run.strategy = previous.strategy
    state = ctx.state
    restore_cut(dag, ctx.config.budgets)
    state.previous_ok = {n.id for n in dag if n.status.ok}
    # Retries ran out for these: they run again, with a new retrieval (not the checkpoint's old one).
    state.retry = {n.id for n in dag if n.status is NodeStatus.FAILED_WITH_DIAGNOSTIC}
    plan = plan_resume(dag, ctx.cache, ctx.replay)
    plan.fresh |= state.retry
    state.fresh, state.stale_nodes = set(plan.fresh), len(plan.stale)
    for node_id in plan.reverified:
        ctx.emit(NodeReverified(node=node_id))
    root = dag.root()
    total = ctx.ledger.remaining(ctx.run_id)
    state.envelopes[root.id] = (Envelope.for_parent if dag.children(root.id) else Envelope.for_leaf)(total)
    ctx.emit(RunResumed(**plan.to_dict(), replay=ctx.replay, budget_left=total))
    ctx.save_dag(force=True)
