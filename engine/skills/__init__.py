"""Skills (E11): ``SKILL.md`` files that add guidance (and strategies) to runs whose goals they fit.

- ``discover(vaults)`` -> ``SkillSet``: the package's skills overridden by name from each vault's
  ``Shad/Skills/`` (problems listed, never raised);
- ``route(goal, skills, strategy=..., active=...)`` -> ``Routing``: a deterministic score picks a primary
  skill, composition adds its ``composes_with`` skills, loop guards stop re-triggering;
- ``guidance(routing, skills)``: the text injected into the system prompt;
- ``propose_skill_change``: Shad never edits a skill; it proposes a change as a staging note;
- voices (``voices``, ``find_voice``, ``voice_prompt``, ``unfaithful``): a persona for the final report's
  wording, checked to keep every citation and number.
"""

from __future__ import annotations

from ._discover import PACKAGE_SKILLS, VAULT_SKILLS, SkillSet, discover
from ._propose import propose_skill_change
from ._route import THRESHOLD, Candidate, Routing, guidance, route, score
from ._skill import Skill, SkillError, load_skill, parse_skill
from ._voice import Voice, find_voice, split_report, unfaithful, voice_prompt, voices

__all__ = [
    "PACKAGE_SKILLS",
    "THRESHOLD",
    "VAULT_SKILLS",
    "Candidate",
    "Routing",
    "Skill",
    "SkillError",
    "SkillSet",
    "Voice",
    "discover",
    "find_voice",
    "guidance",
    "load_skill",
    "parse_skill",
    "propose_skill_change",
    "route",
    "score",
    "split_report",
    "unfaithful",
    "voice_prompt",
    "voices",
]
