"""``%shad skills``: the skills in force (with the session vault's overrides) as a DataFrame, one skill as
markdown, and a goal's routing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _notebook_helpers import magics_shell
from IPython.core.interactiveshell import InteractiveShell

from engine.errors import UsageError
from shad_magics._skills_lines import SKILL_COLUMNS

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Espresso.md").write_text("# Espresso\n\nNine bars.\n")
    skill = root / "Shad" / "Skills" / "timeline"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: timeline\ndescription: Our dates.\nuse_when: ['when *']\n---\nISO dates.\n"
    )
    return root


@pytest.fixture
def shell(tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, vault)


def magic(sh: InteractiveShell, text: str) -> Any:
    return sh.run_line_magic("shad", text)


def test_skills_table_one_skill_and_routing(shell: InteractiveShell) -> None:
    frame = magic(shell, "skills")
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == SKILL_COLUMNS
    rows = frame.set_index("name")
    assert rows.loc["timeline", "source"] == "vault" and rows.loc["timeline", "overrides"] == "package"
    assert rows.loc["how-to", "source"] == "package" and frame.attrs["problems"] == []
    one = magic(shell, "skills timeline")
    assert "ISO dates." in one._repr_markdown_() and one.data["use_when"] == ["when *"]
    routed = magic(shell, 'skills --goal "Compare espresso versus filter"')
    assert routed.attrs["primary"] == "compare" and routed.iloc[0]["name"] == "compare"
    with pytest.raises(UsageError, match="no skill named"):
        magic(shell, "skills nope")
