"""The audit log of writes made outside a run (P7): every note a person's command wrote through
``VaultWriter`` (an approval applied, a learning promoted or rejected, an ingest, an enrich, a gap report)
and every published copy, one ``NOTE_WRITTEN`` record a line in ``shad_home()/audit.jsonl``.

A run's own writes are events in its ``events.jsonl`` instead (``engine.runs._curating``). A record says
where (vault, path), what (action, bytes, sha256), who (role, and in ``why`` the person or command) and
why; never the note's text. ``shad approvals audit`` prints the log.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..config import shad_home
from ..events import NoteWritten, to_record
from ..store.history import scrub
from ..vault import NoteWrite, WriteHook

__all__ = ["AUDIT_FILE", "audit_log", "audit_path", "log_write", "logged"]

AUDIT_FILE = "audit.jsonl"
_USERINFO = re.compile(r"(://)[^/@\s\"]+@")


def audit_path() -> Path:
    return shad_home() / AUDIT_FILE


def log_write(
    vault: str | os.PathLike[str], path: str, action: str, why: str, role: str, size: int, digest: str
) -> None:
    """Append one write to the audit log (one ``write`` of a line under ``O_APPEND``: lines from
    several processes never interleave)."""
    event = NoteWritten(
        vault=str(vault), path=path, action=action, why=why, role=role, bytes=size, hash=digest
    )
    # Secrets never reach the log: the environment's secret values, key-shaped text, a URL's credentials.
    line = scrub(_USERINFO.sub(r"\1***@", json.dumps(to_record(event, ""), ensure_ascii=False))) + "\n"
    target = audit_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def logged(vault: str | os.PathLike[str], why: str, role: str) -> WriteHook:
    """A ``VaultWriter`` hook that logs each of its writes with ``why``."""

    def hook(write: NoteWrite, size: int) -> None:
        log_write(vault, write.path, write.action, why, role, size, write.hash)

    return hook


def audit_log(limit: int | None = None) -> list[dict[str, Any]]:
    """The audit log's records, oldest first (the last ``limit`` of them); a line that does not parse
    (a write cut short) is skipped."""
    target = audit_path()
    if not target.exists():
        return []
    records = []
    for line in target.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records[-limit:] if limit else records
