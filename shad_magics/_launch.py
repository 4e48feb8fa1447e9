"""Starting a run from a notebook: engine options -> ``RunConfig``, ``--context`` vaults, the DAG widget,
and the job on the engine thread. Shared by ``%%shad run``, ``%shad resume`` and ``shad_magics.arun``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import engine
from engine import Budgets, Run, RunConfig

from ._context import ContextVaults, build_context
from ._errors import ShadUsageError
from ._result import ShadResult
from ._runner import CLEANUP_WAIT, Job, check_outcome, outcome

__all__ = ["Defaults", "arun", "config_for", "default_vaults", "make_widget", "show_stopped", "start"]

EventSink = Callable[[dict[str, Any]], None]


class Defaults(Protocol):
    """Session defaults (``ShadMagics`` traitlets) that ``arun`` uses when an option is not given."""

    vault: list[str]
    provider: str | None
    history_dir: str | None


session: Defaults | None = None  # the loaded ShadMagics, set by load_ipython_extension


def default_vaults(defaults: Defaults | None = None) -> list[str]:
    """``ShadMagics.vault``, else ``$SHAD_VAULT`` (several separated by ``os.pathsep``), else a usage
    error that says how to set one."""
    defaults = defaults if defaults is not None else session
    if defaults is not None and defaults.vault:
        return list(defaults.vault)
    env = os.environ.get("SHAD_VAULT", "").strip()
    if env:
        return [v for v in env.split(os.pathsep) if v.strip()]
    raise ShadUsageError(
        "no vault given",
        hint="pass --vault DIR, or set a default: %shad config vault=DIR "
        "(or c.ShadMagics.vault, or the SHAD_VAULT environment variable)",
    )


def config_for(
    goal: str, vaults: Sequence[str], options: Mapping[str, Any], extra_vaults: Sequence[str] = ()
) -> RunConfig:
    """A validated ``RunConfig``; ``options`` are ``RunConfig`` and ``Budgets`` field names. A name this
    engine does not know is a usage error (not a TypeError)."""
    opts = dict(options)
    for vault in vaults:
        if not str(vault).strip():
            raise ShadUsageError(
                "an empty vault path was given", hint="pass --vault with the folder of your notes"
            )
    budget_names = {f.name for f in dataclasses.fields(Budgets)}
    config_names = {f.name for f in dataclasses.fields(RunConfig)} - {"goal", "vaults", "budgets"}
    unknown = sorted(set(opts) - budget_names - config_names)
    if unknown:
        raise ShadUsageError(
            f"unknown run option(s): {', '.join(unknown)}",
            hint=f"options: {', '.join(sorted(budget_names | config_names))}",
        )
    budgets = Budgets(**{k: opts.pop(k) for k in list(opts) if k in budget_names})
    return RunConfig(goal, tuple(vaults) + tuple(extra_vaults), budgets=budgets, **opts)


def make_widget(enabled: bool) -> Any:
    """A ``widgets.DagExplorer``, or None when disabled or when the widget cannot be built here."""
    if not enabled:
        return None
    try:
        from widgets import DagExplorer
    except ImportError:
        return None
    try:
        return DagExplorer()
    except Exception:  # a widget that cannot be built must not stop the run
        return None


def start(
    launch: Callable[[EventSink], Awaitable[Run]],
    *,
    widget: Any = None,
    config: RunConfig | None = None,
    context: ContextVaults | None = None,
    on_event: EventSink | None = None,
    on_done: Callable[[Job], None] | None = None,
) -> Job:
    """Submit a run to the engine thread. The widget is told what to expect, gets every event, and the
    whole finished run; the context vaults are removed once the run is over."""
    if widget is not None and config is not None and callable(getattr(widget, "expect", None)):
        with contextlib.suppress(Exception):  # a widget problem must never stop a run
            widget.expect(config)
    sinks = [s for s in (getattr(widget, "handle_event", None), on_event) if s is not None]

    def fan_out(record: dict[str, Any]) -> None:
        for sink in sinks:
            with contextlib.suppress(Exception):  # one broken sink must not starve the others
                sink(record)

    def done(job: Job) -> None:
        # Each step on its own: a failing widget must not keep the context vault or a waiter behind.
        if context is not None:
            with contextlib.suppress(Exception):
                context.cleanup()
        if widget is not None and job.run is not None and callable(getattr(widget, "show_run", None)):
            with contextlib.suppress(Exception):
                widget.show_run(job.run)
        if on_done is not None:
            on_done(job)

    job = Job(launch, on_event=fan_out if sinks else None, on_done=done)
    if widget is not None and hasattr(widget, "stop_handler"):
        with contextlib.suppress(Exception):  # the DAG widget's Stop button cancels this run
            widget.stop_handler = job.stop
            job.on_cell_wait = widget.set_cell_waiting
    return job


def show_stopped(widget: Any, run_id: str | None) -> None:
    """An interrupted run's DAG widget shows the run as its history has it (PARTIAL), not RUNNING."""
    if widget is None or not run_id or not callable(getattr(widget, "show_run", None)):
        return
    with contextlib.suppress(Exception):
        widget.show_run(Run.load(run_id))


def run_launcher(config: RunConfig) -> Callable[[EventSink], Awaitable[Run]]:
    return lambda sink: engine.arun(config, on_event=sink)


async def arun(
    goal: str,
    vaults: str | Sequence[str] | None = None,
    *,
    context: Mapping[str, Any] | None = None,
    on_event: EventSink | None = None,
    format: str = "markdown",
    **options: Any,
) -> ShadResult:
    """Run ``goal`` from async code (a notebook cell can ``await`` it): the run executes on the engine
    thread, this coroutine just waits, so the caller's loop stays free. ``vaults`` default to the
    session's; ``context`` maps names to DataFrames, strings or paths (as ``--context``); ``options``
    are ``RunConfig`` / ``Budgets`` fields (provider, max_tokens, history_dir, ...). Cancelling the
    awaiting task cancels the run (its history is kept). Raises ``ShadRunError`` if the run fails."""
    roots = [vaults] if isinstance(vaults, (str, os.PathLike)) else list(vaults or default_vaults())
    if session is not None:
        for name in ("provider", "history_dir"):
            value = getattr(session, name, None)
            if value and name not in options:
                options[name] = value
    ctx = build_context(list((context or {}).items()))
    try:
        config = config_for(goal, [str(r) for r in roots], options, ctx.dirs)
    except BaseException:
        ctx.cleanup()
        raise
    caller = asyncio.get_running_loop()
    finished: asyncio.Future[None] = caller.create_future()

    def settle() -> None:
        if not finished.done():
            finished.set_result(None)

    def wake(job: Job) -> None:
        caller.call_soon_threadsafe(settle)

    job = start(run_launcher(config), config=config, context=ctx, on_event=on_event, on_done=wake)
    try:
        await finished
    except asyncio.CancelledError:
        job.cancel()
        await asyncio.to_thread(job.wait, CLEANUP_WAIT)
        raise
    run = outcome(job)
    check_outcome(run)
    return ShadResult(run, format=format)
