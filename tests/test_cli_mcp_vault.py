"""``shad vault search | note | status`` with ``--vault mcp:COMMAND``: the same answers through an MCP server
(``shad mcp serve`` started over stdio by the SDK's own client) as from the folder itself."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _demo import DEMO

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def remote(vault: Path) -> str:
    return "mcp:" + shlex.join([sys.executable, "-m", "engine.cli", "mcp", "serve", "--vault", str(vault)])


def test_search_note_and_status_through_an_mcp_server(shad: Any, vault: Path) -> None:
    local = shad("vault", "search", "espresso grind ratio", "--vault", str(vault), "--json", "--limit", "5")
    served = shad(
        "vault", "search", "espresso grind ratio", "--vault", remote(vault), "--json", "--limit", "5"
    )
    assert served.code == 0, served.err
    assert [h["path"] for h in served.json()] == [h["path"] for h in local.json()]
    note = shad("vault", "note", "Brewing/Espresso.md", "--vault", remote(vault), "--json")
    assert note.code == 0, note.err
    assert note.json()["frontmatter"]["type"] == "method"
    status = shad("vault", "status", "--vault", remote(vault), "--json")
    assert status.code == 0 and status.json()["backend"] == "mcp" and status.json()["notes"] > 50


def test_a_bad_mcp_spec_is_a_usage_error(shad: Any) -> None:
    r = shad("vault", "search", "x", "--vault", "mcp:", "--json")
    assert r.code == 2 and "not an MCP backend" in r.err and "Traceback" not in r.err
