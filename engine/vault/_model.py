"""The plain data a vault hands out: notes, links, headings, diagnostics and search hits."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Diagnostic", "Heading", "Hit", "Link", "Note"]


@dataclass(frozen=True)
class Diagnostic:
    """Something about one file a user may want to fix; never fatal."""

    code: str
    message: str
    severity: str = "warning"  # "info" | "warning" | "error"


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 1-based line in the file
    offset: int  # character offset in the note's body


@dataclass(slots=True)
class Link:
    """One outgoing link as written, plus where it points once resolved against the vault."""

    target: str  # the path part as written ("" for a link to a heading in the same note)
    heading: str | None = None
    block: str | None = None
    alias: str | None = None
    embed: bool = False
    kind: str = "wikilink"  # "wikilink" | "markdown" | "frontmatter"
    field: str | None = None  # frontmatter key, for kind == "frontmatter"
    line: int = 0
    resolved: str | None = None  # vault-relative path, or None when unresolved
    ambiguous: list[str] | None = None  # other candidates when the name matched several files

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (``resolved`` always), as plain JSON-ready values."""
        data: dict[str, Any] = {"target": self.target, "resolved": self.resolved}
        for key in ("heading", "block", "alias", "field", "ambiguous"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if self.embed:
            data["embed"] = True
        data["kind"] = self.kind
        data["line"] = self.line
        return data


@dataclass
class Note:
    """A parsed note. ``path`` is vault-relative, POSIX, with the ``.md`` extension."""

    path: str
    title: str
    frontmatter: dict[str, Any]
    body: str
    links: list[Link]
    tags: list[str]
    headings: list[Heading]
    aliases: list[str]
    blocks: dict[str, int]  # block id -> 1-based line
    hash: str
    mtime: float
    size: int
    diagnostics: list[Diagnostic] = field(default_factory=list)
    vault: str | None = None

    @property
    def type(self) -> str | None:
        value = self.frontmatter.get("type")
        if isinstance(value, list) and value:
            value = value[0]
        return str(value) if value not in (None, "") else None

    @property
    def embeds(self) -> list[Link]:
        return [link for link in self.links if link.embed]

    def to_dict(self, *, body: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "vault": self.vault,
            "path": self.path,
            "title": self.title,
            "type": self.type,
            "frontmatter": self.frontmatter,
            "tags": self.tags,
            "aliases": self.aliases,
            "headings": [asdict(h) for h in self.headings],
            "blocks": self.blocks,
            "links": [link.to_dict() for link in self.links],
            "hash": self.hash,
            "mtime": self.mtime,
            "size": self.size,
            "diagnostics": [asdict(d) for d in self.diagnostics],
        }
        if body:
            data["body"] = self.body
        return data


@dataclass
class Hit:
    """One search result."""

    vault: str
    path: str
    title: str
    score: float
    snippet: str
    heading: str | None = None
    type: str | None = None
    tags: list[str] = field(default_factory=list)
    mtime: float = 0.0
    # The whole passage the hit matched (a section, or part of a long one, properties first in a note's
    # first passage): what a retrieval hands over, where ``snippet`` is what a person skims.
    passage: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
