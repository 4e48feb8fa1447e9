"""``shad cache stats|clear|promote``: look into and manage the cache of node results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..errors import UsageError
from ..runs.cache import MAIN_TTL, parse_ttl
from ..store import Store, open_store
from ._run import out

__all__ = ["cache_group"]


def _store(redis_url: str | None) -> Store:
    return open_store(redis_url or os.environ.get("SHAD_STORE") or None)


@click.group("cache")
def cache_group() -> None:
    """The cache of node results (SQLite under $SHAD_HOME, or Redis with --redis / REDIS_URL)."""


@cache_group.command("stats")
@click.option("--redis", "redis_url", metavar="URL", help="The Redis to look at (default: REDIS_URL).")
@click.option("--json", "as_json", is_flag=True)
def stats_cmd(redis_url: str | None, as_json: bool) -> int:
    """Entries per tier, expired entries, size, hits and misses."""
    store = _store(redis_url)
    try:
        stats = store.cache_stats()
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(stats, indent=2, default=str))
        return 0
    entries = stats.get("entries", {})
    out.print(f"store {stats.get('store')} at {stats.get('url')}")
    out.print(f"entries: {entries.get('main', 0)} main, {entries.get('staging', 0)} staging")
    out.print(f"expired: {stats.get('expired', 0)} · about {stats.get('bytes', 0)} bytes")
    out.print(f"hits: {stats.get('hits', 0)} · misses: {stats.get('misses', 0)}")
    return 0


@cache_group.command("clear")
@click.option("--scope", type=click.Choice(["run", "source", "all"]), required=True, help="What to remove.")
@click.option("--run", "run_id", metavar="RUN_ID", help="With --scope run: the results this run wrote.")
@click.option(
    "--source", metavar="PATH", help="With --scope source: results that used notes at or under this path."
)
@click.option("--redis", "redis_url", metavar="URL", help="The Redis to clear (default: REDIS_URL).")
def clear_cmd(scope: str, run_id: str | None, source: str | None, redis_url: str | None) -> int:
    """Remove cached results: one run's, those built on a vault, folder or note, or all."""
    if scope == "run" and not run_id:
        raise UsageError("--scope run needs --run RUN_ID")
    if scope == "source":
        if not source:
            raise UsageError("--scope source needs --source PATH (a vault, folder or note)")
        source = str(Path(source).expanduser().resolve())
    store = _store(redis_url)
    try:
        removed = store.cache_clear(scope, run_id=run_id, source=source)
    finally:
        store.close()
    out.print(f"removed {removed} cached result{'s' if removed != 1 else ''}")
    return 0


@cache_group.command("promote")
@click.argument("key")
@click.option("--ttl", default="30d", show_default=True, help="How long it stays in the main cache.")
@click.option("--redis", "redis_url", metavar="URL", help="The Redis to use (default: REDIS_URL).")
def promote_cmd(key: str, ttl: str, redis_url: str | None) -> int:
    """Move a provisional (staging) result, once reviewed, to the main cache."""
    try:
        seconds = parse_ttl(ttl) if ttl else MAIN_TTL
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    store = _store(redis_url)
    try:
        moved = store.cache_promote(key, ttl=seconds)
    finally:
        store.close()
    if not moved:
        raise UsageError(
            f"no provisional result under {key!r}", hint="keys are in events.jsonl (NODE_CACHE_*)"
        )
    out.print(f"promoted {key}")
    return 0
