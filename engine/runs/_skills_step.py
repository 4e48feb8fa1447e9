"""Skills in a run: which skills each node uses, and the system prompt that carries their guidance.

The skills are discovered once per run (the package's, overridden by the vaults' ``Shad/Skills/``). Each
node is routed on its own task (the root on the goal) with the skills of its ancestors as the loop
guard's ``active`` stack; a node that routes to nothing keeps its parent's skills, so guidance flows down
the DAG. Every routing is an event (``SKILLS_ROUTED``) and is kept in ``decisions/skills.json``; a skill
file that could not be used is listed there too (a broken skill never stops a run). That file is written
with the run's ``dag.json`` checkpoints and when the run closes (``save``), not once per node routed."""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any

from ..events import SkillsRouted
from ..prompts import render
from ..skills import Routing, SkillSet, discover, guidance, route

if TYPE_CHECKING:
    from ._context import RunContext
    from .dag import Node

__all__ = ["SkillRouting"]


class SkillRouting:
    """The skills of one run, routed node by node."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.skills: SkillSet | None = None
        self.routes: dict[str, Routing] = {}
        self._in_force: dict[str, list[str]] = {}  # node -> the skills whose guidance it carries
        self._unsaved = False  # routings made since decisions/skills.json was last written

    def open(self) -> SkillSet:
        if self.skills is None:
            self.skills = discover(self.ctx.vaults.vaults)
            self._unsaved = True
        return self.skills

    def _chain(self, node: Node) -> list[Node]:
        """The node's ancestors, outermost first."""
        dag = self.ctx.run.dag
        chain: list[Node] = []
        parent = node.parent
        while parent is not None and parent in dag:
            chain.insert(0, dag.node(parent))
            parent = chain[0].parent
        return chain

    def in_force(self, node: Node) -> list[str]:
        """The skills whose guidance ``node`` follows: its own routing's, else its parent's."""
        if node.id in self._in_force:
            return self._in_force[node.id]
        skills = self.open()
        active: list[str] = []
        for ancestor in self._chain(node):
            active += self.in_force(ancestor)
        task = self.ctx.config.goal if node.parent is None else node.task
        routing = route(task, skills, strategy=self.ctx.run.strategy, active=active)
        self.routes[node.id] = routing
        chosen = routing.selected or (self._in_force.get(node.parent, []) if node.parent else [])
        self._in_force[node.id] = list(chosen)
        if routing.selected or routing.guarded:
            self.ctx.emit(
                SkillsRouted(
                    node=node.id, primary=routing.primary, support=routing.support, guarded=routing.guarded
                )
            )
        self._unsaved = True
        return self._in_force[node.id]

    def system(self, node: Node) -> str:
        """The system prompt for a model call about ``node``: Shad's, then its skills' guidance."""
        base = _system()
        names = self.in_force(node)
        if not names:
            return base
        skills = self.open()
        primary = self.routes[node.id].primary if node.id in self.routes else None
        text = guidance(Routing(node.task, primary=primary or names[0], support=names[1:]), skills)
        return f"{base}\n\n{text}"

    def fingerprint(self, node: Node) -> str:
        """What the node's skills add to its prompts, for cache keys: a changed skill is a new answer."""
        skills = self.open()
        parts = [f"{n}:{skills.get(n).version}:{skills.get(n).guidance}" for n in self.in_force(node)]
        return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16] if parts else ""

    def save(self) -> None:
        """Write ``decisions/skills.json`` if a routing was made since it was last written. Called with each
        ``dag.json`` checkpoint and when the run closes: rebuilding the whole record for every node routed
        made the run's bookkeeping grow with the square of its nodes."""
        data = self.unsaved()
        if data is not None:
            # Built here (routings are made on the event loop), written on the history's writer thread.
            self.ctx.run.history.write_json_soon("decisions/skills.json", data)

    def unsaved(self) -> dict[str, Any] | None:
        """The record ``save`` writes, if a routing was made since it was last written (else None), taken
        as written: the run's end writes it with its other final files (one wait for the disk)."""
        if not self._unsaved:
            return None
        self._unsaved = False
        skills = self.skills
        data: dict[str, Any] = {
            "skills": skills.names() if skills else [],
            "problems": skills.problems if skills else [],
            "nodes": {
                nid: {**r.to_dict(), "in_force": self._in_force.get(nid, [])}
                for nid, r in self.routes.items()
            },
        }
        return data


@functools.cache
def _system() -> str:
    """Shad's own system prompt (it has no placeholders: filled once, not for every call)."""
    return render("system")
