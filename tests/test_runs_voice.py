"""``--voice`` in a run, against the stand-in Anthropic server: a faithful rendering replaces the answer
(the status, Shad's notes and sections stay); one that changes a number or drops a citation is caught and
the original report is kept, with a warning; the voice call is recorded for replay."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO
from _fake_llm import FakeLLMServer, prompt_of, well_behaved

from engine import RunConfig, run

pytestmark = pytest.mark.usefixtures("shad_home")
GOAL = "How long should roasted beans rest before brewing espresso?"
VOICE_ASK = "Rewrite the report below in the voice"


def _answer_part(prompt: str) -> str:
    return prompt.split("\n---\n", 1)[1]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-voice-000000000000")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


def _voiced(vault: Path, server: FakeLLMServer, rewrite: Any) -> Any:
    def reply(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        return rewrite(_answer_part(prompt)) if VOICE_ASK in prompt else well_behaved(prompt)

    server.set_reply(reply)
    return run(RunConfig(GOAL, (str(vault),), provider="anthropic", code_mode=False, voice="brief"))


def test_a_faithful_voice_is_used(vault: Path, server: FakeLLMServer) -> None:
    result = _voiced(vault, server, lambda answer: "In brief, from your notes:\n\n" + answer)
    voice = result.summary["voice"]
    assert voice["applied"] is True and voice["name"] == "brief" and voice["chosen_by"] == "--voice"
    report = Path(result.summary["report_path"]).read_text(encoding="utf-8")
    assert "In brief, from your notes:" in report and report.startswith("---\n")
    assert f"status: {result.status.value}" in report
    original = (result.history.dir / "artifacts" / "report.unvoiced.md").read_text(encoding="utf-8")
    assert "In brief" not in original
    assert set(re.findall(r"\[\[[^\]]+\]\]", original)) == set(re.findall(r"\[\[[^\]]+\]\]", report))
    recorded = result.history.read_json("replay/manifest.json")["calls"]
    assert any(call.get("purpose") == "voice" for call in recorded)
    assert result.summary["metrics"]["llm_calls"] == len(server.requests)


@pytest.mark.parametrize(
    ("change", "caught"),
    [
        (lambda a: a.rstrip() + "\nBeans rest exactly 3 days.\n", "numbers changed"),
        (lambda a: re.sub(r"\[\[[^\]]+\]\]", "", a, count=1), "citations changed"),
    ],
)
def test_an_unfaithful_voice_keeps_the_original(
    vault: Path, server: FakeLLMServer, change: Any, caught: str
) -> None:
    result = _voiced(vault, server, change)
    voice = result.summary["voice"]
    assert voice["applied"] is False and caught in voice["reason"]
    report = Path(result.summary["report_path"]).read_text(encoding="utf-8")
    assert "[!warning] Voice 'brief'" in report and caught in report
    assert not (result.history.dir / "artifacts" / "report.unvoiced.md").exists()
