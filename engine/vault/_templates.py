"""The vault's template folders, as Obsidian's settings name them: the core Templates plugin's folder
(``.obsidian/templates.json``) and Templater's (``.obsidian/plugins/templater-obsidian/data.json``).

A template is scaffolding ("coordinates: 35.02, 135.75" copied into every new city note, ``{{date}}``
placeholders), never a source: retrieval leaves these folders out. Only those two settings files are read;
the rest of ``.obsidian/`` (other plugins' data, tokens) is never opened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["template_folders"]

# (settings file under .obsidian/, the key that names the folder)
_SETTINGS = (
    (("templates.json",), "folder"),
    (("plugins", "templater-obsidian", "data.json"), "templates_folder"),
)
_MAX_SETTINGS_BYTES = 1 << 20

_cache: dict[str, tuple[tuple[float, ...], tuple[str, ...]]] = {}


def template_folders(root: Path) -> tuple[str, ...]:
    """Vault-relative folders that hold templates (each an existing folder of the vault), read again
    whenever a settings file changes."""
    files = [root.joinpath(".obsidian", *parts) for parts, _ in _SETTINGS]
    stamps = tuple(_mtime(f) for f in files)
    cached = _cache.get(str(root))
    if cached is not None and cached[0] == stamps:
        return cached[1]
    folders: list[str] = []
    for f, stamp, (_, key) in zip(files, stamps, _SETTINGS, strict=True):
        folder = _folder(f, key) if stamp >= 0 else None
        if folder and folder not in folders and (root / folder).is_dir():
            folders.append(folder)
    _cache[str(root)] = (stamps, tuple(folders))
    return tuple(folders)


def _mtime(path: Path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return -1.0


def _folder(path: Path, key: str) -> str | None:
    """The folder a settings file names, normalized; None when unreadable, malformed or outside the vault
    (a broken settings file must never stop a search)."""
    try:
        if path.stat().st_size > _MAX_SETTINGS_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or parts[0].startswith("."):
        return None
    return "/".join(parts)
