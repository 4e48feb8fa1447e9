"""``SKILL.md`` parsing: the fields Shad uses, validated, with the file named in every error."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from engine.skills import PACKAGE_SKILLS, Skill, SkillError, load_skill, parse_skill

GOOD = """---
name: field-notes
description: Notes from the field.
use_when: ["what did we see *", "field report *"]
intents: [observation, sighting]
composes_with: exact-details
priority: 30
max_depth: 1
default_voice: plain
version: 2
owner: ana
---
Write what was seen, where and when.
"""


def test_a_skill_file_gives_every_field() -> None:
    skill = parse_skill(GOOD, path="Shad/Skills/field-notes/SKILL.md", source="notes")
    assert skill == Skill(
        name="field-notes",
        description="Notes from the field.",
        guidance="Write what was seen, where and when.",
        use_when=("what did we see *", "field report *"),
        intents=("observation", "sighting"),
        composes_with=("exact-details",),  # one word is a list of one
        priority=30,
        max_depth=1,
        default_voice="plain",
        version="2",
        source="notes",
        path="Shad/Skills/field-notes/SKILL.md",
        extra={"owner": "ana"},
    )
    data = skill.to_dict()
    assert data["guidance"].startswith("Write") and data["adds_strategy"] is None
    assert "guidance" not in skill.to_dict(guidance=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no frontmatter at all\n", "no YAML frontmatter"),
        ("---\nname: [unclosed\n---\nx\n", "SKILL.md"),
        ("---\ndescription: x\n---\n", "`name`"),
        ("---\nname: Has Spaces\ndescription: x\n---\n", "`name`"),
        ("---\nname: ok\n---\n", "`description` is missing"),
        ("---\nname: ok\ndescription: x\nintents: {a: 1}\n---\n", "`intents`"),
        ("---\nname: ok\ndescription: x\npriority: 500\n---\n", "`priority`"),
        ("---\nname: ok\ndescription: x\nmax_depth: true\n---\n", "`max_depth`"),
        ("---\nname: ok\ndescription: x\nstrategy: research\n---\n", "`strategy`"),
    ],
)
def test_bad_skill_files_are_refused_with_the_file_named(text: str, message: str) -> None:
    with pytest.raises(SkillError, match=message) as info:
        parse_skill(text, path="Shad/Skills/x/SKILL.md")
    assert info.value.path == "Shad/Skills/x/SKILL.md" and info.value.exit_code == 2
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.path == info.value.path and copy.message == info.value.message


def test_the_package_skills_all_load(tmp_path: Path) -> None:
    files = sorted(PACKAGE_SKILLS.glob("*/SKILL.md"))
    assert len(files) >= 5
    for file in files:
        skill = load_skill(file)
        assert skill.name == file.parent.name and skill.guidance and skill.use_when
    with pytest.raises(SkillError, match="cannot read"):
        load_skill(tmp_path / "missing" / "SKILL.md")


def test_a_skill_file_is_parsed_again_only_when_it_changes(tmp_path: Path) -> None:
    file = tmp_path / "SKILL.md"
    file.write_text(GOOD, encoding="utf-8")
    first = load_skill(file, source="notes")
    assert load_skill(file, source="notes") is first  # unchanged: the skill parsed before
    assert load_skill(file, source="other").source == "other"  # another source is another skill
    file.write_text(GOOD.replace("Notes from the field.", "Notes, edited."), encoding="utf-8")
    edited = load_skill(file, source="notes")
    assert edited.description == "Notes, edited."  # written again: read again, never the stale one
    file.write_text(GOOD.replace("name: field-notes", "name: Bad Name"), encoding="utf-8")
    with pytest.raises(SkillError, match="name"):  # broken now: the error, not the last good skill
        load_skill(file, source="notes")
    file.unlink()
    with pytest.raises(SkillError, match="cannot read"):
        load_skill(file, source="notes")
