"""A strategy switch (E3): the model, planning the root, may ask for another strategy with evidence.

The switch is taken at most once per run and never over a strategy the user chose (``--strategy``); an
unknown strategy, a missing reason or a second request is refused. Every request, taken or refused, is
kept in ``decisions/strategy_switch.json`` and a taken one is a second ``STRATEGY_CHOSEN`` event (source
``switch``)."""

from __future__ import annotations

from typing import Any

from .. import strategies
from ..events import StrategyChosen
from ._context import RunContext

__all__ = ["consider_switch"]

MAX_EVIDENCE = 500


def _request(data: Any) -> tuple[str, str] | None:
    ask = data.get("switch_strategy") if isinstance(data, dict) else None
    if not isinstance(ask, dict):
        return None
    evidence = " ".join(str(ask.get("evidence") or "").split())[:MAX_EVIDENCE]
    return str(ask.get("to") or "").strip().lower(), evidence


def consider_switch(ctx: RunContext, current: str, data: Any) -> str | None:
    """The strategy to plan the root with instead of ``current``, or None (no request, or refused)."""
    asked = _request(data)
    if asked is None:
        return None
    target, evidence = asked
    record = ctx.history.read_json("decisions/strategy_switch.json") if _exists(ctx) else {"requests": []}
    refusal = None
    if ctx.config.strategy is not None:
        refusal = f"the user chose the {ctx.config.strategy} strategy (--strategy is never overridden)"
    elif any(r.get("taken") for r in record["requests"]):
        refusal = "a run switches strategy at most once"
    elif target not in strategies.names():
        refusal = f"no strategy named {target!r} (strategies: {', '.join(strategies.names())})"
    elif target == current:
        refusal = f"the run already uses {current}"
    elif not evidence:
        refusal = "a switch needs evidence (why the goal fits the other strategy better)"
    record["requests"].append(
        {"from": current, "to": target, "evidence": evidence, "taken": refusal is None, "refused": refusal}
    )
    ctx.history.write_json("decisions/strategy_switch.json", record)
    if refusal is not None:
        return None
    ctx.run.strategy = target
    ctx.emit(
        StrategyChosen(
            strategy=target,
            source="switch",
            confidence=1.0,
            scores={},
            reason=f"switched from {current} by the model: {evidence}",
            guess=None,
            matched={},
            threshold=0.0,
        )
    )
    return target


def _exists(ctx: RunContext) -> bool:
    return (ctx.history.dir / "decisions" / "strategy_switch.json").exists()
