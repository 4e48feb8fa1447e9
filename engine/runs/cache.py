"""Node results cached by content: a hit needs the same question asked of the same notes.

A key names the question (seed 000 §2.10; the store prefixes ``shad:cache:<tier>:``)::

    <goal_type>:<intent>:<entities>:<context_hash>

``goal_type`` is the run's strategy, ``intent`` the purpose, strategy stage and model tier, ``entities`` a
hash of the node's task and ``context_hash`` a hash of everything else the answer depends on (the goal,
the vaults, provider and model, the findings of related subtasks or the children's answers). The notes
are not in the key: the entry keeps the **subset fingerprint**, a hash over ``(vault, path, content
hash)`` of the notes the result actually used, and a lookup is a hit only while those notes still hash
the same and the TTL has not run out. Editing a note therefore invalidates exactly the results that
read it.

Verified results (every citation resolves) go to the main tier (30 days); provisional ones to staging
(24 hours) until a review promotes them. Results that read volatile folders (``Inbox/``, ``Daily/``)
live 24 hours; a vault may set its own TTL.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store import Store
from ..vault import VaultSet, location

__all__ = [
    "DAY",
    "MAIN_TTL",
    "STAGING_TTL",
    "VOLATILE_FOLDERS",
    "VOLATILE_TTL",
    "CacheLookup",
    "NodeCache",
    "fingerprint",
    "parse_ttl",
]

DAY = 86_400.0
MAIN_TTL = 30 * DAY
STAGING_TTL = DAY
VOLATILE_TTL = DAY
VOLATILE_FOLDERS = ("Inbox", "Daily")

NoteRef = tuple[str, str, str]  # (vault root, vault-relative path, content hash)


def _sha(data: Any, n: int = 64) -> str:
    text = (
        data if isinstance(data, str) else json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def fingerprint(notes: Iterable[Sequence[str]]) -> str:
    """The subset fingerprint: one hash over the sorted ``(vault root, path, content hash)`` triples."""
    return _sha(sorted([str(n[0]), str(n[1]), str(n[2])] for n in notes))


def parse_ttl(text: str) -> float:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"45s"`` or plain seconds -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30d, 12h, 90m or seconds)")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": DAY}[match[2]]


@dataclass(frozen=True)
class CacheLookup:
    """What a lookup found: ``value`` on a hit; otherwise ``reason`` says why not (absent or expired,
    stale notes, cache off, refresh asked)."""

    key: str
    value: dict[str, Any] | None
    reason: str  # "hit" | "miss" | "stale" | "disabled" | "refresh"
    tier: str = ""

    @property
    def hit(self) -> bool:
        return self.value is not None


class NodeCache:
    """The engine's view of the store's cache: keys, fingerprints, TTLs, hit/miss counts."""

    def __init__(
        self,
        store: Store,
        vaults: VaultSet,
        *,
        run_id: str,
        enabled: bool = True,
        refresh: bool = False,
        vault_ttls: Mapping[str, float] | None = None,
        volatile_folders: Sequence[str] = VOLATILE_FOLDERS,
    ) -> None:
        self.store = store
        self.vaults = vaults
        self.run_id = run_id
        self.enabled = enabled
        self.refresh = refresh
        self.volatile = tuple(volatile_folders)
        # A vault is keyed by its folder, or its spec when read through a backend (mcp:...).
        self._roots = {v.id: location(v) for v in vaults}
        self._by_root = {location(v): v for v in vaults}
        self.vault_ttls = {self._root_of(k): float(t) for k, t in (vault_ttls or {}).items()}
        self.hits = 0
        self.misses = 0
        self.stale = 0

    def _root_of(self, name: str) -> str:
        """A vault named by id, folder name or path -> its root (unknown names are kept as given)."""
        if name in self._roots:
            return self._roots[name]
        for root in self._by_root:
            if name in (root, Path(root).name) or str(Path(name).expanduser().resolve()) == root:
                return root
        return name

    # --- keys and fingerprints -----------------------------------------------------------------------

    @staticmethod
    def key(*, strategy: str, purpose: str, stage: str, tier: str, task: str, context: Any) -> str:
        intent = ".".join(re.sub(r"[^a-z0-9_-]+", "-", part.lower()) for part in (purpose, stage, tier))
        entities = _sha(" ".join(task.casefold().split()), 16)
        return f"{strategy or 'any'}:{intent}:{entities}:{_sha(context, 24)}"

    def notes_used(self, context: Iterable[Mapping[str, Any]]) -> list[NoteRef]:
        """The notes behind retrieved context items (``{"vault": id, "path": ...}``), with current hashes."""
        wanted: dict[str, set[str]] = {}
        for item in context:
            root = self._roots.get(str(item.get("vault", "")))
            if root is not None and item.get("path"):
                wanted.setdefault(root, set()).add(str(item["path"]))
        return self.current((root, path) for root, paths in wanted.items() for path in paths)

    def current(self, notes: Iterable[Sequence[str]]) -> list[NoteRef]:
        """``(root, path)`` pairs with their content hash now ("" for a note that is gone)."""
        wanted: dict[str, list[str]] = {}
        for n in notes:
            wanted.setdefault(str(n[0]), []).append(str(n[1]))
        out: list[NoteRef] = []
        for root, paths in wanted.items():
            vault = self._by_root.get(root)
            hashes = vault.content_hashes(paths) if vault is not None else {}
            out += [(root, p, hashes.get(p, "")) for p in sorted(set(paths))]
        return out

    def changed(self, notes: Iterable[Sequence[str]]) -> list[str]:
        """Which of the recorded ``(root, path, hash)`` notes no longer hash the same."""
        recorded = {(str(n[0]), str(n[1])): str(n[2]) for n in notes}
        now = self.current(list(recorded))
        return [f"{root}/{path}" for root, path, digest in now if recorded[(root, path)] != digest]

    # --- lookups and saves ---------------------------------------------------------------------------

    def lookup(self, key: str) -> CacheLookup:
        if not self.enabled:
            return CacheLookup(key, None, "disabled")
        if self.refresh:
            self.misses += 1
            return CacheLookup(key, None, "refresh")
        for tier in ("main", "staging"):
            entry = self.store.cache_get(key, tier=tier)
            if entry is None:
                continue
            notes = entry.value.get("notes", [])
            if fingerprint(self.current(notes)) != entry.fingerprint:
                self.stale += 1
                self.misses += 1
                return CacheLookup(key, None, "stale", tier)
            self.hits += 1
            return CacheLookup(key, entry.value, "hit", tier)
        self.misses += 1
        return CacheLookup(key, None, "miss")

    def save(
        self, key: str, value: dict[str, Any], notes: Sequence[NoteRef], *, verified: bool
    ) -> str | None:
        """Store a result computed from ``notes``; returns its tier (None when the cache is off)."""
        if not self.enabled:
            return None
        tier = "main" if verified else "staging"
        ttl = self.ttl(notes, tier)
        self.store.cache_put(
            key,
            {**value, "notes": [list(n) for n in notes]},
            fingerprint=fingerprint(notes),
            ttl=ttl,
            tier=tier,
            run_id=self.run_id,
            sources=[f"{root}/{path}" for root, path, _ in notes],
        )
        return tier

    def ttl(self, notes: Sequence[NoteRef], tier: str) -> float:
        """The shortest TTL that applies: the tier's, the volatile folders', each used vault's own."""
        ttl = MAIN_TTL if tier == "main" else STAGING_TTL
        for root, path, _ in notes:
            if path.split("/", 1)[0] in self.volatile:
                ttl = min(ttl, VOLATILE_TTL)
            ttl = min(ttl, self.vault_ttls.get(root, ttl))
        return ttl
