"""Manifest integrity: every path must be a plain relative POSIX path that names one file on every
filesystem, so that nothing a manifest says can land outside the output folder or shadow another file.

Unicode is where the tricks hide: ``ä`` and ``a`` + U+0308 are one name on macOS, ``README`` and
``readme`` one file on Windows and macOS, U+2215 looks like ``/`` and bidi controls reorder what a
reviewer sees. Such paths are refused with a reason, never silently "fixed".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._manifest import MODES, Manifest, ManifestFile, content_hash

__all__ = ["MAX_PATH_BYTES", "MAX_SEGMENT_BYTES", "Finding", "check_integrity", "problems_by_index"]

MAX_SEGMENT_BYTES = 255  # NAME_MAX on Linux and macOS
MAX_PATH_BYTES = 1024  # far below PATH_MAX once joined under an output folder

_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SLASHES = set("\u2215\u2044\u29f8\uff0f\u2571\u29f9\u2216\ufe68\uff3c\u2572\u244a")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Finding:
    """One problem in one file: ``check`` names the check (``integrity``, ``imports``, ``syntax``...)."""

    path: str
    line: int | None
    message: str
    check: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message, "check": self.check}


def check_integrity(manifest: Manifest) -> list[Finding]:
    """Every integrity problem of the manifest's paths, hashes and modes, one ``Finding`` per problem (a
    group of colliding paths is reported on each member after the first)."""
    return [
        Finding(manifest.files[i].path, None, message, "integrity")
        for i, messages in sorted(problems_by_index(manifest.files).items())
        for message in messages
    ]


def problems_by_index(files: Sequence[ManifestFile], *, every_member: bool = False) -> dict[int, list[str]]:
    """The problems of each file by its index. With ``every_member`` the first file of a colliding group
    is listed too, so that a writer refuses the whole group rather than guess which one was meant."""
    found: dict[int, list[str]] = {}
    for i, f in enumerate(files):
        for message in _path_problems(f.path):
            found.setdefault(i, []).append(message)
        if f.hash and f.hash != content_hash(f.content):
            found.setdefault(i, []).append("hash does not match the content (was the manifest edited?)")
        if f.mode not in MODES:
            found.setdefault(i, []).append(f"mode {f.mode!r} is not one of {', '.join(MODES)}")
    for i, message, later in _collisions(files):
        if later or every_member:
            found.setdefault(i, []).append(message)
    return found


def _show(path: str) -> str:
    """The path with every invisible or non-ASCII character escaped, so a message shows what is there."""
    return path.encode("ascii", "backslashreplace").decode("ascii")


def _path_problems(path: str) -> list[str]:
    if not path:
        return ["empty path"]
    problems: list[str] = []
    if "\x00" in path:
        problems.append("NUL character in the path: no filesystem can store it")
    controls = {c for c in path if unicodedata.category(c) == "Cc" and c != "\x00"}
    if controls:
        problems.append(f"control character {_show(''.join(sorted(controls)))} in the path")
    if _BIDI & set(path):
        problems.append("bidirectional control character in the path: it hides the real name from a reader")
    elif any(unicodedata.category(c) == "Cf" for c in path):
        problems.append("invisible formatting character in the path (zero-width or similar)")
    if _SLASHES & set(path):
        problems.append(
            "a character that looks like a path separator (such as U+2215 or U+FF0F) is in the path"
        )
    if "\\" in path:
        problems.append("backslash in the path: use '/' (on Windows it would split the path)")
    if path.startswith("/"):
        problems.append("absolute path: manifest paths are relative to the output folder")
    elif _DRIVE.match(path):
        problems.append("drive letter: manifest paths are relative to the output folder")
    segments = path.split("/")
    inner = segments[1:] if path.startswith("/") else segments
    if any(s == ".." for s in segments):
        problems.append("'..' segment: the path would climb out of the output folder")
    if "" in inner:
        problems.append("empty path segment ('//' or a trailing '/')")
    if "." in segments:
        problems.append("'.' segment: write the path without it")
    if any(_sneaky(s) for s in segments):
        problems.append("a segment normalises (NFKC) to '.', '..' or a separator: a trap on some systems")
    if any(_fold(s) == ".git" for s in segments):
        problems.append("path into .git/: a manifest may not write repository internals")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        problems.append(f"path longer than {MAX_PATH_BYTES} bytes")
    if any(len(s.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES for s in segments):
        problems.append(f"a path segment is longer than {MAX_SEGMENT_BYTES} bytes")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in path):
        problems.append("lone surrogate in the path: not valid Unicode text")
    return problems


def _sneaky(segment: str) -> bool:
    """A segment that is harmless as written but becomes ``.``, ``..`` or a separator under NFKC."""
    norm = unicodedata.normalize("NFKC", segment)
    if norm == segment or _SLASHES & set(segment):
        return False
    return norm in (".", "..") or "/" in norm or "\\" in norm


def _fold(text: str) -> str:
    """The key two names share when some filesystem treats them as one: NFKC, then case folding."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFC", text).casefold())


def _collisions(files: Sequence[ManifestFile]) -> list[tuple[int, str, bool]]:
    """Exact duplicates, names equal after normalisation, and a file that is also another file's folder:
    ``(index, message, later)`` where ``later`` is False for the group's first file."""
    found: list[tuple[int, str, bool]] = []
    seen_first: set[int] = set()
    first: dict[str, int] = {}
    for i, f in enumerate(files):
        key = _fold(f.path)
        if key not in first:
            first[key] = i
            continue
        j = first[key]
        other = files[j].path
        if other == f.path:
            message = f"duplicate path: {_show(other)} is listed more than once"
        else:
            message = (
                f"{_show(f.path)} and {_show(other)} name the same file after Unicode normalisation "
                "and case folding (macOS and Windows would write one over the other)"
            )
        found.append((i, message, True))
        if j not in seen_first:
            seen_first.add(j)
            found.append((j, message, False))
    folders: dict[str, int] = {}
    for i, f in enumerate(files):
        parts = _fold(f.path).split("/")
        for n in range(1, len(parts)):
            folders.setdefault("/".join(parts[:n]), i)
    for i, f in enumerate(files):
        owner = folders.get(_fold(f.path))
        if owner is not None:
            message = f"{_show(f.path)} is a file, but {_show(files[owner].path)} needs it to be a folder"
            found += [(i, message, True), (owner, message, False)]
    return found
