"""The run's use of the cache: a node's key, its lookup (counted and logged), a hit taken as the node's
answer, a fresh result saved with the notes it used and the model calls that made it.

A mixin of ``Orchestrator``: it works on the orchestrator's run, provider record and cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .._version import __version__
from ..config import RunConfig
from ..llm import Recorder
from ._run import Run
from .cache import CacheLookup, NodeCache
from .dag import Node

__all__ = ["CachedSteps"]


class CachedSteps:
    config: RunConfig
    run: Run
    provider: Recorder
    cache: NodeCache
    fresh: set[str]  # nodes that must not be answered from the cache
    phase: dict[str, str]

    # The orchestrator's own, which these steps log with and check citations with.
    event: Callable[..., None]
    _verify: Callable[[Node], None]

    def _node_key(self, node: Node, purpose: str, tier: str, extra: dict[str, Any]) -> str:
        """The cache key of a node's work: its task and stage, plus all else the answer depends on
        besides its notes (those are checked through the entry's fingerprint). Empty with the cache off."""
        if not self.cache.enabled:
            return ""
        context = {
            "goal": self.config.goal,
            "vaults": list(self.config.vaults),
            "provider": self.provider.name,
            "model": self.config.models.get(tier),
            "code_mode": self.config.code_mode,
            "include_history": self.config.include_history,
            "version": __version__,
            **extra,
        }
        return self.cache.key(
            strategy=self.run.strategy or "any", purpose=purpose, stage=node.stage, tier=tier, task=node.task,
            context=context,
        )  # fmt: skip

    async def _lookup(self, node: Node, key: str, *, purpose: str) -> CacheLookup:
        if not self.cache.enabled:  # no thread hop, no event: --no-cache costs nothing per node
            return CacheLookup(key, None, "disabled")
        if node.id in self.fresh and purpose != "plan":
            self.cache.misses += 1
            found = CacheLookup(key, None, "forced")
        else:
            found = await asyncio.to_thread(self.cache.lookup, key)
        if found.reason == "disabled":
            return found
        # A node answered from the cache ends with its own NODE_CACHE_HIT (its status); a plan has none.
        if purpose == "plan":
            kind = "PLAN_CACHE_HIT" if found.hit else "PLAN_CACHE_MISS"
            self.event(kind, node=node.id, key=key, reason=found.reason, tier=found.tier)
        elif not found.hit:
            self.event("NODE_CACHE_MISS", node=node.id, key=key, purpose=purpose, reason=found.reason)
        if found.value is not None:
            self.provider.adopt(found.value.get("calls", []), origin=f"cache {found.tier}: {key}")
        return found

    async def _from_cache(self, node: Node) -> bool:
        found = await self._lookup(node, node.cache_key, purpose=self.phase.get(node.id, "answer"))
        if found.value is None:
            return False
        node.answer = str(found.value.get("answer", ""))
        node.retrieval = dict(found.value.get("retrieval", {}))
        node.note = f"answered from the cache ({found.tier})"
        self._verify(node)  # citations are checked against the vaults as they are now
        return True

    def _save_result(self, node: Node, mark: int) -> None:
        """Cache a node's fresh result with the notes it used and the model calls that made it."""
        calls = [c for c in self.provider.since(mark, node.id) if c.get("purpose") != "decompose"]
        notes = [(str(n[0]), str(n[1]), str(n[2])) for n in node.retrieval.get("notes", [])]
        verified = bool(node.citations) and all(c.get("resolved") for c in node.citations)
        value = {"answer": node.answer, "retrieval": node.retrieval, "tokens": node.tokens, "calls": calls}
        self.cache.save(node.cache_key, value, notes, verified=verified)
