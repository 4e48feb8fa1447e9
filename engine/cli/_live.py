"""The run's DAG as a tree on the terminal: live, folded from the run's events, and for a finished run.

``LiveTree`` consumes engine events: every ``EventKind`` is either handled (it changes what the tree
shows) or deliberately ignored; a test checks that no kind is left undecided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich.text import Text
from rich.tree import Tree

from ..events import EventKind, kind_of
from ..runs.dag import Node, NodeStatus
from ._term import shorten

__all__ = ["COLOURS", "LiveTree", "pruned_reason", "render_tree"]

COLOURS = {
    "CREATED": "dim",
    "STARTED": "yellow",
    "SUCCEEDED": "green",
    "CACHE_HIT": "cyan",
    "FAILED": "red",
    "PRUNED": "magenta",
    "NEEDS_HUMAN": "bold yellow",
    "FAILED_WITH_DIAGNOSTIC": "bold red",
}


def pruned_reason(node: Node) -> str:
    """Why a pruned node never answered: the siblings it repeats (pruned by novelty, a saving), else the
    reason recorded when it was pruned (a budget, a cancel, a limit that cut it from the plan)."""
    if node.redundant_with:
        return f"pruned: repeats {', '.join(node.redundant_with)}"
    return f"pruned: {node.note}" if node.note else "pruned"


def render_tree(
    nodes: Iterable[Node],
    title: str = "run",
    *,
    notes: Mapping[str, str] | None = None,
    task_limit: int | None = None,
) -> Tree:
    """Parents over children, colour by status, tokens and time per node; ``notes`` adds a short word
    after a node (a software run's files and checks: ``+3 files · checks ✗ 2``). Tasks are whole unless
    ``task_limit`` shortens them (at a word boundary, marked ``…``: the live view stays compact)."""
    tree = Tree(Text(title, style="bold"))
    ordered = list(nodes)
    children: dict[str | None, list[Node]] = {}
    for node in ordered:
        children.setdefault(node.parent, []).append(node)

    def label(n: Node) -> Text:
        text = Text(f"{n.id} ", style="bold")
        text.append(n.status.value, style=COLOURS.get(n.status.value, ""))
        text.append(f"  {shorten(n.task, task_limit) if task_limit else n.task}")
        if n.tokens or n.duration_ms:
            text.append(f"  ({n.tokens} tok, {n.duration_ms / 1000:.1f}s)", style="dim")
        if n.status is NodeStatus.PRUNED:  # why it never answered: a repeat is not read as lost
            why = pruned_reason(n)
            text.append(f"  {shorten(why, task_limit) if task_limit else why}", style="magenta")
        note = (notes or {}).get(n.id)
        if note:
            text.append(f"  {note}", style="red" if "✗" in note else "cyan")
        return text

    def add(branch: Tree, node: Node) -> None:
        sub = branch.add(label(node))
        for child in children.get(node.id, []):
            add(sub, child)

    for root in children.get(None, []):
        add(tree, root)
    return tree


Handler = Callable[["LiveTree", dict[str, Any]], None]


class LiveTree:
    """The nodes of a running run, as its events tell them."""

    def __init__(self) -> None:
        self.run_id = ""
        self.nodes: dict[str, Node] = {}
        self.files: dict[str, int] = {}  # node -> files it put into the manifest
        self.checks: dict[str, str] = {}  # node -> "checks ✓" | "checks ✗ N" | "checks skipped"

    def apply(self, record: dict[str, Any]) -> None:
        """Fold one event record in (``on_event`` of ``engine.arun``)."""
        self.run_id = self.run_id or str(record.get("run_id") or "")
        kind = kind_of(record)
        handler = HANDLED.get(kind) if kind is not None else None
        node_id = record.get("node")
        if handler is not None and (isinstance(node_id, str) or kind is EventKind.NODE_CREATED):
            handler(self, record)

    def render(self) -> Tree | Text:
        if not self.nodes:
            return Text("starting…")
        return render_tree(self.nodes.values(), f"shad {self.run_id}", notes=self.notes, task_limit=80)

    @property
    def notes(self) -> dict[str, str]:
        """What a software run adds after each node: the files it produced and its checks."""
        out: dict[str, str] = {}
        for node_id in {**self.files, **self.checks}:
            count = self.files.get(node_id, 0)
            words = [f"+{count} file{'s' if count != 1 else ''}"] if count else []
            words += [self.checks[node_id]] if node_id in self.checks else []
            if words:
                out[node_id] = " · ".join(words)
        return out

    def _node(self, record: dict[str, Any]) -> Node:
        node_id = str(record["node"])
        node = self.nodes.get(node_id)
        if node is None:  # a resumed run does not announce the nodes it adopted
            parent = node_id.rsplit(".", 1)[0] if "." in node_id else ("root" if node_id != "root" else None)
            depth = self.nodes[parent].depth + 1 if parent in self.nodes else 0
            node = self.nodes[node_id] = Node(node_id, str(record.get("task", "")), "", depth, parent)
        return node

    def _created(self, record: dict[str, Any]) -> None:
        parent = record.get("parent")
        depth = self.nodes[parent].depth + 1 if parent in self.nodes else 0
        node_id = str(record.get("node"))
        self.nodes[node_id] = Node(
            node_id, str(record.get("task", "")), str(record.get("stage", "")), depth, parent
        )

    def _pruned(self, record: dict[str, Any]) -> None:
        _settle(NodeStatus.PRUNED)(self, record)
        node = self._node(record)
        node.note = str(record.get("reason") or "")
        held = record.get("redundant_with")
        node.redundant_with = [str(h) for h in held] if isinstance(held, list) else []

    def _decomposed(self, record: dict[str, Any]) -> None:
        node = self._node(record)
        node.status, node.started_at = NodeStatus.CREATED, None

    def _llm_call(self, record: dict[str, Any]) -> None:
        tokens = record.get("tokens")
        self._node(record).tokens += tokens if isinstance(tokens, int) else 0

    def _code_produced(self, record: dict[str, Any]) -> None:
        node = self._node(record)
        files = record.get("files")
        self.files[node.id] = self.files.get(node.id, 0) + (len(files) if isinstance(files, list) else 0)

    def _checked(self, record: dict[str, Any]) -> None:
        node, status, findings = self._node(record), record.get("status"), record.get("findings")
        if status == "pass":
            self.checks[node.id] = "checks ✓"
        elif status == "fail":
            self.checks[node.id] = "checks ✗" + (f" {findings}" if isinstance(findings, int) else "")
        else:
            self.checks[node.id] = "checks skipped"


def _settle(status: NodeStatus) -> Handler:
    """The handler of an event that sets a node's status (and, when it ends, its tokens and time)."""

    def settle(tree: LiveTree, record: dict[str, Any]) -> None:
        node = tree._node(record)
        node.status = status
        ts = record.get("ts")
        if status is NodeStatus.STARTED:
            node.started_at, node.finished_at = ts, None
        elif status.finished:
            node.finished_at = ts
            if isinstance(record.get("tokens"), int):
                node.tokens = record["tokens"]

    return settle


HANDLED: dict[EventKind, Handler] = {
    EventKind.NODE_CREATED: LiveTree._created,
    EventKind.NODE_STARTED: _settle(NodeStatus.STARTED),
    EventKind.NODE_SUCCEEDED: _settle(NodeStatus.SUCCEEDED),
    EventKind.NODE_CACHE_HIT: _settle(NodeStatus.CACHE_HIT),
    EventKind.NODE_FAILED: _settle(NodeStatus.FAILED),
    EventKind.NODE_PRUNED: LiveTree._pruned,
    EventKind.NODE_NEEDS_HUMAN: _settle(NodeStatus.NEEDS_HUMAN),
    EventKind.NODE_FAILED_WITH_DIAGNOSTIC: _settle(NodeStatus.FAILED_WITH_DIAGNOSTIC),
    EventKind.NODE_DECOMPOSED: LiveTree._decomposed,
    EventKind.LLM_CALL: LiveTree._llm_call,
    EventKind.CODE_PRODUCED: LiveTree._code_produced,
    EventKind.NODE_CHECKED: LiveTree._checked,
}
# What the tree does not show: run-level news (the summary line says how it ended), lookups and checks.
IGNORED: frozenset[EventKind] = frozenset(
    {
        EventKind.RUN_STARTED,
        EventKind.RUN_RESUMED,
        EventKind.RUN_ERROR,
        EventKind.RUN_FINISHED,
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
        EventKind.NODE_RETRIEVED,
        EventKind.NODE_REVERIFIED,
        EventKind.CITATIONS_UNRESOLVED,
        EventKind.CONFLICTS_FOUND,
        EventKind.BUDGET_EXHAUSTED,
        EventKind.STORE_UNAVAILABLE,
        EventKind.CHECKPOINT_OPENED,
        EventKind.CHECKPOINT_DECIDED,
        EventKind.CODE_REPAIRED,  # the next NODE_CHECKED shows how a repair ended
        EventKind.CONTRACT_CHANGE_REQUESTED,
        EventKind.FILES_WRITTEN,  # the report's Files section lists them
        EventKind.SYNTHESIS_DELTA,  # streamed answer text: the tree shows nodes, not prose
    }
)
