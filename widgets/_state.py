"""The explorer's model, without any widget: engine events (or a finished ``Run``) folded into the small
state the front end draws — nodes, edges, the budget strip and the run's status.

Only light fields live here (a node's task, status, tokens, timings, and for a software run its check
status); the heavy ones (context, script, answer, file lists) go to ``_details`` when the user opens a node.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from engine import Run
from engine.events import EventKind, kind_of

from ._details import MAX_REPAIRS, code_badge, new_code
from ._model import FINISHED, DagNode, Snapshot, budget_limits, elapsed, manifest_budgets, number

__all__ = ["FINISHED", "HANDLERS", "IGNORED", "DagState", "Snapshot", "budget_limits"]


# An engine event that settles a node's status. NEEDS_HUMAN is the seam for checkpoint widgets.
_STATUS_EVENTS = {
    "NODE_STARTED": "STARTED",
    "NODE_SUCCEEDED": "SUCCEEDED",
    "NODE_CACHE_HIT": "CACHE_HIT",
    "NODE_FAILED": "FAILED",
    "NODE_PRUNED": "PRUNED",
    "NODE_NEEDS_HUMAN": "NEEDS_HUMAN",
    "NODE_FAILED_WITH_DIAGNOSTIC": "FAILED_WITH_DIAGNOSTIC",
}
_PHASES = {
    "decompose": "planning subtasks",
    "script": "writing a retrieval script",
    "answer": "answering",
    "synthesize": "synthesizing its subtasks",
}
# A software run's events about the code a node owns (kept per node in ``DagState.code``).
_CODE_EVENTS = (
    EventKind.CODE_PRODUCED,
    EventKind.NODE_CHECKED,
    EventKind.CODE_REPAIRED,
    EventKind.CONTRACT_CHANGE_REQUESTED,
)
_NODE_EVENTS = frozenset(
    {
        *(EventKind(k) for k in _STATUS_EVENTS),
        EventKind.NODE_CREATED,
        EventKind.NODE_DECOMPOSED,
        EventKind.NODE_RETRIEVED,
        EventKind.NODE_REVERIFIED,
        EventKind.CITATIONS_UNRESOLVED,
        EventKind.CONFLICTS_FOUND,
        *_CODE_EVENTS,
    }
)
# Events after which the front end should see the state at once rather than at the next tick.
URGENT = frozenset({EventKind.RUN_FINISHED, EventKind.RUN_ERROR})


class DagState:
    """Folds events into nodes and a budget strip. Not thread-safe: the widget holds a lock around it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, *, goal: str = "", limits: dict[str, Any] | None = None) -> None:
        self.run_id = ""
        self.goal = goal
        self.status = ""
        self.notice = ""
        self.nodes: dict[str, DagNode] = {}
        self.limits: dict[str, Any] = limits or budget_limits({})
        self.tokens_used = 0
        self.tokens_base = 0  # what earlier sessions of a resumed run spent
        self.over_by: int | None = None  # a finished run's tokens past its budget (the summary's over_budget)
        self.started_ts: float | None = None
        self.wall_s: float | None = None  # fixed once the run has finished
        self.changed: set[str] = set()  # nodes changed since the last snapshot
        # Per node of a software run: files produced, its last check, its repairs, contract change requests.
        self.code: dict[str, dict[str, Any]] = {}

    # --- live events ---------------------------------------------------------------------------------

    def expect(self, goal: str, budgets: Any) -> None:
        """A run is about to start: show its goal and limits before the first event arrives."""
        self.reset(goal=goal, limits=budget_limits(budgets))
        self.status = "PENDING"

    def apply(self, record: dict[str, Any]) -> bool:
        """Fold one engine event in; True when it ends the run (the front end should see it at once)."""
        ts = number(record.get("ts")) or time.time()
        run_id = str(record.get("run_id") or "")
        if record.get("type") == "RUN_STARTED":
            limits = record.get("budgets")
            self.reset(
                goal=str(record.get("goal") or self.goal),
                limits=budget_limits(limits) if isinstance(limits, dict) else self.limits,
            )
        if run_id and not self.run_id:
            self.run_id = run_id
        if self.started_ts is None:
            self.started_ts = ts
        event = kind_of(record)
        node_id = record.get("node")
        if event in _NODE_EVENTS and not (isinstance(node_id, str) and node_id):
            return False  # about a node, but names none: nothing to draw
        handler = HANDLERS.get(event) if event is not None else None
        if handler is not None:
            handler(self, record, ts)
        return event in URGENT

    def _on_status(self, record: dict[str, Any], ts: float) -> None:
        kind, node_id = str(record["type"]), str(record["node"])
        # A cache lookup of an older writer shared its type with the terminal event (it named a purpose).
        if kind == "NODE_CACHE_HIT" and "purpose" in record:
            self._node(node_id, record).note = f"cache hit ({record.get('tier') or 'cache'})"
        else:
            self._settle(self._node(node_id, record), _STATUS_EVENTS[kind], record, ts)

    def _node(self, node_id: str, record: dict[str, Any] | None = None) -> DagNode:
        """The node, made on first sight: a resumed run never re-announces nodes it adopted."""
        node = self.nodes.get(node_id)
        if node is None:
            record = record or {}
            parent = record.get("parent") if isinstance(record.get("parent"), str) else None
            if parent is None and node_id != "root" and "root" in self.nodes:
                parent = node_id.rsplit(".", 1)[0] if "." in node_id else "root"
                parent = parent if parent in self.nodes else "root"
            depth = self.nodes[parent].depth + 1 if parent in self.nodes else 0
            node = DagNode(
                node_id,
                str(record.get("task") or ""),
                str(record.get("stage") or ""),
                depth,
                parent,
                len(self.nodes),
            )
            self.nodes[node_id] = node
        self.changed.add(node_id)
        return node

    def _settle(self, node: DagNode, status: str, record: dict[str, Any], ts: float) -> None:
        node.status = status
        if status == "STARTED":
            node.started_ts, node.finished_ts, node.phase = ts, None, "started"
            if record.get("task") and not node.task:
                node.task = str(record["task"])
            return
        if status == "NEEDS_HUMAN":
            node.phase = "waiting for a human"
            node.checkpoint = {k: v for k, v in record.items() if k not in ("ts", "run_id", "type", "node")}
            return
        node.finished_ts, node.phase = ts, ""
        tokens = record.get("tokens")
        if isinstance(tokens, int):
            node.tokens = tokens
        duration = number(record.get("duration_ms"))
        node.duration_ms = duration if duration is not None else node.duration_ms
        reason = record.get("error") or record.get("reason")
        if status in ("FAILED", "PRUNED", "FAILED_WITH_DIAGNOSTIC") and reason:
            node.error = str(reason)

    def _on_run_started(self, record: dict[str, Any], ts: float) -> None:
        self.status, self.started_ts = "RUNNING", ts

    def _on_run_resumed(self, record: dict[str, Any], ts: float) -> None:
        self.status, self.started_ts, self.wall_s, self.notice = "RUNNING", ts, None, ""
        left = record.get("budget_left")
        if isinstance(left, int) and self.limits.get("tokens_limit"):
            # What earlier sessions spent, then this session's calls on top.
            self.tokens_base, self.tokens_used = max(0, int(self.limits["tokens_limit"]) - left), 0

    def _on_run_finished(self, record: dict[str, Any], ts: float) -> None:
        self.status = str(record.get("status") or "FINISHED")
        if isinstance(record.get("tokens"), int):
            self.tokens_used, self.tokens_base = int(record["tokens"]), 0
        # The summary's over_budget, from what the event carries: spent past the run's token budget.
        limit = self.limits.get("tokens_limit")
        if isinstance(limit, int) and self.tokens_used > limit:
            self.over_by = self.tokens_used - limit
        duration = number(record.get("duration_ms"))
        self.wall_s = duration / 1000 if duration is not None else ts - (self.started_ts or ts)
        for node in self.nodes.values():  # the engine prunes what never finished
            if node.status not in FINISHED and node.status != "NEEDS_HUMAN":
                node.status, node.phase = "PRUNED", ""
                self.changed.add(node.id)

    def _on_run_error(self, record: dict[str, Any], ts: float) -> None:
        self.notice = f"{record.get('error', 'error')}: {record.get('message', '')}".strip(": ")

    def _on_budget_exhausted(self, record: dict[str, Any], ts: float) -> None:
        self.notice = f"stopping: {record.get('reason', 'a budget is used up')}"

    def _on_store_unavailable(self, record: dict[str, Any], ts: float) -> None:
        self.notice = f"stopping: the cache and ledger store is unavailable ({record.get('message', '')})"

    def _on_node_created(self, record: dict[str, Any], ts: float) -> None:
        node = self._node(str(record.get("node")), record)
        node.task = str(record.get("task") or node.task)
        node.stage = str(record.get("stage") or node.stage)
        # Dependencies, when the event names them (else they appear once the run's DAG is loaded).
        for key in ("hard_deps", "soft_deps"):
            deps = record.get(key)
            if isinstance(deps, list):
                setattr(node, key, [str(d) for d in deps])

    def _on_node_decomposed(self, record: dict[str, Any], ts: float) -> None:
        node = self._node(str(record.get("node")), record)
        node.status, node.phase = "CREATED", "waiting for its subtasks"
        node.note = f"split into {len(record.get('children') or [])} subtasks"

    def _on_node_reverified(self, record: dict[str, Any], ts: float) -> None:
        self._node(str(record["node"]), record).note = "kept: re-verified against its changed notes"

    def _on_node_retrieved(self, record: dict[str, Any], ts: float) -> None:
        node = self._node(str(record.get("node")), record)
        node.items = record.get("items") if isinstance(record.get("items"), int) else None
        node.score = number(record.get("score"))
        node.phase = f"retrieved {node.items} passages"

    def _on_llm_call(self, record: dict[str, Any], ts: float) -> None:
        tokens = record.get("tokens") if isinstance(record.get("tokens"), int) else 0
        self.tokens_used += int(tokens or 0)
        if isinstance(record.get("node"), str):
            node = self._node(record["node"], record)
            node.tokens += int(tokens or 0)
            node.llm_calls += 1
            node.phase = _PHASES.get(str(record.get("purpose")), str(record.get("purpose") or ""))

    def _on_citations_unresolved(self, record: dict[str, Any], ts: float) -> None:
        self._node(str(record.get("node")), record).note = f"{record.get('count')} unresolved citation(s)"

    def _on_conflicts_found(self, record: dict[str, Any], ts: float) -> None:
        count = record.get("count")
        self._node(str(record.get("node")), record).note = f"{count} conflict(s) between subtasks"

    # --- a software run's code ----------------------------------------------------------------------------

    def _code(self, record: dict[str, Any]) -> dict[str, Any]:
        self._node(str(record["node"]), record)
        return self.code.setdefault(str(record["node"]), new_code())

    def _on_code_produced(self, record: dict[str, Any], ts: float) -> None:
        code, listed = self._code(record), record.get("files")
        if isinstance(listed, list):  # a file produced again (a repair) keeps its place in the list
            code["files"] = list(dict.fromkeys([*code["files"], *map(str, listed)]))

    def _on_node_checked(self, record: dict[str, Any], ts: float) -> None:
        checks, findings = record.get("checks"), number(record.get("findings"))
        self._code(record)["check"] = {
            "status": str(record.get("status") or "skip"),
            "level": str(record.get("level") or ""),
            "findings": int(findings or 0),
            "checks": {str(k): str(v) for k, v in checks.items()} if isinstance(checks, dict) else {},
        }

    def _on_code_repaired(self, record: dict[str, Any], ts: float) -> None:
        repairs = self._code(record)["repairs"]
        repairs["count"], repairs["last"] = repairs["count"] + 1, str(record.get("outcome") or "")
        attempt = {k: record.get(k) for k in ("attempt", "error_class", "scope", "signature", "outcome")}
        repairs["attempts"] = [*repairs["attempts"], attempt][-MAX_REPAIRS:]

    def _on_contract_change(self, record: dict[str, Any], ts: float) -> None:
        self._code(record)["contract_changes"].append(str(record.get("detail") or ""))
        self.nodes[str(record["node"])].note = "asked for a change in the contracts"

    # --- a whole run ---------------------------------------------------------------------------------

    def load_run(self, run: Run, *, finished: bool = True) -> None:
        """Take every node from a run's DAG (a finished run, or a stopped one being resumed)."""
        config, summary = run.config, run.summary or {}
        budgets = config.budgets if config is not None else manifest_budgets(run)
        goal = config.goal if config is not None else str(summary.get("goal") or "")
        self.reset(goal=goal, limits=budget_limits(budgets))
        self.run_id = run.id
        for order, n in enumerate(run.dag):  # the DAG keeps the order nodes were created in
            self.nodes[n.id] = node = DagNode(n.id, n.task, n.stage, n.depth, n.parent, order)
            node.status, node.tokens, node.llm_calls = n.status.value, n.tokens, n.llm_calls
            node.duration_ms, node.note = n.duration_ms, n.note
            node.error = str((n.error or {}).get("message") or "")
            node.started_ts, node.finished_ts = n.started_at, n.finished_at
            node.hard_deps, node.soft_deps = list(n.hard_deps), list(n.soft_deps)
            if n.retrieval.get("context") is not None:
                node.items = len(n.retrieval.get("context") or [])
                node.score = number(n.retrieval.get("retrieval_score"))
            if n.status.value == "PRUNED" and n.note and not node.error:
                node.error = n.note
        for record in (r for r in run.events if isinstance(r, dict)):  # code events: kept there alone
            if kind_of(record) in _CODE_EVENTS and isinstance(record.get("node"), str) and record["node"]:
                HANDLERS[EventKind(record["type"])](self, record, 0.0)
        self.changed = set(self.nodes)
        metrics = summary.get("metrics") or {}
        spent = metrics.get("total_tokens")
        self.tokens_used = int(spent) if isinstance(spent, int) else sum(n.tokens for n in run.dag)
        if finished:
            self.status = run.status.value
            duration = number(metrics.get("duration_ms"))
            self.wall_s = duration / 1000 if duration is not None else elapsed(run)
            reason = summary.get("stop_reason")
            self.notice = f"stopped: {reason}" if reason else ""
            over = summary.get("over_budget")
            self.over_by = int(over["over_by"]) if isinstance(over, dict) and over.get("over_by") else None
        else:
            self.status = "RUNNING"

    def adopt(self, run: Run) -> None:
        """A stopped run is being resumed: show its DAG as it was, keeping limits ``expect`` was given
        (a resume may raise them)."""
        limits, expected = self.limits, any(v is not None for v in self.limits.values())
        self.load_run(run, finished=False)
        if expected:
            self.limits = limits

    # --- what the front end sees ---------------------------------------------------------------------

    def snapshot(self, now: float | None = None) -> Snapshot:
        nodes = sorted(self.nodes.values(), key=lambda n: n.order)
        edges = [
            {"source": n.parent, "target": n.id, "kind": "child"} for n in nodes if n.parent in self.nodes
        ]
        for n in nodes:
            for kind, deps in (("hard", n.hard_deps), ("soft", n.soft_deps)):
                edges += [{"source": d, "target": n.id, "kind": kind} for d in deps if d in self.nodes]
        if self.wall_s is not None:
            wall = self.wall_s
        elif self.started_ts is not None and self.status == "RUNNING":
            wall = max(0.0, (now or time.time()) - self.started_ts)
        else:
            wall = 0.0
        budget = {
            "tokens_used": self.tokens_base + self.tokens_used,
            "tokens_limit": self.limits.get("tokens_limit"),
            "tokens_over_by": self.over_by,  # None unless a finished run spent past its token budget
            "nodes_done": sum(1 for n in nodes if n.status in FINISHED),  # settled, whichever way
            # What the counter text says apart: "done" is answered (or from the cache), never pruned.
            "nodes_succeeded": sum(1 for n in nodes if n.status in ("SUCCEEDED", "CACHE_HIT")),
            "nodes_pruned": sum(1 for n in nodes if n.status == "PRUNED"),
            "nodes_failed": sum(1 for n in nodes if n.status in ("FAILED", "FAILED_WITH_DIAGNOSTIC")),
            "nodes_total": len(nodes),
            "nodes_limit": self.limits.get("nodes_limit"),
            "wall_s": round(wall, 2),
            "wall_limit_s": self.limits.get("wall_limit_s"),
        }
        shown = [{**n.summary(), "code": code_badge(self.code.get(n.id))} for n in nodes]
        return Snapshot(self.run_id, self.goal, self.status, shown, edges, budget, self.notice)

    def pop_changed(self) -> set[str]:
        """The nodes changed since the last call (the widget refreshes an open details panel with it)."""
        changed, self.changed = self.changed, set()
        return changed

    def live_node(self, node_id: str) -> dict[str, Any] | None:
        """What the events said about one node (the details panel's base while the run is live)."""
        node = self.nodes.get(node_id)
        if node is None:
            return None
        return {
            **node.summary(),
            "task": node.task,
            "started_at": node.started_ts,
            "finished_at": node.finished_ts,
            "hard_deps": list(node.hard_deps),
            "soft_deps": list(node.soft_deps),
            "children": [n.id for n in self.nodes.values() if n.parent == node_id],
            "checkpoint": node.checkpoint,
            "code": copy.deepcopy(self.code.get(node_id)),  # read outside the lock: never the live lists
        }


Handler = Callable[[DagState, dict[str, Any], float], None]

# Every engine event is handled here or deliberately ignored (a test checks that none is left undecided).
HANDLERS: dict[EventKind, Handler] = {
    EventKind.RUN_STARTED: DagState._on_run_started,
    EventKind.RUN_RESUMED: DagState._on_run_resumed,
    EventKind.RUN_FINISHED: DagState._on_run_finished,
    EventKind.RUN_ERROR: DagState._on_run_error,
    EventKind.BUDGET_EXHAUSTED: DagState._on_budget_exhausted,
    EventKind.STORE_UNAVAILABLE: DagState._on_store_unavailable,
    EventKind.NODE_CREATED: DagState._on_node_created,
    EventKind.NODE_DECOMPOSED: DagState._on_node_decomposed,
    EventKind.NODE_REVERIFIED: DagState._on_node_reverified,
    EventKind.NODE_RETRIEVED: DagState._on_node_retrieved,
    EventKind.LLM_CALL: DagState._on_llm_call,
    EventKind.CITATIONS_UNRESOLVED: DagState._on_citations_unresolved,
    EventKind.CONFLICTS_FOUND: DagState._on_conflicts_found,
    EventKind.CODE_PRODUCED: DagState._on_code_produced,
    EventKind.NODE_CHECKED: DagState._on_node_checked,
    EventKind.CODE_REPAIRED: DagState._on_code_repaired,
    EventKind.CONTRACT_CHANGE_REQUESTED: DagState._on_contract_change,
    **{EventKind(kind): DagState._on_status for kind in _STATUS_EVENTS},
}
# Decisions and lookups the graph does not draw (the details panel reads them from the history).
# FILES_WRITTEN is about the whole manifest, after the DAG is done: the result's ``write_report`` shows it.
IGNORED = frozenset(
    {
        EventKind.RETRIEVAL_MODE,
        EventKind.STRATEGY_CHOSEN,
        EventKind.SKILLS_ROUTED,
        EventKind.NOTE_WRITTEN,
        EventKind.EXTERNAL_CALL,
        EventKind.DECOMPOSITION_DECIDED,
        EventKind.PLAN_VALIDATED,
        EventKind.PLAN_CACHE_HIT,
        EventKind.PLAN_CACHE_MISS,
        EventKind.NODE_CACHE_MISS,
        EventKind.CHECKPOINT_OPENED,
        EventKind.CHECKPOINT_DECIDED,
        EventKind.FILES_WRITTEN,
        EventKind.SYNTHESIS_DELTA,  # streamed answer text: the cell's own line shows it (shad_magics)
    }
)
