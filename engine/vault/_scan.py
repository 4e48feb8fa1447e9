"""Walk a vault folder the way Obsidian sees it: notes, attachments, nothing hidden, no symlink escapes."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from stat import S_ISREG
from typing import NamedTuple

__all__ = ["SKIPPED_DIRS", "FileEntry", "ScanResult", "is_conflict_copy", "scan_vault"]

SKIPPED_DIRS = frozenset({".obsidian", ".trash", ".git"})
_CONFLICT = re.compile(
    r"( \((?:[^)]*\bconflict(?:ed)?\b[^)]*)\)|\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]+)?)\.[^./]+$", re.I
)


class FileEntry(NamedTuple):
    path: str  # vault-relative, POSIX
    size: int
    mtime_ns: int
    is_note: bool


@dataclass
class ScanResult:
    files: dict[str, FileEntry]
    skipped: list[tuple[str, str]]  # (path, reason): symlinks out of the vault, unreadable folders


def is_conflict_copy(path: str) -> bool:
    """True for sync conflict copies: ``Note (conflict 2024-01-02).md``, ``Note.sync-conflict-...``."""
    return bool(_CONFLICT.search(path.rsplit("/", 1)[-1]))


def scan_vault(root: str) -> ScanResult:
    """Every note and attachment under ``root``; hidden folders (``.obsidian``, ``.trash``, ``.git``, any
    dot-folder) are skipped and symlinks are followed only when they stay inside the vault."""
    real_root = os.path.realpath(root)
    files: dict[str, FileEntry] = {}
    skipped: list[tuple[str, str]] = []
    stack = [("", root)]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError as exc:
            skipped.append((rel_dir.rstrip("/") or ".", f"cannot list folder: {exc.strerror}"))
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = rel_dir + name
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not (target == real_root or target.startswith(real_root + os.sep)):
                        skipped.append((rel, "symlink points outside the vault; not followed"))
                        continue
                    if os.path.isdir(target):
                        skipped.append(
                            (
                                rel,
                                "symlinked folder; not followed (its notes are indexed where "
                                "they really live)",
                            )
                        )
                        continue
                if entry.is_dir():
                    stack.append((rel + "/", entry.path))
                    continue
                st = entry.stat()
                if not S_ISREG(st.st_mode):
                    continue
            except OSError as exc:
                skipped.append((rel, f"cannot read: {exc.strerror}"))
                continue
            files[rel] = FileEntry(rel, st.st_size, st.st_mtime_ns, name.lower().endswith(".md"))
    return ScanResult(files, skipped)
