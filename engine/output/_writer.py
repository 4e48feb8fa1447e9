"""The safe writer (O6): a manifest's files under ``--output`` and nowhere else.

Every folder is entered with ``openat(O_NOFOLLOW)`` from an open handle on the output folder, so a path
can only go down, never through ``..`` or a symlink that leads out; a symlinked folder is followed only
when its real location is inside the output, and an existing symlink at a file's own place is never
written through. Each file is written to a temp file in its folder and renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ShadError, UsageError

from ._integrity import problems_by_index
from ._manifest import Manifest, ManifestFile, content_hash

__all__ = ["WriteReport", "write_manifest"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_MODE = 0o644


@dataclass
class WriteReport:
    """What happened to each file: ``written`` (``created``/``overwritten``), ``skipped`` (exists, or
    unchanged) and ``refused`` (unsafe or impossible), each entry ``{"path", "reason", "hash"?}``."""

    output: str
    written: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "written": list(self.written),
            "skipped": list(self.skipped),
            "refused": list(self.refused),
        }


class _Refused(Exception):
    """This file cannot be written safely; the message says why."""


def write_manifest(manifest: Manifest, output: str | Path, *, overwrite: bool = False) -> WriteReport:
    """Write the manifest's files under ``output`` (created if missing) and report every file's fate.

    Existing files are kept unless ``overwrite`` (or they already hold the same bytes: "unchanged");
    a path ``check_integrity`` flags is refused, and so is every member of a colliding group.
    """
    if not {os.open, os.mkdir, os.stat} <= os.supports_dir_fd:
        raise ShadError(
            "safe writing needs openat() and friends, which this system lacks",
            hint="write the files on Linux or macOS, or export the manifest.json and copy by hand",
        )
    out = Path(output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"{out} exists and is not a folder", hint="give --output a folder") from None
    except OSError as exc:
        raise UsageError(
            f"cannot create {out}: {exc.strerror}", hint="give --output a folder you can write"
        ) from None
    real_root = os.path.realpath(out)
    report = WriteReport(str(out))
    problems = problems_by_index(manifest.files, every_member=True)
    root_fd = os.open(real_root, _DIR_FLAGS)
    try:
        for i, f in enumerate(manifest.files):
            if i in problems:
                report.refused.append({"path": f.path, "reason": "; ".join(problems[i])})
                continue
            try:
                _write_one(root_fd, real_root, f, overwrite, report)
            except _Refused as exc:
                report.refused.append({"path": f.path, "reason": str(exc)})
            except OSError as exc:
                report.refused.append({"path": f.path, "reason": f"cannot write: {exc.strerror or exc}"})
    finally:
        os.close(root_fd)
    return report


def _write_one(root_fd: int, real_root: str, f: ManifestFile, overwrite: bool, report: WriteReport) -> None:
    try:
        data = f.content.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused("content is not valid Unicode text (lone surrogates)") from None
    *folders, name = f.path.split("/")
    digest = content_hash(f.content)
    dir_fd = _open_folders(root_fd, real_root, folders)
    try:
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise _Refused("a symlink is at this path; Shad never writes through a symlink")
            if stat.S_ISDIR(st.st_mode):
                raise _Refused("a folder is at this path")
            if not stat.S_ISREG(st.st_mode):
                raise _Refused("something other than a regular file is at this path")
            if _holds(dir_fd, name, data):
                report.skipped.append({"path": f.path, "reason": "unchanged", "hash": digest})
                return
            if not overwrite:
                report.skipped.append({"path": f.path, "reason": "exists; pass --overwrite", "hash": digest})
                return
        _replace(dir_fd, name, data)
        reason = "created" if st is None else "overwritten"
        report.written.append({"path": f.path, "reason": reason, "hash": digest})
    finally:
        os.close(dir_fd)


def _open_folders(root_fd: int, real_root: str, folders: list[str], *, follow: bool = True) -> int:
    """A handle on ``root/folders...``, creating missing folders; each step is ``openat(O_NOFOLLOW)``
    from the step before, so the walk cannot leave the tree except through a symlink, and a symlinked
    folder is taken only when it resolves inside the output (then walked again from the root)."""
    fd = os.dup(root_fd)
    here = real_root
    try:
        for seg in folders:
            if seg in ("", ".", "..") or "/" in seg:  # check_integrity refuses these; never trust it alone
                raise _Refused(f"unsafe folder name {seg!r}")
            try:
                nxt = os.open(seg, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below like any folder
                    os.mkdir(seg, 0o755, dir_fd=fd)
                nxt = _open_existing(fd, seg, here, root_fd, real_root, follow)
            except OSError:
                nxt = _open_existing(fd, seg, here, root_fd, real_root, follow)
            os.close(fd)
            fd = nxt
            here = os.path.join(here, seg)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_existing(fd: int, seg: str, here: str, root_fd: int, real_root: str, follow: bool) -> int:
    st = os.stat(seg, dir_fd=fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        return os.open(seg, _DIR_FLAGS, dir_fd=fd)
    if not stat.S_ISLNK(st.st_mode):
        raise _Refused(f"{seg} is a file, so it cannot be a folder")
    target = os.path.realpath(os.path.join(here, seg))
    if not follow or os.path.commonpath([real_root, target]) != real_root:
        raise _Refused(f"the folder {seg} is a symlink that leads outside the output folder")
    if not os.path.isdir(target):
        raise _Refused(f"the folder {seg} is a symlink to something that is not a folder")
    rel = os.path.relpath(target, real_root)
    # The real location holds no symlink (realpath), so this second walk refuses any that appears now.
    return _open_folders(root_fd, real_root, [] if rel == "." else rel.split(os.sep), follow=False)


def _holds(dir_fd: int, name: str, data: bytes) -> bool:
    """True when the file ``name`` already holds exactly ``data``."""
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(len(data) + 1) == data


def _replace(dir_fd: int, name: str, data: bytes) -> None:
    """Atomic: a temp file beside the target, fsync, mode 0o644, then rename over it (a rename replaces
    a symlink that appeared meanwhile, never the file it points to)."""
    tmp = f".shad-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, _FILE_MODE, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), _FILE_MODE)
            os.fsync(fh.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
