"""Search filters (folder, type, tags, frontmatter fields, dates, excluded prefixes) as SQL over the files
table; separate from ranking, which only adds the clause they make to its queries."""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._index import VaultIndex

__all__ = ["SearchFilters", "allowed", "in_folders"]


@dataclass
class SearchFilters:
    """What a search is limited to; every field set must hold."""

    path: str | None = None  # folder or path prefix, vault-relative
    type: str | None = None  # frontmatter `type`, case-insensitive
    tags: Sequence[str] | None = None  # every tag must be present; `a` also matches `a/b`
    where: dict[str, Any] | None = None  # frontmatter field -> value (or list of accepted values)
    modified_after: float | None = None  # epoch seconds
    modified_before: float | None = None
    exclude: Sequence[str] = ()  # path prefixes to leave out
    conflicts: bool = False  # keep sync-conflict copies (left out by default: they are not sources)
    # folders whose notes rank below the rest, not left out (the template folders: scaffolding that shares
    # every word of its kind of note, "coordinates", "rating", but answers nothing)
    demote: Sequence[str] = ()

    def narrows(self) -> bool:
        """Whether these filters leave out more than sync-conflict copies (few): when they do not, ranking
        queries skip the join with ``files`` (a random lookup per matching row) and the final hits are
        filtered instead."""
        return bool(
            self.path
            or self.type
            or self.tags
            or self.where
            or self.exclude
            or self.modified_after is not None
            or self.modified_before is not None
        )

    def sql(self) -> tuple[str, list[Any]]:
        """(WHERE clause over ``files f``, its parameters)."""
        clauses: list[str] = ["f.is_note = 1"]
        params: list[Any] = []
        if self.path:
            prefix = self.path.strip("/")
            if prefix.lower().endswith(".md"):
                clauses.append("f.path = ?")
                params.append(prefix)
            else:
                clauses.append("(f.path LIKE ? ESCAPE '\\' )")
                params.append(_like_prefix(prefix + "/"))
        for prefix in self.exclude:
            clauses.append("f.path NOT LIKE ? ESCAPE '\\'")
            params.append(_like_prefix(prefix.strip("/") + "/"))
        if not self.conflicts:  # both naming styles of engine.vault.is_conflict_copy
            clauses.append("f.path NOT LIKE '% (%conflict%)._%' AND f.path NOT LIKE '%.sync-conflict-%'")
        if self.type:
            clauses.append("lower(f.type) = lower(?)")
            params.append(self.type)
        for tag in self.tags or ():
            tag = tag.lstrip("#").lower()
            clauses.append(
                "EXISTS (SELECT 1 FROM note_tags t WHERE t.file_id = f.id AND "
                "(t.tag = ? OR t.tag LIKE ? ESCAPE '\\'))"
            )
            params += [tag, _like_prefix(tag + "/")]
        for key, value in (self.where or {}).items():
            json_path = '$."' + str(key).replace('"', '\\"') + '"'
            values = value if isinstance(value, (list, tuple, set)) else [value]
            alternatives = []
            for v in values:
                alternatives.append(
                    "(json_extract(f.frontmatter, ?) = ? OR EXISTS "
                    "(SELECT 1 FROM json_each(f.frontmatter, ?) j WHERE j.value = ?))"
                )
                sql_value = (
                    v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else json.dumps(v)
                )
                if isinstance(v, bool):
                    sql_value = int(v)
                params += [json_path, sql_value, json_path, sql_value]
            clauses.append("(" + " OR ".join(alternatives) + ")")
        if self.modified_after is not None:
            clauses.append("f.mtime_ns >= ?")
            params.append(int(self.modified_after * 1e9))
        if self.modified_before is not None:
            clauses.append("f.mtime_ns <= ?")
            params.append(int(self.modified_before * 1e9))
        return " AND ".join(clauses), params


def allowed(
    index: VaultIndex, ids: set[int], filters: SearchFilters, where: str, params: list[Any]
) -> set[int]:
    """Those of ``ids`` that ``filters`` (whose ``sql()`` is ``where``, ``params``) let through."""
    if filters.narrows():
        return _allowed(index, ids, where, params)
    return ids - _refused(index, where, params)


def _allowed(index: VaultIndex, ids: set[int], where: str, params: list[Any]) -> set[int]:
    """Those of ``ids`` that the filters let through (one primary-key lookup each)."""
    if not ids:
        return set()
    marks = ",".join(str(i) for i in ids)
    return {
        r[0] for r in index.query(f"SELECT f.id FROM files f WHERE f.id IN ({marks}) AND {where}", params)
    }


_Refused = tuple[tuple[Any, ...], set[int]]  # (generation and filter, the note ids they refuse)
_REFUSED: weakref.WeakKeyDictionary[VaultIndex, _Refused] = weakref.WeakKeyDictionary()


def _refused(index: VaultIndex, where: str, params: list[Any]) -> set[int]:
    """The notes that filters which do not narrow the search leave out (sync-conflict copies; files that
    are not notes), kept until the index changes: a lookup per hit on every search cost more."""
    key = (index.meta("generation"), where, *params)
    cached = _REFUSED.get(index)
    if cached is None or cached[0] != key:
        # Such filters refuse files that are no notes, which are never ranked (only notes have passages,
        # names, whole-note rows and keys), and paths with "conflict" in them: those are found over the
        # index on paths (13 ms on the 100 MB vault; a scan of the table: 22 ms), then checked.
        rows = index.query(
            "SELECT f.id FROM files f WHERE f.id IN (SELECT id FROM files WHERE path LIKE '%conflict%') "
            f"AND NOT ({where})",
            params,
        )
        cached = _REFUSED[index] = (key, {r[0] for r in rows})
    return cached[1]


def in_folders(index: VaultIndex, ids: Iterable[int], folders: Sequence[str]) -> set[int]:
    """Those of ``ids`` whose note is inside one of ``folders`` (one primary-key lookup each)."""
    ids = list(ids)
    if not ids or not folders:
        return set()
    inside = " OR ".join("f.path LIKE ? ESCAPE '\\'" for _ in folders)
    sql = f"SELECT f.id FROM files f WHERE f.id IN ({','.join(str(i) for i in ids)}) AND ({inside})"
    return {r[0] for r in index.query(sql, [_like_prefix(folder.strip("/") + "/") for folder in folders])}


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
