"""The vault layer: parse Obsidian notes, index and search them, follow their links."""

from __future__ import annotations

from ._backends import backend_names, get_backend, is_local, location, open_vault, register_backend
from ._graph import LinkGraph, Resolver
from ._index import IndexStats, VaultIndex
from ._layered import VaultSet
from ._model import Diagnostic, Heading, Hit, Link, Note
from ._parse import indexed_text, parse_note
from ._properties import properties_text
from ._scan import is_conflict_copy
from ._vault import Vault, normalize_note_path
from ._writer import NoteWrite, StateCorruptionError, VaultWriter, WriteHook, WriteRefusedError, render_note

__all__ = [
    "Diagnostic",
    "Heading",
    "Hit",
    "IndexStats",
    "Link",
    "LinkGraph",
    "Note",
    "NoteWrite",
    "Resolver",
    "StateCorruptionError",
    "Vault",
    "VaultIndex",
    "VaultSet",
    "VaultWriter",
    "WriteHook",
    "WriteRefusedError",
    "backend_names",
    "get_backend",
    "indexed_text",
    "is_conflict_copy",
    "is_local",
    "location",
    "normalize_note_path",
    "open_vault",
    "parse_note",
    "properties_text",
    "register_backend",
    "render_note",
]
