"""The approval queue (H3): deletes and publishing wait here until a person decides.

A run (or anyone) *requests*: ``request_delete`` / ``request_publish`` record what is asked, by whom, and
the note's content hash at that moment; nothing is touched. A person *decides*: ``approve`` executes the
request (a delete through ``VaultWriter.delete_note`` with the approval; a publish by copying the note,
its Shad-internal frontmatter left out, into the target folder) and ``reject`` leaves everything as it
is. If the note changed since the request, ``approve`` executes nothing and marks the approval
``failed``: the person approved the note they were shown, not a later one.

The queue is SQLite at ``shad_home()/approvals.sqlite`` (outside every vault); ``approval_log()`` lists
every decision and outcome with what it authorised (kind, vault, path, target, the note's hash then).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..config import shad_home
from ..errors import NoteNotFoundError, ShadError, UsageError, VaultNotFoundError
from ..vault import StateCorruptionError, VaultWriter, normalize_note_path
from ._audit import logged
from ._publish import publish

__all__ = [
    "APPROVAL_KINDS",
    "APPROVAL_STATUSES",
    "AlreadyDecidedError",
    "Approval",
    "ApprovalLogEntry",
    "approval_log",
    "approvals",
    "approve",
    "get_approval",
    "pending_approvals",
    "reject",
    "request_delete",
    "request_frontmatter",
    "request_publish",
]

APPROVAL_KINDS = ("delete", "publish", "frontmatter")  # frontmatter: the gardener's proposals (V8)
APPROVAL_STATUSES = ("pending", "approved", "rejected", "executed", "failed")


class AlreadyDecidedError(ShadError):
    """Decided already (an approval, or a learning): nothing to do. Exit code 3."""

    exit_code = 3


@dataclass(frozen=True)
class Approval:
    """One request in the queue. Plain fields only (strings and an int): picklable, and ``to_dict()`` is
    its JSON form. ``requested_hash`` is the note's sha256 when it was asked for; ``decided_hash`` when a
    person decided."""

    id: int
    kind: str
    vault: str
    path: str
    target: str
    reason: str
    requested_by: str
    requested_at: str
    requested_hash: str
    status: str
    decided_by: str = ""
    decided_at: str = ""
    decided_hash: str = ""
    note: str = ""
    result: str = ""

    @property
    def content_hash(self) -> str:
        """The note as it was when the request was made: what ``VaultWriter.delete_note`` checks the note
        against before it deletes anything."""
        return self.requested_hash

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ApprovalLogEntry:
    """One decision or outcome: ``action`` is approved, rejected, executed or failed; ``hash`` is the
    note's content hash at that moment (what the decision authorised)."""

    seq: int
    approval_id: int
    action: str
    by: str
    at: str
    kind: str
    vault: str
    path: str
    target: str
    hash: str
    note: str
    result: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- storage ---------------------------------------------------------------------------------------------


def _table(name: str, cls: type) -> str:
    """One column per field of ``cls``: the first the integer key, ints as integers, the rest text."""
    first, *rest = fields(cls)
    cols = [f"{first.name} INTEGER PRIMARY KEY AUTOINCREMENT"]
    cols += [f"{f.name} {'INTEGER' if f.type == 'int' else 'TEXT'} NOT NULL DEFAULT ''" for f in rest]
    return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(cols)});"


_COLUMNS = [f.name for f in fields(Approval)]
_LOG_COLUMNS = [f.name for f in fields(ApprovalLogEntry)]
_SCHEMA = "\n".join(
    [
        _table("approvals", Approval),
        _table("approval_log", ApprovalLogEntry),
        "CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, vault);",
    ]
)


@contextlib.contextmanager
def _db() -> Iterator[sqlite3.Connection]:
    path = shad_home() / "approvals.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")  # one decider at a time: a second approve sees the first's result
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _row(row: sqlite3.Row) -> Approval:
    return Approval(**{name: row[name] for name in _COLUMNS})


def _load(conn: sqlite3.Connection, approval_id: int) -> Approval:
    row = conn.execute("SELECT * FROM approvals WHERE id = ?", (int(approval_id),)).fetchone()
    if row is None:
        raise UsageError(f"no approval {approval_id}", hint="see the queue with: shad approvals ls --all")
    return _row(row)


def _log(
    conn: sqlite3.Connection, a: Approval, action: str, by: str, hash: str, note: str, result: str
) -> None:
    values = [a.id, action, by, _now(), a.kind, a.vault, a.path, a.target, hash, note, result]
    names = ", ".join(_LOG_COLUMNS[1:])
    conn.execute(f"INSERT INTO approval_log ({names}) VALUES ({', '.join('?' * len(values))})", values)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# --- requests --------------------------------------------------------------------------------------------


def _vault_root(vault: Any) -> Path:
    """A vault folder (a path, or anything with ``.root`` such as ``engine.vault.Vault``), resolved."""
    root = Path(vault if isinstance(vault, (str, os.PathLike)) else vault.root).expanduser()
    if not root.is_dir():
        raise VaultNotFoundError(f"vault folder not found: {root}", hint="give the folder of your notes")
    return root.resolve()


def _note_hash(root: Path, path: str) -> str:
    """The note's sha256 as the writer sees it; "" when it is not there (any more)."""
    return VaultWriter(root, role="person", actor="shad").note_hash(path)


def _existing_note(root: Path, path: str) -> tuple[str, str]:
    rel = normalize_note_path(path)
    digest = _note_hash(root, rel)
    if not digest:
        raise NoteNotFoundError(
            f"no note {rel!r} in vault {root}", hint="paths are vault-relative, e.g. Folder/Note.md"
        )
    return rel, digest


def _request(kind: str, vault: Any, path: str, target: str, reason: str, requested_by: str) -> Approval:
    if not str(requested_by or "").strip():
        raise UsageError("a request names who asks (requested_by: the run id or the actor)")
    root = _vault_root(vault)
    rel, digest = _existing_note(root, path)
    with _db() as conn, _transaction(conn):
        same = conn.execute(
            "SELECT * FROM approvals WHERE status = 'pending' AND kind = ? AND vault = ? AND path = ? "
            "AND target = ? AND requested_hash = ?",
            (kind, str(root), rel, target, digest),
        ).fetchone()
        if same is not None:  # asked again for the same note, unchanged: one entry waits
            return _row(same)
        cur = conn.execute(
            "INSERT INTO approvals (kind, vault, path, target, reason, requested_by, requested_at, "
            "requested_hash, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
            (kind, str(root), rel, target, str(reason or ""), str(requested_by), _now(), digest),
        )
        return _load(conn, int(cur.lastrowid or 0))


def request_delete(vault: Any, path: str, reason: str, requested_by: str) -> Approval:
    """Ask for ``path`` to be deleted from ``vault``: a pending approval; nothing is deleted. Asking again
    for the same unchanged note returns the request already waiting."""
    return _request("delete", vault, path, "", reason, requested_by)


def request_frontmatter(
    vault: Any, path: str, changes: dict[str, Any], reason: str, requested_by: str
) -> Approval:
    """Ask for frontmatter ``changes`` to a note (the gardener's proposals): applied on approval, and only
    to the note as it was when asked (its hash is checked)."""
    if not changes or not all(isinstance(k, str) and k for k in changes):
        raise UsageError("a frontmatter request needs the fields to set")
    return _request("frontmatter", vault, path, json.dumps(changes, sort_keys=True), reason, requested_by)


def request_publish(vault: Any, path: str, target: str | Path, reason: str, requested_by: str) -> Approval:
    """Ask for ``path`` to be published: once approved, copied (Shad-internal frontmatter left out) into
    the folder ``target``, which must be outside the vault. Nothing is written until then."""
    root = _vault_root(vault)
    folder = Path(target).expanduser().resolve()
    if folder == root or root in folder.parents:
        raise UsageError(
            f"publish target {folder} is inside the vault",
            hint="publishing copies a note out of the vault: name a folder outside it",
        )
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"publish target {folder} is a file, not a folder")
    return _request("publish", root, path, str(folder), reason, requested_by)


# --- reading the queue -----------------------------------------------------------------------------------


def get_approval(approval_id: int) -> Approval:
    with _db() as conn:
        return _load(conn, approval_id)


def approvals(vault: Any = None, status: str | None = None) -> list[Approval]:
    """Every approval (optionally of one vault, or in one status), oldest first."""
    if status is not None and status not in APPROVAL_STATUSES:
        raise UsageError(f"unknown approval status {status!r}", hint=f"one of {', '.join(APPROVAL_STATUSES)}")
    where, args = [], []
    if vault is not None:
        where.append("vault = ?")
        args.append(str(Path(vault if isinstance(vault, (str, os.PathLike)) else vault.root).resolve()))
    if status is not None:
        where.append("status = ?")
        args.append(status)
    sql = "SELECT * FROM approvals" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
    with _db() as conn:
        return [_row(r) for r in conn.execute(sql, args)]


def pending_approvals(vault: Any = None) -> list[Approval]:
    """What waits for a person (optionally in one vault), oldest first."""
    return approvals(vault, "pending")


def approval_log(approval_id: int | None = None) -> list[ApprovalLogEntry]:
    """Every decision and outcome, oldest first (optionally of one approval)."""
    sql, args = "SELECT * FROM approval_log", []
    if approval_id is not None:
        sql, args = sql + " WHERE approval_id = ?", [int(approval_id)]
    with _db() as conn:
        rows = conn.execute(sql + " ORDER BY seq", args).fetchall()
    return [ApprovalLogEntry(**{n: r[n] for n in _LOG_COLUMNS}) for r in rows]


# --- decisions -------------------------------------------------------------------------------------------


def _decide(approval_id: int, by: str, note: str, status: str) -> Approval:
    if not str(by or "").strip():
        raise UsageError("a decision names the person who takes it (by)")
    with _db() as conn, _transaction(conn):
        a = _load(conn, approval_id)
        if a.status != "pending":
            raise AlreadyDecidedError(
                f"approval {a.id} is {a.status} already"
                + (f" (by {a.decided_by} at {a.decided_at})" if a.decided_by else ""),
                hint="see it with: shad approvals log",
                approval_id=a.id,
                status=a.status,
            )
        digest = _note_hash(Path(a.vault), a.path) if Path(a.vault).is_dir() else ""
        conn.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, decided_hash = ?, note = ? "
            "WHERE id = ?",
            (status, by, _now(), digest, str(note or ""), a.id),
        )
        decided = _load(conn, a.id)
        _log(conn, decided, status, by, digest, decided.note, "")
    return decided


def _finish(a: Approval, status: str, result: str) -> Approval:
    with _db() as conn, _transaction(conn):
        conn.execute("UPDATE approvals SET status = ?, result = ? WHERE id = ?", (status, result, a.id))
        done = _load(conn, a.id)
        _log(conn, done, status, a.decided_by, a.decided_hash, "", result)
    return done


def reject(approval_id: int, by: str, note: str = "") -> Approval:
    """Turn the request down: nothing is deleted or published; the decision is logged."""
    return _decide(approval_id, by, note, "rejected")


def approve(approval_id: int, by: str, note: str = "") -> Approval:
    """Approve and execute the request; returns it ``executed``, or ``failed`` with why in ``result``
    (the note changed or vanished since the request, the writer refused, the target could not be
    written). A failed approval touched nothing."""
    a = _decide(approval_id, by, note, "approved")
    try:
        if a.decided_hash != a.requested_hash:
            now = f"now {a.decided_hash[:12]}" if a.decided_hash else "it is gone"
            raise StateCorruptionError(
                f"{a.path} changed since the {a.kind} was requested (hash {a.requested_hash[:12]}, {now}): "
                f"nothing was {_DONE[a.kind]}",
                hint="look at the note and request it again if it still should go",
                path=a.path,
            )
        result = _EXECUTORS[a.kind](a)
    except (ShadError, OSError) as exc:
        message = exc.message if isinstance(exc, ShadError) else f"{type(exc).__name__}: {exc}"
        return _finish(a, "failed", message)
    return _finish(a, "executed", result)


def _delete(a: Approval) -> str:
    writer = VaultWriter(a.vault, role="person", actor=a.decided_by, on_write=_audited(a))
    writer.delete_note(a.path, approval=a)
    return f"deleted {a.path}"


def _frontmatter(a: Approval) -> str:
    changes = json.loads(a.target)
    writer = VaultWriter(a.vault, role="person", actor=a.decided_by, on_write=_audited(a))
    writer.update_frontmatter(a.path, changes, expected_hash=a.requested_hash)
    return f"set {', '.join(f'{k}: {v}' for k, v in changes.items())} in {a.path}"


def _audited(a: Approval) -> Any:
    """Its write goes to the audit log (approvals are applied outside any run)."""
    return logged(a.vault, f"approval #{a.id} ({a.kind}) approved by {a.decided_by}", "person")


_EXECUTORS: dict[str, Callable[[Approval], str]] = {
    "delete": _delete,
    "publish": publish,
    "frontmatter": _frontmatter,
}
_DONE = {"delete": "deleted", "publish": "published", "frontmatter": "changed"}
