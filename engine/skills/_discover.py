"""Finding skills: the package's own (``engine/skills/builtin/*/SKILL.md``), overridden by name from each
vault's ``Shad/Skills/`` (the first vault wins over later ones; any vault wins over the package).

A file that cannot be used is a *problem* (listed by ``shad skills ls``), never a crash: one broken skill
must not stop a run. A skill that adds a strategy registers it, unless the name belongs to a built-in
strategy (a problem too)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import strategies
from ..errors import NoteNotFoundError, ShadError, UsageError
from ..vault import is_local
from ._skill import Skill, SkillError, load_skill, skill_from_parts

__all__ = ["PACKAGE_SKILLS", "VAULT_SKILLS", "SkillSet", "discover"]

PACKAGE_SKILLS = Path(__file__).parent / "builtin"
VAULT_SKILLS = "Shad/Skills"
_BUILTIN_STRATEGIES = frozenset(strategies.names())
_added_strategies: dict[str, str] = {}  # strategy name -> the skill (and source) that added it


@dataclass
class SkillSet:
    """The skills in force, by name; what could not be loaded; what was overridden."""

    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[dict[str, str]] = field(default_factory=list)  # {"path", "message"}
    shadowed: list[dict[str, str]] = field(default_factory=list)  # {"name", "source", "path", "by"}

    def __iter__(self) -> Iterator[Skill]:
        return iter(sorted(self.skills.values(), key=lambda s: s.name))

    def __len__(self) -> int:
        return len(self.skills)

    def __contains__(self, name: object) -> bool:
        return name in self.skills

    def names(self) -> list[str]:
        return sorted(self.skills)

    def get(self, name: str) -> Skill:
        skill = self.skills.get(str(name).strip().lower())
        if skill is None:
            raise UsageError(
                f"no skill named {name!r}",
                hint=f"known skills: {', '.join(self.names()) or 'none'}; list them with shad skills ls",
            )
        return skill

    def to_dict(self) -> dict[str, Any]:
        return {
            "skills": [s.to_dict(guidance=False) for s in self],
            "problems": list(self.problems),
            "shadowed": list(self.shadowed),
        }


def _package_files() -> list[tuple[Path, str]]:
    files = sorted(PACKAGE_SKILLS.glob("*/SKILL.md"))
    return [(f, f"engine/skills/builtin/{f.parent.name}/SKILL.md") for f in files]


def _folder_skills(root: Path, source: str, found: SkillSet) -> list[Skill]:
    base = root / VAULT_SKILLS
    if not base.is_dir():
        return []
    out = []
    for file in sorted(base.rglob("SKILL.md")):
        rel = file.relative_to(root).as_posix()
        if file.is_symlink() or not file.resolve().is_relative_to(root.resolve()):
            found.problems.append({"path": rel, "message": "a link that leaves the vault; ignored"})
            continue
        try:
            out.append(load_skill(file, source=source, shown_as=rel))
        except SkillError as exc:
            found.problems.append({"path": rel, "message": exc.message})
    return out


def _remote_skills(vault: Any, found: SkillSet) -> list[Skill]:
    """Skills of a vault read through a backend (``mcp:``): listed and read through its API."""
    out = []
    try:
        paths = [p for p in vault.list_notes(VAULT_SKILLS) if p.rsplit("/", 1)[-1] == "SKILL.md"]
    except (NoteNotFoundError, ShadError):
        return []
    for rel in sorted(paths):
        try:
            note = vault.read_note(rel)
            out.append(skill_from_parts(note.frontmatter, note.body, path=rel, source=vault.id))
        except ShadError as exc:
            found.problems.append({"path": rel, "message": exc.message})
    return out


def _vault_skills(vault: Any, found: SkillSet) -> list[Skill]:
    if isinstance(vault, (str, os.PathLike)):
        root = Path(vault).expanduser()
        return _folder_skills(root, root.name, found)
    if is_local(vault):
        return _folder_skills(Path(vault.root), vault.id, found)
    return _remote_skills(vault, found)


def _add_strategy(skill: Skill, found: SkillSet) -> None:
    data = skill.strategy or {}
    name = str(data.get("name", "")).strip().lower()
    owner = f"{skill.name} ({skill.source})"
    if name in _BUILTIN_STRATEGIES:
        found.problems.append(
            {"path": skill.path, "message": f"its strategy {name!r} would replace a built-in one; ignored"}
        )
        return
    try:
        strategies.register(data, replace=name in _added_strategies)
    except (KeyError, TypeError, ValueError, ShadError) as exc:
        found.problems.append({"path": skill.path, "message": f"its strategy cannot be used: {exc}"})
        return
    _added_strategies[name] = owner


def discover(vaults: Sequence[Any] = (), *, package: bool = True) -> SkillSet:
    """The skills for these vaults (folders, ``Vault`` objects or backend vaults, in priority order)."""
    found = SkillSet()
    layers: list[list[Skill]] = []
    for vault in reversed(list(vaults)):  # lowest priority first: later layers override earlier ones
        layers.append(_vault_skills(vault, found))
    if package:
        package_skills = []
        for file, shown in _package_files():
            try:
                package_skills.append(load_skill(file, source="package", shown_as=shown))
            except SkillError as exc:
                found.problems.append({"path": shown, "message": exc.message})
        layers.insert(0, package_skills)
    for layer in layers:
        seen_here: set[str] = set()
        for skill in layer:
            if skill.name in seen_here:
                found.problems.append(
                    {"path": skill.path, "message": f"a second skill named {skill.name!r} in {skill.source}"}
                )
                continue
            seen_here.add(skill.name)
            earlier = found.skills.get(skill.name)
            if earlier is not None:
                found.shadowed.append(
                    {"name": skill.name, "source": earlier.source, "path": earlier.path, "by": skill.source}
                )
                skill = replace(skill, overrides=earlier.source)
            found.skills[skill.name] = skill
    for skill in found.skills.values():
        if skill.strategy:
            _add_strategy(skill, found)
    return found
