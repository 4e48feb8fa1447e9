"""Search filters (folder, type, tags, frontmatter fields, dates, excluded prefixes) as SQL over the files
table; separate from ranking, which only adds the clause they make to its queries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SearchFilters"]


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


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
