"""Starting a run: ``arun`` / ``aresume`` / ``areplay`` (an async core with sync facades) and
``start_run``, the one function below them that opens a run's context and runs its orchestrator.
Every face (the CLI, the magics, the kernel) starts runs through these."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..config import Budgets, RunConfig
from ..llm import Provider
from ._run import Run

if TYPE_CHECKING:
    from ..retrieval import Retriever
    from ..store import Store
    from .budget import Ledger
    from .checkpoints import Decider

__all__ = ["areplay", "aresume", "arun", "replay", "resume", "run", "start_run"]

EventSink = Callable[[dict[str, Any]], None]


async def start_run(
    config: RunConfig,
    *,
    provider: Provider | None = None,
    on_event: EventSink | None = None,
    decider: Decider | None = None,
    store: Store | None = None,
    ledger: Ledger | None = None,
    retriever: Retriever | None = None,
    run_id: str | None = None,
    resume: Run | None = None,
    replay: str | None = None,
    hint: str = "",
) -> Run:
    """Open the run's context and carry it to the report. ``store``, ``ledger`` and ``retriever``
    replace the ones the run would open itself (tests, benchmarks); ``resume`` continues a stopped run
    in its own history, ``replay`` naming what to run again regardless."""
    from ._context import open_context
    from .orchestrator import Orchestrator

    ctx = await open_context(
        config,
        provider=provider,
        store=store,
        ledger=ledger,
        on_event=on_event,
        decider=decider,
        run_id=run_id,
        resume=resume,
        replay=replay,
        hint=hint,
    )
    return await Orchestrator(ctx, retriever=retriever).execute()


def _config(
    goal_or_config: str | RunConfig, vaults: str | Sequence[str] | None, options: dict[str, Any]
) -> RunConfig:
    if isinstance(goal_or_config, RunConfig):
        if vaults is not None or options:
            raise TypeError("pass either a RunConfig or a goal with options, not both")
        return goal_or_config
    budget_fields = set(Budgets.__dataclass_fields__)
    budgets = Budgets(**{k: options.pop(k) for k in list(options) if k in budget_fields})
    vault_list = (vaults,) if isinstance(vaults, str) else tuple(vaults or ())
    return RunConfig(goal_or_config, vault_list, budgets=budgets, **options)


async def arun(
    goal_or_config: str | RunConfig,
    vaults: str | Sequence[str] | None = None,
    *,
    provider: Provider | str | None = None,
    on_event: EventSink | None = None,
    decider: Decider | None = None,
    **options: Any,
) -> Run:
    """Run a goal over one or more vaults and return the finished ``Run``.

    ``provider`` is a provider name ("offline", "anthropic", ...) or a provider object. ``options`` are
    ``RunConfig`` fields (strategy, models, history_dir, ...) and budget fields (max_depth, max_nodes,
    max_tokens, max_wall_time, ...). ``checkpoints`` is the checkpoint policy (ask, pause, approve,
    skip, off); under ``ask``, ``decider`` (async, ``Checkpoint -> Decision | None``) answers them.
    """
    if isinstance(provider, str):
        options["provider"], provider = provider, None
    config = _config(goal_or_config, vaults, dict(options))
    return await start_run(config, provider=provider, on_event=on_event, decider=decider)


def run(
    goal_or_config: str | RunConfig,
    vaults: str | Sequence[str] | None = None,
    **kwargs: Any,
) -> Run:
    """Synchronous ``arun``. Inside a running event loop (Jupyter), the run gets its own loop in a
    worker thread, so no loop is ever nested or patched."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arun(goal_or_config, vaults, **kwargs))
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["run"] = asyncio.run(arun(goal_or_config, vaults, **kwargs))
        except BaseException as exc:  # handed to the caller's thread below
            result["error"] = exc

    worker = threading.Thread(target=target, name="shad-run", daemon=True)
    worker.start()
    worker.join()
    if "error" in result:
        raise result["error"]
    return result["run"]  # type: ignore[no-any-return]


async def aresume(
    run_id: str,
    *,
    add_tokens: int = 0,
    max_tokens: int | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    max_branching: int | None = None,
    replay: str | None = None,
    store_url: str | None = None,
    provider: Provider | None = None,
    on_event: EventSink | None = None,
    checkpoints: str | None = None,
    decider: Decider | None = None,
    hint: str = "",
) -> Run:
    """Continue a stopped run (budget, time, failure, kill, a checkpoint) in its own history.

    Finished nodes whose notes are unchanged are kept; stale ones are re-verified or run again;
    ``replay`` ("NODE", "subtree:NODE" or "stale") runs nodes again on purpose. ``add_tokens`` raises
    the budget by that much; ``max_tokens`` sets it; ``max_depth``, ``max_nodes`` and ``max_branching``
    override those limits (subtasks a smaller limit cut from the plan run once there is room for them).
    Decisions recorded at checkpoints (``decide``) are applied; ``checkpoints`` overrides the run's
    policy for what is still undecided (``decider`` answers under ``ask``). Nodes that ended
    FAILED_WITH_DIAGNOSTIC run again; ``hint`` is one more retrieval rung for them.
    """
    from ..errors import ShadError, UsageError
    from ..store import open_store
    from ._resume_plan import parse_replay

    previous = Run.load(run_id)
    if previous.config is None:
        raise ShadError(
            f"run {run_id}'s vaults are no longer where they were", hint="move them back to resume"
        )
    config = previous.config
    parse_replay(replay, previous.dag)  # a bad --replay is a usage error before anything runs
    if hint.strip() and not any(n.status.value == "FAILED_WITH_DIAGNOSTIC" for n in previous.dag):
        raise UsageError(
            f"run {run_id} has no node whose retries ran out: --hint is for those",
            hint=f"to steer a node waiting at a checkpoint: shad checkpoint {run_id} NODE --hint TEXT",
        )
    url = store_url or _usable_url(config.store_url)
    store = await asyncio.to_thread(open_store, url or os.environ.get("SHAD_STORE") or None)
    try:
        summarized = int(previous.summary.get("metrics", {}).get("total_tokens", 0))
        spent = max(summarized, store.spent(previous.id))
        total = (max_tokens if max_tokens is not None else config.budgets.max_tokens) + add_tokens
        if total - spent < 1000:
            raise UsageError(
                f"run {run_id} has {total - spent} tokens left, too few to continue",
                hint=f"resume with more: shad resume {run_id} --budget +50%",
            )
        limits = {"max_depth": max_depth, "max_nodes": max_nodes, "max_branching": max_branching}
        budgets = replace(
            config.budgets, max_tokens=total, **{k: v for k, v in limits.items() if v is not None}
        )
        config = replace(
            config, budgets=budgets, store_url=url, checkpoints=checkpoints or config.checkpoints
        )
        return await start_run(
            config,
            provider=provider,
            store=store,
            on_event=on_event,
            decider=decider,
            resume=previous,
            replay=replay,
            hint=hint,
        )
    finally:
        store.close()


def _usable_url(url: str | None) -> str | None:
    """A store URL from a run's manifest has its password masked: then the environment must say it."""
    if url and "***" in url:
        return os.environ.get("REDIS_URL") or None
    return url


def resume(run_id: str, **kwargs: Any) -> Run:
    """Synchronous ``aresume``."""
    return asyncio.run(aresume(run_id, **kwargs))


async def areplay(run_id: str, *, on_event: EventSink | None = None) -> Run:
    """Run a recorded run again as a new run, every model call answered from its recording
    (``replay/manifest.json``): same DAG, decisions and citations, no model call made."""
    from ..errors import ShadError

    recorded = Run.load(run_id)
    if recorded.config is None:
        raise ShadError(
            f"run {run_id}'s vaults are no longer where they were", hint="move them back to replay it"
        )
    if not (recorded.history.dir / "replay" / "manifest.json").exists():
        raise ShadError(
            f"run {run_id} has no recording (replay/manifest.json)",
            hint="only runs that finished (or stopped cleanly) can be replayed",
        )
    config = replace(
        recorded.config, provider="replay", replay_from=recorded.id, use_cache=False, store_url=None
    )
    return await start_run(config, on_event=on_event)


def replay(run_id: str, **kwargs: Any) -> Run:
    """Synchronous ``areplay``."""
    return asyncio.run(areplay(run_id, **kwargs))
