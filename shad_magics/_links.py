"""Links of a report's citations: vault ids as the engine makes them, and each note's ``obsidian://``
and ``file://`` targets (what ``ShadResult`` and the report HTML link to)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["citation_links", "vault_roots"]


def _slug(name: str) -> str:
    # The engine's vault id rule (engine.vault.Vault): a citation's ``vault`` is this id.
    return re.sub(r"[^a-z0-9]+", "-", unicodedata.normalize("NFKD", name).lower()).strip("-") or "vault"


def vault_roots(vaults: Sequence[str]) -> dict[str, Path]:
    """Vault id -> folder, ids made the way ``VaultSet`` makes them (a repeated name gets ``-2``...)."""
    out: dict[str, Path] = {}
    for v in vaults:
        root = Path(v)
        base = vault_id = _slug(root.name)
        n = 2
        while vault_id in out:
            vault_id, n = f"{base}-{n}", n + 1
        out[vault_id] = root
    return out


def _link_for(vault_root: Path, path: str, heading: str | None) -> tuple[str, str]:
    """(obsidian URI, file URI) of a note. Obsidian names a vault by its folder name."""
    target = path[:-3] if path.lower().endswith(".md") else path
    file_param = target + (f"#{heading}" if heading else "")
    uri = f"obsidian://open?vault={quote(vault_root.name, safe='')}&file={quote(file_param, safe='')}"
    return uri, (vault_root / path).absolute().as_uri()  # a relative vault folder (--vault vault) too


def citation_links(citations: list[dict[str, Any]], roots: dict[str, Path]) -> list[dict[str, Any]]:
    """The summary's citations, each with ``uri`` (obsidian://) and ``file`` (file://) when its vault
    folder still exists (a ``--context`` vault is gone after the run: no link, the citation stays)."""
    out = []
    for c in citations:
        item = dict(c)
        root = roots.get(str(c.get("vault")))
        if c.get("resolved") and root is not None and root.is_dir():
            item["uri"], item["file"] = _link_for(root, str(c["path"]), c.get("heading"))
        out.append(item)
    return out
