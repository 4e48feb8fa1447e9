"""``enrich`` (C1): a module and symbol index of an ingested snapshot, as new notes in the snapshot's own
``_symbols/`` folder: one note per module (``_symbols/<module>.md``) and ``_symbols/index.md``, each
linking to the code notes with full-path wikilinks. The snapshot's own notes are only read, never
changed; the code is read back from the code notes (the source itself may be long gone)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..vault import VaultWriter, parse_note
from ._audit import logged
from ._ingest import ACTOR, wikilink
from ._select import Skipped, extract_code
from ._sources import ShadowIndex
from ._symbols import ModuleSymbols, extract, symbol_language

__all__ = ["EnrichResult", "enrich", "enrich_folder"]

SYMBOLS_FOLDER = "_symbols"
_PROVENANCE = ("source_url", "source_type", "ingested_at", "source_revision", "snapshot_id", "source_id")


@dataclass
class EnrichResult:
    snapshot_id: str
    path: str  # the snapshot folder, vault-relative
    vault: str
    deep: bool
    modules: list[ModuleSymbols] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def symbol_count(self) -> int:
        return sum(len(m.symbols) for m in self.modules)

    @property
    def message(self) -> str:
        what = f"{len(self.modules)} modules" + (f", {self.symbol_count} symbols" if self.deep else "")
        where = f"{self.path}/{SYMBOLS_FOLDER}/"
        return f"indexed {what} of {self.snapshot_id} in {where} ({len(self.skipped)} skipped)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "path": self.path,
            "index": f"{self.path}/{SYMBOLS_FOLDER}/index.md",
            "deep": self.deep,
            "modules": [
                {"module": m.module, "path": m.path, "language": m.language, "symbols": len(m.symbols)}
                for m in self.modules
            ],
            "symbols": [
                {"name": m.qualified(s), "kind": s.kind, "line": s.line, "module": m.module, "path": m.path}
                for m in self.modules
                for s in m.symbols
            ]
            if self.deep
            else [],
            "skipped": [s.to_dict() for s in self.skipped],
            "notes": self.notes,
            "message": self.message,
        }


def enrich(snapshot_id: str, *, deep: bool = True, index: ShadowIndex | None = None) -> EnrichResult:
    """Index the snapshot ``snapshot_id`` (as the shadow index knows it)."""
    source, snapshot = (index or ShadowIndex()).snapshot(snapshot_id)
    return enrich_folder(Path(source.vault), snapshot.path, deep=deep)


def _shown(text: str) -> str:
    return " ".join(text.replace("`", "'").replace("[[", "[ [").replace("]]", "] ]").split())


def enrich_folder(vault: str | Path, folder: str, *, deep: bool = True) -> EnrichResult:
    """Index the snapshot in ``vault``/``folder`` (vault-relative)."""
    root = Path(vault).expanduser().resolve()
    base = root / folder
    snapshot_note = base / "_snapshot.md"
    if not snapshot_note.is_file():
        raise UsageError(
            f"{folder} is not a snapshot (no _snapshot.md)", hint="enrich takes an ingested snapshot"
        )
    snap_front = parse_note(f"{folder}/_snapshot.md", snapshot_note.read_bytes()).frontmatter
    snapshot_id = str(snap_front.get("snapshot_id", folder))
    provenance = {k: str(snap_front[k]) for k in _PROVENANCE if k in snap_front}
    result = EnrichResult(snapshot_id, folder, str(root), deep)
    hashes: dict[str, str] = {}
    for rel in _code_notes(base):
        note = parse_note(f"{folder}/{rel}", (base / rel).read_bytes())
        front = note.frontmatter
        source_path = str(front.get("source_path") or "")
        language = str(front.get("language") or "")
        if not source_path or not language or not symbol_language(language):
            continue  # a markdown note, or config and markup: nothing to index
        code = extract_code(note.body)
        if code is None:
            result.skipped.append(Skipped(source_path, "its note holds no code block"))
            continue
        found = extract(code, source_path, language)
        if isinstance(found, str):
            result.skipped.append(Skipped(source_path, found))
            continue
        result.modules.append(found)
        hashes[source_path] = str(front.get("content_hash", ""))
    result.modules.sort(key=lambda m: m.path)
    actor = ACTOR.replace("ingest", "enrich")
    writer = VaultWriter(root, role="person", actor=actor, on_write=logged(root, actor, "person"))
    now = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    names = _note_names(result.modules)
    for module in result.modules:
        front = {
            "type": "symbols",
            **provenance,
            "content_hash": hashes[module.path],
            "source_path": module.path,
            "language": module.language,
            "module": module.module,
            "enriched_at": now,
        }
        path = f"{folder}/{SYMBOLS_FOLDER}/{names[module.path]}.md"
        body = _module_body(folder, module, deep)
        result.notes.append(writer.write_note(path, body, front, overwrite=True).path)
    body = _index_body(folder, snapshot_id, result, names)
    front = {
        "type": "symbol-index",
        **provenance,
        "content_hash": "sha256:" + hashlib.sha256(body.encode()).hexdigest(),
        "source_path": "",
        "enriched_at": now,
        "modules": len(result.modules),
        "symbols": result.symbol_count if deep else 0,
    }
    index_path = f"{folder}/{SYMBOLS_FOLDER}/index.md"
    result.notes.append(writer.write_note(index_path, body, front, overwrite=True).path)
    return result


def _code_notes(base: Path) -> list[str]:
    """The snapshot's notes (not ``_snapshot.md`` nor ``_symbols/``), POSIX, sorted."""
    found = []
    for current, dirs, files in os.walk(base):
        rel = Path(current).relative_to(base).as_posix()
        if rel == ".":
            dirs[:] = [d for d in dirs if d != SYMBOLS_FOLDER]
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            path = f if rel == "." else f"{rel}/{f}"
            if f.endswith(".md") and path != "_snapshot.md":
                found.append(path)
    return sorted(found)


def _note_names(modules: list[ModuleSymbols]) -> Mapping[str, str]:
    """A file name (without .md) per module: ``pkg.mod``, ``web.app.js``; unique, link-safe."""
    names: dict[str, str] = {}
    taken: set[str] = {"index"}
    for m in modules:
        base = re.sub(r"[^\w.-]+", "_", m.module.replace("/", ".")).strip("._") or "module"
        name, n = base, 1
        while name.casefold() in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name.casefold())
        names[m.path] = name
    return names


def _code_link(folder: str, module: ModuleSymbols) -> str:
    note = module.path if module.path.endswith(".md") else module.path + ".md"
    return wikilink(f"{folder}/{note}", module.path)


def _module_body(folder: str, module: ModuleSymbols, deep: bool) -> str:
    lines = [
        f"# Module `{_shown(module.module)}`",
        "",
        f"Code: {_code_link(folder, module)} ({module.language})",
    ]
    if module.doc:
        lines += ["", f"> {_shown(module.doc)}"]
    if deep:
        lines += ["", "## Symbols", ""]
        for s in module.symbols:
            doc = f" — {_shown(s.doc)}" if s.doc else ""
            lines.append(
                f"- `{_shown(module.qualified(s))}` {s.kind}, line {s.line}: `{_shown(s.signature)}`{doc}"
            )
        if not module.symbols:
            lines.append("(no classes or functions)")
    return "\n".join(lines) + "\n"


def _index_body(folder: str, snapshot_id: str, result: EnrichResult, names: Mapping[str, str]) -> str:
    symbols_folder = f"{folder}/{SYMBOLS_FOLDER}"
    lines = [
        f"# Symbols of {snapshot_id}",
        "",
        f"Snapshot: {wikilink(f'{folder}/_snapshot.md', snapshot_id)} · {len(result.modules)} modules"
        + (f" · {result.symbol_count} symbols" if result.deep else ""),
        "",
        "## Modules",
        "",
    ]
    for m in result.modules:
        doc = f" — {_shown(m.doc)}" if m.doc else ""
        own = wikilink(f"{symbols_folder}/{names[m.path]}.md", m.module)
        count = f", {len(m.symbols)} symbols" if result.deep else ""
        lines.append(f"- {own} ({m.language}{count}): {_code_link(folder, m)}{doc}")
    if result.deep:
        lines += ["", "## Symbols", ""]
        for m in result.modules:
            own = wikilink(f"{symbols_folder}/{names[m.path]}.md", m.module)
            lines += [f"- `{_shown(m.qualified(s))}` {s.kind} — {own}, line {s.line}" for s in m.symbols]
    if result.skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{_shown(s.path)}`: {_shown(s.reason)}" for s in result.skipped]
    return "\n".join(lines) + "\n"
