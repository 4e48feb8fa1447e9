"""``%shad ingest`` and ``%shad sources``: bring a source into the vault as a snapshot (the notebook's
hard-safety checkpoint is ``--yes``: without it the magic says what would be written and writes
nothing) and look at the shadow index as a DataFrame."""

from __future__ import annotations

import shlex
from typing import Any

from engine.curation import ConsentRequired, ShadowIndex, ingest

from ._errors import ShadUsageError
from ._lines import Info

__all__ = ["SOURCE_COLUMNS", "ingest_source", "sources"]

SOURCE_COLUMNS = [
    "source_id",
    "type",
    "policy",
    "pinned",
    "latest_snapshot",
    "revision",
    "files",
    "snapshots",
    "ingested_at",
    "url",
    "vault",
]
SNAPSHOT_COLUMNS = ["snapshot_id", "latest", "revision", "files", "preset", "created", "path"]


def _code(text: Any) -> str:
    return "`" + str(text).replace("`", "'") + "`"


def ingest_source(
    source: str, vault: str, *, preset: str = "docs", yes: bool = False, domain: str | None = None
) -> Info:
    """Ingest ``source`` into ``vault``; ``.data`` is the same dictionary as ``shad ingest --json``."""
    try:
        result = ingest(source, vault, preset=preset, domain=domain, yes=yes)
    except ConsentRequired as exc:
        again = ["%shad", "ingest", source, "--vault", vault, "--preset", preset]
        if domain:
            again += ["--domain", domain]
        raise ShadUsageError(
            f"{exc.message}; nothing was written",
            hint=f"this is the confirmation: re-run with --yes to ingest ({shlex.join([*again, '--yes'])})",
        ) from None
    data = result.to_dict()
    if result.unchanged:
        held = f"already holds revision {_code(result.revision)}"
        lines = [f"**unchanged**: snapshot {_code(result.snapshot_id)} {held}"]
    else:
        lines = [
            f"**ingested** {result.files} files of {_code(result.source_url)} as {_code(result.snapshot_id)}",
            "",
            f"- folder: {_code(result.path)} (index note {_code(result.path + '/_snapshot.md')})",
            f"- revision: {_code(result.revision)}, preset {_code(result.preset)}",
        ]
        if result.symbols is not None:
            lines.append(f"- symbols: {result.symbols['message']}")
    if result.skipped:
        lines += ["", f"skipped {len(result.skipped)}:"]
        lines += [f"- {_code(s.path)}: {s.reason}" for s in result.skipped[:15]]
        if len(result.skipped) > 15:
            lines.append(f"- ... {len(result.skipped) - 15} more (in `.data['skipped']`)")
    return Info("\n".join(lines), data)


def sources(source_id: str | None = None) -> Any:
    """Every source with its latest snapshot as a DataFrame (``SOURCE_COLUMNS``); with ``source_id``,
    that source's snapshots (``SNAPSHOT_COLUMNS``), newest first."""
    import pandas as pd

    index = ShadowIndex()
    if source_id is not None:
        snaps = list(reversed(index.source(source_id).snapshots))
        rows = [
            {
                "snapshot_id": s.id,
                "latest": s.latest,
                "revision": s.revision,
                "files": s.files,
                "preset": s.preset,
                "created": s.created,
                "path": s.path,
            }
            for s in snaps
        ]
        return pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)
    rows = []
    for s in index.sources():
        latest = s.latest
        rows.append(
            {
                "source_id": s.id,
                "type": s.type,
                "policy": s.policy,
                "pinned": s.pinned_revision,
                "latest_snapshot": latest.id if latest else None,
                "revision": latest.revision if latest else None,
                "files": latest.files if latest else 0,
                "snapshots": len(s.snapshots),
                "ingested_at": latest.created if latest else None,
                "url": s.url,
                "vault": s.vault,
            }
        )
    return pd.DataFrame(rows, columns=SOURCE_COLUMNS)
