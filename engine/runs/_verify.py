"""A node's answer checked against the vaults as they are now: every citation must resolve."""

from __future__ import annotations

from ..events import CitationsUnresolved
from ..retrieval import citations as cite
from ._context import RunContext
from .dag import Node

__all__ = ["verify_citations"]


def verify_citations(ctx: RunContext, node: Node) -> None:
    """Resolve the answer's citations into ``node.citations``; unresolved ones are flagged in the answer."""
    resolved = cite.resolve_citations(cite.extract_citations(node.answer), ctx.vaults)
    node.citations, unresolved = cite.summarize(resolved)
    if unresolved:
        node.answer = cite.flag_unresolved(node.answer, resolved)
        ctx.emit(CitationsUnresolved(node=node.id, count=len(unresolved)))
