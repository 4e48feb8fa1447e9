"""``shad sources update``: bring ingested sources up to date as their policy allows. ``manual`` sources
are ingested only when named; ``notify`` sources are checked and a newer revision is reported, not
ingested (unless named); ``auto`` sources are ingested. A pinned source stays at its pinned revision.
Every ingest is still a hard-safety checkpoint (``yes`` or ``confirm``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ShadError
from ._git import remote_revision
from ._ingest import ConsentRequired, IngestPlan, ingest, plan_ingest
from ._sources import ShadowIndex, SourceRecord

__all__ = ["UpdateOutcome", "update_sources"]


@dataclass
class UpdateOutcome:
    source_id: str
    policy: str
    action: str  # unchanged | ingested | available | skipped | pinned | failed
    revision: str | None  # the revision the source has now (None when not checked)
    latest_revision: str | None  # what the latest snapshot holds
    snapshot_id: str | None  # the new snapshot (ingested), else the latest one
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _domain(source: SourceRecord) -> str | None:
    """The domain folder the source's snapshots are in (it may have been set with ``--domain``)."""
    latest = source.latest
    parts = latest.path.split("/") if latest else []
    return parts[1] if len(parts) >= 4 and parts[1] != source.domain else None


def _current(source: SourceRecord, index: ShadowIndex) -> str:
    if source.pinned_revision:
        return source.pinned_revision
    if source.type == "git":
        return remote_revision(source.url)
    with plan_ingest(source.url, source.vault, preset=source.preset, index=index) as plan:
        return plan.revision


def update_sources(
    source_id: str | None = None,
    *,
    yes: bool = False,
    confirm: Callable[[IngestPlan], bool] | None = None,
    index: ShadowIndex | None = None,
) -> list[UpdateOutcome]:
    """Update one source (named: whatever its policy) or every source its policy lets update."""
    index = index or ShadowIndex()
    sources = [index.source(source_id)] if source_id is not None else index.sources()
    outcomes = []
    for source in sources:
        outcomes.append(_update_one(source, source_id is not None, yes, confirm, index))
    return outcomes


def _update_one(
    source: SourceRecord,
    named: bool,
    yes: bool,
    confirm: Callable[[IngestPlan], bool] | None,
    index: ShadowIndex,
) -> UpdateOutcome:
    latest = source.latest
    had = latest.revision if latest else None

    def outcome(
        action: str, revision: str | None, message: str, snapshot: str | None = None
    ) -> UpdateOutcome:
        snap = snapshot or (latest.id if latest else None)
        return UpdateOutcome(source.id, source.policy, action, revision, had, snap, message)

    if source.policy == "manual" and not named:
        return outcome("skipped", None, f"manual: update it by name (shad sources update {source.id})")
    try:
        current = _current(source, index)
    except ConsentRequired:
        raise
    except ShadError as exc:
        return outcome("failed", None, exc.message)
    if current == had:
        if source.pinned_revision:
            return outcome("pinned", current, f"pinned at {current}: nothing to do")
        return outcome(
            "unchanged", current, f"unchanged: snapshot {latest.id if latest else '-'} holds {current}"
        )
    if source.policy == "notify" and not named:
        return outcome(
            "available",
            current,
            f"a newer revision {current} is available (shad sources update {source.id} ingests it)",
        )
    try:
        result = ingest(
            source.url,
            source.vault,
            preset=source.preset,
            domain=_domain(source),
            yes=yes,
            confirm=confirm,
            index=index,
        )
    except ConsentRequired:
        raise
    except ShadError as exc:
        return outcome("failed", current, exc.message)
    action = "unchanged" if result.unchanged else "ingested"
    return outcome(action, result.revision, result.message, result.snapshot_id)
