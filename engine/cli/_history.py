"""``shad history gc [--dry-run] [--json]`` and ``shad history pin|unpin RUN_ID`` (also ``shad run pin
RUN_ID``): run histories move from hot to warm to cold as they age; pinned and running runs never do.
Only click is imported at the top: the engine loads when a command runs."""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["history_group"]


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


@click.group("history")
def history_group() -> None:
    """Run histories: retention tiers (hot, warm, cold) and pins."""


@history_group.command("gc")
@click.option("--dry-run", is_flag=True, help="Say what would be compressed or removed; change nothing.")
@click.option("--hot-days", type=float, default=7.0, show_default=True, help="Runs younger stay whole.")
@click.option(
    "--warm-days",
    type=float,
    default=30.0,
    show_default=True,
    help="Runs younger have large artifacts compressed; older ones keep only report, summary, manifests.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan (or what was done) as JSON.")
def gc_cmd(dry_run: bool, hot_days: float, warm_days: float, as_json: bool) -> int:
    """Move every run to the tier its age calls for. Pinned and running runs are never touched."""
    from ..store.retention import collect

    report = collect(dry_run=dry_run, hot_days=hot_days, warm_days=warm_days)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return 0
    verb = {
        "compress": "would compress" if dry_run else "compressed",
        "reduce": "would reduce" if dry_run else "reduced",
    }
    changed = [a for a in report.actions if a.action in verb]
    for a in report.actions:
        if a.action in verb:
            click.echo(
                f"{a.run_id}  {a.tier} -> {a.target}: {verb[a.action]} {len(a.files)} file(s), "
                f"{_size(a.bytes_freed)}"
            )
        elif a.action == "skip":
            click.echo(f"{a.run_id}  kept: {a.reason}")
    freed = f"{_size(report.bytes_freed)} {'would be freed' if dry_run else 'freed'}"
    click.echo(
        f"{len(changed)} of {len(report.actions)} run(s) {'would move' if dry_run else 'moved'}; {freed}"
    )
    return 0


def _pin(run_id: str, pinned: bool) -> int:
    from ..store.retention import pin

    result: dict[str, Any] = pin(run_id, pinned)
    click.echo(f"{result['run_id']} {'pinned: history gc never touches it' if pinned else 'unpinned'}")
    return 0


@history_group.command("pin")
@click.argument("run_id")
def pin_cmd(run_id: str) -> int:
    """Keep RUN_ID whole: history gc never compresses or removes a pinned run."""
    return _pin(run_id, True)


@history_group.command("unpin")
@click.argument("run_id")
def unpin_cmd(run_id: str) -> int:
    """Let history gc move RUN_ID through the tiers again."""
    return _pin(run_id, False)
