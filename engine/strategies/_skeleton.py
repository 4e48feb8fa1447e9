"""Strategy skeletons: the stages a plan for one kind of goal must have, loaded from data files.

A skeleton (``software.json``, ``research.json``, ... next to this module) lists its stages in order.
Each stage has a name, a description, whether it is required, its default dependencies on other stages
(``depends_on`` hard, ``soft_depends_on`` soft), keywords that say which subtasks belong to it, and a
task template (``{goal}`` is filled in). A stage with ``"handled_by": "parent"`` (synthesis, citing) is
done by the parent node when it combines its children, so it never becomes a child node of its own.
Constraints are invariants; one with an ``order`` ({stage, after}) is enforced on every plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ..errors import ShadError

__all__ = [
    "BUILTIN",
    "Constraint",
    "Skeleton",
    "Stage",
    "UnknownStrategyError",
    "get",
    "names",
    "register",
]

BUILTIN = ("software", "research", "analysis", "planning", "creative")


class UnknownStrategyError(ShadError):
    """No strategy of that name is registered."""

    exit_code = 2


@dataclass(frozen=True)
class Stage:
    name: str
    description: str
    required: bool = False
    depends_on: tuple[str, ...] = ()
    soft_depends_on: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    task: str = ""  # template; "{goal}" is replaced by the goal
    handled_by: str = "node"  # "node": a subtask of its own; "parent": done by the parent's synthesis
    primary: bool = False  # where a subtask goes when nothing else fits it

    @property
    def needs_node(self) -> bool:
        """A required stage that must appear in a plan as at least one subtask."""
        return self.required and self.handled_by == "node"

    def task_for(self, goal: str) -> str:
        goal = " ".join(goal.split())
        if not goal:
            return self.description
        template = self.task or "{goal}"
        return template.replace("{goal}", goal)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "required": self.required,
            "depends_on": list(self.depends_on),
            "soft_depends_on": list(self.soft_depends_on),
            "keywords": list(self.keywords),
            "task": self.task,
            "handled_by": self.handled_by,
            "primary": self.primary,
        }


@dataclass(frozen=True)
class Constraint:
    name: str
    value: Any
    description: str = ""
    order_stage: str | None = None  # nodes of this stage must (hard) depend on ...
    order_after: tuple[str, ...] = ()  # ... every node of these stages

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "value": self.value, "description": self.description}
        if self.order_stage:
            data["order"] = {"stage": self.order_stage, "after": list(self.order_after)}
        return data


@dataclass(frozen=True)
class Skeleton:
    name: str
    description: str
    stages: tuple[Stage, ...]
    constraints: tuple[Constraint, ...] = ()
    keywords: dict[str, float] = field(default_factory=dict)  # classifier keyword -> weight
    # The classifier picks this strategy only for a goal that asks for something to be done, never for one
    # made only of questions (software: "what code length do the apps give?" asks for no code).
    needs_instruction: bool = False

    def stage(self, name: str) -> Stage | None:
        for s in self.stages:
            if s.name == name:
                return s
        return None

    @property
    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]

    @property
    def required(self) -> list[Stage]:
        return [s for s in self.stages if s.required]

    @property
    def optional(self) -> list[Stage]:
        return [s for s in self.stages if not s.required]

    @property
    def primary(self) -> Stage:
        """The stage a subtask goes to when no stage fits it better."""
        for s in self.stages:
            if s.primary:
                return s
        plan_stages = [s for s in self.stages if s.handled_by == "node"]
        return (plan_stages or list(self.stages))[0]

    def stage_dicts(self) -> list[dict[str, Any]]:
        """The stages as the ``decompose`` call's ``inputs["stages"]``. ``required`` is true only for
        stages a plan must contain as subtasks; stages the parent performs say so in their description."""
        out = []
        for s in self.stages:
            d = s.to_dict()
            d["required"] = s.needs_node
            d["required_in_skeleton"] = s.required
            out.append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "required": [s.name for s in self.required],
            "optional": [s.name for s in self.optional],
            "stages": [s.to_dict() for s in self.stages],
            "constraints": [c.to_dict() for c in self.constraints],
            "classifier": {"keywords": dict(self.keywords), "needs_instruction": self.needs_instruction},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Skeleton:
        """Build from a skeleton file's data; raises ``ValueError`` when it is malformed."""
        name = str(data["name"])
        stages = []
        for raw in data["stages"]:
            stages.append(
                Stage(
                    name=str(raw["name"]),
                    description=str(raw.get("description", "")),
                    required=bool(raw.get("required", False)),
                    depends_on=tuple(str(x) for x in raw.get("depends_on", ())),
                    soft_depends_on=tuple(str(x) for x in raw.get("soft_depends_on", ())),
                    keywords=tuple(str(x) for x in raw.get("keywords", ())),
                    task=str(raw.get("task", "")),
                    handled_by=str(raw.get("handled_by", "node")),
                    primary=bool(raw.get("primary", False)),
                )
            )
        known = {s.name for s in stages}
        if len(known) != len(stages):
            raise ValueError(f"strategy {name!r}: duplicate stage names")
        for s in stages:
            if s.handled_by not in ("node", "parent"):
                raise ValueError(f"strategy {name!r}: stage {s.name!r} has handled_by {s.handled_by!r}")
            unknown = (set(s.depends_on) | set(s.soft_depends_on)) - known
            if unknown:
                raise ValueError(f"strategy {name!r}: stage {s.name!r} depends on unknown {sorted(unknown)}")
        constraints = []
        for raw in data.get("constraints", ()):
            order = raw.get("order") or {}
            constraints.append(
                Constraint(
                    name=str(raw["name"]),
                    value=raw.get("value", True),
                    description=str(raw.get("description", "")),
                    order_stage=str(order["stage"]) if order.get("stage") else None,
                    order_after=tuple(str(x) for x in order.get("after", ())),
                )
            )
        classifier = data.get("classifier") or {}
        keywords = {str(k): float(v) for k, v in classifier.get("keywords", {}).items()}
        instruction = bool(classifier.get("needs_instruction", False))
        return cls(
            name, str(data.get("description", "")), tuple(stages), tuple(constraints), keywords, instruction
        )


# --- registry --------------------------------------------------------------------------------------------

_REGISTRY: dict[str, Skeleton] = {}


def _load_builtin() -> None:
    if _REGISTRY:
        return
    package = resources.files(__package__ or "engine.strategies")
    for name in BUILTIN:
        data = json.loads(package.joinpath(f"{name}.json").read_text(encoding="utf-8"))
        _REGISTRY.setdefault(name, Skeleton.from_dict(data))


def register(skeleton: Skeleton | dict[str, Any], *, replace: bool = False) -> Skeleton:
    """Add a strategy (a ``Skeleton`` or skeleton-file data). A name already taken needs ``replace``."""
    _load_builtin()
    sk = skeleton if isinstance(skeleton, Skeleton) else Skeleton.from_dict(skeleton)
    key = sk.name.strip().lower()
    if key in _REGISTRY and not replace:
        raise ShadError(
            f"strategy {sk.name!r} is already registered", hint="pass replace=True to override it"
        )
    _REGISTRY[key] = sk
    return sk


def names() -> list[str]:
    """Registered strategy names, built-ins first."""
    _load_builtin()
    return list(_REGISTRY)


def get(name: str) -> Skeleton:
    """The skeleton of a strategy; an unknown name raises ``UnknownStrategyError`` listing the known ones."""
    _load_builtin()
    key = str(name).strip().lower()
    if key not in _REGISTRY:
        known = ", ".join(_REGISTRY)
        raise UnknownStrategyError(
            f"unknown strategy {name!r}", hint=f"known strategies: {known}", known=list(_REGISTRY)
        )
    return _REGISTRY[key]
