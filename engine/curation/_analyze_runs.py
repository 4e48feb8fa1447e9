"""Gap analysis, part 1: what the recorded runs of a vault asked and how each ask went.

A run's folder (``<vault>/Shad/History/Runs/<run_id>/``, or wherever ``$SHAD_HOME/runs.jsonl`` says a run
over this vault put it) is read as plain files: ``run.manifest.json`` (the goal and the vaults),
``dag.json`` (each node's task, status and retrieval: score, method, queries, context), ``checkpoints/``
(the retrieval a checkpoint judged), ``events.jsonl`` (retrieval scores, pruned, failed and
needs-human nodes; and the nodes of a run killed before its ``dag.json``) and ``final.summary.json``
(failures; ``pruned_redundant``). A file that is missing or cut short by a kill is skipped: the rest of
the run still counts.

A subtask pruned by novelty (``Node.redundant_with``: a sibling already held all its passages) is a
saving, not trouble: it is kept apart (``NodeRecord.redundant``, the sibling it repeated and the tokens
its answer would have cost) and never counted or listed as a failure or a problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import strategies
from ..config import HISTORY_FOLDER
from ..retrieval import ENGINE_STEPS
from ..store.history import list_runs
from ..text import parse_query, stem

__all__ = ["LOW_SCORE", "NodeRecord", "RunRecord", "ask_terms", "load_runs", "strip_stage"]

LOW_SCORE = 0.45  # a retrieval below this is weak (the recovery ladder's own threshold)
LADDER_METHODS = ("+direct", "human")  # tier B (broadened direct search) and tier C (a person's hint/edit)
NOTHING_FOUND = re.compile(r"holds nothing relevant|no relevant notes found|nothing relevant", re.I)
ATTEMPTED = ("STARTED", "SUCCEEDED", "CACHE_HIT", "FAILED", "PRUNED", "NEEDS_HUMAN", "FAILED_WITH_DIAGNOSTIC")


@dataclass
class NodeRecord:
    """One node of one run, as far as the gap analysis cares."""

    run_id: str
    node_id: str
    task: str
    ask: str  # the task without its strategy-stage prefix ("Frame the question ...: ")
    template_terms: frozenset[str]  # stems of that prefix: left out of the node's queries too
    stage: str = ""
    status: str = "CREATED"
    score: float | None = None  # retrieval_score, when the node retrieved
    method: str | None = None  # codemode | direct | codemode+direct | human
    queries: list[str] = field(default_factory=list)
    items: int | None = None  # context sections retrieved
    nothing_found: bool = False
    checkpoint: bool = False
    problem: str = ""  # why it failed, was pruned or waits for a person
    # Pruned by novelty: the siblings whose passages it repeated (a saving, never a problem), and the
    # tokens that saved (the run's estimate, ``pruned_redundant`` of its summary)
    redundant_with: list[str] = field(default_factory=list)
    tokens_saved: int = 0

    @property
    def retrieved(self) -> bool:
        return self.score is not None

    @property
    def attempted(self) -> bool:
        return self.retrieved or self.status in ATTEMPTED

    @property
    def low(self) -> bool:
        return self.score is not None and self.score < LOW_SCORE

    @property
    def fallback(self) -> bool:
        """The recovery ladder went past its first tier: broadened direct search, or a checkpoint."""
        return self.checkpoint or any(m in (self.method or "") for m in LADDER_METHODS)

    @property
    def redundant(self) -> bool:
        return self.status == "PRUNED" and bool(self.redundant_with)

    @property
    def troubled(self) -> bool:
        if self.redundant:  # its sibling answered from the same passages: budget saved, nothing lost
            return False
        return self.status in ("FAILED", "PRUNED", "NEEDS_HUMAN", "FAILED_WITH_DIAGNOSTIC") or self.checkpoint

    def to_evidence(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "node": self.node_id,
            "task": self.task,
            "status": self.status,
            "retrieval_score": self.score,
            "method": self.method,
            "checkpoint": self.checkpoint,
            "nothing_found": self.nothing_found,
            "problem": self.problem,
        }


@dataclass
class RunRecord:
    run_id: str
    dir: Path
    goal: str
    status: str
    created: float
    nodes: list[NodeRecord]


# --- stage prefixes -------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _stage_prefixes() -> tuple[str, ...]:
    """``"Frame the question and the criteria for answering: "`` and the like, longest first."""
    found: set[str] = set()
    for name in strategies.names():
        for stage in strategies.get(name).stages:
            head, sep, _ = stage.task.partition("{goal}")
            if sep and head.strip():
                found.add(head.lower())
    return tuple(sorted(found, key=len, reverse=True))


def strip_stage(task: str) -> tuple[str, str]:
    """(the ask, the stage prefix taken off it): a stage task wraps the goal in a fixed phrase."""
    lowered = task.lower()
    for prefix in _stage_prefixes():
        if lowered.startswith(prefix) and len(task) > len(prefix):
            return task[len(prefix) :].strip(), task[: len(prefix)]
    return task.strip(), ""


def ask_terms(text: str, drop: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(stem, word) for each salient word of ``text``, stop words and ``drop`` stems left out."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for word in parse_query(text).words():
        if len(word) < 2 or word.isdigit():
            continue
        s = stem(word)
        if s in drop or s in seen:
            continue
        seen.add(s)
        out.append((s, word))
    return out


# --- reading run folders --------------------------------------------------------------------------------


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _same_folder(a: str | Path, b: Path) -> bool:
    try:
        return Path(a).expanduser().resolve() == b
    except OSError:
        return False


def run_folders(vault_root: Path) -> list[Path]:
    """The run folders of this vault: those under its ``Shad/History/Runs`` and those registered in
    ``$SHAD_HOME/runs.jsonl`` by runs over this vault that wrote their history elsewhere."""
    root = vault_root.resolve()
    folders: dict[Path, None] = {}
    base = root / HISTORY_FOLDER / "Runs"
    if base.is_dir():
        for d in sorted(base.iterdir()):
            if (d / "run.manifest.json").is_file():
                folders[d.resolve()] = None
    for info in list_runs(limit=1_000_000):
        folder = Path(info["dir"])
        if folder.resolve() in folders or not (folder / "run.manifest.json").is_file():
            continue
        manifest = _json(folder / "run.manifest.json") or {}
        vaults = (manifest.get("config") or {}).get("vaults") or []
        if any(_same_folder(v, root) for v in vaults):
            folders[folder.resolve()] = None
    return list(folders)


def load_runs(vault_root: Path) -> list[RunRecord]:
    """Every readable run of this vault, oldest first."""
    runs = [r for r in (_load_run(d) for d in run_folders(vault_root)) if r is not None]
    return sorted(runs, key=lambda r: (r.created, r.run_id))


def _load_run(folder: Path) -> RunRecord | None:
    manifest = _json(folder / "run.manifest.json")
    if not isinstance(manifest, dict):
        return None
    run_id = str(manifest.get("run_id") or folder.name)
    summary = _json(folder / "final.summary.json") or {}
    goal = str(summary.get("goal") or (manifest.get("config") or {}).get("goal") or "")
    status = str(summary.get("status") or manifest.get("status") or "UNKNOWN")
    events = _lines(folder / "events.jsonl")
    nodes = _nodes(run_id, folder, goal, events, summary)
    return RunRecord(run_id, folder, goal, status, float(manifest.get("created") or 0.0), nodes)


def _record(run_id: str, node_id: str, task: str, stage: str) -> NodeRecord:
    ask, prefix = strip_stage(task)
    drop = frozenset(s for s, _ in ask_terms(prefix))
    return NodeRecord(run_id, node_id, task, ask, drop, stage)


def _nodes(
    run_id: str, folder: Path, goal: str, events: list[dict[str, Any]], summary: dict[str, Any]
) -> list[NodeRecord]:
    nodes: dict[str, NodeRecord] = {}
    dag = _json(folder / "dag.json")
    for raw in (dag or {}).get("nodes") or []:
        if not isinstance(raw, dict) or not raw.get("id"):
            continue
        node = _record(run_id, str(raw["id"]), str(raw.get("task") or ""), str(raw.get("stage") or ""))
        node.status = str(raw.get("status") or "CREATED")
        node.problem = _message(raw.get("error")) if node.status == "FAILED" else ""
        if node.status == "FAILED_WITH_DIAGNOSTIC":  # its retries ran out: the reason is the problem
            node.problem = str((raw.get("diagnostic") or {}).get("reason") or "")
        node.redundant_with = [str(h) for h in raw.get("redundant_with") or []]
        _retrieval(node, raw.get("retrieval") or {})
        text = f"{raw.get('answer') or ''} {raw.get('note') or ''}"
        node.nothing_found = node.nothing_found or bool(NOTHING_FOUND.search(text))
        nodes[node.node_id] = node
    _from_events(run_id, nodes, events)
    _from_checkpoints(folder, nodes)
    for f in summary.get("failures") or []:
        failed = nodes.get(str((f or {}).get("node_id"))) if isinstance(f, dict) else None
        if failed is not None and not failed.problem:
            failed.problem = _message(f)
    if not nodes and goal:  # a run killed before it planned anything still asked its goal
        nodes["root"] = _record(run_id, "root", goal, "goal")
    _uncovered(nodes, summary)
    _redundant(nodes, summary)
    return list(nodes.values())


def _redundant(nodes: dict[str, NodeRecord], summary: dict[str, Any]) -> None:
    """Subtasks pruned by novelty: the siblings they repeated and the tokens saved (the summary's
    ``pruned_redundant``); their pruning reason is not a problem."""
    for r in summary.get("pruned_redundant") or []:
        node = nodes.get(str(r.get("node_id"))) if isinstance(r, dict) else None
        if node is None:
            continue
        node.status = "PRUNED"
        node.redundant_with = node.redundant_with or [str(h) for h in r.get("same_as") or []]
        saved = r.get("tokens_saved_est")
        node.tokens_saved = int(saved) if isinstance(saved, (int, float)) else 0
    for node in nodes.values():
        if node.redundant:
            node.problem = ""


def _plain(text: str) -> str:
    return " ".join(text.casefold().strip(" ?.!").split())


def _uncovered(nodes: dict[str, NodeRecord], summary: dict[str, Any]) -> None:
    """The asks the run itself said the vault does not answer (``uncovered``): the nodes that asked them
    found nothing, and so did the root when the whole goal went unanswered."""
    asks = {_plain(str(a)) for a in summary.get("uncovered") or [] if str(a).strip()}
    if not asks:
        return
    for node in nodes.values():
        if _plain(node.ask) in asks or _plain(node.task) in asks:
            node.nothing_found = True
    root = nodes.get("root")
    if root is not None and summary.get("answered") is False:
        root.nothing_found = True


def _message(error: Any) -> str:
    """A failure's message: failures are kept as dicts (``message``, ``error_class``...) or as text."""
    if isinstance(error, dict):
        return str(error.get("message") or error.get("error_class") or "")
    return str(error or "")


def _retrieval(node: NodeRecord, r: dict[str, Any]) -> None:
    if not isinstance(r, dict) or not r:
        return
    score = r.get("retrieval_score")
    if score is None:
        score = (r.get("signals") or {}).get("retrieval_score")
    if isinstance(score, (int, float)):
        node.score = float(score)
    node.method = str(r.get("method") or "") or node.method
    node.queries = _searched(r.get("queries")) or node.queries
    context = r.get("context")
    if isinstance(context, list):
        node.items = len(context)
        node.nothing_found = node.nothing_found or not context


def _from_events(run_id: str, nodes: dict[str, NodeRecord], events: list[dict[str, Any]]) -> None:
    for ev in events:
        kind, node_id = str(ev.get("type") or ""), str(ev.get("node") or "")
        if not node_id:
            continue
        if kind == "NODE_CREATED" and node_id not in nodes:
            nodes[node_id] = _record(run_id, node_id, str(ev.get("task") or ""), str(ev.get("stage") or ""))
            continue
        node = nodes.get(node_id)
        if node is None:
            continue
        if kind == "NODE_RETRIEVED":
            if node.score is None and isinstance(ev.get("score"), (int, float)):
                node.score = float(ev["score"])
            if node.items is None and isinstance(ev.get("items"), int):
                node.items = int(ev["items"])
                node.nothing_found = node.nothing_found or node.items == 0
        elif kind == "NODE_PRUNED":
            node.status, node.problem = "PRUNED", str(ev.get("reason") or node.problem)
            held = ev.get("redundant_with")
            if isinstance(held, list) and held:
                node.redundant_with = [str(h) for h in held]
        elif kind in ("NODE_FAILED", "NODE_FAILED_WITH_DIAGNOSTIC"):
            node.status = kind.removeprefix("NODE_")
            node.problem = node.problem or _message(ev.get("error"))
        elif kind in ("NODE_NEEDS_HUMAN", "CHECKPOINT_OPENED"):
            node.checkpoint = True
            node.problem = node.problem or str(ev.get("reason") or "")
            if kind == "NODE_NEEDS_HUMAN" and node.status == "CREATED":
                node.status = "NEEDS_HUMAN"
            if not node.queries:
                node.queries = _searched(ev.get("queries"))


def _from_checkpoints(folder: Path, nodes: dict[str, NodeRecord]) -> None:
    cp_dir = folder / "checkpoints"
    if not cp_dir.is_dir():
        return
    for path in sorted(cp_dir.glob("*.json")):
        data = _json(path)
        if not isinstance(data, dict):
            continue
        node = nodes.get(str(data.get("node_id") or path.stem))
        if node is None:
            continue
        node.checkpoint = True
        node.problem = node.problem or str(data.get("reason") or "")
        if node.score is None:
            _retrieval(node, data.get("retrieval") or {})
        if node.score is None:
            score = (data.get("signals") or {}).get("retrieval_score")
            if isinstance(score, (int, float)):
                node.score = float(score)
        if not node.queries:
            node.queries = _searched(data.get("queries"))


def _searched(queries: Any) -> list[str]:
    """What a node searched the vault for: its retrieval's queries without the labels of steps the engine
    took on its own ("notes linked with the best hits")."""
    return [str(q) for q in queries or () if str(q).strip() and str(q) not in ENGINE_STEPS]
