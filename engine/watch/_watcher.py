"""The watcher: one pass runs every pending task note of a vault, one after the other.

A task's life, every change made through the vault's one writer with the hash of the note as it was
read (so a note a person edited meanwhile is never written over):

1. ``pending`` → ``processing`` with ``run_id`` and ``started_at`` (the run id is chosen before the run
   starts, so the note names it from the first moment);
2. the run, over the task note's own vault;
3. ``complete`` with ``report: "[[<report note>]]"``, ``run_status`` (``SUCCESS`` or ``PARTIAL``: a
   partial run has a report, whose missing branches it lists) and ``completed_at``; or ``failed`` with
   ``error`` (the reason), ``failed_at`` and, when a run happened, ``run_status`` (``FAILED``,
   ``NEEDS_HUMAN``: waits at a checkpoint, ...) and the report link when a report was written.

Invalid per-task options (``max_tokens: 10``), an empty goal, a provider that fails: ``failed`` with
the reason. A note edited while its run was going is left as it is (``outcome: conflict``; still
``processing`` with its ``run_id``, so never started again). After each task, each webhook gets the
outcome (``task.completed`` or ``task.failed``).

Every change of a task note is a ``NOTE_WRITTEN`` record in the audit log (``shad approvals audit``):
the watcher writes outside any run, so its writes are not a run's events. A record says which status
change it was and for which run; never the note's text.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Budgets, RunConfig
from ..curation import logged
from ..errors import ShadError
from ..runs import Run, RunStatus, start_run
from ..store.history import new_run_id, scrub
from ..vault import NoteWrite, StateCorruptionError, Vault, VaultWriter
from ._tasks import Skipped, TaskNote, find_tasks
from ._webhooks import Delivery, WebhookTarget, deliver

__all__ = ["PassResult", "TaskOutcome", "WatchOptions", "Watcher"]

ACTOR = "shad watch"
_COMPLETE = (RunStatus.SUCCESS, RunStatus.PARTIAL)
_MAX_ERROR = 500


@dataclass(frozen=True)
class WatchOptions:
    """Run options for every task (a task's own ``strategy`` / ``max_*`` fields override them)."""

    provider: str | None = None
    strategy: str | None = None
    max_depth: int = Budgets.max_depth
    max_nodes: int = Budgets.max_nodes
    max_tokens: int = Budgets.max_tokens
    checkpoints: str = "pause"
    offline: bool = False  # every task's run refuses external calls (as SHAD_OFFLINE=1)


@dataclass
class TaskOutcome:
    """What became of one task: ``outcome`` is complete | failed | conflict (edited while running)."""

    path: str
    goal: str
    outcome: str
    run_id: str | None = None
    run_status: str | None = None
    report: str | None = None  # the report note's vault-relative path (or its absolute path outside)
    error: str = ""
    citations: int = 0
    tokens: int = 0
    deliveries: list[Delivery] = field(default_factory=list)

    @property
    def event(self) -> str:
        return "task.completed" if self.outcome == "complete" else "task.failed"

    def payload(self, vault: str) -> dict[str, Any]:
        """The webhook body (and the ``--json`` line): no absolute path, no secret."""
        return {
            "event": self.event,
            "vault": vault,
            "task": self.path,
            "goal": self.goal,
            "status": self.outcome,
            "run_id": self.run_id,
            "run_status": self.run_status,
            "report_path": self.report,
            "citations": self.citations,
            "tokens": self.tokens,
            "error": self.error or None,
        }

    def to_dict(self, vault: str) -> dict[str, Any]:
        return {**self.payload(vault), "webhooks": [d.to_dict() for d in self.deliveries]}


@dataclass
class PassResult:
    outcomes: list[TaskOutcome] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def all_complete(self) -> bool:
        return all(o.outcome == "complete" for o in self.outcomes)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _one_line(text: str) -> str:
    line = " ".join(scrub(text).split())
    return line if len(line) <= _MAX_ERROR else line[: _MAX_ERROR - 1] + "…"


class Watcher:
    """Runs the pending task notes of the vault at ``root``; ``on_event`` sees every run's events,
    ``on_task`` each task as it starts, ``on_outcome`` each outcome (after its webhooks)."""

    def __init__(
        self,
        root: str | Path,
        *,
        options: WatchOptions | None = None,
        webhooks: Sequence[WebhookTarget] = (),
        secret: str | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        on_task: Callable[[TaskNote], None] | None = None,
        on_outcome: Callable[[TaskOutcome], None] | None = None,
    ) -> None:
        if webhooks and not secret:
            raise ShadError("webhooks need a secret to sign with", hint="pass secret=...")
        self.vault = Vault(root)  # a missing folder is a VaultNotFoundError here
        self.root = self.vault.root
        self.writer = VaultWriter(self.root, role="root", actor=ACTOR)
        self.options = options or WatchOptions()
        self.webhooks, self.secret = list(webhooks), secret or ""
        self.on_event, self.on_task, self.on_outcome = on_event, on_task, on_outcome

    def run_pass(self) -> PassResult:
        """Every task pending now, in path order."""
        tasks, skipped = find_tasks(self.root)
        result = PassResult(skipped=skipped)
        for task in tasks:
            outcome = self.run_task(task, result)
            if outcome is not None:
                result.outcomes.append(outcome)
        return result

    def run_task(self, task: TaskNote, result: PassResult | None = None) -> TaskOutcome | None:
        """Claim, run and mark one task; ``None`` when it could not be claimed (changed since read)."""
        run_id = new_run_id()
        try:
            claimed = self._write(
                task.path,
                {"status": "processing", "run_id": run_id, "started_at": _now()},
                f"task pending -> processing (run {run_id})",
                expected_hash=task.hash,
            )
        except ShadError as exc:  # changed or gone since the scan: the next pass reads it again
            if result is not None:
                result.skipped.append(Skipped(task.path, f"not claimed: {exc.message}"))
            return None
        if self.on_task is not None:
            self.on_task(task)
        outcome = TaskOutcome(task.path, task.goal, "failed", run_id=run_id)
        try:
            run = self._run(task, run_id)
        except KeyboardInterrupt:
            outcome.error = f"interrupted before it finished; continue it with: shad resume {run_id}"
            self._mark(outcome, claimed.hash)
            raise
        except ShadError as exc:
            outcome.error = _one_line(str(exc))
        except Exception as exc:  # one task's failure never stops the watcher
            outcome.error = _one_line(f"internal error: {type(exc).__name__}: {exc}")
        else:
            self._read_run(outcome, run)
        self._mark(outcome, claimed.hash)
        self._notify(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        return outcome

    def _config(self, task: TaskNote) -> RunConfig:
        opts = {**self.options.__dict__, **task.options}
        budgets = Budgets(
            max_depth=opts["max_depth"], max_nodes=opts["max_nodes"], max_tokens=opts["max_tokens"]
        )
        strategy = opts["strategy"]
        return RunConfig(
            task.goal,
            (str(self.root),),
            strategy=str(strategy) if strategy is not None else None,
            provider=opts["provider"],
            budgets=budgets,
            checkpoints=opts["checkpoints"],
            offline=bool(self.options.offline),  # a task note cannot switch offline mode off
        )

    def _run(self, task: TaskNote, run_id: str) -> Run:
        config = self._config(task)  # invalid per-task options fail the task here
        return asyncio.run(start_run(config, on_event=self.on_event, run_id=run_id))

    def _read_run(self, outcome: TaskOutcome, run: Run) -> None:
        summary = run.summary
        outcome.run_status = run.status.value
        outcome.citations = len(summary.get("citations", []))
        outcome.tokens = int(summary.get("metrics", {}).get("total_tokens", 0))
        report = Path(summary.get("report_path") or run.report_path)
        if report.is_file():
            try:
                outcome.report = report.resolve().relative_to(self.root).as_posix()
            except ValueError:
                outcome.report = str(report)
        if run.status in _COMPLETE:
            outcome.outcome = "complete"
            return
        if run.status is RunStatus.NEEDS_HUMAN:
            outcome.error = (
                f"the run waits for a person at a checkpoint: decide with shad checkpoint {run.id}, "
                f"then continue with shad resume {run.id}"
            )
        else:
            failures = summary.get("failures") or []
            first = failures[0] if failures else {}
            reason = summary.get("stop_reason") or (
                f"{first.get('error_class')}: {first.get('message')}" if first else ""
            )
            outcome.error = _one_line(f"the run ended {run.status.value}" + (f": {reason}" if reason else ""))

    def _link(self, outcome: TaskOutcome) -> str | None:
        if outcome.report is None:
            return None
        if outcome.report.startswith("/"):
            return outcome.report  # outside the vault: no link can reach it
        return f"[[{outcome.report.removesuffix('.md')}]]"

    def _mark(self, outcome: TaskOutcome, expected_hash: str) -> None:
        changes: dict[str, Any] = {"status": outcome.outcome}
        if outcome.run_status:
            changes["run_status"] = outcome.run_status
        link = self._link(outcome)
        if link:
            changes["report"] = link
        if outcome.outcome == "complete":
            changes["completed_at"] = _now()
            remove = ["error", "failed_at"]
        else:
            changes.update(error=outcome.error, failed_at=_now())
            remove = ["completed_at"] + ([] if link else ["report"])
        try:
            why = f"task processing -> {outcome.outcome} (run {outcome.run_id}" + (
                f", {outcome.run_status})" if outcome.run_status else ")"
            )
            self._write(outcome.path, changes, why, remove=remove, expected_hash=expected_hash)
        except StateCorruptionError:
            outcome.outcome = "conflict"
            note = "the task note was edited while its run was going; it was left as it is"
            outcome.error = f"{note} ({outcome.error})" if outcome.error else note
        except ShadError as exc:  # deleted, unparsable frontmatter, ...: reported, never fatal
            outcome.outcome = "conflict"
            outcome.error = _one_line(f"the task note could not be marked: {exc}")

    def _write(
        self, path: str, changes: dict[str, Any], why: str, *, remove: Iterable[str] = (), expected_hash: str
    ) -> NoteWrite:
        """Change a task note's frontmatter; the write goes to the audit log with ``why`` (P7)."""
        self.writer.on_write = logged(self.root, f"{ACTOR}: {why}", "root")
        return self.writer.update_frontmatter(path, changes, remove=remove, expected_hash=expected_hash)

    def _notify(self, outcome: TaskOutcome) -> None:
        payload = outcome.payload(self.vault.id)
        for target in self.webhooks:
            outcome.deliveries.append(deliver(target, outcome.event, payload, self.secret))
