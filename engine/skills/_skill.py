"""One skill: a ``SKILL.md`` file (YAML frontmatter + guidance in markdown), parsed and validated.

Frontmatter (seed 002 §4.2, trimmed to what Shad uses):

- ``name`` (required; lower-case letters, digits, ``-`` and ``_``), ``description`` (required);
- ``use_when``: trigger patterns matched against the goal (``*`` matches any words: ``"how do i *"``);
- ``intents`` / ``entities``: words that count when the goal contains them (stemmed);
- ``exclusions``: patterns that rule the skill out for a goal; ``priority`` (0–100) breaks ties;
- ``composes_with``: skills pulled in as support when this one is chosen;
- ``strategies``: the strategies the skill fits (a bonus, not a gate); ``strategy``: a whole strategy
  skeleton (as ``engine/strategies/*.json``) the skill adds;
- ``max_depth``: how many nested subtasks may trigger the skill again (default 0: never re-triggered
  below a node where it is already active — the loop guard); ``default_voice``; ``version``.

The body is the guidance injected into the system prompt when the skill is in use.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ShadError
from ..vault import parse_note

__all__ = ["MAX_GUIDANCE_CHARS", "Skill", "SkillError", "load_skill", "parse_skill", "skill_from_parts"]

MAX_GUIDANCE_CHARS = 4000
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_LISTS = ("use_when", "intents", "entities", "exclusions", "composes_with", "strategies")


class SkillError(ShadError):
    """A ``SKILL.md`` that cannot be used; ``path`` says which file."""

    exit_code = 2


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    guidance: str
    use_when: tuple[str, ...] = ()
    intents: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    exclusions: tuple[str, ...] = ()
    composes_with: tuple[str, ...] = ()
    strategies: tuple[str, ...] = ()
    strategy: dict[str, Any] | None = None
    priority: int = 0
    max_depth: int = 0
    default_voice: str | None = None
    version: str | None = None
    source: str = "package"  # "package", or the id of the vault whose Shad/Skills/ holds it
    path: str = ""
    overrides: str | None = None  # the source of the skill of the same name this one replaces
    extra: dict[str, Any] = field(default_factory=dict)  # other frontmatter, kept for `skills show`

    def to_dict(self, *, guidance: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "use_when": list(self.use_when),
            "intents": list(self.intents),
            "entities": list(self.entities),
            "exclusions": list(self.exclusions),
            "composes_with": list(self.composes_with),
            "strategies": list(self.strategies),
            "adds_strategy": (self.strategy or {}).get("name"),
            "priority": self.priority,
            "max_depth": self.max_depth,
            "default_voice": self.default_voice,
            "version": self.version,
            "source": self.source,
            "path": self.path,
            "overrides": self.overrides,
        }
        if guidance:
            data["guidance"] = self.guidance
        return data


def _strings(value: Any, key: str, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise SkillError(f"{path}: `{key}` must be a list of words or phrases", path=path)
    return tuple(str(v).strip() for v in value if str(v).strip())


def _integer(value: Any, key: str, path: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SkillError(
            f"{path}: `{key}` must be a whole number from {low} to {high}, got {value!r}", path=path
        )
    return value


def parse_skill(text: str, *, path: str = "SKILL.md", source: str = "package") -> Skill:
    """The skill a ``SKILL.md`` text defines, or ``SkillError`` naming the file and the problem."""
    note = parse_note(path, text.encode("utf-8"))
    problems = [d.message for d in note.diagnostics if "frontmatter" in d.code and d.severity != "info"]
    return skill_from_parts(note.frontmatter, note.body, path=path, source=source, problems=problems)


def skill_from_parts(
    front: dict[str, Any], body: str, *, path: str, source: str, problems: list[str] | None = None
) -> Skill:
    """The skill of a parsed ``SKILL.md`` (its frontmatter and body, e.g. read through a vault backend)."""
    if problems or not front:
        raise SkillError(
            f"{path}: {problems[0] if problems else 'no YAML frontmatter'}",
            hint="start the file with --- name: ... description: ... ---",
            path=path,
        )
    name = str(front.get("name") or "").strip()
    if not _NAME.match(name):
        raise SkillError(
            f"{path}: `name` must be lower-case letters, digits, - or _ (got {name!r})",
            hint="e.g. name: how-to",
            path=path,
        )
    description = str(front.get("description") or "").strip()
    if not description:
        raise SkillError(
            f"{path}: `description` is missing", hint="say in one line what it is for", path=path
        )
    lists = {key: _strings(front.get(key), key, path) for key in _LISTS}
    strategy = front.get("strategy")
    if strategy is not None and not (isinstance(strategy, dict) and strategy.get("name")):
        raise SkillError(
            f"{path}: `strategy` must be a strategy skeleton with a name and stages",
            hint="as in engine/strategies/analysis.json",
            path=path,
        )
    voice = front.get("default_voice")
    known = {"name", "description", "strategy", "priority", "max_depth", "default_voice", "version", *_LISTS}
    return Skill(
        name=name,
        description=description,
        guidance=body.strip()[:MAX_GUIDANCE_CHARS],
        use_when=lists["use_when"],
        intents=lists["intents"],
        entities=lists["entities"],
        exclusions=lists["exclusions"],
        composes_with=lists["composes_with"],
        strategies=lists["strategies"],
        strategy=dict(strategy) if strategy else None,
        priority=_integer(front.get("priority"), "priority", path, 0, 100, 0),
        max_depth=_integer(front.get("max_depth"), "max_depth", path, 0, 5, 0),
        default_voice=str(voice).strip() if voice else None,
        version=str(front["version"]) if front.get("version") is not None else None,
        source=source,
        path=path,
        extra={k: v for k, v in front.items() if k not in known},
    )


# Parsed skills by (file, source, shown_as), each with the file's stat when it was read: a run discovers
# the skills again, and parsing the package's five files took ~3 ms a run. A file whose stat changed in
# any way (written, replaced, touched) is read and parsed again, so the cache never answers stale.
_parsed: dict[tuple[str, str, str], tuple[tuple[int, ...], Skill]] = {}
_parsed_lock = threading.Lock()


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def load_skill(file: Path, *, source: str = "package", shown_as: str | None = None) -> Skill:
    """The skill in ``file`` (``shown_as``: the path to report, e.g. vault-relative). A file unchanged
    since this process last parsed it (same stat) gives the skill parsed then; Skill is frozen."""
    where = shown_as or str(file)
    key = (str(file), source, where)
    try:
        signature = _signature(os.stat(file))  # before the read: a write after it changes the stat
        with _parsed_lock:
            cached = _parsed.get(key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"{where}: cannot read it ({exc})", path=where) from exc
    skill = parse_skill(text, path=where, source=source)  # a file that fails is never cached
    with _parsed_lock:
        _parsed[key] = (signature, skill)
    return skill
