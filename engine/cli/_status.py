"""``shad status [RUN_ID]``, ``shad runs`` and ``shad trace tree|node``: what became of runs."""

from __future__ import annotations

from enum import Enum
from typing import Any

import click
from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..errors import UsageError
from ..runs import Run, RunStatus
from ..store.history import list_runs
from ._live import render_tree
from ._run import err, out, print_json
from ._term import shorten, show, show_markdown

__all__ = ["latest_run_id", "runs_cmd", "status_cmd", "trace_group"]


def latest_run_id() -> str:
    """The newest run's id (``shad status`` without one)."""
    runs = list_runs(1)
    if not runs:
        raise UsageError("there are no runs yet", hint='start one with shad run "GOAL" --vault DIR')
    return str(runs[0]["run_id"])


@click.command("status")
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True)
def status_cmd(run_id: str | None, as_json: bool) -> int:
    """Status, goal, metrics, missing branches and failures of a run (without RUN_ID: the latest)."""
    run = Run.load(run_id or latest_run_id())
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
        for r in s.get("pruned_redundant", []):  # pruned by novelty: a saving, not a missing branch
            saved = f", ~{r['tokens_saved_est']} tokens saved" if r.get("tokens_saved_est") else ""
            out.print(
                f"  [magenta]pruned[/] {r['node_id']}: repeats {', '.join(r['same_as'])}{saved} "
                f"({escape(r['task'])})"
            )
        for f in s.get("failures", []):
            if f.get("status") == "FAILED_WITH_DIAGNOSTIC":  # retries ran out: what to try next
                out.print(f"  [bold red]failed with diagnostic[/] {f['node_id']}: {escape(f['message'])}")
                for i in f.get("next_inputs", []):
                    out.print(f"    try: {escape(i['command'])}")
                continue
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
    show(out, render_tree(run.dag, f"{run.id} {run.status.value}"))
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
    table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    for key in ("id", "stage", "depth", "parent", "status", "tokens", "llm_calls", "duration_ms", "note"):
        table.add_row(Text(key, style="cyan"), Text(_field(getattr(node, key, None))))
    parts: list[Any] = [table, Text(f"\nTask: {node.task}", style="bold")]
    retrieval = node.retrieval or {}
    if retrieval:
        said = [f"queries: {'; '.join(map(str, retrieval['queries']))}"] if retrieval.get("queries") else []
        if retrieval.get("retrieval_score") is not None:
            said.append(f"score {retrieval['retrieval_score']}")
        method = f" ({retrieval['method']})" if retrieval.get("method") else ""
        parts.append(Text(f"Retrieval{method}" + (": " + ", ".join(said) if said else "")))
        for c in retrieval.get("context", []):  # the citation whole; its passage shortened to a glimpse
            parts.append(Text(f"  {c['citation']}  {shorten(str(c.get('text', '')), 160)}", style="dim"))
    show(out, Group(*parts))
    if node.answer:
        out.print(Text("\nAnswer:", style="bold"))
        show_markdown(out, node.answer)
    if node.error:
        out.print(Text(f"\nError: {node.error['error_class']}: {node.error['message']}", style="red"))
    if node.diagnostic:  # FAILED_WITH_DIAGNOSTIC: what was tried, what to try
        out.print(Text(f"\nFailed with diagnostic: {node.diagnostic.get('reason', '')}", style="bold red"))
        for i in node.diagnostic.get("next_inputs", []):
            out.print(Text(f"  try: {i['command']}"))
    return 0


def _field(value: Any) -> str:
    """A node's field as a person reads it: an enum by its value (never ``NodeStatus.SUCCEEDED``),
    nothing for a missing one."""
    if isinstance(value, Enum):
        return str(value.value)
    return "" if value is None else str(value)


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
        table.add_row(r["run_id"], r["status"], Text(shorten(r["goal"], 80)))
    show(out, table)
    return 0
