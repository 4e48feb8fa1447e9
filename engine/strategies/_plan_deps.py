"""A plan's dependency edges: the skeleton's default wiring, dropping unsound dependencies, breaking cycles
and the constraints' order; separate from reading the model's nodes, as graph work on cleaned nodes."""

from __future__ import annotations

from typing import Any

from ._skeleton import Skeleton

__all__ = ["check_deps", "enforce_order", "wire_defaults"]

MAX_DEPS = 50  # dependencies read per node


def wire_defaults(nodes: list[dict[str, Any]], skeleton: Skeleton, only: set[str] | None = None) -> None:
    """Give nodes (all, or those whose id is in ``only``) their stage's default dependencies: on every
    node of each stage it depends on; a hard-dependency stage with no node in the plan passes on its own
    hard dependencies."""
    by_stage: dict[str, list[str]] = {}
    for n in nodes:
        by_stage.setdefault(n["stage"], []).append(n["id"])

    def targets(stage_names: tuple[str, ...], seen: set[str], through: bool) -> list[str]:
        out: list[str] = []
        for name in stage_names:
            if name in seen:
                continue
            seen.add(name)
            if name in by_stage:
                out += by_stage[name]
            elif through and (stage := skeleton.stage(name)) is not None:
                out += targets(stage.depends_on, seen, through)
        return out

    for n in nodes:
        stage = skeleton.stage(n["stage"])
        if stage is None or (only is not None and n["id"] not in only):
            continue
        for dep in targets(stage.depends_on, {stage.name}, True):
            if dep != n["id"] and dep not in n["depends_on"]:
                n["depends_on"].append(dep)
        for dep in targets(stage.soft_depends_on, {stage.name}, False):
            if dep != n["id"] and dep not in n["depends_on"] + n["soft_depends_on"]:
                n["soft_depends_on"].append(dep)


class _Graph:
    """Dependency edges added one by one; an edge that would close a cycle is refused."""

    def __init__(self) -> None:
        self.out: dict[str, set[str]] = {}

    def reaches(self, src: str, dst: str) -> bool:
        stack, seen = [src], set()
        while stack:
            cur = stack.pop()
            if cur == dst:
                return True
            if cur not in seen:
                seen.add(cur)
                stack.extend(self.out.get(cur, ()))
        return False

    def add(self, node: str, dep: str) -> bool:
        if node == dep or self.reaches(dep, node):
            return False
        self.out.setdefault(node, set()).add(dep)
        return True


def check_deps(nodes: list[dict[str, Any]], problems: list[str]) -> None:
    """Drop self, duplicate and unknown dependencies, then break cycles. Cycles are found in one pass
    (Kahn's algorithm); only nodes left on a cycle are touched: their "forward" dependencies (on a node
    later in the list, which every cycle has) are dropped, then each is put back if it closes no cycle."""
    ids = {n["id"] for n in nodes}
    position = {n["id"]: i for i, n in enumerate(nodes)}
    for n in nodes:
        for key in ("depends_on", "soft_depends_on"):
            kept: list[str] = []
            for dep in n[key][:MAX_DEPS]:
                if dep in kept or (key == "soft_depends_on" and dep in n["depends_on"]):
                    continue
                if dep == n["id"]:
                    problems.append(f"node {n['id']}: dependency on itself dropped")
                elif dep not in ids:
                    problems.append(f"node {n['id']}: dependency on unknown id {dep!r} dropped")
                else:
                    kept.append(dep)
            if len(n[key]) > MAX_DEPS:
                problems.append(f"node {n['id']}: only the first {MAX_DEPS} {key} kept")
            n[key] = kept
    cyclic = _on_cycles(nodes)
    if not cyclic:
        return
    graph = _Graph()
    forward: list[tuple[dict[str, Any], str, str]] = []
    for n in nodes:
        for key in ("depends_on", "soft_depends_on"):
            for dep in list(n[key]):
                if n["id"] in cyclic and dep in cyclic and position[dep] > position[n["id"]]:
                    n[key].remove(dep)
                    forward.append((n, key, dep))
                else:
                    graph.add(n["id"], dep)
    for n, key, dep in forward:
        if graph.add(n["id"], dep):
            n[key].append(dep)
        else:
            problems.append(f"node {n['id']}: dependency on {dep} would make a cycle; dropped")


def _on_cycles(nodes: list[dict[str, Any]]) -> set[str]:
    """Ids that Kahn's algorithm cannot order (on a cycle, or depending on one)."""
    indegree = {n["id"]: len(n["depends_on"]) + len(n["soft_depends_on"]) for n in nodes}
    dependents: dict[str, list[str]] = {}
    for n in nodes:
        for dep in n["depends_on"] + n["soft_depends_on"]:
            dependents.setdefault(dep, []).append(n["id"])
    ready = [i for i, d in indegree.items() if d == 0]
    while ready:
        cur = ready.pop()
        for nxt in dependents.get(cur, ()):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return {i for i, d in indegree.items() if d > 0}


def enforce_order(nodes: list[dict[str, Any]], skeleton: Skeleton, problems: list[str]) -> None:
    """Make each constraint's ordered stage wait for the stages it must follow, where that closes no cycle."""
    graph = _Graph()
    for n in nodes:
        for dep in n["depends_on"] + n["soft_depends_on"]:
            graph.add(n["id"], dep)
    for c in skeleton.constraints:
        if not c.order_stage:
            continue
        before = [m["id"] for m in nodes if m["stage"] in c.order_after]
        for n in (m for m in nodes if m["stage"] == c.order_stage):
            for dep in before:
                if dep in n["depends_on"]:
                    continue
                if graph.add(n["id"], dep):
                    n["depends_on"].append(dep)
                    if dep in n["soft_depends_on"]:
                        n["soft_depends_on"].remove(dep)
                    problems.append(f"node {n['id']}: now waits for {dep} (constraint {c.name})")
                else:
                    problems.append(
                        f"node {n['id']}: constraint {c.name} cannot order it after {dep} (cycle)"
                    )
