"""``shad watch``: run the task notes of a vault, once or every few seconds, with completion webhooks."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import click

from ..config import CHECKPOINT_POLICIES, Budgets
from ..errors import UsageError

if TYPE_CHECKING:
    from ..watch import TaskNote, TaskOutcome

__all__ = ["watch_cmd"]

_POLICIES = [p for p in CHECKPOINT_POLICIES if p != "ask"]  # nobody is at the terminal to answer


@click.command(
    "watch",
    help="Run the task notes of a vault (type: task, status: pending) and mark them complete or failed.\n\n"
    "A task's goal is its goal: field, else the first paragraph of its body (after its heading, if "
    "it opens with one); strategy, max_depth, max_nodes and max_tokens fields override the options "
    "below. A task is marked processing (run_id, started_at), then complete (report: a link to the "
    "report note, run_status SUCCESS or PARTIAL) or failed (error: the reason). Notes under Shad/, "
    "notes Shad wrote and tasks with a run_id are never run. To run a task again, set status: pending "
    "and delete its run_id.\n\n"
    "With --webhook, each outcome is POSTed as JSON to that URL, signed (X-Shad-Signature: "
    "sha256=HMAC of the body), only when its HOST[:PORT] is given with --webhook-allow.\n\n"
    "--once: exit 0 when every task completed (or there was none), 1 when one did not.",
)
@click.argument("vault", type=click.Path(file_okay=False))
@click.option("--once", is_flag=True, help="One pass, then exit.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=30.0,
    show_default=True,
    help="Seconds between passes (without --once).",
)
@click.option(
    "--webhook", "webhooks", multiple=True, metavar="URL", help="POST each outcome here (repeatable)."
)
@click.option(
    "--webhook-allow",
    "allow",
    multiple=True,
    metavar="HOST[:PORT]",
    help="A host webhooks may go to (repeatable; none is allowed by default, loopback neither).",
)
@click.option(
    "--webhook-secret",
    envvar="SHAD_WEBHOOK_SECRET",
    metavar="SECRET",
    help="Key of the HMAC signature (default: $SHAD_WEBHOOK_SECRET); required with --webhook.",
)
@click.option("--provider", help="anthropic, openai, claude-code or offline (default: from the environment).")
@click.option("--strategy", help="software, research, analysis, planning or creative (default: classified).")
@click.option("--max-depth", type=int, default=Budgets.max_depth, show_default=True)
@click.option("--max-nodes", type=int, default=Budgets.max_nodes, show_default=True)
@click.option("--max-tokens", type=int, default=Budgets.max_tokens, show_default=True)
@click.option(
    "--checkpoints",
    type=click.Choice(_POLICIES),
    default="pause",
    show_default=True,
    help="At a checkpoint: pause (the task fails with NEEDS_HUMAN; resume it later), approve, skip, off.",
)
@click.option(
    "--offline",
    is_flag=True,
    envvar="SHAD_OFFLINE",
    help="Refuse every external call: the offline provider for every task, no webhooks.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per task on stdout.")
def watch_cmd(
    vault: str,
    once: bool,
    interval: float,
    webhooks: tuple[str, ...],
    allow: tuple[str, ...],
    webhook_secret: str | None,
    provider: str | None,
    strategy: str | None,
    max_depth: int,
    max_nodes: int,
    max_tokens: int,
    checkpoints: str,
    offline: bool,
    as_json: bool,
) -> int:
    from rich.console import Console
    from rich.markup import escape

    from .. import strategies
    from ..llm import available
    from ..watch import Watcher, WatchOptions, check_webhooks

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    targets = check_webhooks(webhooks, allow, offline=offline)
    if targets and not (webhook_secret or "").strip():
        raise UsageError(
            "webhooks are signed: a secret is needed",
            hint="pass --webhook-secret SECRET or set SHAD_WEBHOOK_SECRET",
        )
    if provider is not None and provider.strip().lower() not in available():
        raise UsageError(f"unknown provider {provider!r}", hint=f"providers: {', '.join(available())}")
    if strategy is not None:
        strategies.get(strategy)
    Budgets(max_depth=max_depth, max_nodes=max_nodes, max_tokens=max_tokens)  # bad values: exit 2 now
    options = WatchOptions(provider, strategy, max_depth, max_nodes, max_tokens, checkpoints, offline)
    current: dict[str, Any] = {}

    def on_task(task: TaskNote) -> None:
        current["task"] = task
        err.print(f"[dim]running[/] {escape(task.path)}: {escape(task.goal[:100])}")

    def on_outcome(outcome: TaskOutcome) -> None:
        current.pop("task", None)
        err.print(_outcome_line(outcome, escape))
        for d in outcome.deliveries:
            if not d.ok:
                err.print(f"[yellow]shad: warning:[/] webhook {escape(d.target)} failed: {escape(d.error)}")
        if as_json:
            click.echo(json.dumps(outcome.to_dict(watcher.vault.id), ensure_ascii=False, default=str))

    watcher = Watcher(
        vault,
        options=options,
        webhooks=targets,
        secret=webhook_secret,
        on_task=on_task,
        on_outcome=on_outcome,
    )
    where = escape(str(watcher.root))
    if once:
        result = watcher.run_pass()
        _print_skipped(err, result.skipped, escape)
        if not result.outcomes:
            err.print(f"nothing to do: no pending task note in {where}")
            return 0
        done = sum(o.outcome == "complete" for o in result.outcomes)
        err.print(f"{done}/{len(result.outcomes)} tasks complete")
        return 0 if result.all_complete else 1
    err.print(f"watching {where} for task notes every {interval:g}s (Ctrl-C stops)")
    seen: set[tuple[str, str]] = set()
    try:
        while True:
            result = watcher.run_pass()
            fresh = [s for s in result.skipped if (s.path, s.reason) not in seen]
            seen.update((s.path, s.reason) for s in fresh)
            _print_skipped(err, fresh, escape)
            time.sleep(interval)
    except KeyboardInterrupt:
        task = current.get("task")
        if task is not None:
            err.print(
                f"stopped; {escape(task.path)} was interrupted and marked failed (shad resume continues it)"
            )
            return 130
        err.print("stopped")
        return 0


def _outcome_line(outcome: TaskOutcome, escape: Any) -> str:
    run = f"run {outcome.run_id} {outcome.run_status}" if outcome.run_status else "no run"
    if outcome.outcome == "complete":
        report = f" · report {escape(outcome.report)}" if outcome.report else ""
        return f"[green]✓[/] {escape(outcome.path)} complete · {run} · {outcome.citations} citations{report}"
    mark = "[red]✗[/]" if outcome.outcome == "failed" else "[yellow]![/]"
    return f"{mark} {escape(outcome.path)} {outcome.outcome} · {run}: {escape(outcome.error)}"


def _print_skipped(err: Any, skipped: list[Any], escape: Any) -> None:
    for s in skipped:
        err.print(f"[dim]skipped {escape(s.path)}: {escape(s.reason)}[/]")
