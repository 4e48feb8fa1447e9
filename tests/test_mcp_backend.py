"""``McpVault``: a vault read through an MCP server. The other end is a real ``shad mcp serve`` subprocess
(stdio, and streamable HTTP) over a copy of the demo vault; what it gives must match the folder itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _demo import DEMO
from _net import free_port, wait_until_listening

from engine.errors import NoteNotFoundError, UsageError
from engine.mcp import McpBackendError, McpVault, open_mcp_vault
from engine.vault import Vault

pytestmark = pytest.mark.usefixtures("shad_home")

REPO = Path(__file__).resolve().parent.parent
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(DEMO, root)
    return root


def _serve_argv(vault: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "engine.cli", "mcp", "serve", "--vault", str(vault), *extra]


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "SHAD_HOME": os.environ["SHAD_HOME"]}


@pytest.fixture
def remote(vault: Path) -> Iterator[McpVault]:
    with McpVault(_serve_argv(vault), id="remote", env=_env()) as mv:
        yield mv


def test_lists_reads_and_searches_like_the_folder(remote: McpVault, vault: Path) -> None:
    local = Vault(vault)
    local.refresh()
    assert remote.server_name == "shad" and {"shad_search", "shad_read_note"} <= set(remote.tools)

    assert sorted(remote.list_notes()) == sorted(local.list_notes())
    assert sorted(remote.list_notes("Roasting")) == sorted(local.list_notes("Roasting"))
    assert sorted(remote.list_notes("Brewing", recursive=False)) == sorted(local.list_notes("Brewing", False))

    for path in local.list_notes()[:5]:
        got, want = remote.read_note(path), local.read_note(path)
        assert got.vault == "remote"
        assert (got.path, got.title, got.frontmatter, got.body, got.tags, got.hash) == (
            want.path,
            want.title,
            want.frontmatter,
            want.body,
            want.tags,
            want.hash,
        )
        assert got.links == want.links and got.headings == want.headings and got.type == want.type
        assert remote.backlinks(path) == local.backlinks(path)
    assert remote.content_hashes([*local.list_notes()[:3], "No/such.md"]) == local.content_hashes(
        local.list_notes()[:3]
    )

    for query, filters in [("resting beans", {}), ("grind", {"path": "Brewing"}), ("water", {"limit": 3})]:
        got_hits = remote.search(query, **filters)  # type: ignore[arg-type]
        want_hits = local.search(query, **filters)  # type: ignore[arg-type]
        assert [h.path for h in got_hits] == [h.path for h in want_hits]
        assert all(h.vault == "remote" for h in got_hits)
    assert remote.status()["notes"] == len(local.list_notes())


def test_errors_and_parallel_calls(remote: McpVault) -> None:
    with pytest.raises(NoteNotFoundError, match="no note"):
        remote.read_note("No/such note.md")
    with pytest.raises(NoteNotFoundError):
        remote.read_note("../../etc/passwd")
    with pytest.raises(UsageError, match="where"):
        remote.search("beans", where={"type": "bean"})
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: [h.path for h in remote.search(q)], ["beans", "water"] * 4))
    assert results[0] == results[2] and results[1] == results[3]
    remote.close()
    with pytest.raises(McpBackendError, match="closed"):
        remote.list_notes()


def test_streamable_http_url(vault: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV} | _env()
    proc = subprocess.Popen(
        _serve_argv(vault, "--http", str(port)), env=env, cwd=REPO, stderr=subprocess.PIPE
    )
    try:
        wait_until_listening(proc, port)
        with open_mcp_vault(f"mcp:http://127.0.0.1:{port}/mcp", id="web") as mv:
            local = Vault(vault)
            local.refresh()
            assert sorted(mv.list_notes()) == sorted(local.list_notes())
            assert [h.path for h in mv.search("first crack")] == [h.path for h in local.search("first crack")]
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_a_server_without_the_tools_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "other_server.py"
    script.write_text(
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer(name='other')\n"
        "@server.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "server.run('stdio')\n",
        encoding="utf-8",
    )
    with pytest.raises(McpBackendError, match="lacks the tools") as info:
        McpVault([sys.executable, str(script)], timeout=30)
    assert info.value.hint is not None and "echo" in info.value.hint


def test_backend_specs() -> None:
    for bad in ("mcp:", "folder:/x", "shad mcp serve"):
        with pytest.raises(UsageError):
            open_mcp_vault(bad)
    with pytest.raises(UsageError):
        McpVault()
    with pytest.raises(McpBackendError, match="could not connect"):
        open_mcp_vault("mcp:/no/such/server-binary --flag", timeout=10)
