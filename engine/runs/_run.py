"""``Run``: the state of one run (status, DAG, events, failures, report) and its history folder."""

from __future__ import annotations

import enum
import time
from typing import Any

from .._version import __version__
from ..config import RunConfig
from ..events import EventKind, kind_of
from ..store.history import History, find_run, run_status, this_process
from .dag import Dag, Node, NodeStatus

__all__ = ["EXIT_CODES", "Run", "RunStatus"]


class RunStatus(str, enum.Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    PARTIAL = "PARTIAL"
    FAILED = "FAILED"
    NEEDS_HUMAN = "NEEDS_HUMAN"
    FAILED_WITH_DIAGNOSTIC = "FAILED_WITH_DIAGNOSTIC"
    INTERRUPTED = "INTERRUPTED"  # its process was killed mid-run: it never finished, and resumes


EXIT_CODES = {
    RunStatus.SUCCESS: 0,
    RunStatus.PARTIAL: 3,
    RunStatus.INTERRUPTED: 3,
    RunStatus.NEEDS_HUMAN: 4,
    RunStatus.FAILED: 1,
    RunStatus.FAILED_WITH_DIAGNOSTIC: 1,
}


class Run:
    """What a run did. ``report`` is the cited markdown report, ``summary`` the final.summary.json."""

    def __init__(self, run_id: str, config: RunConfig, history: History, *, provider_name: str = "") -> None:
        self.id = run_id
        self.config = config
        self.history = history
        self.provider_name = provider_name
        self.status = RunStatus.PENDING
        self.strategy: str | None = None
        self.dag = Dag()
        self.events: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.llm_calls = 0
        self.report = ""
        self.summary: dict[str, Any] = {}
        self.started_at = time.time()
        self.finished_at: float | None = None

    def __repr__(self) -> str:
        return f"Run({self.id!r}, status={self.status.value}, nodes={len(self.dag)})"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.status, 1)

    @property
    def report_path(self) -> str:
        return str(self.history.dir / "final.report.md")

    @property
    def citations(self) -> list[dict[str, Any]]:
        return list(self.summary.get("citations", []))

    def manifest(self) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "shad_version": __version__,
            "created": self.started_at,
            "status": self.status.value,
            "provider": self.provider_name,
            "config": self.config.to_dict(),
            "process": this_process(),  # while RUNNING: whether the run is still alive, or was killed
        }

    def node_metrics(self, node: Node) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "node_id": node.id,
            "parent": node.parent,
            "depth": node.depth,
            "stage": node.stage,
            "task": node.task,
            "status": node.status.value,
            "tokens": node.tokens,
            "llm_calls": node.llm_calls,
            "duration_ms": node.duration_ms,
            "retrieval_score": node.retrieval.get("retrieval_score"),
            "context_items": len(node.retrieval.get("context", [])),
            "citations": len(node.citations),
            "error": (node.error or {}).get("error_class"),
            "cache_key": node.cache_key,
            "cache_hit": node.status is NodeStatus.CACHE_HIT,
        }

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """One row per node (a pandas DataFrame via ``metrics_frame()`` where pandas is installed)."""
        return [self.node_metrics(n) for n in self.dag]

    def metrics_frame(self) -> Any:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("metrics_frame() needs pandas: pip install pandas") from exc
        return pd.DataFrame(self.metrics)

    @classmethod
    def load(cls, run_id: str) -> Run:
        """A finished (or interrupted) run, read back from its history folder."""
        history = find_run(run_id)
        manifest = history.read_json("run.manifest.json")
        config = RunConfig.from_dict(manifest["config"]) if _vaults_exist(manifest) else None
        run = cls.__new__(cls)
        run.id, run.history, run.provider_name = history.run_id, history, manifest.get("provider", "")
        run.config = config  # type: ignore[assignment]  # None when the vaults have since moved
        summary: dict[str, Any] = {}
        if (history.dir / "final.summary.json").exists():
            summary = history.read_json("final.summary.json")
        run.summary = summary
        status, gone = run_status(manifest, summary)
        run.status = RunStatus(status if status != "UNKNOWN" else "RUNNING")
        if gone:  # its process was killed: the status says so, and how to continue
            run.summary = _interrupted(run, manifest, summary, gone)
        elif summary and run.status is RunStatus.RUNNING:  # an earlier session's summary; a later one runs
            run.summary = {**summary, "status": RunStatus.RUNNING.value}
        run.strategy = summary.get("strategy")
        if run.strategy is None and (history.dir / "decisions" / "strategy.json").exists():
            run.strategy = history.read_json("decisions/strategy.json").get("strategy")  # killed early
        run.dag = (
            Dag.from_json(history.read_json("dag.json")) if (history.dir / "dag.json").exists() else Dag()
        )
        run.events = history.read_lines("events.jsonl")
        if run.strategy is None:  # killed before its decision file landed: the event says it too
            chosen = [e.get("strategy") for e in run.events if e.get("type") == "STRATEGY_CHOSEN"]
            run.strategy = chosen[-1] if chosen else None
        run.failures = list(summary.get("failures", []))
        run.llm_calls = int(summary.get("metrics", {}).get("llm_calls", 0))
        report = history.dir / "final.report.md"
        run.report = report.read_text(encoding="utf-8") if report.exists() else ""
        run.started_at = float(manifest.get("created", 0.0))
        run.finished_at = None
        if not run.dag and run.events:
            _rebuild_dag_from_events(run)
        return run


def _interrupted(run: Run, manifest: dict[str, Any], summary: dict[str, Any], why: str) -> dict[str, Any]:
    """What ``shad status`` says of a run whose process was killed: the summary of its last finished
    session (if any) with the status, the reason and the command that continues it."""
    return {
        **summary,
        "run_id": run.id,
        "status": RunStatus.INTERRUPTED.value,
        "goal": summary.get("goal") or manifest.get("config", {}).get("goal", ""),
        "history_dir": str(run.history.dir),
        "stop_reason": why,
        "resumable": True,
        "resume_command": f"shad resume {run.id}",
    }


def _vaults_exist(manifest: dict[str, Any]) -> bool:
    from pathlib import Path

    return all(Path(v).is_dir() for v in manifest.get("config", {}).get("vaults", []))


def _rebuild_dag_from_events(run: Run) -> None:
    """A run killed before it wrote dag.json: its events still say which nodes existed and how far
    each got."""
    for event in run.events:
        kind, node_id = kind_of(event), event.get("node")
        if kind is EventKind.NODE_CREATED and node_id and node_id not in run.dag:
            parent = event.get("parent")
            depth = 0 if parent is None else run.dag.node(parent).depth + 1 if parent in run.dag else 1
            run.dag.add(Node(node_id, event.get("task", ""), event.get("stage", ""), depth, parent=parent))
        elif isinstance(node_id, str) and node_id in run.dag and kind in _STATUS_OF:
            # Events do not hold answers: a node they call finished is left to the cache to answer.
            status = _STATUS_OF[kind]
            if not status.ok:
                run.dag.node(node_id).status = status


# The events that set a node's status, and the status each sets.
_STATUS_OF = {
    EventKind.NODE_STARTED: NodeStatus.STARTED,
    EventKind.NODE_SUCCEEDED: NodeStatus.SUCCEEDED,
    EventKind.NODE_CACHE_HIT: NodeStatus.CACHE_HIT,
    EventKind.NODE_FAILED: NodeStatus.FAILED,
    EventKind.NODE_PRUNED: NodeStatus.PRUNED,
    EventKind.NODE_NEEDS_HUMAN: NodeStatus.NEEDS_HUMAN,
    EventKind.NODE_FAILED_WITH_DIAGNOSTIC: NodeStatus.FAILED_WITH_DIAGNOSTIC,
}
