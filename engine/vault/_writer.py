"""The one careful writer of a vault (V5, H3, V6): ``write_note``, ``update_note``, ``update_frontmatter``,
``write_scratch`` and ``delete_note`` (approved deletes only).

- **Who may write.** A run's root and a person (a CLI command the user ran) write notes; sub-tasks and
  sandbox scripts are read-only and may only create new, uniquely named scratch notes under
  ``Shad/Scratch/``. A delete needs an approval from the queue (``engine.curation``) that names the note.
- **Where.** Only inside the vault: every folder is entered with ``openat(O_NOFOLLOW)`` from an open handle
  on the vault's root, so neither ``..`` nor a symlink can lead out; absolute paths, hidden folders
  (``.obsidian``, ``.git``), control characters and non-``.md`` names are refused before anything is
  touched.
- **What.** Frontmatter must be a mapping YAML can write and read back; a ``[[`` that never closes is
  refused; links that resolve to no note are reported (``unresolved_links``), not fatal.
- **When.** ``expected_hash`` (the sha256 of the note as it was read) makes a write refuse with
  ``StateCorruptionError`` if the note changed on disk since, naming it, before anything is written.
- **How.** A temporary file in the note's own folder, fsynced, renamed over the note: a reader sees the old
  note or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import NoteNotFoundError, PathOutsideVaultError, ShadError
from ._frontmatter import split_frontmatter
from ._model import Diagnostic

__all__ = ["ROLES", "NoteWrite", "StateCorruptionError", "VaultWriter", "WriteRefusedError", "render_note"]

ROLES = ("root", "person", "subtask", "sandbox")
_WRITERS = ("root", "person")
SCRATCH_FOLDER = "Shad/Scratch"
# Shad's own skills and voices: Shad never changes them itself (a change is proposed as a staging note).
PERSON_ONLY_FOLDERS = ("Shad/Skills",)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_MAX_PATH = 1024
_MAX_FRONTMATTER = 64_000
_WIKILINK = re.compile(r"\[\[([^\[\]\n]*?)\]\]")


class WriteRefusedError(ShadError):
    """This write is not allowed: the role may not write, the path is unsafe, or the content is invalid."""

    exit_code = 2


class StateCorruptionError(ShadError):
    """The note changed on disk since it was read: writing now would lose someone's edit."""


@dataclass(frozen=True)
class NoteWrite:
    """What one write did: ``action`` is created | updated | unchanged | deleted."""

    path: str
    action: str
    hash: str
    unresolved_links: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "action": self.action,
            "hash": self.hash,
            "unresolved_links": self.unresolved_links,
        }


def render_note(frontmatter: Mapping[str, Any] | None, body: str) -> str:
    """Frontmatter (if any) as a YAML block, then the body, ending in one newline."""
    text = body if body.endswith("\n") or not body else body + "\n"
    if not frontmatter:
        return text
    block = yaml.safe_dump(dict(frontmatter), sort_keys=False, allow_unicode=True, default_flow_style=False)
    return f"---\n{block}---\n{text}"


# Told of every write that changed the vault: (what it did, how many bytes it wrote). The audit trail (P7):
# a run's writer emits a NOTE_WRITTEN event, an approval applied outside a run appends to the audit log.
WriteHook = Callable[[NoteWrite, int], None]


class VaultWriter:
    """Writes notes into the vault at ``root`` as ``role`` (root, person, subtask, sandbox)."""

    def __init__(
        self, root: str | Path, *, role: str = "root", actor: str = "shad", on_write: WriteHook | None = None
    ) -> None:
        if role not in ROLES:
            raise WriteRefusedError(f"unknown writer role {role!r}", hint=f"roles: {', '.join(ROLES)}")
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise NoteNotFoundError(f"vault folder not found: {self.root}", hint="pass the vault's folder")
        self.role, self.actor, self.on_write = role, actor, on_write
        self._stems: set[str] | None = None  # note names in the vault, read once, to resolve links

    # --- reading what is there -----------------------------------------------------------------------

    def note_hash(self, path: str) -> str:
        """sha256 (hex) of the note's bytes as they are now; "" when there is no such note."""
        data = self._read(self.check_path(path))
        return hashlib.sha256(data).hexdigest() if data is not None else ""

    # --- writes --------------------------------------------------------------------------------------

    def write_note(
        self,
        path: str,
        body: str,
        frontmatter: Mapping[str, Any] | None = None,
        *,
        overwrite: bool = False,
        expected_hash: str | None = None,
    ) -> NoteWrite:
        """Create the note (or replace it, with ``overwrite``) with ``frontmatter`` and ``body``."""
        self._may_write()
        rel = self._writable(path)
        text = self._content(frontmatter, body)
        current = self._read(rel)
        self._unchanged_since(rel, current, expected_hash)
        if current is not None and not overwrite:
            raise WriteRefusedError(f"note {rel} exists", hint="pass overwrite=True, or use update_note")
        return self._write(rel, text, current)

    def update_note(self, path: str, body: str, *, expected_hash: str | None = None) -> NoteWrite:
        """Replace an existing note's body, keeping its frontmatter."""
        self._may_write()
        rel = self._writable(path)
        current = self._existing(rel)
        self._unchanged_since(rel, current, expected_hash)
        front, _ = self._split(rel, current)
        return self._write(rel, self._content(front, body), current)

    def update_frontmatter(
        self,
        path: str,
        changes: Mapping[str, Any],
        *,
        remove: Iterable[str] = (),
        expected_hash: str | None = None,
    ) -> NoteWrite:
        """Set ``changes`` and drop ``remove`` in an existing note's frontmatter; the body is kept as is."""
        self._may_write()
        rel = self._writable(path)
        current = self._existing(rel)
        self._unchanged_since(rel, current, expected_hash)
        front, body = self._split(rel, current)
        merged = {**front, **dict(changes)}
        for key in remove:
            merged.pop(key, None)
        return self._write(rel, self._content(merged, body), current)

    def write_scratch(self, stem: str, body: str, frontmatter: Mapping[str, Any] | None = None) -> NoteWrite:
        """A new, uniquely named note under ``Shad/Scratch/`` — the one write every role may make."""
        slug = re.sub(r"[^\w\- ]+", "", unicodedata.normalize("NFC", stem)).strip()[:80] or "scratch"
        rel = self.check_path(f"{SCRATCH_FOLDER}/{slug}-{secrets.token_hex(4)}.md")
        front = {"type": "scratch", "created_by": self.actor, **dict(frontmatter or {})}
        return self._write(rel, self._content(front, body), None, exclusive=True)

    def delete_note(self, path: str, *, approval: Any) -> NoteWrite:
        """Delete a note, only with an approved ``delete`` approval for exactly this path (H3)."""
        self._may_write()
        rel = self._writable(path)
        ok = (
            getattr(approval, "status", None) == "approved"
            and getattr(approval, "kind", None) == "delete"
            and getattr(approval, "path", None) == rel
        )
        if not ok:
            raise WriteRefusedError(
                f"deleting {rel} needs an approved delete for that note",
                hint="deletes go to the approval queue: shad approvals ls / approve ID",
            )
        current = self._existing(rel)
        self._unchanged_since(rel, current, getattr(approval, "content_hash", None) or None)
        with self._folder(rel, create=False) as (fd, name):
            os.unlink(name, dir_fd=fd)
        return self._done(NoteWrite(rel, "deleted", hashlib.sha256(current).hexdigest()), 0)

    # --- checks --------------------------------------------------------------------------------------

    def check_path(self, path: str) -> str:
        """The path as a clean vault-relative POSIX path to a ``.md`` note, or ``PathOutsideVaultError``."""
        if not isinstance(path, str) or not path.strip():
            raise PathOutsideVaultError("a note path must be a non-empty string", hint="e.g. Notes/Idea.md")
        rel = unicodedata.normalize("NFC", path.strip())
        problem = _path_problem(rel)
        if problem:
            raise PathOutsideVaultError(
                f"refused note path {path!r}: {problem}",
                hint="give a path inside the vault, e.g. Notes/Idea.md",
            )
        return rel

    def _writable(self, path: str) -> str:
        rel = self.check_path(path)
        low = rel.casefold()
        guarded = next((f for f in PERSON_ONLY_FOLDERS if low.startswith(f.casefold() + "/")), None)
        if guarded is not None and self.role != "person":
            raise WriteRefusedError(
                f"Shad does not change {guarded}/ itself (refused: {rel})",
                hint="propose the change as a staging note (kind: skill) for a person to apply",
            )
        return rel

    def _may_write(self) -> None:
        if self.role not in _WRITERS:
            raise WriteRefusedError(
                f"a {self.role} may not write notes (only the run's root may)",
                hint="sub-tasks and scripts read; they may create scratch notes with write_scratch",
            )

    def _unchanged_since(self, rel: str, current: bytes | None, expected_hash: str | None) -> None:
        if expected_hash is None:
            return
        now = hashlib.sha256(current).hexdigest() if current is not None else ""
        if now != expected_hash:
            what = "was deleted" if current is None else "changed on disk"
            raise StateCorruptionError(
                f"{rel} {what} after it was read; nothing was written over it",
                hint="read the note again (a person or a sync client edited it) and redo the change",
                path=rel,
            )

    def _content(self, frontmatter: Mapping[str, Any] | None, body: str) -> str:
        if not isinstance(body, str) or "\x00" in body:
            raise WriteRefusedError("a note's body must be text without NUL characters")
        if frontmatter is not None:
            if not isinstance(frontmatter, Mapping) or not all(isinstance(k, str) and k for k in frontmatter):
                raise WriteRefusedError("frontmatter must be a mapping with non-empty text keys")
            try:
                block = yaml.safe_dump(dict(frontmatter), sort_keys=False, allow_unicode=True)
                back = yaml.safe_load(block)
            except yaml.YAMLError as exc:
                raise WriteRefusedError(f"frontmatter cannot be written as YAML: {exc}") from None
            if len(block) > _MAX_FRONTMATTER or not isinstance(back, dict):
                raise WriteRefusedError("frontmatter is too large or does not read back as a mapping")
        for line in _prose(body).splitlines():
            if line.count("[[") > line.count("]]"):
                raise WriteRefusedError(
                    f"a wikilink never closes: {line.strip()[:120]!r}", hint="close it with ]]"
                )
        return render_note(frontmatter, body)

    def _unresolved(self, text: str) -> list[str]:
        """Link targets that name no note (by path, or by name as Obsidian resolves short links)."""
        out = set()
        for target in _WIKILINK.findall(_prose(text)):
            name = target.split("|", 1)[0].split("#", 1)[0].strip()
            if not name or any((self.root / c).is_file() for c in (name, f"{name}.md")):
                continue
            if self._stems is None:
                self._stems = {
                    f[:-3].casefold()
                    for _, _, files in os.walk(self.root)
                    for f in files
                    if f.endswith(".md")
                }
            if Path(name).name.casefold() not in self._stems:
                out.add(name)
        return sorted(out)

    def _split(self, rel: str, raw: bytes) -> tuple[dict[str, Any], str]:
        diagnostics: list[Diagnostic] = []
        front, body, _ = split_frontmatter(
            raw.decode("utf-8", errors="replace").replace("\r\n", "\n"), diagnostics
        )
        if any(d.severity == "error" for d in diagnostics):
            raise WriteRefusedError(
                f"{rel}'s frontmatter does not parse; it is left as it is", hint="fix it by hand first"
            )
        return front, body

    # --- the file system -----------------------------------------------------------------------------

    def _existing(self, rel: str) -> bytes:
        data = self._read(rel)
        if data is None:
            raise NoteNotFoundError(f"no note {rel} in {self.root}", hint="write_note creates a note")
        return data

    def _read(self, rel: str) -> bytes | None:
        try:
            with self._folder(rel, create=False) as (fd, name):
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    raise PathOutsideVaultError(f"{rel} is not a plain file (a symlink or a folder)")
                handle = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
                with os.fdopen(handle, "rb") as f:
                    return f.read()
        except FileNotFoundError:
            return None

    def _write(self, rel: str, text: str, current: bytes | None, *, exclusive: bool = False) -> NoteWrite:
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        unresolved = self._unresolved(text)
        if current == data:
            return NoteWrite(rel, "unchanged", digest, unresolved)
        with self._folder(rel, create=True) as (fd, name):
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise PathOutsideVaultError(f"{rel} is a symlink; it is never written through")
                if exclusive:
                    raise WriteRefusedError(f"{rel} already exists")
            tmp = f".{name}.{secrets.token_hex(6)}.tmp"
            handle = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644, dir_fd=fd
            )
            try:
                with os.fdopen(handle, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
        return self._done(
            NoteWrite(rel, "created" if current is None else "updated", digest, unresolved), len(data)
        )

    def _done(self, write: NoteWrite, size: int) -> NoteWrite:
        if self.on_write is not None:
            self.on_write(write, size)
        return write

    @contextlib.contextmanager
    def _folder(self, rel: str, *, create: bool) -> Any:
        """(fd of the note's folder, the note's name), the folders entered without following links."""
        *folders, name = rel.split("/")
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for seg in folders:
                try:
                    nxt = os.open(seg, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(seg, 0o755, dir_fd=fd)
                    nxt = os.open(seg, _DIR_FLAGS, dir_fd=fd)
                except OSError:  # ELOOP / ENOTDIR: a symlink or a file where a folder should be
                    raise PathOutsideVaultError(
                        f"{rel}: {seg} is not a plain folder inside the vault (a symlink?)",
                        hint="notes are written into real folders of the vault only",
                    ) from None
                os.close(fd)
                fd = nxt
            yield fd, name
        finally:
            os.close(fd)


_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)[^`\n]*?\1")


def _prose(text: str) -> str:
    """The text without fenced and inline code: ``Callable[[int], None]`` in code is not a link."""
    return _INLINE_CODE.sub("", _FENCED.sub("", text))


def _path_problem(rel: str) -> str:
    if len(rel.encode("utf-8", "surrogatepass")) > _MAX_PATH:
        return "too long"
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel) or "\\" in rel:
        return "absolute or Windows-style path"
    if any(ord(ch) < 32 or ch in "\x7f\u202e\u202d\u200b\ufeff" for ch in rel):
        return "control or invisible characters"
    segments = rel.split("/")
    if any(seg in ("", ".", "..") for seg in segments):
        return "empty, '.' or '..' segment"
    if any(seg.startswith(".") for seg in segments):
        return "hidden file or folder (.obsidian, .git, ...)"
    if any(seg != seg.strip() for seg in segments):
        return "a segment starts or ends with a space"
    if not rel.lower().endswith(".md") or rel.lower() == ".md":
        return "a note's name ends in .md"
    return ""
