"""``shad mcp serve`` against the ``mcp`` SDK's own client: the server runs as a subprocess (stdio, and
streamable HTTP on a free loopback port) over a copy of the demo vault, with the offline provider."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from _demo import DEMO
from _net import start_server
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from engine.errors import UsageError
from engine.mcp import PROGRESS_KINDS, ShadService, redact

pytestmark = pytest.mark.usefixtures("shad_home")

REPO = Path(__file__).resolve().parent.parent
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")
KEY = "sk-ant-test-0123456789abcdef"
GOAL = "How long should roasted beans rest before brewing?"
TOOLS = {"shad_run", "shad_search", "shad_read_note", "shad_list_notes", "shad_status"}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(DEMO, root)
    return root


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def _data(result: types.CallToolResult) -> Any:
    assert not result.is_error, _text(result)
    if result.structured_content is not None:
        data = result.structured_content
        # a list (or other non-object) comes back wrapped as {"result": ...}
        return data["result"] if set(data) == {"result"} else data
    return json.loads(_text(result))


@asynccontextmanager
async def _stdio(*vaults: Path, env: dict[str, str], errlog: TextIO) -> AsyncIterator[ClientSession]:
    args = ["-m", "engine.cli", "mcp", "serve", *[a for v in vaults for a in ("--vault", str(v))]]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(REPO))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _search_cli(vault: Path, query: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "vault", "search", query, "--vault", str(vault), "--json"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    hits: list[dict[str, Any]] = json.loads(proc.stdout)
    return hits


def test_stdio_tools_search_read_run_status_and_report(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "Secret.md").write_text("# Secret\n\nresting beans", encoding="utf-8")
    expected = _search_cli(vault, "resting beans")
    env = {**_env(), "ANTHROPIC_API_KEY": KEY}  # set, but the run asks for the offline provider
    errlog = tmp_path / "server.err"

    async def scenario() -> None:
        with errlog.open("w", encoding="utf-8") as err:
            async with _stdio(vault, env=env, errlog=err) as session:
                await _exercise(session, vault, other, expected)

    anyio.run(scenario)
    assert KEY not in errlog.read_text(encoding="utf-8")


async def _exercise(session: ClientSession, vault: Path, other: Path, expected: list[dict[str, Any]]) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert tools["shad_run"].input_schema["required"] == ["goal"]
    assert {"goal", "strategy", "max_nodes", "max_tokens", "provider"} <= set(
        tools["shad_run"].input_schema["properties"]
    )
    assert {"query", "limit", "path", "type", "tag"} <= set(tools["shad_search"].input_schema["properties"])
    assert tools["shad_read_note"].input_schema["required"] == ["path"]
    assert tools["shad_status"].input_schema["required"] == ["run_id"]

    # search: the same hits as `shad vault search --json`
    hits = _data(await session.call_tool("shad_search", {"query": "resting beans"}))
    assert [h["path"] for h in hits] == [h["path"] for h in expected]
    assert hits and {"path", "score", "snippet", "vault"} <= set(hits[0])
    filtered = _data(await session.call_tool("shad_search", {"query": "beans", "path": "Roasting"}))
    assert filtered and all(h["path"].startswith("Roasting/") for h in filtered)

    # read a note
    path = hits[0]["path"]
    note = _data(await session.call_tool("shad_read_note", {"path": path}))
    assert note["path"] == path and note["body"] and "frontmatter" in note and "links" in note
    assert note["body"].strip() in (vault / path).read_text(encoding="utf-8")

    # another folder, an escaping path, a missing note: error results, and the server lives on
    refused: list[tuple[str, dict[str, Any]]] = [
        ("shad_search", {"query": "beans", "vault": str(other)}),
        ("shad_read_note", {"path": "../other/Secret.md"}),
        ("shad_read_note", {"path": str(other / "Secret.md")}),
        ("shad_run", {"goal": GOAL, "vaults": [str(other)], "provider": "offline"}),
        ("shad_status", {"run_id": str(other)}),
    ]
    for name, args in refused:
        result = await session.call_tool(name, args)
        assert result.is_error, (name, _text(result))
        assert KEY not in _text(result)
    missing = await session.call_tool("shad_read_note", {"path": "No/such note.md"})
    assert missing.is_error and "hint:" in _text(missing)

    # a run, with one progress notification per finished node
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    run_args: dict[str, Any] = {"goal": GOAL, "provider": "offline", "max_nodes": 8}
    result = await session.call_tool(
        "shad_run",
        run_args,
        read_timeout_seconds=120,
        progress_callback=on_progress,
    )
    summary = _data(result)
    assert summary["status"] in ("SUCCESS", "PARTIAL"), summary
    assert summary["run_id"] and summary["report"] and summary["report_path"]
    assert summary["citations"]
    for c in summary["citations"]:
        assert (vault / c["path"]).is_file(), c
    assert KEY not in json.dumps(summary)
    events = Path(summary["history_dir"], "events.jsonl").read_text(encoding="utf-8").splitlines()
    finished = [e for e in map(json.loads, events) if e["type"] in PROGRESS_KINDS]
    assert seen and len(seen) == len(finished)
    assert [p[0] for p in seen] == sorted(p[0] for p in seen)
    assert all(total is not None and done <= total for done, total, _ in seen)

    # status and the report resource
    status = _data(await session.call_tool("shad_status", {"run_id": summary["run_id"]}))
    assert status["run_id"] == summary["run_id"] and status["status"] == summary["status"]
    assert (await session.call_tool("shad_status", {"run_id": "20990101-000000-nope"})).is_error
    report = await session.read_resource(f"shad://runs/{summary['run_id']}/report")
    text = report.contents[0]
    assert isinstance(text, types.TextResourceContents)
    assert text.text == summary["report"]
    runs = await session.read_resource("shad://runs")
    listed = runs.contents[0]
    assert isinstance(listed, types.TextResourceContents)
    assert summary["run_id"] in [r["run_id"] for r in json.loads(listed.text)]
    with pytest.raises(MCPError, match="no run"):
        await session.read_resource("shad://runs/20990101-000000-nope/report")
    templates = (await session.list_resource_templates()).resource_templates
    assert "shad://runs/{run_id}/report" in [t.uri_template for t in templates]


def test_streamable_http(vault: Path) -> None:
    proc, port = start_server(
        lambda port: [
            sys.executable,
            "-m",
            "engine.cli",
            "mcp",
            "serve",
            "--vault",
            str(vault),
            "--http",
            str(port),
        ],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
    )
    try:

        async def scenario() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                assert {t.name for t in (await session.list_tools()).tools} >= TOOLS
                hits = _data(await session.call_tool("shad_search", {"query": "first crack", "limit": 3}))
                assert 0 < len(hits) <= 3
                note = _data(await session.call_tool("shad_read_note", {"path": hits[0]["path"]}))
                assert note["path"] == hits[0]["path"]
                bad = await session.call_tool("shad_search", {"query": "x", "vault": "/etc"})
                assert bad.is_error and "not one of the vaults" in _text(bad)

        anyio.run(scenario)
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_non_loopback_host_is_refused(vault: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "mcp",
            "serve",
            "--vault",
            str(vault),
            "--http",
            "1",
            "--host",
            "0.0.0.0",
        ],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "loopback" in proc.stderr and not proc.stdout


def test_service_confines_paths_and_redacts(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = ShadService([vault])
    assert service.vault_ids([str(vault)]) == service.vault_ids([vault.name]) == [service.vaults.ids[0]]
    for bad in ("../x.md", "/etc/passwd", "a/../../b.md", "C:/x.md", ""):
        with pytest.raises(UsageError):
            service.read_note(bad)
    with pytest.raises(UsageError):
        service.vault_ids([str(tmp_path)])
    with pytest.raises(UsageError):
        service.status("../../etc")
    with pytest.raises(UsageError):
        ShadService([tmp_path / "missing"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    assert redact("key sk-ant-secret-value here") == "key <ANTHROPIC_API_KEY> here"


def test_stdout_carries_only_the_protocol(vault: Path) -> None:
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "shad_search", "arguments": {"query": "beans"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "shad_read_note", "arguments": {"path": "/etc/passwd"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "mcp", "serve", "--vault", str(vault)],
        cwd=REPO,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        replies = sorted((json.loads(proc.stdout.readline()) for _ in range(3)), key=lambda r: int(r["id"]))
    finally:
        proc.stdin.close()  # end of input: the server exits
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        rest = proc.stdout.read()
        if proc.stderr is not None:
            proc.stderr.close()
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert not replies[1]["result"].get("isError") and replies[2]["result"]["isError"] is True
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
