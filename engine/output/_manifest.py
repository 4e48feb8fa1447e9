"""The code manifest: the files a software run produced, with where each came from (seed §1.8, §2.7.1).

A manifest is data, never a write: ``ManifestFile.make`` accepts any path (``check_integrity`` and the
writer judge it), so a run can always keep what a model proposed and explain what is wrong with it.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import UsageError
from engine.fs import atomic_write

__all__ = ["MODES", "Manifest", "ManifestFile", "ManifestNote", "content_hash", "language_of"]

MODES = ("create", "overwrite")

_BY_SUFFIX = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".json": "json", ".toml": "toml", ".md": "markdown", ".markdown": "markdown",
    ".yaml": "yaml", ".yml": "yaml", ".txt": "text", ".cfg": "ini", ".ini": "ini", ".html": "html",
    ".htm": "html", ".css": "css", ".scss": "scss", ".sh": "shell", ".bash": "shell", ".sql": "sql",
    ".rs": "rust", ".go": "go", ".java": "java", ".c": "c", ".h": "c", ".cpp": "cpp", ".hpp": "cpp",
    ".rb": "ruby", ".xml": "xml", ".svg": "xml", ".ipynb": "json", ".rst": "rst", ".csv": "csv",
}  # fmt: skip
_BY_NAME = {"dockerfile": "dockerfile", "makefile": "makefile", "license": "text", "readme": "text"}


def language_of(path: str) -> str:
    """The language a path's suffix names (``"text"`` when unknown); a pure function of the last segment,
    case-insensitive, so two runs always agree."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name.endswith(".d.ts"):
        return "typescript"
    suffix = posixpath.splitext(name)[1]
    return _BY_SUFFIX.get(suffix) or _BY_NAME.get(name, "text")


def content_hash(content: str) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes (lone surrogates kept, so hashing never fails)."""
    return "sha256:" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ManifestFile:
    """One file of a manifest; ``path`` is POSIX, relative to the output root, exactly as proposed."""

    path: str
    content: str
    language: str
    mode: str = "create"  # "create" | "overwrite": recorded intent; the writer's --overwrite decides
    hash: str = ""  # "sha256:<hex>" of content
    source_nodes: tuple[str, ...] = ()  # run nodes that produced it
    source_notes: tuple[str, ...] = ()  # vault wikilinks it was built from, e.g. "[[Patterns/Retry]]"

    @classmethod
    def make(
        cls,
        path: str,
        content: str,
        *,
        language: str | None = None,
        mode: str = "create",
        source_nodes: Iterable[str] = (),
        source_notes: Iterable[str] = (),
    ) -> ManifestFile:
        """A file with its language (from the suffix unless given) and hash filled in; rejects nothing."""
        return cls(
            path=path,
            content=content,
            language=language or language_of(path),
            mode=mode,
            hash=content_hash(content),
            source_nodes=tuple(source_nodes),
            source_notes=tuple(source_notes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "content": self.content,
            "language": self.language,
            "mode": self.mode,
            "hash": self.hash,
            "source_nodes": list(self.source_nodes),
            "source_notes": list(self.source_notes),
        }


@dataclass(frozen=True)
class ManifestNote:
    """Something a run says about its manifest: a ``contract_change_request``, a skipped file, ..."""

    kind: str
    detail: str
    node: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail, "node": self.node}


@dataclass
class Manifest:
    """The files, the notes, and the third-party top-level modules the code may import."""

    files: list[ManifestFile] = field(default_factory=list)
    notes: list[ManifestNote] = field(default_factory=list)
    run_id: str = ""
    dependencies: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The seed's ``manifest.json`` shape (§2.7.1), plus ``dependencies``."""
        return {
            "run_id": self.run_id,
            "files": [f.to_dict() for f in self.files],
            "notes": [n.to_dict() for n in self.notes],
            "dependencies": list(self.dependencies),
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "manifest") -> Manifest:
        """A manifest from its JSON shape; a wrong shape is a ``UsageError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise _shape(source, "the top level must be an object", data)
        files = [
            _file_from(item, f"files[{i}]", source) for i, item in enumerate(_list(data, "files", source))
        ]
        notes = [
            _note_from(item, f"notes[{i}]", source) for i, item in enumerate(_list(data, "notes", source))
        ]
        deps = _strings(data.get("dependencies", []), "dependencies", source)
        run_id = data.get("run_id") or ""
        if not isinstance(run_id, str):
            raise _shape(source, "run_id must be a string", run_id)
        return cls(files=files, notes=notes, run_id=run_id, dependencies=list(deps))

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        """Read a ``manifest.json``; a missing, unreadable or malformed file is a clear ``UsageError``."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"no manifest at {path}", hint="give the path of a manifest.json") from None
        except IsADirectoryError:
            raise UsageError(
                f"{path} is a folder, not a manifest.json", hint="name the manifest.json file inside it"
            ) from None
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{path} is not UTF-8 text ({exc.reason})", hint="is it a manifest.json?"
            ) from None
        except OSError as exc:
            raise UsageError(
                f"cannot read {path}: {exc.strerror}", hint="check the path and its permissions"
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                hint="a manifest.json is written by `shad run`; fix or regenerate it",
            ) from None
        return cls.from_dict(data, source=str(path))

    def save(self, path: str | Path) -> None:
        """Write ``manifest.json`` atomically (a reader never sees half a manifest)."""
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates in content: JSON escapes keep them round-trippable
            text = json.dumps(self.to_dict(), indent=2, ensure_ascii=True) + "\n"
        atomic_write(Path(path), text)


def _shape(source: str, what: str, got: Any) -> UsageError:
    return UsageError(
        f"{source}: {what} (got {type(got).__name__})",
        hint='a manifest is {"run_id", "files": [{"path", "content", ...}], "notes": [...], ...}',
    )


def _list(data: Mapping[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _shape(source, f"{key} must be a list", value)
    return value


def _strings(value: Any, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _shape(source, f"{where} must be a list of strings", value)
    return tuple(value)


def _text(item: Mapping[str, Any], key: str, where: str, source: str, default: str | None = None) -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise _shape(source, f"{where}.{key} must be a string", value)
    return value


def _file_from(item: Any, where: str, source: str) -> ManifestFile:
    if not isinstance(item, Mapping):
        raise _shape(source, f"{where} must be an object", item)
    path = _text(item, "path", where, source)
    content = _text(item, "content", where, source)
    mode = _text(item, "mode", where, source, "create")
    if mode not in MODES:
        raise UsageError(f"{source}: {where}.mode is {mode!r}", hint=f"use one of {', '.join(MODES)}")
    return ManifestFile(
        path=path,
        content=content,
        language=_text(item, "language", where, source, "") or language_of(path),
        mode=mode,
        hash=_text(item, "hash", where, source, "") or content_hash(content),
        source_nodes=_strings(item.get("source_nodes", []), f"{where}.source_nodes", source),
        source_notes=_strings(item.get("source_notes", []), f"{where}.source_notes", source),
    )


def _note_from(item: Any, where: str, source: str) -> ManifestNote:
    if not isinstance(item, Mapping):
        raise _shape(source, f"{where} must be an object", item)
    return ManifestNote(
        kind=_text(item, "kind", where, source),
        detail=_text(item, "detail", where, source, ""),
        node=_text(item, "node", where, source, ""),
    )
