"""The vault layer: parse Obsidian notes, index and search them, follow their links."""

from __future__ import annotations

from ._graph import LinkGraph, Resolver
from ._index import IndexStats, VaultIndex
from ._layered import VaultSet
from ._model import Diagnostic, Heading, Hit, Link, Note
from ._parse import parse_note
from ._scan import is_conflict_copy
from ._vault import Vault, normalize_note_path

__all__ = [
    "Diagnostic",
    "Heading",
    "Hit",
    "IndexStats",
    "Link",
    "LinkGraph",
    "Note",
    "Resolver",
    "Vault",
    "VaultIndex",
    "VaultSet",
    "is_conflict_copy",
    "normalize_note_path",
    "parse_note",
]
