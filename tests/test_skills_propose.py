"""Shad never changes its own skills: the writer refuses Shad/Skills/ to every role but a person, and a
proposed change is a staging note (kind: skill) a person reviews."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.curation import learnings
from engine.skills import SkillError, discover, propose_skill_change
from engine.vault import VaultWriter, WriteRefusedError

pytestmark = pytest.mark.usefixtures("shad_home")

SKILL = "---\nname: how-to\ndescription: Steps first.\nuse_when: ['how do i *']\n---\nNumber the steps.\n"


def test_only_a_person_writes_skills(tmp_path: Path) -> None:
    for role in ("root", "subtask", "sandbox"):
        with pytest.raises(WriteRefusedError, match=r"does not change Shad/Skills|may not write"):
            VaultWriter(tmp_path, role=role).write_note("Shad/Skills/how-to/SKILL.md", "x")
    with pytest.raises(WriteRefusedError, match="does not change Shad/Skills"):
        VaultWriter(tmp_path, role="root").write_note("shad/skills/how-to/SKILL.md", "x")  # any case
    written = VaultWriter(tmp_path, role="person").write_note("Shad/Skills/how-to/SKILL.md", SKILL)
    assert written.action == "created"
    assert discover([tmp_path]).get("how-to").source == tmp_path.name


def test_a_change_is_proposed_as_a_staging_note(tmp_path: Path) -> None:
    path = propose_skill_change(tmp_path, SKILL, reason="people asked for numbered steps", run_id="run-1")
    assert path.startswith("Shad/Staging/") and not (tmp_path / "Shad" / "Skills").exists()
    staged = next(x for x in learnings(tmp_path) if x.path == path)
    assert staged.kind == "skill" and staged.status == "staging"
    text = (tmp_path / path).read_text(encoding="utf-8")
    assert "numbered steps" in text and "Shad/Skills/how-to/SKILL.md" in text and "name: how-to" in text
    with pytest.raises(SkillError):
        propose_skill_change(tmp_path, "not a skill", reason="x", run_id="run-1")
