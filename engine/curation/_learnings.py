"""Learnings (C4): what a run proposes to keep, and what only a person can make part of the vault.

A run proposes (``propose_learning``): a note ``Shad/Staging/<slug>.md`` written through the run's
``VaultWriter`` (root role: a sub-task's or sandbox's writer is refused) with ``type: learning``,
``status: staging``, ``kind``, ``proposed_by`` (the run id), ``proposed_at`` and ``sources`` (wikilinks).

A person decides (``promote_learning`` / ``reject_learning``, the ``shad learnings`` commands):

- promote writes ``Shad/Learnings/<slug>.md`` with ``status: verified``, ``promoted_by`` and
  ``promoted_at``, then removes the staging note. The removal is a delete like any other: it goes through
  the approval queue, requested and approved by the same person with the reason "promotion move", so the
  log shows it.
- reject keeps the note where it is, in ``Shad/Staging/``, for the record: ``status: rejected``,
  ``rejected_by``, ``rejected_at`` and ``rejection_reason``.

Promotion writes only under ``Shad/Learnings/``, whatever the learning's ``kind`` (``skill``, ``policy``
...): Shad never changes its own skills or policies from a learning; a person who agrees copies it there.
"""

from __future__ import annotations

import datetime as dt
import getpass
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import NoteNotFoundError, ShadError, UsageError
from ..vault import StateCorruptionError, VaultWriter, normalize_note_path, parse_note
from ._approvals import AlreadyDecidedError, _vault_root, approve, reject, request_delete
from ._audit import logged

__all__ = [
    "LEARNINGS_FOLDER",
    "LEARNING_STATUSES",
    "STAGING_FOLDER",
    "Learning",
    "learnings",
    "promote_learning",
    "propose_learning",
    "reject_learning",
]

STAGING_FOLDER = "Shad/Staging"
LEARNINGS_FOLDER = "Shad/Learnings"
LEARNING_STATUSES = ("staging", "verified", "rejected")
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


@dataclass(frozen=True)
class Learning:
    """A learning note as listed: where it is, what it says about itself, and its content hash."""

    path: str
    slug: str
    title: str
    status: str
    kind: str
    proposed_by: str
    proposed_at: str
    sources: list[str] = field(default_factory=list)
    promoted_by: str = ""
    promoted_at: str = ""
    rejected_by: str = ""
    rejected_at: str = ""
    rejection_reason: str = ""
    hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def slugify(title: str) -> str:
    """A file name from a title: lower-case ASCII words joined by dashes (``learning`` when none)."""
    text = unicodedata.normalize("NFKD", str(title)).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80].strip("-") or "learning"


def _wikilink(source: str) -> str:
    text = str(source).strip()
    if not text:
        raise UsageError("an empty source", hint="sources are wikilinks such as [[Espresso]]")
    if text.startswith("[[") and text.endswith("]]"):
        return text
    return f"[[{text.removesuffix('.md')}]]"


def _free_slug(root: Path, slug: str) -> str:
    """``slug``, or ``slug-2``, ``slug-3`` ...: the first name neither staging nor learnings uses."""

    def taken(name: str) -> bool:
        return any((root / folder / f"{name}.md").exists() for folder in (STAGING_FOLDER, LEARNINGS_FOLDER))

    n, name = 1, slug
    while taken(name):
        n += 1
        name = f"{slug}-{n}"
    return name


def propose_learning(
    vault: Any,
    title: str,
    body: str,
    *,
    run_id: str,
    sources: Iterable[str] = (),
    kind: str = "learning",
) -> str:
    """Write a proposed learning as ``Shad/Staging/<slug>.md`` (a new name if taken); returns its
    vault-relative path. ``vault`` is the vault folder (written by the root writer, acting as ``run_id``)
    or the run's ``VaultWriter`` itself: a sub-task's or sandbox's writer raises ``WriteRefusedError``.
    ``kind`` says what it is about (``learning``, ``skill``, ``policy`` ...); ``sources`` are the notes it
    rests on (wikilinks, or note names made into wikilinks)."""
    if not str(title or "").strip():
        raise UsageError("a learning needs a title")
    if not str(run_id or "").strip():
        raise UsageError("a learning names the run that proposes it (run_id)")
    if not _KIND.match(str(kind)):
        raise UsageError(
            f"bad learning kind {kind!r}", hint="a lower-case word such as learning, skill, policy"
        )
    if isinstance(sources, str):
        sources = [sources]
    links = [_wikilink(s) for s in sources]
    writer = (
        vault
        if isinstance(vault, VaultWriter)
        else VaultWriter(
            _vault_root(vault),
            role="root",
            actor=run_id,
            on_write=logged(_vault_root(vault), f"learning proposed by {run_id}", "root"),
        )
    )
    root = _vault_root(writer)
    slug = _free_slug(root, slugify(title))
    frontmatter = {
        "type": "learning",
        "title": str(title).strip(),
        "status": "staging",
        "kind": str(kind),
        "proposed_by": str(run_id),
        "proposed_at": _now(),
        "sources": links,
    }
    text = str(body or "").rstrip() + "\n"
    written = writer.write_note(f"{STAGING_FOLDER}/{slug}.md", text, frontmatter)
    return written.path


# --- reading ---------------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _read(root: Path, rel: str) -> Learning | None:
    raw = (root / rel).read_bytes()
    note = parse_note(rel, raw)
    fm = note.frontmatter
    if _text(fm.get("type")).strip().lower() != "learning":
        return None
    sources = fm.get("sources") or []
    return Learning(
        path=rel,
        slug=PurePosixPath(rel).stem,
        title=_text(fm.get("title")) or note.title,
        status=_text(fm.get("status")) or "staging",
        kind=_text(fm.get("kind")) or "learning",
        proposed_by=_text(fm.get("proposed_by")),
        proposed_at=_text(fm.get("proposed_at")),
        sources=[str(s) for s in (sources if isinstance(sources, list) else [sources])],
        promoted_by=_text(fm.get("promoted_by")),
        promoted_at=_text(fm.get("promoted_at")),
        rejected_by=_text(fm.get("rejected_by")),
        rejected_at=_text(fm.get("rejected_at")),
        rejection_reason=_text(fm.get("rejection_reason")),
        hash=note.hash,
    )


def learnings(vault: Any, status: str | None = None) -> list[Learning]:
    """The learnings of a vault (the ``type: learning`` notes in ``Shad/Staging`` and ``Shad/Learnings``),
    optionally in one status, newest proposal first."""
    if status is not None and status not in LEARNING_STATUSES:
        raise UsageError(f"unknown learning status {status!r}", hint=f"one of {', '.join(LEARNING_STATUSES)}")
    root = _vault_root(vault)
    found = []
    for folder in (STAGING_FOLDER, LEARNINGS_FOLDER):
        for path in sorted((root / folder).glob("*.md")):
            if path.is_file() and not path.is_symlink():
                item = _read(root, f"{folder}/{path.name}")
                if item is not None and (status is None or item.status == status):
                    found.append(item)
    return sorted(found, key=lambda x: (x.proposed_at, x.path), reverse=True)


def _staged(root: Path, path_or_slug: str) -> Learning:
    """The staging learning a person names: its slug, ``slug.md``, ``[[slug]]`` or its path."""
    text = str(path_or_slug or "").strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|")[0].strip()
    rel = normalize_note_path(text if "/" in text else f"{STAGING_FOLDER}/{text}")
    if not rel.lower().endswith(".md"):
        rel += ".md"
    if str(PurePosixPath(rel).parent) != STAGING_FOLDER:
        where = "is verified already" if rel.startswith(LEARNINGS_FOLDER + "/") else "is not a staging note"
        raise (AlreadyDecidedError if "verified" in where else UsageError)(
            f"{rel} {where}", hint=f"learnings wait in {STAGING_FOLDER}/: see them with shad learnings ls"
        )
    if not (root / rel).is_file():
        if (root / LEARNINGS_FOLDER / PurePosixPath(rel).name).is_file():
            raise AlreadyDecidedError(f"{PurePosixPath(rel).stem} is verified already", hint="nothing to do")
        raise NoteNotFoundError(
            f"no learning {rel} in {root}",
            hint="see the proposed ones with: shad learnings ls --status staging",
        )
    item = _read(root, rel)
    if item is None:
        raise UsageError(
            f"{rel} is not a learning (no type: learning)", hint="only proposed learnings are promoted"
        )
    return item


def _person(by: str | None) -> str:
    return str(by).strip() if by and str(by).strip() else getpass.getuser()


def _body(raw: bytes) -> str:
    """The note's text after its frontmatter (all of it: nothing truncated)."""
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                return "\n".join(lines[i + 1 :]).lstrip("\n")
    return text


# --- a person's decisions ---------------------------------------------------------------------------------


def promote_learning(vault: Any, path_or_slug: str, *, by: str | None = None) -> Learning:
    """A person verifies a staging learning: it moves to ``Shad/Learnings/<slug>.md`` with ``status:
    verified``, ``promoted_by`` (``by``, else the login name) and ``promoted_at``. A rejected learning
    can still be promoted (the person changed their mind); a verified one raises ``AlreadyDecidedError``.
    Nothing is written outside ``Shad/Learnings/`` (the staging note's removal is a logged, approved
    delete)."""
    root = _vault_root(vault)
    person = _person(by)
    item = _staged(root, path_or_slug)
    if item.status == "verified":
        raise AlreadyDecidedError(f"{item.path} is verified already", hint="nothing to do")
    raw = (root / item.path).read_bytes()
    fm = dict(parse_note(item.path, raw).frontmatter)
    for key in ("rejected_by", "rejected_at", "rejection_reason"):
        fm.pop(key, None)
    fm.update(status="verified", promoted_by=person, promoted_at=_now())
    writer = VaultWriter(
        root, role="person", actor=person, on_write=logged(root, f"learning promoted by {person}", "person")
    )
    slug = item.slug
    if (root / LEARNINGS_FOLDER / f"{slug}.md").exists():  # a verified learning has its name: the next free
        slug = _free_slug(root, slug)
    target = f"{LEARNINGS_FOLDER}/{slug}.md"
    request = request_delete(root, item.path, "promotion move", requested_by=person)
    try:
        if request.requested_hash != item.hash:  # edited between reading it and asking for the move
            raise StateCorruptionError(
                f"{item.path} changed while it was being promoted: nothing was moved",
                hint="look at it again, then promote it",
                path=item.path,
            )
        written = writer.write_note(target, _body(raw), fm)
    except BaseException as exc:
        if request.reason == "promotion move" and request.requested_by == person:  # ours: withdraw it
            reject(request.id, person, f"promotion failed: {type(exc).__name__}")
        raise
    done = approve(request.id, person, note=f"promotion move to {written.path}")
    if done.status != "executed":
        raise ShadError(
            f"{item.path} was promoted to {written.path} but the staging note stays: {done.result}",
            hint=f"remove it by hand, or see approval {done.id} with: shad approvals log",
        )
    promoted = _read(root, written.path)
    assert promoted is not None
    return promoted


def reject_learning(vault: Any, path_or_slug: str, *, by: str | None = None, reason: str = "") -> Learning:
    """A person turns a staging learning down: it stays in ``Shad/Staging/`` for the record with
    ``status: rejected``, ``rejected_by``, ``rejected_at`` and ``rejection_reason``."""
    root = _vault_root(vault)
    person = _person(by)
    item = _staged(root, path_or_slug)
    if item.status != "staging":
        raise AlreadyDecidedError(f"{item.path} is {item.status} already", hint="nothing to do")
    writer = VaultWriter(
        root, role="person", actor=person, on_write=logged(root, f"learning rejected by {person}", "person")
    )
    changes = {"status": "rejected", "rejected_by": person, "rejected_at": _now(), "rejection_reason": reason}
    writer.update_frontmatter(item.path, changes, expected_hash=item.hash)
    rejected = _read(root, item.path)
    assert rejected is not None
    return rejected
