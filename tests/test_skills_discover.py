"""Skill discovery: the package's skills, overridden by name from the vaults' Shad/Skills/ (first vault
wins); broken files are problems, not crashes; a skill can add a strategy."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from _demo import DEMO

from engine import strategies
from engine.skills import discover

pytestmark = pytest.mark.usefixtures("shad_home")


def skill(root: Path, name: str, text: str) -> Path:
    folder = root / "Shad" / "Skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder / "SKILL.md"


def test_vaults_override_the_package_by_name(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        root.mkdir()
    skill(first, "how-to", "---\nname: how-to\ndescription: first's how-to\n---\nA\n")
    skill(second, "how-to", "---\nname: how-to\ndescription: second's how-to\n---\nB\n")
    skill(second, "local-only", "---\nname: local-only\ndescription: only here\n---\nC\n")
    found = discover([first, second])
    assert found.get("how-to").description == "first's how-to"
    assert found.get("how-to").source == "first" and found.get("how-to").overrides == "second"
    assert found.get("local-only").source == "second"
    assert found.get("compare").source == "package"
    assert {(s["name"], s["by"]) for s in found.shadowed} == {("how-to", "second"), ("how-to", "first")}
    assert discover([first], package=False).names() == ["how-to"]
    with pytest.raises(Exception, match="no skill named 'nope'"):
        found.get("nope")


def test_broken_and_escaping_files_are_problems(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    skill(root, "broken", "---\nname: [\n---\n")
    skill(root, "twice-a", "---\nname: twice\ndescription: a\n---\n")
    skill(root, "twice-b", "---\nname: twice\ndescription: b\n---\n")
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: sneaky\ndescription: x\n---\n", encoding="utf-8")
    (root / "Shad" / "Skills" / "sneaky").mkdir()
    (root / "Shad" / "Skills" / "sneaky" / "SKILL.md").symlink_to(outside)
    found = discover([root])
    messages = {p["path"]: p["message"] for p in found.problems}
    assert "Shad/Skills/broken/SKILL.md" in messages
    assert "leaves the vault" in messages["Shad/Skills/sneaky/SKILL.md"]
    assert "sneaky" not in found and "twice" in found
    assert any("a second skill named 'twice'" in m for m in messages.values())


@pytest.fixture
def registries() -> Iterator[None]:
    """Strategies a test's skills add are gone after it."""
    from engine.skills import _discover
    from engine.strategies import _skeleton

    saved, added = dict(_skeleton._REGISTRY), dict(_discover._added_strategies)
    yield
    _skeleton._REGISTRY.clear()
    _skeleton._REGISTRY.update(saved)
    _discover._added_strategies.clear()
    _discover._added_strategies.update(added)


@pytest.mark.usefixtures("registries")
def test_a_vault_skill_adds_a_strategy_but_never_replaces_a_builtin(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    skill(
        root,
        "postmortem",
        "---\nname: postmortem\ndescription: incident reviews\nstrategy:\n  name: postmortem\n"
        "  description: timeline, causes, actions\n  stages:\n"
        "    - {name: timeline, required: true, task: 'Timeline of {goal}'}\n"
        "    - {name: causes, required: true, primary: true, depends_on: [timeline],\n"
        "       task: 'Causes of {goal}'}\n"
        "---\nBlameless.\n",
    )
    skill(
        root,
        "hijack",
        "---\nname: hijack\ndescription: x\nstrategy:\n  name: research\n  stages: []\n---\n",
    )
    found = discover([root])
    assert "postmortem" in strategies.names()
    assert strategies.get("postmortem").stage_names == ["timeline", "causes"]
    assert found.get("postmortem").to_dict()["adds_strategy"] == "postmortem"
    assert any("replace a built-in" in p["message"] for p in found.problems)
    assert strategies.get("research").stage_names != []
    discover([root])  # discovering again re-registers its own strategy without an error


def test_a_vault_read_through_a_backend_gives_its_skills(tmp_path: Path) -> None:
    from engine.vault import Vault

    root = Path(shutil.copytree(DEMO, tmp_path / "demo"))
    skill(root, "roast-log", "---\nname: roast-log\ndescription: roast logs\n---\nLog it.\n")

    class Remote:  # the read API of a backend vault: no folder, notes listed and read
        read_only, root, id = True, None, "remote"

        def __init__(self) -> None:
            self.inner = Vault(root)

        def list_notes(self, folder: str | None = None, recursive: bool = True) -> list[str]:
            return self.inner.list_notes(folder, recursive)

        def read_note(self, path: str) -> object:
            return self.inner.read_note(path)

    found = discover([Remote()])
    assert found.get("roast-log").source == "remote" and found.get("roast-log").guidance == "Log it."
