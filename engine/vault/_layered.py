"""Layered vaults: several vaults searched together, in priority order (the first wins ties)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..config import remote_scheme
from ..errors import NoteNotFoundError, UsageError
from ._backends import open_vault
from ._model import Hit, Note
from ._vault import Vault

__all__ = ["VaultSet"]


class VaultSet:
    """Vaults in priority order. Search merges each vault's hits by ``score * scale * (1 + bonus)``: the
    scale divides out the vault's size (BM25 scores grow with the log of the corpus), the bonus is
    ``priority_bonus`` for each place a vault stands ahead of the last one; each vault is first capped at
    ``per_vault`` hits. Every hit keeps its vault id."""

    def __init__(
        self,
        vaults: Sequence[Vault | str | os.PathLike[str] | Any],
        *,
        priority_bonus: float = 0.1,
        per_vault: int | None = None,
        include_history: bool = False,
    ) -> None:
        if not vaults:
            raise UsageError("no vaults given", hint="pass at least one --vault DIR")
        self.vaults: list[Vault] = []
        seen: set[str] = set()
        for v in vaults:
            # A folder becomes a Vault, a ``SCHEME:...`` spec is opened by its backend (``mcp:`` reads
            # through an MCP server); any other object with the Vault's read API is used as it is.
            try:
                vault = _open_one(v, include_history)
            except BaseException:
                self.close()  # the backends opened so far (an MCP server process each)
                raise
            base, n = vault.id, 2
            while vault.id in seen:
                vault.id = f"{base}-{n}"
                n += 1
            seen.add(vault.id)
            self.vaults.append(vault)
        self.priority_bonus = priority_bonus
        self.per_vault = per_vault

    def __iter__(self) -> Any:
        return iter(self.vaults)

    def __len__(self) -> int:
        return len(self.vaults)

    @property
    def ids(self) -> list[str]:
        return [v.id for v in self.vaults]

    def get(self, vault_id: str) -> Vault:
        for v in self.vaults:
            if v.id == vault_id:
                return v
        raise UsageError(f"no vault with id {vault_id!r}", hint=f"known vaults: {', '.join(self.ids)}")

    def _select(self, vault: str | None, vaults: Sequence[str] | None) -> list[Vault]:
        if vault is not None:
            return [self.get(vault)]
        if vaults is not None:
            return [self.get(v) for v in vaults]
        return self.vaults

    def refresh(self) -> list[Any]:
        return [v.refresh() for v in self.vaults]

    def search(
        self,
        query: str,
        limit: int = 10,
        path: str | None = None,
        type: str | None = None,
        tags: str | list[str] | None = None,
        where: dict[str, Any] | None = None,
        *,
        vault: str | None = None,
        vaults: Sequence[str] | None = None,
        **filters: Any,
    ) -> list[Hit]:
        """Search every vault (or the ones named), merge by relevance plus the priority bonus."""
        chosen = self._select(vault, vaults)
        cap = min(self.per_vault or limit, limit)

        def one(v: Vault) -> list[Hit]:
            return v.search(query, cap, path=path, type=type, tags=tags, where=where, **filters)

        if len(chosen) == 1:
            per_vault = [one(chosen[0])]
        else:
            with ThreadPoolExecutor(max_workers=min(4, len(chosen))) as pool:
                per_vault = list(pool.map(one, chosen))
        last = len(self.vaults) - 1
        merged: list[Hit] = []
        for v, hits in zip(chosen, per_vault):
            bonus = self.priority_bonus * (last - self.vaults.index(v))
            # Search scores are fused ranks (engine.vault._fusion), already on one scale in every vault
            # whatever its size, so only the priority bonus tells the vaults apart.
            for hit in hits:
                hit.score = round(hit.score * (1 + bonus), 4)
                merged.append(hit)
        merged.sort(key=lambda h: h.score, reverse=True)
        return merged[:limit]

    def searched_synonyms(self, query: str, vault: str | None = None) -> dict[str, list[str]]:
        """The words of ``query`` that no note of the vaults searched holds, each with the synonyms the
        search also looked for (``Vault.searched_synonyms``; backends without it say nothing)."""
        out: dict[str, list[str]] = {}
        for v in self._select(vault, None):
            said = getattr(v, "searched_synonyms", None)
            for word, others in (said(query) if callable(said) else {}).items():
                out[word] = list(dict.fromkeys([*out.get(word, []), *others]))
        return out

    def read_note(self, path: str, vault: str | None = None) -> Note:
        """The note at ``path`` in ``vault``, or in the first vault (by priority) that has it."""
        ambiguous: NoteNotFoundError | None = None
        for v in self._select(vault, None):
            try:
                return v.read_note(path)
            except NoteNotFoundError as exc:
                ambiguous = ambiguous or (exc if getattr(exc, "candidates", None) else None)
        if ambiguous is not None:  # a name two notes share: which ones, not "no note"
            raise ambiguous
        raise NoteNotFoundError(
            f"no note {path!r} in vaults {', '.join(self.ids)}",
            hint="give a note's vault-relative path (the .md may be left off) or its name; "
            "try `shad vault search`",
        )

    def list_notes(
        self, folder: str | None = None, recursive: bool = True, vault: str | None = None
    ) -> list[tuple[str, str]]:
        return [(v.id, p) for v in self._select(vault, None) for p in v.list_notes(folder, recursive)]

    def conflict_copies(self) -> list[dict[str, str | None]]:
        """Sync-conflict copies of every vault (``{"vault", "path", "original"}``)."""
        return [{"vault": v.id, **c} for v in self.vaults for c in v.conflict_copies()]

    def status(self) -> dict[str, Any]:
        return {"vaults": [v.status() for v in self.vaults]}

    def close(self) -> None:
        for v in self.vaults:
            v.close()


def _open_one(v: Vault | str | os.PathLike[str] | Any, include_history: bool) -> Any:
    if isinstance(v, str) and remote_scheme(v) is not None:
        return open_vault(v, include_history=include_history)
    if isinstance(v, (str, os.PathLike)):
        return Vault(v, include_history=include_history)
    return v
