"""``shad status RUN_ID``, ``shad runs`` and ``shad trace tree|node``: what became of runs."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Group
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..errors import UsageError
from ..runs import Run, RunStatus
from ..store.history import list_runs
from ._live import render_tree
from ._run import err, out, print_json

__all__ = ["runs_cmd", "status_cmd", "trace_group"]


@click.command("status")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
def status_cmd(run_id: str, as_json: bool) -> int:
    """Status, goal, metrics, missing branches and failures of a run."""
    run = Run.load(run_id)
    if as_json:
        print_json(
            run.summary or {"run_id": run.id, "status": run.status.value, "history_dir": str(run.history.dir)}
        )
        return 0
    s = run.summary
    out.print(f"[bold]{run.id}[/] {run.status.value}  {escape(s.get('goal', ''))}")
    if run.status is RunStatus.INTERRUPTED:  # killed: it will not finish by itself
        out.print(f"  [yellow]interrupted[/]: {escape(s['stop_reason'])}; resumable")
        out.print(f"  to continue: {s['resume_command']}")
        out.print(f"  history: {escape(str(run.history.dir))}")
    elif s:
        m = s["metrics"]
        out.print(
            f"  {m['nodes_executed']}/{m['nodes_total']} nodes, {m['total_tokens']} tokens, "
            f"{m['llm_calls']} model calls, {m['duration_ms'] / 1000:.1f}s, provider {s['provider']}"
        )
        out.print(f"  report: {escape(s['report_path'])}")
        for b in s.get("missing_branches", []):
            out.print(
                f"  [magenta]missing[/] {b['node_id']}: {escape(b['task'])} ({escape(str(b['reason']))})"
            )
        for f in s.get("failures", []):
            out.print(
                f"  [red]failed[/] {f['node_id']} {f['phase']}: {f['error_class']}: {escape(f['message'])}"
            )
        for c in s.get("checkpoints", []):
            if c.get("decision") is None:
                out.print(f"  [yellow]waits for a person[/] {c['node_id']}: {escape(c['reason'])}")
        if s.get("resume_command"):
            out.print(f"  to continue: {s['resume_command']}")
    else:
        out.print(f"  no final summary yet (it has not finished); history: {escape(str(run.history.dir))}")
    return 0


@click.group("trace")
def trace_group() -> None:
    """Look inside a run: its DAG, or one node."""


@trace_group.command("tree")
@click.argument("run_id")
def trace_tree_cmd(run_id: str) -> int:
    """The run's DAG with each node's status, tokens and time."""
    run = Run.load(run_id)
    out.print(render_tree(run.dag, f"{run.id} {run.status.value}"))
    return 0


@trace_group.command("node")
@click.argument("run_id")
@click.argument("node_id")
@click.option("--json", "as_json", is_flag=True)
def trace_node_cmd(run_id: str, node_id: str, as_json: bool) -> int:
    """Everything about one node: task, retrieval, context, citations, answer, tokens, error."""
    run = Run.load(run_id)
    if node_id not in run.dag:
        raise UsageError(
            f"run {run.id} has no node {node_id!r}", hint=f"nodes: {', '.join(n.id for n in run.dag)}"
        )
    node = run.dag.node(node_id)
    if as_json:
        print_json(node.to_dict())
        return 0
    table = Table(show_header=False, box=None)
    for key in ("id", "stage", "depth", "parent", "status", "tokens", "llm_calls", "duration_ms", "note"):
        table.add_row(f"[cyan]{key}[/]", escape(str(getattr(node, key, ""))))
    parts: list[Any] = [table, Text(f"\nTask: {node.task}", style="bold")]
    retrieval = node.retrieval or {}
    if retrieval:
        parts.append(
            Text(
                f"Retrieval ({retrieval.get('method')}): queries {retrieval.get('queries')}, "
                f"score {retrieval.get('retrieval_score')}"
            )
        )
        for c in retrieval.get("context", []):
            parts.append(Text(f"  {c['citation']}  {c['text'][:160]!r}", style="dim"))
    if node.answer:
        parts += [Text("\nAnswer:", style="bold"), Markdown(node.answer)]
    if node.error:
        parts.append(Text(f"\nError: {node.error['error_class']}: {node.error['message']}", style="red"))
    out.print(Group(*parts))
    return 0


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True)
def runs_cmd(limit: int, as_json: bool) -> int:
    """Recent runs, newest first."""
    runs = list_runs(limit)
    if as_json:
        print_json(runs)
        return 0
    if not runs:
        err.print('no runs yet: start one with shad run "GOAL" --vault DIR')
        return 0
    table = Table("run id", "status", "goal", box=None)
    for r in runs:
        table.add_row(r["run_id"], r["status"], escape(r["goal"][:80]))
    out.print(table)
    return 0
