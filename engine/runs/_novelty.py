"""Pruning by novelty (E10): a leaf whose retrieved passages are all held already by a sibling that
finished with an answer, or by one of its dependencies, adds nothing new. It is pruned before its answer
call, with the nodes that hold its passages named (``Node.redundant_with``), so the budget is not spent
twice on one answer. The parent synthesizes the siblings that did answer.

Only nodes of the same stage count: a stage that works on its dependency's evidence (``analyze`` after
``gather_evidence``) reads the same passages by design, and what it adds is its own step, not passages.

Siblings run in parallel, and novelty is judged against what has finished, in plan order: a leaf
waits for the siblings of its stage planned before it that are running (until they have retrieved, and
if they could hold its passages, until they have finished); a sibling planned later never makes it
wait, so no two leaves wait on each other. So which of two same-passage siblings answers does not
depend on timing, and an identical re-run (answered by the cache, which is judged the same way) prunes
the same one again, without a model call. A sibling that fails leaves the waiting leaf to answer for
itself.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Iterable
from typing import Any

from ._exhausted import usable
from ._run import Run
from .dag import Node, NodeStatus

__all__ = ["Novelty", "RedundantNode", "covering", "reason"]

NEAR = 0.9  # word-set overlap above which two passages are one text (a copy, a re-chunked note)
_WORD = re.compile(r"\w+", re.UNICODE)


class RedundantNode(Exception):
    """Raised by a leaf whose passages other nodes already hold: it is pruned, not failed."""

    def __init__(self, holders: list[str]) -> None:
        super().__init__(reason(holders))
        self.holders = holders
        self.message = reason(holders)


def reason(holders: list[str]) -> str:
    return f"redundant: same passages as {', '.join(holders)}; no model call made"


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    # Each passage is compared with every sibling's: its word set is worth keeping.
    return frozenset(w.lower() for w in _WORD.findall(text))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One passage: the same vault, path and heading, or (nearly) the same words."""
    if (a.get("vault"), a.get("path"), a.get("heading")) == (b.get("vault"), b.get("path"), b.get("heading")):
        return True
    wa, wb = _words(str(a.get("text", ""))), _words(str(b.get("text", "")))
    if not wa or not wb:
        return False
    small, large = (len(wa), len(wb)) if len(wa) <= len(wb) else (len(wb), len(wa))
    if small / large < NEAR:  # the overlap is at most small / large: no set to build
        return False
    shared = len(wa & wb)
    return shared / (len(wa) + len(wb) - shared) >= NEAR  # |a ∪ b| without building it


def covering(context: list[dict[str, Any]], holders: Iterable[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The holders (in the order given) that together hold every passage of ``context``; empty when a
    passage is new, or when there is no passage at all (nothing found is not nothing new)."""
    if not context:
        return []
    pool = [(node_id, [p for p in passages if isinstance(p, dict)]) for node_id, passages in holders]
    used: list[str] = []
    for passage in context:
        holder = next((i for i, ps in pool if any(_same(passage, p) for p in ps)), None)
        if holder is None:
            return []
        if holder not in used:
            used.append(holder)
    return used


def _context(node: Node) -> list[dict[str, Any]]:
    found = node.retrieval.get("context") or []
    return [c for c in found if isinstance(c, dict)]


class Novelty:
    """When each of a run's leaves has retrieved and when it finished, to judge them in plan order."""

    def __init__(self, run: Run) -> None:
        self.run = run  # its DAG is read each time: a resume or a new plan replaces it
        self._done: dict[str, asyncio.Event] = {}
        self._moved: dict[str, asyncio.Event] = {}  # set once a node has retrieved, or has finished

    def _event(self, events: dict[str, asyncio.Event], node_id: str) -> asyncio.Event:
        return events.setdefault(node_id, asyncio.Event())

    def claim(self, node: Node) -> None:
        """``node`` has its passages and goes on to answer from them."""
        self._event(self._moved, node.id).set()

    def finished(self, node: Node) -> None:
        self._event(self._done, node.id).set()
        self._event(self._moved, node.id).set()

    def _siblings(self, node: Node) -> list[Node]:
        if node.parent is None or node.parent not in self.run.dag:
            return []
        return [s for s in self.run.dag.children(node.parent) if s.id != node.id]

    def _earlier(self, node: Node) -> list[Node]:
        """Running leaf siblings of its stage, planned before it, that have not finished."""
        if node.parent is None or node.parent not in self.run.dag:
            return []
        earlier: list[Node] = []
        for s in self.run.dag.children(node.parent):  # in plan order: the ones before it
            if s.id == node.id:
                break
            if (
                s.stage == node.stage
                and s.status is NodeStatus.STARTED
                and not self._event(self._done, s.id).is_set()
                and not self.run.dag.children(s.id)
            ):
                earlier.append(s)
        return earlier

    def _holders(self, node: Node, running: set[str]) -> list[tuple[str, list[dict[str, Any]]]]:
        """Finished nodes of its stage with an answer that hold passages: the dependencies, then the
        siblings; also the ``running`` ones (the earlier siblings still running)."""
        out = []
        deps = [self.run.dag.node(d) for d in node.hard_deps + node.soft_deps if d in self.run.dag]
        for other in deps + self._siblings(node):
            if other.stage != node.stage:
                continue
            done = bool(other.answer) and other.status.finished and usable(other)  # cheapest test first
            if done or other.id in running:
                out.append((other.id, _context(other)))
        return out

    async def redundant_with(self, node: Node) -> list[str]:
        """The nodes that hold every passage ``node`` retrieved (empty: it has something new)."""
        self.claim(node)
        context = _context(node)
        while True:
            earlier = self._earlier(node)
            unknown = [s for s in earlier if not self._event(self._moved, s.id).is_set()]
            if unknown:  # it may hold the same passages: know before judging
                await self._event(self._moved, unknown[0].id).wait()
                continue
            running = {s.id for s in earlier}
            could = covering(context, self._holders(node, running))
            pending = [i for i in could if i in running]
            if not pending:
                # The finished holders alone give the same answer: no running sibling is among those
                # chosen, and leaving out holders that were not chosen changes no passage's first holder.
                return could
            await self._event(self._done, pending[0]).wait()  # it ends (or fails) on its own
