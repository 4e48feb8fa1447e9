"""The ``local`` profile's read-only folders: ``FsRoot`` and reading and listing the files inside one;
separate from the vault handlers, as the one part of the broker that reads the file system directly."""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._checks import CallRefused, hidden_target, str_arg

__all__ = ["MAX_FILE_BYTES", "MAX_LISTING", "FsRoot", "choose_root", "list_root_files", "read_root_file"]

MAX_FILE_BYTES = 2_000_000
MAX_LISTING = 20_000


@dataclass(frozen=True)
class FsRoot:
    """A read-only folder the ``local`` profile exposes through ``obsidian.read_file`` / ``list_files``."""

    id: str
    path: Path

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FsRoot:
        p = Path(path).expanduser()
        if not p.is_dir():
            raise UsageError(f"--fs-read folder not found: {p}", hint="give an existing folder")
        real = Path(os.path.realpath(p))
        slug = re.sub(r"[^a-z0-9]+", "-", unicodedata.normalize("NFKD", real.name).lower()).strip("-")
        return cls(slug or "root", real)


def choose_root(roots: tuple[FsRoot, ...], root: Any) -> FsRoot:
    """The root a call names by id (the first when it names none)."""
    name = str_arg("root", root, 200, required=False)
    if not roots:
        raise CallRefused("blocked", "no --fs-read roots were given to this sandbox", "ProfileRefused")
    if name is None:
        return roots[0]
    for r in roots:
        if r.id == name:
            return r
    raise CallRefused("error", f"no root {name!r}; roots: {[r.id for r in roots]}", "ValueError")


def read_root_file(r: FsRoot, rel: str) -> str:
    """The text of ``rel`` (checked vault-relative path) inside ``r``: no hidden, binary or huge file."""
    why = hidden_target(str(r.path), rel)
    if why is not None:
        raise CallRefused("blocked", f"{rel!r} {why} of the allowed root", "PathOutsideVault")
    real = os.path.realpath(r.path / rel)
    if not os.path.isfile(real):
        raise CallRefused("error", f"no file {rel!r} in root {r.id!r}", "FileNotFound")
    with open(real, "rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise CallRefused("limited", f"{rel!r} is larger than {MAX_FILE_BYTES} bytes", "LimitExceeded")
    if b"\x00" in data:
        raise CallRefused("error", f"{rel!r} is a binary file", "ValueError")
    return data.decode("utf-8", "replace")


def list_root_files(r: FsRoot, sub: str) -> list[str]:
    """The files under folder ``sub`` of ``r`` (root-relative, sorted), hidden ones left out."""
    base = r.path / sub if sub else r.path
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if name.startswith(".") or hidden_target(str(r.path), os.path.relpath(full, r.path)):
                continue
            out.append(os.path.relpath(full, r.path).replace(os.sep, "/"))
            if len(out) >= MAX_LISTING:
                return out
    return out
