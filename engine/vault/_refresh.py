"""Refreshing an index without a whole walk: what changed since the last scan, by inode change time.

A file written, renamed, copied in or touched gets a new ctime (which nothing outside the kernel can set
back); a folder gets one when an entry is added, removed or renamed in it. So after a scan that started at
time T, GNU find lists only what changed after T (it still stats every file, in C, but only those reach
Python); the folders among them are listed again and compared with what the index holds there, and a
folder new to the index is walked whole. A full walk still happens on the first update, when the scope
changes, at least every ``FULL_EVERY`` seconds (a clock that jumped back), and with ``refresh(full=True)``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ._index_db import IndexDatabase
from ._scan import FileEntry, list_changed, list_folder

__all__ = ["FULL_EVERY", "MARGIN", "QuickScan", "quick_scan"]

FULL_EVERY = 3600.0  # seconds between full walks
MARGIN = 2.0  # seconds before the last scan's start that still count as new (coarse file system clocks)


@dataclass
class QuickScan:
    entries: dict[str, FileEntry] = field(default_factory=dict)  # files that may have changed
    removed: list[str] = field(default_factory=list)  # indexed paths gone from the folder
    skipped: list[tuple[str, str]] = field(default_factory=list)
    started: float = 0.0


def quick_scan(index: IndexDatabase, keep: Callable[[str], bool]) -> QuickScan | None:
    """What changed since the last scan; None when a full walk is due (or GNU find is missing)."""
    started = time.time()
    last, full = index.meta("scanned_at"), index.meta("full_scan_at")
    if last is None or full is None or started - float(full) > FULL_EVERY:
        return None
    since = float(last) - MARGIN
    changed = list_changed(index.root, since)
    if changed is None:
        return None
    out = QuickScan(started=started)
    out.entries = {p: e for p, e in changed.files.items() if keep(p)}
    folders = list(changed.folders)
    if os.stat(index.root).st_ctime > since:
        folders.append("")
    relisted = set(folders)
    for folder in folders:
        _compare_folder(index, folder, keep, out)
    stored_skips = json.loads(index.meta("skipped") or "[]")
    out.skipped = [
        (p, r) for p, r in stored_skips if (p.rsplit("/", 1)[0] if "/" in p else "") not in relisted
    ]
    out.skipped += [s for s in changed.skipped if s not in out.skipped]
    return out


def _compare_folder(index: IndexDatabase, folder: str, keep: Callable[[str], bool], out: QuickScan) -> None:
    """List ``folder`` again: files the index holds there but the folder lacks are removed; its files
    are compared; sub-folders it lost are removed whole, new ones walked whole."""
    listing = list_folder(index.root, folder)
    out.skipped += listing.skipped
    out.entries.update((p, e) for p, e in listing.files.items() if keep(p))
    prefix = folder + "/" if folder else ""
    if prefix:
        rows = index.query("SELECT path FROM files WHERE path >= ? AND path < ?", (prefix, prefix[:-1] + "0"))
    else:
        rows = index.query("SELECT path FROM files", ())
    held_files: set[str] = set()
    held_dirs: dict[str, list[str]] = {}
    for (path,) in rows:
        rest = path[len(prefix) :]
        if "/" in rest:
            held_dirs.setdefault(prefix + rest.split("/", 1)[0], []).append(path)
        else:
            held_files.add(path)
    out.removed += sorted(held_files - listing.files.keys())
    present = set(listing.folders)
    for sub, paths in held_dirs.items():
        if sub not in present:
            out.removed += paths
    for sub in present - held_dirs.keys():
        walked = list_folder(index.root, sub, recursive=True)
        out.skipped += walked.skipped
        out.entries.update((p, e) for p, e in walked.files.items() if keep(p))
