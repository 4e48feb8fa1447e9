"""``RunContext``: everything one run works with, built before it starts.

``open_context`` chooses the provider, opens the store and the ledger, makes (or reopens) the history
folder and the ``Run``, and announces the run; the orchestrator and each of its collaborators then take
the context. Every attribute exists from construction: the vaults are opened (indexes refreshed) as the
run's first step, but the ``VaultSet`` object is there from the start.
"""

from __future__ import annotations

import asyncio
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ..config import RunConfig
from ..errors import UsageError
from ..events import LIVE_ONLY, Event, NodePruned, RunStarted, to_record
from ..llm import Provider, Recorder, default_provider_name
from ..llm import get as get_provider
from ..store import Store, open_store
from ..store.history import History, find_run, new_run_id, to_disk_thread
from ..vault import VaultSet, is_local
from ._run import Run, RunStatus
from ._skills_step import SkillRouting
from ._voice_step import check_voice
from .budget import Envelope, Ledger
from .cache import NodeCache
from .checkpoints import Decider
from .dag import Node, NodeStatus
from .scheduler import AdaptiveLimiter

__all__ = ["DAG_SAVE_INTERVAL", "EventSink", "RunContext", "RunState", "failure", "open_context"]

EventSink = Callable[[dict[str, Any]], None]
DAG_SAVE_INTERVAL = 0.25  # seconds between dag.json checkpoints


@dataclass
class RunState:
    """What the collaborators of one run share and change as it goes."""

    stop_reason: str | None = None  # set once a budget, the clock or a person stops new work
    envelopes: dict[str, Envelope] = field(default_factory=dict)  # each node's share of the budget
    phase: dict[str, str] = field(default_factory=dict)  # node -> what it is doing (for failures)
    fresh: set[str] = field(default_factory=set)  # nodes that must not be answered from the cache
    previous_ok: set[str] = field(default_factory=set)  # nodes a resumed run had finished before
    skipped_by_human: set[str] = field(default_factory=set)
    retry: set[str] = field(default_factory=set)  # resume: nodes that had ended FAILED_WITH_DIAGNOSTIC
    retry_hint: str = ""  # resume --hint: one more retrieval rung for those nodes
    spent_before: int = 0  # tokens earlier sessions of this run spent (resume)
    overruns: list[dict[str, Any]] = field(default_factory=list)  # calls that cost more than they reserved
    cost_usd: float = 0.0
    cost_known: bool = True
    reexecuted: int = 0
    stale_nodes: int = 0
    software: dict[str, Any] | None = None  # a software run's code: files, checks, writes (summary)
    software_report: list[str] = field(default_factory=list)  # its sections in the report
    garden: list[dict[str, Any]] = field(default_factory=list)  # --garden: the type proposals made
    garden_report: list[str] = field(default_factory=list)
    learning: str | None = None  # --learn: the staging note proposed
    learn_report: list[str] = field(default_factory=list)


@dataclass
class RunContext:
    """One run's configuration, state and the services it uses."""

    config: RunConfig
    run: Run
    provider: Recorder  # every model call goes through it and is recorded for replay
    store: Store
    ledger: Ledger
    vaults: VaultSet
    cache: NodeCache
    on_event: EventSink | None = None
    decider: Decider | None = None  # answers checkpoints under the "ask" policy (a prompt, a widget)
    replay: str | None = None  # resume: which nodes to run again regardless (NODE | subtree:NODE | stale)
    resumed: Run | None = None  # the stopped run this one continues
    owns_store: bool = True  # opened here, so closed here
    llm: AdaptiveLimiter = field(default_factory=lambda: AdaptiveLimiter(2))
    local: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(4))
    state: RunState = field(default_factory=RunState)
    skills: SkillRouting = field(init=False)
    refreshing: asyncio.Future[Any] | None = None  # the vaults' refresh, started with the context

    def __post_init__(self) -> None:
        self.skills = SkillRouting(self)

    def system_prompt(self, node: Node) -> str:
        """The system prompt of a model call about ``node``: Shad's own, plus its skills' guidance."""
        return self.skills.system(node)

    started: float = field(default_factory=time.monotonic)
    _dag_saved: float = -DAG_SAVE_INTERVAL

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def history(self) -> History:
        return self.run.history

    def emit(self, event: Event) -> None:
        """Record an event in the run, append it to ``events.jsonl`` and hand it to ``on_event`` (a
        live-only kind, such as streamed synthesis text, goes to ``on_event`` alone)."""
        record = to_record(event, self.run.id)
        if event.event_kind not in LIVE_ONLY:
            self.run.events.append(record)
            self.run.history.append("events.jsonl", record)
        if self.on_event is not None:
            self.on_event(record)

    def save_dag(self, force: bool = False) -> None:
        """dag.json after changes (at most every quarter second), so a killed run resumes from where it
        was; a node that finished in between is answered by the cache on resume, not paid twice."""
        now = time.monotonic()
        if force or now - self._dag_saved >= DAG_SAVE_INTERVAL:
            # Built here (the DAG changes on this loop), written on the history's writer thread.
            self.run.history.write_json_soon("dag.json", self.run.dag.to_json())
            self.skills.save()  # the skills' routings so far go with the checkpoint
            self._dag_saved = now

    def prune(self, node: Node, reason: str) -> None:
        node.status, node.note, node.finished_at = NodeStatus.PRUNED, reason, time.time()
        self.emit(NodePruned(node=node.id, reason=reason, redundant_with=list(node.redundant_with) or None))

    def prune_unstarted(self, reason: str) -> None:
        for node in self.run.dag:
            if not node.status.finished:
                self.prune(node, reason)

    def record(self, rel: str, data: Any) -> None:
        """Keep an artifact (a retrieval script, its output) in the run's history."""
        if isinstance(data, str):
            self.run.history.write_text(rel, data)
        else:
            self.run.history.write_json(rel, data)

    async def close(self) -> None:
        self.skills.save()  # the routings made since the last checkpoint
        await self.provider.aclose()
        # Side by side: each may wait for the disk (the last checkpoints, SQLite's WAL folded back in).
        results = await asyncio.gather(
            to_disk_thread(self.vaults.close),  # a backend's server process ends with the run
            to_disk_thread(self.run.history.close),  # the last dag.json checkpoint is on disk
            to_disk_thread(self.store.close) if self.owns_store else asyncio.sleep(0),
            return_exceptions=True,  # each one closes whatever another raised
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result


async def open_context(
    config: RunConfig,
    *,
    provider: Provider | None = None,
    store: Store | None = None,
    ledger: Ledger | None = None,
    on_event: EventSink | None = None,
    decider: Decider | None = None,
    run_id: str | None = None,
    resume: Run | None = None,
    replay: str | None = None,
    hint: str = "",
) -> RunContext:
    """Everything a run needs, ready: a new run's history folder, or the stopped run's when resuming."""
    if resume is None and replay is None:
        config.check_new_goal()  # before a run folder exists
    # The provider first: an unknown one must fail before a run folder exists.
    chosen = provider or _make_provider(config)
    owns_store = store is None
    url = config.store_url or os.environ.get("SHAD_STORE") or None
    # The store and the vaults side by side, and the vaults before the run folder: a backend that cannot
    # be reached must fail before one exists.
    got_store, got_vaults = await asyncio.gather(
        to_disk_thread(open_store, url) if store is None else asyncio.sleep(0, store),
        to_disk_thread(VaultSet, list(config.vaults), include_history=config.include_history),
        return_exceptions=True,
    )
    if isinstance(got_store, BaseException) or isinstance(got_vaults, BaseException):
        if owns_store and isinstance(got_store, Store):  # what did open is closed again
            got_store.close()
        if isinstance(got_vaults, VaultSet):
            got_vaults.close()
        raise got_store if isinstance(got_store, BaseException) else cast(BaseException, got_vaults)
    store, vaults = got_store, got_vaults
    try:
        check_voice(config.voice, chosen.name, vaults.vaults)  # an unknown voice, or no model to render it
        await to_disk_thread(_check_notes, vaults)
    except BaseException:
        vaults.close()
        raise
    # The run's first step, the vaults' refresh, starts now: it reads the vaults while the run folder,
    # the manifest and the ledger are made (each waits for the disk). ``Orchestrator.execute`` awaits it.
    refreshing = asyncio.ensure_future(to_disk_thread(vaults.refresh))
    try:
        return await _open(
            config, chosen, store, vaults, owns_store, refreshing, ledger, on_event, decider, run_id,
            resume, replay, hint,
        )  # fmt: skip
    except BaseException:
        # The refresh must be over before anyone closes the vaults under it; its own error is moot now.
        await asyncio.gather(refreshing, return_exceptions=True)
        raise


def _check_notes(vaults: VaultSet) -> None:
    """A folder with no note is a wrong ``--vault`` (an empty folder, the parent of the vault, a typo
    that exists): said before the run spends a call, as the vault commands say it."""
    for v in vaults.vaults:
        has_notes = getattr(v, "has_notes", None)  # a backend's server keeps its own notes
        if callable(has_notes) and not has_notes():
            raise UsageError(
                f"vault {v.id!r} has no notes: {v.root}",
                hint="point --vault at a folder that contains .md files",
            )


async def _open(
    config: RunConfig,
    chosen: Provider,
    store: Store,
    vaults: VaultSet,
    owns_store: bool,
    refreshing: asyncio.Future[Any],
    ledger: Ledger | None,
    on_event: EventSink | None,
    decider: Decider | None,
    run_id: str | None,
    resume: Run | None,
    replay: str | None,
    hint: str,
) -> RunContext:
    if resume is None:
        run_id = run_id or new_run_id()
        first = vaults.vaults[0]
        history = History.create(run_id, str(first.root) if is_local(first) else None, config.history_dir)
    else:
        history, run_id = resume.history, resume.id
    recorder = Recorder(chosen)
    run = Run(run_id, config, history, provider_name=recorder.name)
    run.status = RunStatus.RUNNING
    cache = NodeCache(
        store,
        vaults,
        run_id=run_id,
        enabled=config.use_cache and config.provider != "replay",
        refresh=config.refresh_cache,
        vault_ttls=config.cache_ttls,
    )
    ctx = RunContext(
        config,
        run,
        recorder,
        store,
        ledger if ledger is not None else store,
        vaults,
        cache,
        on_event=on_event,
        decider=decider,
        replay=replay,
        resumed=resume,
        owns_store=owns_store,
        llm=AdaptiveLimiter(
            min(config.max_llm, config.max_parallel), adaptive=config.concurrency_mode == "adaptive"
        ),
        local=asyncio.Semaphore(config.max_parallel),
    )
    ctx.state.retry_hint = hint.strip()
    ctx.refreshing = refreshing
    # Side by side: the manifest (which makes the run findable and resumable by id) and the ledger.
    done = await asyncio.gather(
        to_disk_thread(history.write_json, "run.manifest.json", run.manifest()),
        to_disk_thread(_open_ledger, ctx),
        return_exceptions=True,  # both finish before either's error is raised
    )
    for result in done:
        if isinstance(result, BaseException):
            raise result
    if resume is None:
        ctx.emit(RunStarted(goal=config.goal, provider=recorder.name, budgets=config.budgets.__dict__))
    return ctx


def _make_provider(config: RunConfig) -> Provider:
    # Offline mode: the offline provider whatever keys are set (RunConfig refused any other by name).
    name = config.provider or ("offline" if config.offline else default_provider_name())
    if name == "replay" and config.replay_from:
        return get_provider(name, path=str(find_run(config.replay_from).dir))
    return get_provider(name)


def _open_ledger(ctx: RunContext) -> None:
    """A shared ledger remembers what earlier sessions of the run spent; a fresh in-process one is
    told from the stopped run's summary."""
    resume, run_id = ctx.resumed, ctx.run_id
    total = ctx.config.budgets.max_tokens
    summarized = int(resume.summary.get("metrics", {}).get("total_tokens", 0)) if resume else 0
    ctx.state.spent_before = max(0, summarized - ctx.ledger.spent(run_id)) if resume else 0
    ctx.ledger.open(run_id, total - ctx.state.spent_before)
    if resume is not None and (resume.history.dir / "replay" / "manifest.json").exists():
        calls = resume.history.read_json("replay/manifest.json").get("calls", [])
        ctx.provider.adopt(calls, origin="earlier session")


def failure(node_id: str, phase: str, exc: BaseException, **extra: Any) -> dict[str, Any]:
    """A failure as the run's history and summary keep it."""
    return {
        "node_id": node_id,
        "phase": phase,
        "error_class": type(exc).__name__,
        "message": getattr(exc, "message", None) or str(exc),
        "trace": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=4))[-2000:],
        **extra,
    }
