"""Validating the model's plan against the strategy's skeleton. Model output is untrusted input.

``validate_plan`` accepts whatever the ``decompose`` call returned (a dict, a JSON string, a bare list
of nodes, or garbage) and never raises. It keeps the model's subtasks where they are sound and records
every change it makes in ``problems`` (and ``dropped`` / ``restored``):

- a node needs a non-empty ``task``; its ``id`` is cleaned to ``[A-Za-z0-9_-]`` (a missing one is
  generated); a duplicate id drops the later node; an unknown stage goes to the skeleton's primary stage;
- dependencies on unknown ids, on the node itself, or that would close a cycle are dropped;
- each required stage (one the plan must hold as a subtask) missing from the plan is restored as a node
  of its own, unless the plan waives it explicitly *with a reason*; a waiver without a reason is refused;
- constraints with an ``order`` add the hard dependencies they demand (when that makes no cycle);
- the plan is clamped to ``min(max_nodes, max_branching)`` nodes, keeping one node per required stage
  first, then the others in the model's order;
- when nothing usable is left, the skeleton's default plan (one node per required stage) stands in.

The dependency rules (defaults, cycles, constraint order) are in ``_plan_deps``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ._plan_deps import check_deps, enforce_order, wire_defaults
from ._skeleton import Skeleton, Stage

__all__ = ["ValidatedPlan", "default_plan", "validate_plan"]

MAX_TASK_CHARS = 1000
MAX_ITEMS = 1000  # plan items read at all
_ID_CLEAN = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass
class ValidatedPlan:
    strategy: str
    nodes: list[dict[str, Any]]  # {id, task, stage, depends_on, soft_depends_on} (+ "restored": True)
    source: str = "model"  # "model" | "default" (the skeleton's own plan replaced an unusable one)
    waivers: list[dict[str, str]] = field(default_factory=list)  # honoured: {stage, reason}
    restored: list[dict[str, str]] = field(default_factory=list)  # {stage, node_id, reason}
    dropped: list[dict[str, Any]] = field(default_factory=list)  # {id, reason}
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "source": self.source,
            "nodes": self.nodes,
            "waivers": self.waivers,
            "restored": self.restored,
            "dropped": self.dropped,
            "problems": self.problems,
        }


def _stage_key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _stage_node(stage: Stage, node_id: str, goal: str) -> dict[str, Any]:
    return {
        "id": node_id,
        "task": stage.task_for(goal),
        "stage": stage.name,
        "depends_on": [],
        "soft_depends_on": [],
    }


def default_plan(skeleton: Skeleton, goal: str = "", max_nodes: int | None = None) -> list[dict[str, Any]]:
    """One node per stage a plan must hold, with the stages' default dependencies."""
    stages = [s for s in skeleton.stages if s.needs_node] or [skeleton.primary]
    if max_nodes is not None:
        stages = stages[: max(1, max_nodes)]
    nodes = [_stage_node(s, s.name, goal) for s in stages]
    wire_defaults(nodes, skeleton)
    return nodes


def _coerce(plan_data: Any, problems: list[str]) -> tuple[list[Any], list[Any]]:
    """(raw nodes, raw waivers) from whatever the model returned."""
    data = plan_data
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            problems.append("the plan is text, not JSON")
            return [], []
    if isinstance(data, list):
        return data, []
    if not isinstance(data, dict):
        problems.append(f"the plan is {type(data).__name__}, not an object with 'nodes'")
        return [], []
    nodes, waivers = data.get("nodes"), data.get("waivers")
    if not isinstance(nodes, list):
        problems.append(f"'nodes' is {type(nodes).__name__}, not a list")
        nodes = []
    if waivers is not None and not isinstance(waivers, list):
        problems.append(f"'waivers' is {type(waivers).__name__}, not a list; ignored")
        waivers = [waivers] if isinstance(waivers, dict) else []
    return nodes, waivers or []


def _dep_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if isinstance(v, (str, int)) and not isinstance(v, bool)]


def _clean_nodes(raw: list[Any], skeleton: Skeleton, plan: ValidatedPlan) -> list[dict[str, Any]]:
    names = {_stage_key(s.name): s.name for s in skeleton.stages}
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    if len(raw) > MAX_ITEMS:
        plan.dropped.append(
            {"id": None, "reason": f"{len(raw) - MAX_ITEMS} items beyond the first {MAX_ITEMS} not read"}
        )
        raw = raw[:MAX_ITEMS]
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            plan.dropped.append({"id": None, "reason": f"item {i} is {type(item).__name__}, not an object"})
            continue
        task = item.get("task")
        raw_id = item.get("id")
        node_id = _ID_CLEAN.sub("_", str(raw_id)).strip("_")[:40] if isinstance(raw_id, (str, int)) else ""
        if not isinstance(task, str) or not task.strip():
            plan.dropped.append({"id": node_id or None, "reason": "no task"})
            continue
        if not node_id:
            node_id = f"n{i + 1}"
            plan.problems.append(f"item {i} had no usable id; named {node_id}")
        if node_id in seen:
            plan.dropped.append({"id": node_id, "reason": "duplicate id"})
            continue
        seen.add(node_id)
        raw_stage = item.get("stage")
        stage = names.get(_stage_key(raw_stage)) if isinstance(raw_stage, str) else None
        if stage is None:
            stage = skeleton.primary.name
            plan.problems.append(f"node {node_id}: unknown stage {raw_stage!r}; assigned to {stage}")
        nodes.append({
            "id": node_id,
            "task": " ".join(task.split())[:MAX_TASK_CHARS],
            "stage": stage,
            "depends_on": _dep_list(item.get("depends_on")),
            "soft_depends_on": _dep_list(item.get("soft_depends_on")),
        })  # fmt: skip
    return nodes


def _waivers(raw: list[Any], skeleton: Skeleton, plan: ValidatedPlan) -> set[str]:
    names = {_stage_key(s.name): s for s in skeleton.stages}
    waived: set[str] = set()
    for w in raw:
        if isinstance(w, dict):
            stage_name, reason = w.get("stage") or w.get("name"), w.get("reason")
        elif isinstance(w, str) and ":" in w:  # "stage: reason"
            stage_name, reason = (x.strip() for x in w.split(":", 1))
        else:
            stage_name, reason = w, None
        stage = names.get(_stage_key(stage_name)) if isinstance(stage_name, str) else None
        if stage is None:
            plan.problems.append(f"waiver for unknown stage {stage_name!r} ignored")
        elif not isinstance(reason, str) or not reason.strip():
            plan.problems.append(f"waiver of {stage.name} refused: a waiver needs a reason")
        elif stage.name not in waived:
            waived.add(stage.name)
            plan.waivers.append({"stage": stage.name, "reason": " ".join(reason.split())[:500]})
    return waived


def _clamp(
    nodes: list[dict[str, Any]], skeleton: Skeleton, limit: int, plan: ValidatedPlan
) -> list[dict[str, Any]]:
    if len(nodes) <= limit:
        return nodes
    keep: list[str] = []
    for stage in (s for s in skeleton.stages if s.needs_node):
        first = next((n["id"] for n in nodes if n["stage"] == stage.name), None)
        if first is not None and len(keep) < limit:
            keep.append(first)
    for n in nodes:
        if len(keep) >= limit:
            break
        if n["id"] not in keep:
            keep.append(n["id"])
    kept_ids = set(keep)
    for n in nodes:
        if n["id"] not in kept_ids:
            plan.dropped.append({"id": n["id"], "reason": f"over the limit of {limit} subtasks"})
    lost = {s.name for s in skeleton.stages if s.needs_node} - {
        n["stage"] for n in nodes if n["id"] in kept_ids
    }
    if lost:
        plan.problems.append(f"the limit of {limit} subtasks leaves out required stage(s) {sorted(lost)}")
    out = [n for n in nodes if n["id"] in kept_ids]
    dropped_ids = {n["id"] for n in nodes} - kept_ids
    for n in out:
        for key in ("depends_on", "soft_depends_on"):
            cut = [d for d in n[key] if d in dropped_ids]
            if cut:
                n[key] = [d for d in n[key] if d not in dropped_ids]
                plan.problems.append(f"node {n['id']}: dependencies on dropped subtasks {cut[:5]} removed")
    plan.problems.append(f"clamped from {len(nodes)} to {len(out)} subtasks (max_nodes/max_branching)")
    return out


def validate_plan(
    plan_data: Any, skeleton: Skeleton, max_nodes: int = 50, max_branching: int = 50, *, goal: str = ""
) -> ValidatedPlan:
    """The model's plan, made valid for ``skeleton`` (see the module docstring). Never raises."""
    limit = max(1, min(_int(max_nodes, 50), _int(max_branching, 50)))
    plan = ValidatedPlan(skeleton.name, [])
    raw_nodes, raw_waivers = _coerce(plan_data, plan.problems)
    nodes = _clean_nodes(raw_nodes, skeleton, plan)
    if not nodes:
        if raw_nodes or not plan.problems:
            plan.problems.append("the plan has no usable subtasks")
        plan.problems.append("using the skeleton's default plan")
        plan.source = "default"
        plan.nodes = default_plan(skeleton, goal, limit)
        if len(plan.nodes) < len([s for s in skeleton.stages if s.needs_node]):
            plan.problems.append(f"the limit of {limit} subtasks leaves out some required stages")
        return plan
    waived = _waivers(raw_waivers, skeleton, plan)
    present = {n["stage"] for n in nodes}
    restored_ids: set[str] = set()
    taken = {n["id"] for n in nodes}
    for stage in skeleton.stages:
        if not stage.needs_node or stage.name in present or stage.name in waived:
            continue
        node_id, k = stage.name, 1
        while node_id in taken:
            k += 1
            node_id = f"{stage.name}_{k}"
        taken.add(node_id)
        nodes.append(_stage_node(stage, node_id, goal) | {"restored": True})
        restored_ids.add(node_id)
        plan.restored.append(
            {"stage": stage.name, "node_id": node_id, "reason": "required stage missing, not waived"}
        )
        plan.problems.append(f"required stage {stage.name} was missing and not waived; restored as {node_id}")
    nodes = _clamp(nodes, skeleton, limit, plan)
    wire_defaults(nodes, skeleton, only=restored_ids)
    check_deps(nodes, plan.problems)
    enforce_order(nodes, skeleton, plan.problems)
    order = {s.name: i for i, s in enumerate(skeleton.stages)}
    plan.nodes = _stable_stage_merge(nodes, restored_ids, order)
    return plan


def _stable_stage_merge(
    nodes: list[dict[str, Any]], restored: set[str], order: dict[str, int]
) -> list[dict[str, Any]]:
    """Insert each restored node before the first model node whose stage comes later in the skeleton."""
    model = [n for n in nodes if n["id"] not in restored]
    for r in sorted((n for n in nodes if n["id"] in restored), key=lambda n: order[n["stage"]]):
        at = next((i for i, m in enumerate(model) if order[m["stage"]] > order[r["stage"]]), len(model))
        model.insert(at, r)
    return model


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default
