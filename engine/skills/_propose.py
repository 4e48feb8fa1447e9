"""A change to a skill, proposed: a staging note for a person (Shad never writes under ``Shad/Skills/``:
the vault writer refuses every role but a person there)."""

from __future__ import annotations

from typing import Any

from ..curation import propose_learning
from ._skill import parse_skill

__all__ = ["propose_skill_change"]


def propose_skill_change(vault: Any, text: str, *, reason: str, run_id: str) -> str:
    """Write the proposed ``SKILL.md`` ``text`` (checked: it must parse) with ``reason`` as a staging note
    of kind ``skill``; returns its vault-relative path. A person reviews it with ``shad learnings`` and
    copies it into ``Shad/Skills/<name>/SKILL.md`` if they agree."""
    skill = parse_skill(text, path="proposed SKILL.md", source="proposal")
    body = (
        f"Proposed change to the skill **{skill.name}**: {reason.strip()}\n\n"
        f"To apply it, a person copies the file below to `Shad/Skills/{skill.name}/SKILL.md`.\n\n"
        f"````markdown\n{text.strip()}\n````\n"
    )
    return propose_learning(vault, f"Skill change - {skill.name}", body, run_id=run_id, kind="skill")
