"""Walk a vault folder the way Obsidian sees it: notes, attachments, nothing hidden, no symlink escapes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from stat import S_ISREG
from typing import NamedTuple

__all__ = [
    "SKIPPED_DIRS",
    "FileEntry",
    "ScanResult",
    "is_conflict_copy",
    "list_changed",
    "list_folder",
    "scan_vault",
    "stream_vault",
]

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
    folders: list[str] = field(default_factory=list)  # listed folders (``list_changed``, ``list_folder``)


def is_conflict_copy(path: str) -> bool:
    """True for sync conflict copies: ``Note (conflict 2024-01-02).md``, ``Note.sync-conflict-...``."""
    return bool(_CONFLICT.search(path.rsplit("/", 1)[-1]))


def scan_vault(root: str) -> ScanResult:
    """Every note and attachment under ``root``; hidden folders (``.obsidian``, ``.trash``, ``.git``, any
    dot-folder) are skipped and symlinks are followed only when they stay inside the vault.

    GNU find walks and stats in C, about twice as fast as Python on a 66k-file vault (a re-index is
    mostly this walk); elsewhere the same walk is done with ``os.scandir``.
    """
    if _gnu_find() is not None:
        try:
            return _scan_with_find(root)
        except OSError:
            pass
    return _scan_with_python(root)


@lru_cache(maxsize=1)
def _gnu_find() -> str | None:
    find = shutil.which("find")
    if find is None:
        return None
    try:
        version = subprocess.run([find, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return find if "GNU findutils" in version else None


def list_changed(root: str, since: float) -> ScanResult | None:
    """The files and folders under ``root`` whose inode changed after ``since`` (epoch seconds: a file
    written, renamed, copied in or touched; a folder where an entry was added, removed or renamed), in
    ``files`` and ``folders``; None without GNU find. find still stats every file, in C, but only what
    changed reaches Python."""
    if _gnu_find() is None:
        return None
    try:
        return _scan_with_find(root, since)
    except OSError:
        return None


def list_folder(root: str, rel: str, recursive: bool = False) -> ScanResult:
    """The files directly in folder ``rel`` of the vault (``""``: its root), and its sub-folders in
    ``folders``; with ``recursive``, every file below it instead."""
    return _scan_with_python(root, rel, recursive)


def stream_vault(root: str, skipped: list[tuple[str, str]]) -> Iterator[FileEntry]:
    """The files of ``scan_vault``, one at a time while the walk goes on, in the same order; what was
    skipped is appended to ``skipped`` (complete once the iterator is exhausted). A first build of a big
    vault holds no list of every file this way."""
    if _gnu_find() is not None:
        started = False
        try:
            for entry in _iter_find(root, None, skipped, []):
                started = True
                yield entry
            return
        except OSError:
            if started:  # files were handed out already: a second walk would repeat them
                raise
            skipped.clear()
    scan = _scan_with_python(root)
    skipped += scan.skipped
    yield from scan.files.values()


def _scan_with_find(root: str, since: float | None = None) -> ScanResult:
    files: dict[str, FileEntry] = {}
    folders: list[str] = []
    skipped: list[tuple[str, str]] = []
    for entry in _iter_find(root, since, skipped, folders):
        files[entry.path] = entry
    return ScanResult(files, skipped, folders)


def _iter_find(
    root: str, since: float | None, skipped: list[tuple[str, str]], folders: list[str]
) -> Iterator[FileEntry]:
    find = _gnu_find()
    assert find is not None
    real_root = os.path.realpath(root)
    encoding = sys.getfilesystemencoding()
    # ctime, not mtime: it moves on every write, rename, copy or utime (a file copied with its old mtime
    # kept, or an mtime set back, still shows), and cannot be set from outside.
    newer = [] if since is None else ["-newerct", f"@{since:.6f}"]
    cmd = [find, "-H", root, "-mindepth", "1", "-name", ".*", "-prune", "-o", *newer]
    cmd += ["-printf", r"%y %s %T@ %P\0"]
    # The listing is parsed while find is still walking (two processes, two cores); its complaints go
    # to a file so that a full stderr pipe can never stall it.
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors) as proc,
    ):
        assert proc.stdout is not None
        pending = b""
        while chunk := proc.stdout.read(1 << 16):
            records = (pending + chunk).split(b"\0")
            pending = records.pop()
            # One decode per chunk (as os.fsdecode would, byte for byte), then plain str work.
            text = "\0".join(r.decode(encoding, "surrogateescape") for r in records)
            clean = _is_utf8(text)  # one check per chunk; names are looked at only when it fails
            for record in text.split("\0"):
                if not record:
                    continue
                kind, size, mtime, rel = record.split(" ", 3)
                if not clean and not _is_utf8(rel):
                    _skip_undecodable(rel, kind == "d", skipped)
                elif kind == "f":
                    seconds, _, fraction = mtime.partition(".")
                    mtime_ns = int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9])
                    yield FileEntry(rel, int(size), mtime_ns, rel.lower().endswith(".md"))
                elif kind == "l":
                    entry = _symlink_entry(real_root, os.path.join(root, rel), rel, skipped)
                    if entry is not None:
                        yield entry
                elif kind == "d" and since is not None:
                    folders.append(rel)
        proc.wait()
        errors.seek(0)
        complaints = errors.read().decode(errors="replace")
    for line in complaints.splitlines():
        # find: '/vault/Private': Permission denied
        where, _, reason = line.rpartition(": ")
        path = where.removeprefix("find: ").strip("'‘’")
        rel = os.path.relpath(path, root) if path.startswith(root) else path
        skipped.append((rel, f"cannot list folder: {reason}"))


def _is_utf8(name: str) -> bool:
    """False for a name holding bytes that are not UTF-8 (decoded as surrogate escapes): SQLite, JSON
    and a terminal can take no such string."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _skip_undecodable(rel: str, is_dir: bool, skipped: list[tuple[str, str]]) -> None:
    """Leave out a file (or folder) whose name is not valid UTF-8, and say so once: for the outermost
    such name, shown with its bad bytes escaped (``bad\\xff.md``). Indexing it under a replaced name
    would give a path that cannot be read back, and could collide with another note's."""
    parent = rel.rpartition("/")[0]
    if parent and not _is_utf8(parent):
        return  # inside a folder already reported
    shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if is_dir:
        reason = "folder name is not valid UTF-8; its files are not indexed (rename it to fix this)"
    else:
        reason = "file name is not valid UTF-8; it is not indexed (rename it to fix this)"
    skipped.append((shown, reason))


def _symlink_entry(real_root: str, full: str, rel: str, skipped: list[tuple[str, str]]) -> FileEntry | None:
    target = os.path.realpath(full)
    if not (target == real_root or target.startswith(real_root + os.sep)):
        skipped.append((rel, "symlink points outside the vault; not followed"))
        return None
    if os.path.isdir(target):
        skipped.append((rel, "symlinked folder; not followed (its notes are indexed where they really live)"))
        return None
    try:
        st = os.stat(full)
    except OSError as exc:
        skipped.append((rel, f"cannot read: {exc.strerror}"))
        return None
    if not S_ISREG(st.st_mode):
        return None
    return FileEntry(rel, st.st_size, st.st_mtime_ns, rel.lower().endswith(".md"))


def _scan_with_python(root: str, start: str = "", recursive: bool = True) -> ScanResult:
    real_root = os.path.realpath(root)
    files: dict[str, FileEntry] = {}
    skipped: list[tuple[str, str]] = []
    folders: list[str] = []
    stack = [(start + "/", os.path.join(root, start))] if start else [("", root)]
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
                if not name.isascii() and not _is_utf8(name):
                    _skip_undecodable(rel, entry.is_dir(follow_symlinks=False), skipped)
                    continue
                if entry.is_symlink():
                    found = _symlink_entry(real_root, entry.path, rel, skipped)
                    if found is not None:
                        files[rel] = found
                    continue
                if entry.is_dir():
                    if recursive:
                        stack.append((rel + "/", entry.path))
                    else:
                        folders.append(rel)
                    continue
                st = entry.stat()
                if not S_ISREG(st.st_mode):
                    continue
            except OSError as exc:
                skipped.append((rel, f"cannot read: {exc.strerror}"))
                continue
            files[rel] = FileEntry(rel, st.st_size, st.st_mtime_ns, name.lower().endswith(".md"))
    return ScanResult(files, skipped, folders)
