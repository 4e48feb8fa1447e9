"""The run's DAG: nodes with their lifecycle, hard and soft dependencies, and the ``dag.json`` round trip."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # networkx takes ~0.1-0.3 s to import: only when a DAG is built (not for --help)
    import networkx as nx

__all__ = ["Dag", "Node", "NodeStatus"]


class NodeStatus(str, enum.Enum):
    CREATED = "CREATED"
    STARTED = "STARTED"
    SUCCEEDED = "SUCCEEDED"
    CACHE_HIT = "CACHE_HIT"
    FAILED = "FAILED"
    PRUNED = "PRUNED"
    NEEDS_HUMAN = "NEEDS_HUMAN"  # waits at a checkpoint: neither finished nor failed
    # Its retries (the retrieval ladder, code repairs) ran out: it keeps its best artifact, flagged, with
    # a failure report and the inputs that could help (``Node.diagnostic``); a resume runs it again.
    FAILED_WITH_DIAGNOSTIC = "FAILED_WITH_DIAGNOSTIC"

    @property
    def finished(self) -> bool:
        return self in (
            NodeStatus.SUCCEEDED,
            NodeStatus.CACHE_HIT,
            NodeStatus.FAILED,
            NodeStatus.PRUNED,
            NodeStatus.FAILED_WITH_DIAGNOSTIC,
        )

    @property
    def ok(self) -> bool:
        return self in (NodeStatus.SUCCEEDED, NodeStatus.CACHE_HIT)


@dataclass
class Node:
    """One subtask. A node with children answers by synthesizing them; a leaf retrieves and answers."""

    id: str
    task: str
    stage: str
    depth: int
    parent: str | None = None
    hard_deps: list[str] = field(default_factory=list)  # must finish first
    soft_deps: list[str] = field(default_factory=list)  # their context packets are used if available
    status: NodeStatus = NodeStatus.CREATED
    answer: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    retrieval: dict[str, Any] = field(default_factory=dict)  # queries, hits, score, context excerpt
    packet: dict[str, Any] = field(default_factory=dict)  # summary + keywords handed to dependents
    tokens: int = 0
    llm_calls: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    error: dict[str, Any] | None = None
    note: str = ""  # why it was pruned, cached, decomposed or not
    cache_key: str = ""  # where its result is (or would be) cached
    checks: dict[str, Any] = field(default_factory=dict)  # software runs: its files' check status
    # The limit (max_nodes, max_branching, max_depth) that left this planned subtask out of the run: it
    # stays PRUNED, a missing branch, until a resume whose limits make room for it runs it.
    cut: str = ""
    # FAILED_WITH_DIAGNOSTIC: {reason, best_artifact, failure_report, next_inputs} (engine.runs._exhausted)
    diagnostic: dict[str, Any] = field(default_factory=dict)
    # PRUNED by novelty (engine.runs._novelty): the nodes that hold every passage it retrieved. It is done,
    # not missing: its siblings answered from the same passages, and a resume keeps it pruned.
    redundant_with: list[str] = field(default_factory=list)

    @property
    def redundant(self) -> bool:
        """Pruned because other nodes already hold all it found: settled, neither missing nor failed."""
        return self.status is NodeStatus.PRUNED and bool(self.redundant_with)

    @property
    def duration_ms(self) -> float:
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return round((self.finished_at - self.started_at) * 1000, 1)

    def to_dict(self) -> dict[str, Any]:
        # Shallow: the nested values are plain JSON data already, and a deep copy of every node's context
        # on every dag.json write costs more than the run's own bookkeeping.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["status"] = self.status.value
        data["duration_ms"] = self.duration_ms
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        values["status"] = NodeStatus(values.get("status", "CREATED"))
        return cls(**values)


class Dag:
    """Nodes in a networkx DiGraph. Edges point from a dependency to its dependent (``kind``: hard,
    soft) and from a parent to its children (``kind``: child)."""

    def __init__(self) -> None:
        import networkx as nx

        self.graph: nx.DiGraph = nx.DiGraph()
        # Each node's subtasks, in plan order: asked for many times a node (readiness, novelty, skills) and
        # only changed by ``add``, which forgets them all (an edge's kind may change when one is added).
        self._children: dict[str, list[Node]] = {}

    # An edge to a dependency or parent not added (yet) leaves a bare placeholder in the graph: it is
    # not a node of the DAG until ``add`` gives it one.
    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.graph and "node" in self.graph.nodes[node_id]

    def __iter__(self) -> Iterator[Node]:
        return (data["node"] for _, data in self.graph.nodes(data=True) if "node" in data)

    def node(self, node_id: str) -> Node:
        node: Node = self.graph.nodes[node_id]["node"]
        return node

    def add(self, node: Node) -> Node:
        self._children.clear()
        self.graph.add_node(node.id, node=node)
        if node.parent is not None:
            self.graph.add_edge(node.parent, node.id, kind="child")
        for dep in node.hard_deps:
            self.graph.add_edge(dep, node.id, kind="hard")
        for dep in node.soft_deps:
            self.graph.add_edge(dep, node.id, kind="soft")
        return node

    def children(self, node_id: str, *, cut: bool = False) -> list[Node]:
        """The subtasks of ``node_id`` that are part of the run; with ``cut``, those the limits left out
        too (they never run, so a node whose only subtasks were cut answers as a leaf)."""
        found = self._children.get(node_id)
        if found is None:
            nodes = self.graph.nodes
            succ = self.graph.succ[node_id].items()
            found = self._children[node_id] = [
                nodes[c]["node"] for c, edge in succ if edge["kind"] == "child"
            ]
        return [n for n in found if cut or not n.cut]

    def planned(self) -> int:
        """The nodes that count against ``max_nodes``: all but those the limits cut."""
        return sum(1 for n in self if not n.cut)

    def root(self) -> Node:
        return next(n for n in self if n.parent is None)

    def ready(self) -> list[Node]:
        """Created nodes whose hard dependencies have finished (a parent waits for its children)."""
        out = []
        for n in self:
            if n.status is not NodeStatus.CREATED:
                continue
            if any(not self.node(d).status.finished for d in n.hard_deps if d in self):
                continue
            if any(not c.status.finished for c in self.children(n.id)):
                continue
            out.append(n)
        return out

    def critical_path_length(self) -> int:
        """Nodes on the longest dependency chain (children count as dependencies of their parent)."""
        import networkx as nx

        order = nx.DiGraph()
        for n in self:
            order.add_node(n.id)
            for d in n.hard_deps:
                if d in self:
                    order.add_edge(d, n.id)
            if n.parent and n.parent in self:
                order.add_edge(n.id, n.parent)
        return int(nx.dag_longest_path_length(order)) + 1 if len(order) else 0

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [n.to_dict() for n in self]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Dag:
        dag = cls()
        nodes = [Node.from_dict(d) for d in data.get("nodes", [])]
        for n in nodes:  # parents first, so edges find both ends
            dag.graph.add_node(n.id, node=n)
        for n in nodes:
            if n.parent is not None:
                dag.graph.add_edge(n.parent, n.id, kind="child")
            for dep in n.hard_deps:
                dag.graph.add_edge(dep, n.id, kind="hard")
            for dep in n.soft_deps:
                dag.graph.add_edge(dep, n.id, kind="soft")
        return dag
