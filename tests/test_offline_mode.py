"""Offline mode (E7): ``--offline`` or ``SHAD_OFFLINE=1`` refuses every external call even with API keys
set: the offline provider answers, the sandbox gets no network, webhooks and remote clones and remote MCP
servers are refused; a model provider asked for by name is a usage error."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _demo import DEMO
from _fake_llm import FakeLLMServer

from engine.config import RunConfig, offline_env
from engine.errors import UsageError

pytestmark = pytest.mark.usefixtures("shad_home")
GOAL = "How long should I rest beans after roasting?"


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A counting stand-in for the Anthropic API, with a key set: what a run would call if allowed."""
    with FakeLLMServer(reply=lambda body: "An answer.") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


def test_offline_runs_make_no_request_even_with_a_key(
    shad: Any, vault: Path, model_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    flagged = shad("run", GOAL, "--vault", str(vault), "--offline", "--json")
    assert flagged.code == 0, flagged.err
    assert flagged.json()["status"] == "SUCCESS" and flagged.json()["provider"] == "offline"
    assert "Offline mode (--offline or SHAD_OFFLINE=1): nothing left the machine." in Path(
        flagged.json()["report_path"]
    ).read_text(encoding="utf-8")
    monkeypatch.setenv("SHAD_OFFLINE", "1")
    assert offline_env()
    by_env = shad("run", GOAL + " Today.", "--vault", str(vault), "--json", "--no-cache")
    assert by_env.code == 0 and by_env.json()["provider"] == "offline"
    refused = shad("run", GOAL, "--vault", str(vault), "--provider", "anthropic")
    assert refused.code == 2 and "offline mode refuses the anthropic provider" in refused.err
    assert model_server.requests == []  # not one request reached the model server
    monkeypatch.delenv("SHAD_OFFLINE")
    allowed = shad("run", GOAL, "--vault", str(vault), "--json", "--no-cache", "--max-nodes", "1")
    assert allowed.code in (0, 3) and len(model_server.requests) > 0  # the server was reachable all along


def test_offline_refuses_every_way_out(vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--net-allow"):
        RunConfig(GOAL, (str(vault),), profile="extended", net_allow=("example.org",), offline=True)
    with pytest.raises(UsageError, match="on another host"):
        RunConfig(GOAL, ("mcp:https://mcp.example.org/mcp",), offline=True)
    RunConfig(GOAL, ("mcp:http://127.0.0.1:9/mcp", str(vault)), offline=True)  # loopback stays local

    from engine.curation._git import clone
    from engine.mcp import open_mcp_vault
    from engine.watch import check_webhooks

    monkeypatch.setenv("SHAD_OFFLINE", "1")
    config = RunConfig(GOAL, (str(vault),))
    assert config.offline and RunConfig.from_dict(config.to_dict()).offline
    with pytest.raises(UsageError, match="offline mode refuses webhooks"):
        check_webhooks(["http://127.0.0.1:9/hook"], ["127.0.0.1"])
    assert check_webhooks([], []) == []
    with pytest.raises(UsageError, match=r"cloning https://example\.org/repo\.git"):
        clone("https://example.org/repo.git", tmp_path / "clone")
    with pytest.raises(UsageError, match=r"cloning git@example\.org:repo\.git"):
        clone("git@example.org:repo.git", tmp_path / "clone")
    with pytest.raises(UsageError, match=r"MCP server at mcp\.example\.org"):
        open_mcp_vault("mcp:https://mcp.example.org/mcp")
    assert not (tmp_path / "clone").exists()


def test_watch_offline_refuses_webhooks(shad: Any, vault: Path) -> None:
    r = shad(
        "watch", str(vault), "--once", "--offline", "--webhook", "http://127.0.0.1:9/h",
        "--webhook-allow", "127.0.0.1", "--webhook-secret", "s",
    )  # fmt: skip
    assert r.code == 2 and "offline mode refuses webhooks" in r.err


def test_profiles_reach_the_run_sandbox(shad: Any, vault: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "extra.txt").write_text("extra", encoding="utf-8")
    bad = shad("run", GOAL, "--vault", str(vault), "--fs-read", str(docs))
    assert bad.code == 2 and "--fs-read needs --profile local" in bad.err
    bad = shad("run", GOAL, "--vault", str(vault), "--profile", "local", "--net-allow", "example.org")
    assert bad.code == 2 and "--net-allow needs --profile extended" in bad.err
    ok = shad("run", GOAL, "--vault", str(vault), "--profile", "local", "--fs-read", str(docs), "--json")
    assert ok.code == 0, ok.err
    manifest = Path(ok.json()["report_path"]).parent / "run.manifest.json"
    assert str(docs.resolve()) in manifest.read_text()
