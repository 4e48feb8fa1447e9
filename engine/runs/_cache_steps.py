"""The run's use of the cache: a node's key, its lookup (counted and logged), a hit taken as the node's
answer, a fresh result saved with the notes it used and the model calls that made it."""

from __future__ import annotations

import asyncio
from typing import Any

from .._version import __version__
from ..events import NodeCacheMiss, PlanCacheLookup
from ._context import RunContext
from ._verify import verify_citations
from .cache import CacheLookup
from .dag import Node

__all__ = ["CacheSteps"]


class CacheSteps:
    """What one run asks of the cache."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def key(self, node: Node, purpose: str, tier: str, extra: dict[str, Any]) -> str:
        """The cache key of a node's work: its task and stage, plus all else the answer depends on
        besides its notes (those are checked through the entry's fingerprint). Empty with the cache off."""
        ctx = self.ctx
        if not ctx.cache.enabled:
            return ""
        config = ctx.config
        context = {
            "goal": config.goal,
            "vaults": list(config.vaults),
            "provider": ctx.provider.name,
            "model": config.models.get(tier),
            "code_mode": config.code_mode,
            "include_history": config.include_history,
            "version": __version__,
            **extra,
        }
        skills = ctx.skills.fingerprint(node)  # a changed skill's guidance is a different answer
        if skills:
            context["skills"] = skills
        if config.fs_read or config.net_allow:  # what scripts could read beyond the vault
            context["reach"] = [config.profile, *config.fs_read, *config.net_allow]
        return ctx.cache.key(
            strategy=ctx.run.strategy or "any", purpose=purpose, stage=node.stage, tier=tier, task=node.task,
            context=context,
        )  # fmt: skip

    async def lookup(self, node: Node, key: str, *, purpose: str) -> CacheLookup:
        ctx = self.ctx
        if not ctx.cache.enabled:  # no thread hop, no event: --no-cache costs nothing per node
            return CacheLookup(key, None, "disabled")
        if node.id in ctx.state.fresh and purpose != "plan":
            ctx.cache.misses += 1
            found = CacheLookup(key, None, "forced")
        else:
            found = await asyncio.to_thread(ctx.cache.lookup, key)
        if found.reason == "disabled":
            return found
        # A node answered from the cache ends with its own NODE_CACHE_HIT (its status); a plan has none.
        if purpose == "plan":
            ctx.emit(
                PlanCacheLookup(node=node.id, key=key, reason=found.reason, tier=found.tier, hit=found.hit)
            )
        elif not found.hit:
            ctx.emit(NodeCacheMiss(node=node.id, key=key, purpose=purpose, reason=found.reason))
        if found.value is not None:
            ctx.provider.adopt(found.value.get("calls", []), origin=f"cache {found.tier}: {key}")
        return found

    async def answer_from_cache(self, node: Node) -> bool:
        """Take a cached answer for ``node`` if there is one that still holds; True when there was."""
        purpose = self.ctx.state.phase.get(node.id, "answer")
        found = await self.lookup(node, node.cache_key, purpose=purpose)
        if found.value is None:
            return False
        node.answer = str(found.value.get("answer", ""))
        node.retrieval = dict(found.value.get("retrieval", {}))
        node.note = f"answered from the cache ({found.tier})"
        verify_citations(self.ctx, node)  # citations are checked against the vaults as they are now
        return True

    def save_result(self, node: Node, mark: int) -> None:
        """Cache a node's fresh result with the notes it used and the model calls that made it."""
        calls = [c for c in self.ctx.provider.since(mark, node.id) if c.get("purpose") != "decompose"]
        notes = [(str(n[0]), str(n[1]), str(n[2])) for n in node.retrieval.get("notes", [])]
        verified = bool(node.citations) and all(c.get("resolved") for c in node.citations)
        value = {"answer": node.answer, "retrieval": node.retrieval, "tokens": node.tokens, "calls": calls}
        self.ctx.cache.save(node.cache_key, value, notes, verified=verified)
