"""Publishing an approved note: a copy outside the vault, Shad's own frontmatter left out."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from ..fs import atomic_write
from ..vault import StateCorruptionError, render_note
from ._audit import log_write

__all__ = ["SHAD_INTERNAL_FIELDS", "publish", "published_text"]

# Frontmatter that only means something to Shad inside the vault: left out of a published copy (as is
# every key starting with "shad_" or "shad-").
SHAD_INTERNAL_FIELDS = tuple(
    "status proposed_by proposed_at promoted_by promoted_at rejected_by rejected_at rejection_reason "
    "run_id snapshot_id content_hash".split()
)


def published_text(raw: bytes) -> str:
    """The note as published: its frontmatter without Shad-internal fields (none when nothing is left).
    Frontmatter that does not parse is not ours to repair: the note is published as written."""
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if lines[0].rstrip() != "---" or end is None:
        return text
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError:
        return text
    if not isinstance(meta, dict):
        return text
    kept = {k: v for k, v in meta.items() if not _internal(str(k))}
    body = "\n".join(lines[end + 1 :])
    return render_note(kept, body) if kept else body.lstrip("\n")


def _internal(key: str) -> bool:
    return key in SHAD_INTERNAL_FIELDS or key.lower().startswith(("shad_", "shad-"))


def publish(a: Any) -> str:
    source = Path(a.vault) / a.path
    raw = source.read_bytes()
    if hashlib.sha256(raw).hexdigest() != a.decided_hash:  # changed between the check and the read
        raise StateCorruptionError(f"{a.path} changed while it was being published: nothing was published")
    folder = Path(a.target)
    destination = folder / Path(a.path).name
    replaced = destination.exists()
    text = published_text(raw)
    atomic_write(destination, text)
    data = text.encode("utf-8")
    why = f"approval #{a.id} (publish of {a.path}) approved by {a.decided_by}"
    action = "updated" if replaced else "created"
    log_write(folder, destination.name, action, why, "person", len(data), hashlib.sha256(data).hexdigest())
    return f"published {a.path} to {destination}" + (" (replaced the earlier copy)" if replaced else "")
