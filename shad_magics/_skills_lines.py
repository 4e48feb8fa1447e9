"""``%shad skills [NAME] [--goal GOAL] [--vault DIR]``: the skills in force as a DataFrame, one skill as
markdown, or which skills a goal would use (the routing, candidate by candidate)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine import skills as engine_skills

from ._lines import Info, _md

__all__ = ["SKILL_COLUMNS", "skills"]

SKILL_COLUMNS = ["name", "source", "overrides", "priority", "composes_with", "use_when", "description"]


def skills(vaults: Sequence[str], name: str | None = None, goal: str | None = None) -> Any:
    """The table of skills; ``name``: that skill; ``goal``: its routing."""
    import pandas as pd

    found = engine_skills.discover(list(vaults))
    if goal is not None:
        routing = engine_skills.route(goal, found)
        rows = [{**c.to_dict(), "why": "; ".join(c.why)} for c in routing.candidates]
        frame = pd.DataFrame(rows, columns=["name", "score", "why", "excluded"])
        frame.attrs.update(primary=routing.primary, support=routing.support, guarded=routing.guarded)
        return frame
    if name is not None:
        skill = found.get(name)
        head = f"**{_md(skill.name)}** — {_md(skill.description)}  \n"
        head += f"source: `{skill.source}` ({_md(skill.path)})"
        rules = [
            f"- {key}: {_md(', '.join(getattr(skill, key)))}"
            for key in ("use_when", "intents", "exclusions", "composes_with", "strategies")
            if getattr(skill, key)
        ]
        return Info("\n".join([head, "", *rules, "", skill.guidance]), skill.to_dict())
    rows = [
        {
            **s.to_dict(guidance=False),
            "composes_with": ", ".join(s.composes_with),
            "use_when": "; ".join(s.use_when),
        }
        for s in found
    ]
    frame = pd.DataFrame(rows, columns=SKILL_COLUMNS)
    frame.attrs["problems"] = found.problems
    return frame
