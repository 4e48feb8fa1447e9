"""The claude-code provider, driven through a fake ``claude`` executable placed first on PATH."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import typing
from pathlib import Path

import pytest

from engine.llm import LLMRequest, ProviderError, Recorder, Tier, get
from engine.llm._claude_code import ClaudeCodeProvider

SECRET = "sk-ant-test-0123456789abcdef"

FAKE_CLAUDE = """#!{python}
# A stand-in for the Claude Code CLI: logs how it was called, answers per FAKE_CLAUDE_MODE.
import json, os, sys, time
prompt = sys.stdin.read()
log = os.environ.get("FAKE_CLAUDE_LOG")
if log:
    with open(log, "a") as f:
        f.write(json.dumps({{"argv": sys.argv[1:], "stdin": prompt}}) + "\\n")
modes = os.environ.get("FAKE_CLAUDE_MODE", "ok").split(",")
calls = sum(1 for _ in open(log)) if log else 1
mode = modes[min(calls, len(modes)) - 1]
usage = {{"input_tokens": 12, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 5,
          "output_tokens": 7}}
if mode == "ok":
    text = os.environ.get("FAKE_CLAUDE_TEXT", "Rest beans a week [[Coffee/Roasting]].")
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": text,
                      "usage": usage, "modelUsage": {{"claude-sonnet-5-5": {{}}}}, "total_cost_usd": 0.001}}))
elif mode == "limit":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": True,
                      "result": "Claude AI usage limit reached", "usage": usage}}))
elif mode == "crash":
    sys.stderr.write("fatal: something broke, key=" + os.environ.get("ANTHROPIC_API_KEY", "") + "\\n")
    sys.exit(3)
elif mode == "slow":
    time.sleep(10)
"""


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Puts a fake ``claude`` first on PATH; returns the log file of its invocations."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(FAKE_CLAUDE.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    log = tmp_path / "claude.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.delenv("SHAD_CLAUDE_BIN", raising=False)
    return log


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def run(provider: typing.Any, request: LLMRequest) -> typing.Any:
    return asyncio.run(provider.complete(request))


def invocations(log: Path) -> list[dict[str, typing.Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_print_mode_json_result_is_parsed(fake_claude: Path) -> None:
    provider = get("claude-code")
    assert isinstance(provider, ClaudeCodeProvider)
    response = run(provider, LLMRequest("answer", Tier.LEAF, "How long do beans rest?", system="Cite notes."))
    assert response.text == "Rest beans a week [[Coffee/Roasting]]."
    assert response.provider == "claude-code" and response.model == "claude-sonnet-5-5"
    assert (response.input_tokens, response.output_tokens) == (12 + 3 + 5, 7)  # cache tokens count too
    (seen,) = invocations(fake_claude)
    assert seen["stdin"] == "How long do beans rest?"
    argv = seen["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert argv[argv.index("--model") + 1] == "haiku"  # the leaf tier's default alias
    assert argv[argv.index("--system-prompt") + 1] == "Cite notes."


def test_expected_json_is_parsed_into_data(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_TEXT", 'Here you go:\n```json\n{"supported": true, "reason": "r"}\n```')
    response = run(get("claude-code"), LLMRequest("judge", Tier.JUDGE, "Supported?", expect_json=True))
    assert response.data == {"supported": True, "reason": "r"}


def test_reported_error_is_retried_then_raised_with_usage(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "limit,limit")
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as info:
        run(get("claude-code", sleep=sleeps, max_retries=1), LLMRequest("answer", Tier.WORKER, "q"))
    err = info.value
    assert err.kind == "rate_limit" and err.retries == 1 and len(sleeps) == 1
    assert err.tokens == 2 * (12 + 3 + 5 + 7)
    assert len(invocations(fake_claude)) == 2


def test_a_failure_then_success(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "crash,ok")
    response = run(get("claude-code", sleep=Sleeps()), LLMRequest("answer", Tier.WORKER, "q"))
    assert response.retries == 1 and response.text.startswith("Rest beans")


def test_crash_without_json_is_a_server_error_without_secrets(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "crash")
    with pytest.raises(ProviderError) as info:
        run(get("claude-code", max_retries=0), LLMRequest("answer", Tier.WORKER, "q"))
    assert info.value.kind == "server" and "exited with code 3" in info.value.message
    assert SECRET not in str(info.value) and "[REDACTED]" in info.value.message


def test_a_hung_cli_is_killed_as_a_timeout(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "slow")
    with pytest.raises(ProviderError) as info:
        run(get("claude-code", timeout=0.5, max_retries=0), LLMRequest("answer", Tier.WORKER, "q"))
    assert info.value.kind == "timeout"


def test_missing_binary_is_a_clear_unavailable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude anywhere
    monkeypatch.delenv("SHAD_CLAUDE_BIN", raising=False)
    with pytest.raises(ProviderError) as info:
        get("claude-code")
    assert info.value.kind == "unavailable" and "not found on PATH" in info.value.message
    assert "npm install" in (info.value.hint or "")


def test_recorded_calls_hold_no_secret(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recorder = Recorder(get("claude-code"))
    run(recorder, LLMRequest("answer", Tier.WORKER, f"q (leaked {SECRET})", node_id="n1"))
    path = recorder.write(tmp_path / "replay" / "manifest.json")
    text = path.read_text()
    assert SECRET not in text and "[REDACTED]" in text
