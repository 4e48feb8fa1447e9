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


def test_a_run_reads_its_vault_through_an_mcp_server(shad: Any, vault: Path) -> None:
    """``shad run --backend mcp:...``: retrieval (the sandboxed scripts too), citations and the report go
    through the server; the run's history lives under $SHAD_HOME, and nothing is written into the vault."""
    before = sorted(p.relative_to(vault) for p in vault.rglob("*"))
    goal = "How long should I rest beans after roasting?"
    r = shad("run", goal, "--backend", remote(vault), "--provider", "offline", "--json")
    assert r.code == 0, r.err
    summary = r.json()
    assert summary["status"] == "SUCCESS"
    assert summary["citations"] and all(c["resolved"] and c["vault"] == "mcp" for c in summary["citations"])
    assert any(c["path"] == "Roasting/Resting beans.md" for c in summary["citations"])
    report = Path(summary["report_path"])
    assert report.parent.parent.name == "history" and "⚠ unresolved" not in report.read_text()
    assert sorted(p.relative_to(vault) for p in vault.rglob("*")) == before

    again = shad("run", goal, "--backend", remote(vault), "--provider", "offline", "--json")
    assert again.code == 0 and again.json()["metrics"]["cache_hits"] >= 1

    status = shad("status", summary["run_id"], "--json")
    assert status.code == 0 and status.json()["status"] == "SUCCESS"


def test_backend_flags_that_name_no_backend_are_usage_errors(shad: Any, vault: Path) -> None:
    for bad, message in (("shad mcp serve", "names no backend"), ("mcp:", "not an MCP backend")):
        r = shad("run", "anything", "--backend", bad, "--provider", "offline")
        assert r.code == 2 and message in r.err and "Traceback" not in r.err
    r = shad("run", "anything", "--backend", remote(vault), "--learn", "--provider", "offline")
    assert r.code == 2 and "--learn" in r.err
