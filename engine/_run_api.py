"""``run`` / ``arun``: start a run from Python. An async core with a sync facade."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .config import Budgets, RunConfig
from .llm import Provider
from .run import Run

__all__ = ["aresume", "arun", "resume", "run"]


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
    on_event: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> Run:
    """Run a goal over one or more vaults and return the finished ``Run``.

    ``provider`` is a provider name ("offline", "anthropic", ...) or a provider object. ``options`` are
    ``RunConfig`` fields (strategy, models, history_dir, ...) and budget fields (max_depth, max_nodes,
    max_tokens, max_wall_time, ...).
    """
    from .orchestrator import Orchestrator

    if isinstance(provider, str):
        options["provider"], provider = provider, None
    config = _config(goal_or_config, vaults, dict(options))
    return await Orchestrator(config, provider=provider, on_event=on_event).execute()


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
    provider: Provider | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> Run:
    """Continue a stopped run (budget, time, failure, kill) in its own history, with ``add_tokens`` more."""
    from dataclasses import replace

    from .errors import ShadError, UsageError
    from .orchestrator import Orchestrator

    previous = Run.load(run_id)
    if previous.config is None:
        raise ShadError(
            f"run {run_id}'s vaults are no longer where they were", hint="move them back to resume"
        )
    config = previous.config
    spent = int(previous.summary.get("metrics", {}).get("total_tokens", 0))
    if config.budgets.max_tokens + add_tokens - spent < 1000:
        raise UsageError(
            f"run {run_id} has {config.budgets.max_tokens - spent} tokens left, too few to continue",
            hint=f"resume with more: shad resume {run_id} --budget +50%",
        )
    if add_tokens:
        config = replace(
            config, budgets=replace(config.budgets, max_tokens=config.budgets.max_tokens + add_tokens)
        )
    return await Orchestrator(config, provider=provider, on_event=on_event, run_id=previous.id).execute(
        previous
    )


def resume(run_id: str, **kwargs: Any) -> Run:
    """Synchronous ``aresume``."""
    return asyncio.run(aresume(run_id, **kwargs))
