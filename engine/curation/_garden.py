"""The gardener (V8, opt-in with ``--garden``): a ``type`` for the untyped notes a run read, proposed through
the approval queue and never written silently.

The type is inferred from the note's neighbours: the notes of the same folder that do have a type. When at
least ``MIN_SIBLINGS`` of them do and ``MIN_SHARE`` agree, that type is proposed; otherwise nothing is
(a guess from one note, or from a mixed folder, is not worth a person's time). Before proposing, the note
must still be exactly what the run read: if it changed on disk since, ``StateCorruptionError`` names it and
nothing is asked for; approval checks the note once more before it writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any

from ..errors import NoteNotFoundError
from ..vault import StateCorruptionError, Vault, VaultWriter
from ._approvals import request_frontmatter

__all__ = ["MIN_SHARE", "MIN_SIBLINGS", "TypeProposal", "infer_type", "propose_types"]

MIN_SIBLINGS = 2
MIN_SHARE = 0.6


@dataclass(frozen=True)
class TypeProposal:
    """A proposed ``type`` for one note, the evidence, and the approval that waits for a person."""

    path: str
    type: str
    evidence: str
    approval_id: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def infer_type(vault: Vault, path: str) -> tuple[str, str] | None:
    """(type, evidence) from the typed notes beside ``path``, or None when they do not agree enough."""
    folder = str(PurePosixPath(path).parent)
    siblings = [p for p in vault.list_notes(None if folder == "." else folder, recursive=False) if p != path]
    types: Counter[str] = Counter()
    for sibling in siblings:
        kind = vault.read_note(sibling).type
        if kind:
            types[kind] += 1
    typed = sum(types.values())
    if typed < MIN_SIBLINGS:
        return None
    best, count = types.most_common(1)[0]
    if count / typed < MIN_SHARE:
        return None
    where = f"{folder}/" if folder != "." else "the vault's top level"
    return best, f"{count} of the {typed} typed notes in {where} are type {best}"


def propose_types(vault: Vault, read: Iterable[tuple[str, str]], requested_by: str) -> list[TypeProposal]:
    """For each (path, hash when read) of an untyped note, a pending frontmatter approval with the inferred
    type. A note that changed since it was read raises ``StateCorruptionError`` before anything is asked."""
    writer = VaultWriter(vault.root, role="root", actor=requested_by)
    out: list[TypeProposal] = []
    for path, seen in dict(read).items():
        now = writer.note_hash(path)
        if not now:
            raise NoteNotFoundError(
                f"{path} was read by the run and is gone now", hint="nothing was proposed"
            )
        if seen and now != seen:
            raise StateCorruptionError(
                f"{path} changed on disk while the run had it open; the gardener proposed nothing for it",
                hint="run again to garden the note as it is now",
                path=path,
            )
        if vault.read_note(path).type:
            continue
        inferred = infer_type(vault, path)
        if inferred is None:
            continue
        kind, evidence = inferred
        approval = request_frontmatter(
            vault.root, path, {"type": kind}, f"gardener: {evidence}", requested_by
        )
        out.append(TypeProposal(path, kind, evidence, approval.id))
    return out
