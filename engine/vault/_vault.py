"""``Vault``: one Obsidian vault folder, read directly, searched through its persistent index."""

from __future__ import annotations

import datetime as dt
import json
import os
import posixpath
import re
import threading
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from ..config import HISTORY_FOLDER
from ..errors import NoteNotFoundError, PathOutsideVaultError, UsageError, VaultNotFoundError
from ..text import parse_query
from ._fusion import linked_notes
from ._graph import LinkGraph
from ._index import IndexStats, ProgressFn, VaultIndex
from ._links import IndexResolver, export_graph, link_counts, unresolved
from ._links import backlinks as _backlinks
from ._links import neighbors as _neighbors
from ._model import Diagnostic, Hit, Note
from ._parse import parse_note, split_link_text
from ._scan import is_conflict_copy, stream_vault
from ._search import SearchFilters, search_index, searched_synonyms
from ._templates import template_folders
from ._vectors import drop_vectors, embed_notes, refresh_vectors, vectors_status

__all__ = ["Vault", "normalize_note_path", "to_epoch"]

_HIDDEN_HINT = "hidden folders such as .obsidian/ hold app settings and plugin tokens, not notes"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", unicodedata.normalize("NFKD", name).lower()).strip("-") or "vault"


def to_epoch(value: Any) -> float | None:
    """Accept epoch seconds, a ``datetime``/``date`` or an ISO-8601 string."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).timestamp()
    try:
        return dt.datetime.fromisoformat(str(value)).timestamp()
    except ValueError as exc:
        raise UsageError(f"not a date: {value!r}", hint="use an ISO date such as 2026-03-14") from exc


def _where_values(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """Dates in ``where`` compared the way frontmatter stores them: as ISO strings."""
    if not where:
        return where

    def one(v: Any) -> Any:
        return v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else v

    return {k: [one(x) for x in v] if isinstance(v, (list, tuple, set)) else one(v) for k, v in where.items()}


def normalize_note_path(path: str) -> str:
    """Validate a vault-relative path: POSIX, no ``..``, not absolute, no NUL, nothing hidden."""
    if not isinstance(path, str) or not path.strip():
        raise UsageError("empty note path", hint="give a vault-relative path such as 'Folder/Note.md'")
    if "\x00" in path:
        raise PathOutsideVaultError("note path contains a NUL byte", hint="give a plain vault-relative path")
    p = path.replace("\\", "/")
    if p.startswith("/") or re.match(r"^[A-Za-z]:", p):
        raise PathOutsideVaultError(
            f"absolute path not allowed: {path!r}",
            hint="paths are relative to the vault root, e.g. 'Folder/Note.md'",
        )
    parts = [part for part in p.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise PathOutsideVaultError(
            f"path leaves the vault: {path!r}", hint="'..' is not allowed in note paths"
        )
    if any(part.startswith(".") for part in parts):
        raise PathOutsideVaultError(f"hidden path not readable: {path!r}", hint=_HIDDEN_HINT)
    return "/".join(parts)


SHAD_HISTORY = HISTORY_FOLDER + "/"


class Vault:
    """An Obsidian vault. ``path`` is its folder; ``id`` names it in hits and citations."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        id: str | None = None,
        *,
        index_path: str | os.PathLike[str] | None = None,
        include_history: bool = False,
    ) -> None:
        root = Path(path).expanduser()
        if not root.exists():
            raise VaultNotFoundError(
                f"vault folder not found: {root}", hint="pass --vault with the folder that holds your notes"
            )
        if not root.is_dir():
            raise VaultNotFoundError(
                f"vault path is not a folder: {root}", hint="pass the vault's folder, not a file inside it"
            )
        self.root = root.resolve()
        self.id = id or _slug(self.root.name)
        self._index_path = Path(index_path) if index_path else None
        # Run reports are left out of the index unless asked for: each new report would otherwise shift
        # every ranking (BM25 counts the whole corpus), so a replay of a recorded run could not match.
        self.include_history = include_history
        self._index: VaultIndex | None = None
        self._graph: LinkGraph | None = None
        self._refreshed = False
        self._lock = threading.RLock()
        self.last_update: IndexStats | None = None

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r}, id={self.id!r})"

    # --- index -------------------------------------------------------------------------------------------

    @property
    def index(self) -> VaultIndex:
        with self._lock:
            if self._index is None:
                self._index = VaultIndex(str(self.root), self._index_path)
            return self._index

    def refresh(self, progress: ProgressFn | None = None, *, full: bool = False) -> IndexStats:
        """Re-index what changed on disk since the last update (everything, the first time). Only what
        changed since the last scan is looked at, by modification time; ``full`` walks the whole vault
        (as the index does itself at least hourly: an edit that set a file's mtime back is seen then)."""
        with self._lock:
            keep = None if self.include_history else _not_history
            scope = "all" if self.include_history else "no-history"
            stats = self.index.update(progress, keep=keep, scope=scope, full=full)
            if stats.changed or stats.attachments_changed:
                self._graph = None
            refresh_vectors(self.index, changed=bool(stats.changed))
            self._refreshed = True
            self.last_update = stats
            return stats

    def embed(self, progress: ProgressFn | None = None) -> int:
        """Opt into semantic ranking (the ``embeddings`` extra): embed the notes not embedded yet, every
        note the first time; later refreshes embed what changed. Returns how many notes were embedded."""
        with self._lock:
            return embed_notes(self._ready(), progress)

    def embeddings_status(self) -> dict[str, Any] | None:
        """Semantic ranking: model, notes embedded, notes waiting; None when the vault did not opt in."""
        return vectors_status(self._ready())

    def drop_embeddings(self) -> None:
        """Opt out of semantic ranking: its vectors are deleted; search ranks by text alone."""
        with self._lock:
            drop_vectors(self.index)

    def _ready(self) -> VaultIndex:
        """The index, brought up to date once per ``Vault`` object (later changes need ``refresh()``)."""
        if not self._refreshed:
            self.refresh()
        return self.index

    def content_hashes(self, paths: list[str]) -> dict[str, str]:
        """Content hash of each note path the (refreshed) index holds; unknown paths are left out."""
        return self._ready().content_hashes(paths)

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None

    # --- search ------------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tags: str | list[str] | None = None,
        where: dict[str, Any] | None = None,
        *,
        modified_after: Any = None,
        modified_before: Any = None,
        exclude: list[str] | tuple[str, ...] = (),
        include_conflicts: bool = False,
        include_templates: bool = True,
        semantic: bool = True,
    ) -> list[Hit]:
        """Ranked full-text search. Filters: folder/path prefix, frontmatter ``type``, tags (all must be
        present), ``where`` (frontmatter field -> value), modification dates. Sync-conflict copies are left
        out unless ``include_conflicts`` (they duplicate a real note; ``conflict_copies`` lists them);
        with ``include_templates=False`` (retrieval), so are the vault's template folders
        (``template_folders``) unless ``path`` is inside one; otherwise their notes rank below the notes
        made from them (scaffolding, no answer), unless named exactly or searched inside their folder.
        ``semantic=False`` ranks by text alone in a vault that opted into semantic ranking."""
        if limit < 1:
            raise UsageError(f"limit must be at least 1 (got {limit})")
        inside = (path or "").strip("/") + "/"
        templates = [f for f in self.template_folders() if not inside.startswith(f + "/")]
        if not include_templates:
            exclude = [*exclude, *templates]
        filters = SearchFilters(
            path=normalize_note_path(path) if path else None,
            type=type,
            tags=[tags] if isinstance(tags, str) else tags,
            where=_where_values(where),
            modified_after=to_epoch(modified_after),
            modified_before=to_epoch(modified_before),
            exclude=tuple(exclude),
            conflicts=include_conflicts,
            demote=tuple(templates) if include_templates else (),
        )
        return search_index(self._ready(), self.id, query, limit, filters, semantic=semantic)

    def searched_synonyms(self, query: str) -> dict[str, list[str]]:
        """The words of ``query`` no note holds, each with the synonyms ``search`` also looks for
        ("sluggish" -> ["slow", ...]); {} when every word is in the vault."""
        return searched_synonyms(self._ready(), query)

    def template_folders(self) -> tuple[str, ...]:
        """The folders Obsidian's Templates (or Templater) plugin takes templates from, as its settings
        say; retrieval never cites a template."""
        return template_folders(self.root)

    def linked(self, path: str, query: str | None = None, limit: int = 10) -> list[str]:
        """Notes linked from or to ``path`` (one hop), read from the index without building the graph;
        with ``query``, only those that hold one of its words, best match first. What retrieval follows
        when the second step of a question is one link away from the first."""
        rel = normalize_note_path(path)
        parsed = parse_query(query) if query else None
        match = parsed.relaxed() if parsed is not None and not parsed.empty else None
        if query and match is None:
            return []
        return linked_notes(self._ready(), rel, match, limit)

    # --- notes -------------------------------------------------------------------------------------------

    def resolve_path(self, path: str) -> str:
        """A vault-relative note path that exists; ``.md`` may be left off. A note's name, alias or link
        (``Canvas``, ``[[Canvas#Create a new canvas|canvas]]``) finds it as Obsidian resolves the link,
        when that names one note: a name two notes share is refused with both paths, never guessed."""
        rel = normalize_note_path(path)
        candidates = [rel] if rel.lower().endswith(".md") else [rel + ".md", rel]
        for cand in candidates:
            if (self.root / cand).is_file():
                return self._inside(cand, path)
        target = _link_target(path)
        found, others = IndexResolver(self._ready().query).resolve(target) if target else (None, [])
        notes = [p for p in (found, *others) if p and p.lower().endswith(".md")]
        if len(notes) == 1:
            return self._inside(normalize_note_path(notes[0]), path)
        if notes:
            raise NoteNotFoundError(
                f"{path!r} names {len(notes)} notes in vault {self.id!r}: {', '.join(notes)}",
                hint="give the path of the one you mean",
                candidates=notes,
            )
        raise NoteNotFoundError(
            f"no note {path!r} in vault {self.id!r}",
            hint="give a note's vault-relative path (the .md may be left off) or its name; "
            "try `shad vault search`",
        )

    def _inside(self, rel: str, asked: str) -> str:
        """``rel``, unless it is a symlink that leads out of the vault."""
        real = os.path.realpath(self.root / rel)
        if not (real == str(self.root) or real.startswith(str(self.root) + os.sep)):
            raise PathOutsideVaultError(
                f"{asked!r} is a symlink that points outside the vault",
                hint="only files inside the vault can be read",
            )
        return rel

    def read_note(self, path: str) -> Note:
        """Read and parse one note from disk, with its links resolved against the vault."""
        rel = self.resolve_path(path)
        full = self.root / rel
        raw = full.read_bytes()
        note = parse_note(rel, raw, mtime=full.stat().st_mtime)
        note.vault = self.id
        resolver = IndexResolver(self._ready().query)  # a few indexed lookups per link, no graph
        for link in note.links:
            link.resolved, others = resolver.resolve(link.target, rel)
            link.ambiguous = others or None
        if is_conflict_copy(rel):
            note.diagnostics.append(
                Diagnostic("sync_conflict", "this file is a sync conflict copy", "warning")
            )
        return note

    def conflict_copies(self) -> list[dict[str, str | None]]:
        """Sync-conflict copies in the vault, each with the note it copies when that exists."""
        rows = self._ready().query(
            "SELECT path FROM files WHERE is_note = 1 AND "
            "(path LIKE '% (%conflict%)._%' OR path LIKE '%.sync-conflict-%') ORDER BY path"
        )
        out: list[dict[str, str | None]] = []
        for (path,) in rows:
            if is_conflict_copy(path):
                base = re.sub(
                    r"( \([^)]*conflict[^)]*\)|\.sync-conflict-[^.]*)(?=\.[^.]+$)", "", path, flags=re.I
                )
                out.append({"path": path, "original": base if (self.root / base).is_file() else None})
        return out

    def has_notes(self) -> bool:
        """Whether the folder holds a note (outside Shad's run history unless it is included): a walk that
        stops at the first, without opening the index. What a run checks before it spends anything."""
        walk = stream_vault(str(self.root), [])
        try:
            return any(e.is_note and (self.include_history or _not_history(e.path)) for e in walk)
        finally:
            close = getattr(walk, "close", None)  # the walk's ``find`` process ends with it
            if callable(close):
                close()

    def list_notes(self, folder: str | None = None, recursive: bool = True) -> list[str]:
        """Vault-relative paths of notes, sorted; optionally only under ``folder``."""
        index = self._ready()
        rows = [r[0] for r in index.query("SELECT path FROM files WHERE is_note = 1 ORDER BY path")]
        prefix = "" if not folder else normalize_note_path(folder).rstrip("/") + "/"
        out = []
        for p in rows:
            if not p.startswith(prefix):
                continue
            if not recursive and "/" in p[len(prefix) :]:
                continue
            out.append(p)
        return out

    def get_frontmatter(self, path: str) -> dict[str, Any]:
        return self.read_note(path).frontmatter

    # --- graph -------------------------------------------------------------------------------------------

    def graph(self) -> LinkGraph:
        """The whole link graph as networkx, for a caller that wants all of it (an export): built from the
        links the index resolved (on first use, again after a refresh that changed something). Reading
        notes, links, backlinks and neighbours never needs it."""
        with self._lock:
            index = self._ready()
            if self._graph is None:
                self._graph = export_graph(index.query)
            return self._graph

    def resolve_link(self, target: str, source: str | None = None) -> str | None:
        return IndexResolver(self._ready().query).resolve(target, source)[0]

    def backlinks(self, path: str) -> list[str]:
        """Notes that link to ``path``."""
        rel = self.resolve_path(path)
        return _backlinks(self._ready().query, rel)

    def neighbors(self, path: str, depth: int = 1) -> list[str]:
        """Notes within ``depth`` links of ``path`` (either direction)."""
        rel = self.resolve_path(path)
        return _neighbors(self._ready().query, rel, depth)

    def unresolved_links(self) -> list[dict[str, Any]]:
        return [u.__dict__ for u in unresolved(self._ready().query)]

    # --- status ------------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Counts, problems and sync conflicts: what a user checks before trusting a run."""
        index = self._ready()
        links, unresolved_count, ambiguous = link_counts(index.query)
        rows = index.query("SELECT path, is_note, diagnostics FROM files")
        notes = [r for r in rows if r[1]]
        codes: Counter[str] = Counter()
        problems: list[dict[str, Any]] = []
        for path, _, diag_json in notes:
            for d in json.loads(diag_json or "[]"):
                codes[d["code"]] += 1
                if d.get("severity") != "info":
                    problems.append({"path": path, **d})
        conflicts = [
            {"path": path, "original": _conflict_original(path, {r[0] for r in rows})}
            for path, *_ in rows
            if is_conflict_copy(path)
        ]
        stats = self.last_update
        return {
            "vault": self.id,
            "root": str(self.root),
            "notes": len(notes),
            "attachments": len(rows) - len(notes),
            "links": links,
            "unresolved_links": unresolved_count,
            "ambiguous_links": ambiguous,
            "tags": index.query("SELECT count(DISTINCT tag) FROM note_tags")[0][0],
            "diagnostics": dict(sorted(codes.items())),
            "problems": problems,
            "conflicts": conflicts,
            "skipped": [{"path": p, "reason": r} for p, r in (stats.skipped if stats else [])],
            "index": {
                "path": str(index.db_path),
                "bytes": _db_size(index.db_path),
                "last_update": float(index.meta("last_update") or 0),
            },
            "embeddings": vectors_status(index),
        }


def _link_target(text: str) -> str:
    """The note a wikilink (or a bare name) names: ``[[Note#Heading|shown]]`` -> ``Note``."""
    inner = text.strip()
    if inner.startswith("![[") or inner.startswith("[["):
        inner = inner.lstrip("!")[2:].removesuffix("]]")
    return split_link_text(inner)[0]


def _not_history(path: str) -> bool:
    return not path.startswith(SHAD_HISTORY)


def _conflict_original(path: str, files: set[str]) -> str | None:
    folder, name = posixpath.split(path)
    base = re.sub(r"( \([^)]*conflict[^)]*\)|\.sync-conflict-[^.]*)(?=\.[^.]+$)", "", name, flags=re.I)
    candidate = posixpath.join(folder, base)
    return candidate if candidate in files else None


def _db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
