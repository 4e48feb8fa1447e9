"""A project folder as a manifest, so that ``shad verify PATH`` checks users' own code with the same
checks a software run uses.

Only text a person wrote is read: version-control and tool folders, hidden files (``.env`` holds secrets),
binaries and oversized files are left out, and a symlink is followed only when it stays inside the folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from engine.errors import UsageError

from ._deps import parse_pyproject, parse_requirements, python_dependencies
from ._manifest import Manifest, ManifestFile, ManifestNote

__all__ = ["manifest_from_dir"]

SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "venv", "site-packages"})
_BINARY_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .webp .ico .bmp .pdf .zip .gz .tgz .bz2 .xz .7z .tar .whl .egg .pyc .pyo .so "
    ".dylib .dll .exe .bin .class .jar .o .a .woff .woff2 .ttf .otf .eot .mp3 .mp4 .wav .ogg .mov .sqlite "
    ".db .parquet .npy .npz .pkl .pickle".split()
)


def manifest_from_dir(root: str | Path, *, max_files: int = 2000, max_bytes: int = 1_000_000) -> Manifest:
    """The text files under ``root`` as a manifest (paths relative, POSIX, sorted), with a note for each
    file left out for a reason worth knowing; dependencies come from the root's ``pyproject.toml`` and
    ``requirements*.txt``."""
    base = Path(root)
    if not base.is_dir():
        what = "does not exist" if not base.exists() else "is not a folder"
        raise UsageError(f"{base} {what}", hint="give a project folder or a manifest.json")
    real_root = os.path.realpath(base)
    manifest = Manifest()
    for rel in _walk(base, real_root, manifest.notes):
        if len(manifest.files) >= max_files:
            manifest.notes.append(_note("", f"stopped after {max_files} files; the rest were not read"))
            break
        text = _read_text(base / rel, rel, real_root, max_bytes, manifest.notes)
        if text is not None:
            manifest.files.append(ManifestFile.make(rel, text))
    reqs: list[str] = []
    for f in manifest.files:
        if f.path == "pyproject.toml":
            reqs += parse_pyproject(f.content)
        elif "/" not in f.path and f.path.startswith("requirements") and f.path.endswith(".txt"):
            reqs += parse_requirements(f.content)
    manifest.dependencies = python_dependencies(reqs)
    return manifest


def _note(path: str, reason: str) -> ManifestNote:
    return ManifestNote(kind="skipped", detail=f"{path}: {reason}" if path else reason)


def _skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info")


def _walk(base: Path, real_root: str, notes: list[ManifestNote]) -> list[str]:
    """Relative paths of the regular files to read, depth first in sorted order (deterministic)."""
    found: list[str] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(base / rel_dir), key=lambda e: e.name)
        except OSError as exc:
            notes.append(_note(rel_dir or ".", f"cannot list folder: {exc.strerror}"))
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                notes.append(_note(shown, "name is not valid UTF-8; not read"))
                continue
            if entry.is_symlink():
                _symlink(entry, rel, real_root, notes, found)
            elif entry.is_dir(follow_symlinks=False):
                if not _skipped_dir(entry.name):
                    subdirs.append(rel + "/")
            elif entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                found.append(rel)
        stack += reversed(subdirs)
    return found


def _symlink(
    entry: os.DirEntry[str], rel: str, real_root: str, notes: list[ManifestNote], found: list[str]
) -> None:
    """A symlink is read only when it names a regular file inside the folder; folders are not entered
    (their files are read where they really live, and a loop cannot start)."""
    if entry.name.startswith("."):
        return
    target = os.path.realpath(entry.path)
    if not _inside(real_root, target):
        notes.append(_note(rel, "symlink points outside the folder; not followed"))
    elif os.path.isfile(target):
        found.append(rel)
    elif os.path.isdir(target):
        notes.append(_note(rel, "symlinked folder; not followed"))


def _inside(real_root: str, target: str) -> bool:
    return os.path.commonpath([real_root, target]) == real_root


def _read_text(path: Path, rel: str, real_root: str, max_bytes: int, notes: list[ManifestNote]) -> str | None:
    if os.path.splitext(rel)[1].lower() in _BINARY_SUFFIXES:
        return None
    real = os.path.realpath(path)  # again at read time: a link may have changed since the walk
    if not _inside(real_root, real):
        notes.append(_note(rel, "resolves outside the folder; not read"))
        return None
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        notes.append(_note(rel, f"cannot read: {exc.strerror}"))
        return None
    if len(data) > max_bytes:
        notes.append(_note(rel, f"larger than {max_bytes} bytes; not read"))
        return None
    if b"\0" in data[:8192]:
        return None  # a binary file: nothing to check
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(_note(rel, "not UTF-8 text; not read"))
        return None
