"""``shad skills ls | show | route``: the package's skills, a vault's overrides, JSON for programs, and
clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _demo import DEMO

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = Path(shutil.copytree(DEMO, tmp_path / "vault"))
    own = root / "Shad" / "Skills" / "compare"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text(
        "---\nname: compare\ndescription: Our comparison rules.\nuse_when: ['* against *']\n---\nTables.\n",
        encoding="utf-8",
    )
    broken = root / "Shad" / "Skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no frontmatter\n", encoding="utf-8")
    return root


def test_ls_show_and_route(shad: Any, vault: Path) -> None:
    plain = shad("skills", "ls")
    assert plain.code == 0 and "how-to" in plain.out and "package" in plain.out
    listed = shad("skills", "ls", "--vault", str(vault), "--json")
    by_name = {s["name"]: s for s in listed.json()["skills"]}
    assert by_name["compare"]["source"] == "vault" and by_name["compare"]["overrides"] == "package"
    assert listed.json()["problems"][0]["path"] == "Shad/Skills/broken/SKILL.md"
    text = shad("skills", "ls", "--vault", str(vault))
    assert "overrides package" in text.out and "problem: Shad/Skills/broken/SKILL.md" in text.err

    shown = shad("skills", "show", "compare", "--vault", str(vault), "--json")
    assert shown.json()["guidance"] == "Tables." and shown.json()["use_when"] == ["* against *"]
    assert "Tables." in shad("skills", "show", "compare", "--vault", str(vault)).out

    routed = shad("skills", "route", "Espresso against filter coffee", "--vault", str(vault), "--json")
    assert routed.json()["primary"] == "compare"
    assert "primary: how-to" in shad("skills", "route", "How do I dial in a grinder?").out


def test_errors_are_one_line(shad: Any, tmp_path: Path) -> None:
    missing = shad("skills", "show", "nope")
    assert missing.code == 2 and "no skill named 'nope'" in missing.err and "how-to" in missing.err
    gone = shad("skills", "ls", "--vault", str(tmp_path / "nowhere"))
    assert gone.code == 2 and "Traceback" not in gone.err


def test_voices_and_a_voice_without_a_model(shad: Any, vault: Path) -> None:
    listed = shad("skills", "voices", "--json")
    assert listed.code == 0 and {"plain", "brief", "teacher"} <= {v["name"] for v in listed.json()}
    refused = shad("run", "How long should beans rest?", "--vault", str(vault), "--voice", "brief")
    assert refused.code == 2 and "needs a language model" in refused.err and "Traceback" not in refused.err
    unknown = shad("run", "How long should beans rest?", "--vault", str(vault), "--voice", "pirate")
    assert unknown.code == 2 and "no voice named 'pirate'" in unknown.err
    assert not (vault / "Shad" / "History").exists()  # refused before any run folder was made
