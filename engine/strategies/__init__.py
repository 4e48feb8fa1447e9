"""Strategies (E3): skeletons as data files, a keyword classifier, the small-goal rule and plan validation.

- ``choose_strategy(goal, override)`` -> ``StrategyDecision`` (override > confident guess > ``analysis``);
- ``needs_decomposition(goal)`` -> ``(bool, reason)``: small goals run as one node;
- ``get(name)`` -> ``Skeleton``; ``register(skeleton)``; ``names()``;
- ``validate_plan(data, skeleton, max_nodes, max_branching, goal=...)`` -> ``ValidatedPlan`` (never raises).
"""

from __future__ import annotations

from ._classify import (
    CONFIDENCE_THRESHOLD,
    DEFAULT_STRATEGY,
    StrategyDecision,
    StrategyGuess,
    choose_strategy,
    classify,
)
from ._compare import MAX_SIDES, Comparison, comparison
from ._plan import ValidatedPlan, default_plan, validate_plan
from ._size import count_asks, needs_decomposition, split_clauses
from ._skeleton import Constraint, Skeleton, Stage, UnknownStrategyError, get, names, register
from ._wording import antecedent, stage_subject

__all__ = [
    "CONFIDENCE_THRESHOLD",
    "DEFAULT_STRATEGY",
    "MAX_SIDES",
    "Comparison",
    "Constraint",
    "Skeleton",
    "Stage",
    "StrategyDecision",
    "StrategyGuess",
    "UnknownStrategyError",
    "ValidatedPlan",
    "antecedent",
    "choose_strategy",
    "classify",
    "comparison",
    "count_asks",
    "default_plan",
    "get",
    "names",
    "needs_decomposition",
    "register",
    "split_clauses",
    "stage_subject",
    "validate_plan",
]
