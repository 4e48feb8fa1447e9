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
from _net import start_server

from engine.codemode import Sandbox
from engine.errors import NoteNotFoundError, UsageError
from engine.mcp import McpBackendError, McpVault, open_mcp_vault
from engine.vault import Vault, VaultSet, is_local, location

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
    with pytest.raises(UsageError, match="modified_after"):
        remote.search("beans", modified_after="2020-01-01")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: [h.path for h in remote.search(q)], ["beans", "water"] * 4))
    assert results[0] == results[2] and results[1] == results[3]
    remote.close()
    with pytest.raises(McpBackendError, match="closed"):
        remote.list_notes()


def test_streamable_http_url(vault: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV} | _env()
    proc, port = start_server(lambda port: _serve_argv(vault, "--http", str(port)), env=env, cwd=REPO)
    try:
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


def test_filters_links_and_neighbours_match_the_folder(remote: McpVault, vault: Path) -> None:
    local = Vault(vault)
    local.refresh()
    for kwargs in ({"where": {"type": "method"}}, {"exclude": ("Roasting", "Brewing")}, {"type": "bean"}):
        got = [h.path for h in remote.search("coffee", limit=20, **kwargs)]  # type: ignore[arg-type]
        assert got == [h.path for h in local.search("coffee", limit=20, **kwargs)]  # type: ignore[arg-type]
    assert not any(
        h.path.startswith(("Roasting/", "Brewing/"))
        for h in remote.search("roast", exclude=("Roasting", "Brewing"))
    )
    for target in ("Roasting/First crack", "First crack", "Home", "Roasting/First crack.md", "No such note"):
        assert remote.resolve_link(target) == local.resolve_link(target)
    for path, depth in (("Roasting/First crack.md", 1), ("Home.md", 2)):
        assert remote.neighbors(path, depth) == sorted(local.neighbors(path, depth))
    assert not is_local(remote) and is_local(local)
    assert location(remote).startswith("mcp:") and location(local) == str(local.root)


SCRIPT = """
hits = obsidian.search("resting beans espresso", limit=5)
first = hits[0]["path"]
note = obsidian.read_note(first)
__result__ = {
    "vaults": obsidian.vaults(),
    "hits": [(h["path"], h["heading"]) for h in hits],
    "listed": sorted(obsidian.list_notes("Roasting")),
    "note": [note["path"], note["title"], note["frontmatter"], note["body"], note["hash"]],
    "backlinks": sorted(note["backlinks"]),
    "frontmatter": obsidian.get_frontmatter("Brewing/Espresso.md"),
    "hash": obsidian.get_hash("Brewing/Espresso.md"),
    "links": obsidian.links(first),
    "neighbors": obsidian.neighbors("Roasting/First crack.md", depth=1),
    "wikilink": obsidian.create_wikilink(first, heading="How long to rest"),
}
try:
    obsidian.read_note("No/such note.md")
except Exception as exc:
    __result__["missing"] = str(exc)
"""


def test_the_sandbox_api_answers_the_same_on_either_backend(vault: Path) -> None:
    """A model-written script gets the same answers whether the vault is the folder or the MCP server."""
    with McpVault(_serve_argv(vault), id="vault", env=_env()) as served:
        results = []
        for vaults in (VaultSet([Vault(vault)]), VaultSet([served])):
            sandbox = Sandbox(vaults)
            try:
                results.append(sandbox.run(SCRIPT).result)
            finally:
                sandbox.close()
    by_folder, by_mcp = results
    assert by_folder["hits"] and by_folder["listed"] and "no note" in by_folder["missing"]
    assert by_mcp == by_folder


def test_an_unreachable_backend_fails_before_a_run_folder_exists(tmp_path: Path) -> None:
    from engine.config import RunConfig
    from engine.runs import run

    home = Path(os.environ["SHAD_HOME"])
    with pytest.raises(McpBackendError, match="could not connect"):
        run(RunConfig("anything", ("mcp:/no/such/server-binary",), provider="offline"))
    assert not (home / "history").exists() or not any((home / "history").iterdir())
