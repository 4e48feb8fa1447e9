"""Recorder and replay: every call recorded (no secrets), a recorded run answered without any model."""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.llm import (
    MANIFEST_VERSION,
    LLMRequest,
    LLMResponse,
    ProviderError,
    Recorder,
    ReplayProvider,
    Tier,
    get,
    prompt_hash,
    request_key,
)
from engine.llm._replay import canonical_json

try:
    from tests._fake_llm import FakeLLMServer, prose, rate_limited
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import FakeLLMServer, prose, rate_limited  # type: ignore[no-redef]

KEY = "test-key-replay-0123456789"


class Scripted:
    """A provider stub that answers from a list, in order, and counts its calls."""

    name = "scripted"

    def __init__(self, *answers: str | ProviderError) -> None:
        self.answers = list(answers)
        self.calls: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, ProviderError):
            raise answer
        return LLMResponse(answer, self.name, "stub-1", input_tokens=10, output_tokens=len(answer.split()))

    async def aclose(self) -> None:
        return None


def req(purpose: str = "answer", prompt: str = "q", node: str = "n1", **kw: typing.Any) -> LLMRequest:
    return LLMRequest(purpose, Tier.WORKER, prompt, system="sys", node_id=node, **kw)


def drive(provider: typing.Any, *requests: LLMRequest) -> list[LLMResponse]:
    async def go() -> list[LLMResponse]:
        return [await provider.complete(r) for r in requests]

    return asyncio.run(go())


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[Path]:
    """A run folder whose replay manifest recorded three calls (two identical requests)."""
    recorder = Recorder(Scripted("first answer", "second answer", '{"nodes": []}'))
    drive(
        recorder, req(), req(), req("decompose", "plan", node="root", expect_json=True, inputs={"goal": "g"})
    )
    recorder.write(tmp_path / "run" / "replay" / "manifest.json")
    yield tmp_path / "run"


def test_manifest_format(recorded: Path) -> None:
    manifest = json.loads((recorded / "replay" / "manifest.json").read_text())
    assert manifest["version"] == MANIFEST_VERSION == 1 and manifest["provider"] == "scripted"
    first, _, plan = manifest["calls"]
    assert first["key"] == request_key(req()) and first["prompt_hash"] == prompt_hash(req())
    assert (first["purpose"], first["node_id"], first["tier"]) == ("answer", "n1", "worker")
    assert (first["provider"], first["model"]) == ("scripted", "stub-1")
    assert first["params"] == {"max_tokens": 1024, "temperature": 0.0, "expect_json": False}
    assert first["request"] == {"system": "sys", "prompt": "q", "inputs": {}}
    assert first["response"]["text"] == "first answer"
    assert (first["response"]["input_tokens"], first["response"]["output_tokens"]) == (10, 2)
    assert len(first["output_hash"]) == 64 and first["latency_ms"] >= 0
    assert plan["response"]["data"] == {"nodes": []} and [c["seq"] for c in manifest["calls"]] == [0, 1, 2]


def test_replay_answers_in_recorded_order_without_any_model(recorded: Path) -> None:
    replay = get("replay", path=recorded)  # the run folder is enough
    first, second, third = drive(replay, req(), req(), req())
    assert (first.text, second.text, third.text) == ("first answer", "second answer", "second answer")
    assert first.provider == "replay" and first.model == "stub-1"
    assert (first.input_tokens, first.output_tokens) == (10, 2)  # the recorded usage, for equal budgets
    (plan,) = drive(replay, req("decompose", "plan", node="root", expect_json=True, inputs={"goal": "g"}))
    assert plan.data == {"nodes": []}


def test_replay_can_report_zero_usage(recorded: Path) -> None:
    (response,) = drive(ReplayProvider(recorded, charge_recorded_usage=False), req())
    assert response.total_tokens == 0 and response.text == "first answer"


def test_unrecorded_request_names_node_and_purpose(recorded: Path) -> None:
    with pytest.raises(ProviderError) as info:
        drive(ReplayProvider(recorded), req("synthesize", "something new", node="root.2"))
    err = info.value
    assert err.kind == "not_recorded" and err.node_id == "root.2" and err.purpose == "synthesize"
    assert "root.2" in err.message and "synthesize" in err.message


def test_key_ignores_who_asked_and_which_model_but_not_what() -> None:
    base = req(inputs={"a": 1, "b": [1, 2]})
    assert request_key(base) == request_key(req(node="other", inputs={"b": [1, 2], "a": 1}, model="m"))
    assert request_key(base) != request_key(req(inputs={"a": 2, "b": [1, 2]}))
    assert request_key(base) != request_key(req("judge", inputs={"a": 1, "b": [1, 2]}))


def test_recorded_failures_replay_as_the_same_error(tmp_path: Path) -> None:
    failure = ProviderError("anthropic: HTTP 529", kind="server", provider="anthropic", tokens=7)
    recorder = Recorder(Scripted(failure))
    with pytest.raises(ProviderError):
        drive(recorder, req())
    recorder.write(tmp_path / "m.json")
    assert recorder.calls[0]["error"]["kind"] == "server" and recorder.calls[0]["response"] is None
    with pytest.raises(ProviderError) as info:
        drive(ReplayProvider(tmp_path / "m.json"), req())
    assert info.value.kind == "server" and info.value.tokens == 7


def test_repair_calls_are_recorded_and_replayed(tmp_path: Path) -> None:
    stub = Scripted("Sure! The plan is to do it.", '{"nodes": [{"id": "a"}]}')
    recorder = Recorder(stub)
    request = req("decompose", "plan", node="root", expect_json=True, inputs={"goal": "g"})
    (live,) = drive(recorder, request)
    assert live.data == {"nodes": [{"id": "a"}]} and live.repaired and len(stub.calls) == 2
    assert [c["purpose"] for c in recorder.calls] == ["decompose", "repair"]
    recorder.write(tmp_path / "m.json")
    (again,) = drive(Recorder(ReplayProvider(tmp_path / "m.json")), request)
    assert again.data == live.data and again.repaired and again.total_tokens == live.total_tokens


def test_write_is_atomic_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "replay" / "manifest.json"
    recorder = Recorder(Scripted("one", "two"))
    drive(recorder, req())
    recorder.write(target)
    drive(recorder, req(prompt="other"))
    recorder.write(target)
    assert len(json.loads(target.read_text())["calls"]) == 2
    assert [p.name for p in target.parent.iterdir()] == ["manifest.json"]  # no temp file left behind


@pytest.mark.parametrize(
    ("content", "needle"), [("{not json", "cannot be read"), ('{"version": 99, "calls": []}', "version 99")]
)
def test_bad_manifests_are_refused_clearly(tmp_path: Path, content: str, needle: str) -> None:
    (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(ProviderError) as info:
        ReplayProvider(tmp_path)
    assert info.value.kind == "unavailable" and needle in info.value.message


def test_a_record_is_the_canonical_encoding_of_the_whole_call() -> None:
    """The recorder encodes each part of a request once and splices the parts together: the record is
    still exactly the canonical JSON of the whole call (sorted keys at every level, the key and the
    prompt hash over the same bytes), also for inputs holding quotes, control characters, sets and paths."""
    inputs = {"zeta": {"b": 1, "a": [3, {"y": "\u00b0C", "x": None}]}, "alpha": 'say "request":"x"\x00',
              "tags": {"b", "a"}, "where": Path("Roasting/First crack.md")}  # fmt: skip
    request = req("answer", 'What is "first crack"?\n', inputs=inputs, expect_json=True)
    request.system = "sys \u2028 \\"  # a separator JSON keeps as it is, a backslash it escapes
    recorder = Recorder(Scripted('{"ok": true}'))
    drive(recorder, request)
    (call,) = recorder.calls
    assert call["key"] == request_key(request) and call["prompt_hash"] == prompt_hash(request)
    plain = json.loads(canonical_json({"system": request.system, "prompt": request.prompt, "inputs": inputs}))
    assert call["request"] == plain and list(call["request"]) == ["inputs", "prompt", "system"]
    assert list(call["request"]["inputs"]) == ["alpha", "tags", "where", "zeta"]
    assert list(call) == [*sorted(k for k in call if k != "seq"), "seq"]  # the record's own keys, sorted
    assert call["response"]["data"] == {"ok": True} and call["params"]["expect_json"] is True


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as info:
        get("replay", path=tmp_path / "nowhere")
    assert info.value.kind == "unavailable" and "no replay manifest" in info.value.message


def test_real_provider_recording_holds_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SDK call, retried, with the key in the environment: neither the manifest nor the errors
    carry it, even when a prompt leaks it."""
    with FakeLLMServer(reply=lambda body: '{"supported": true, "reason": "ok"}') as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        server.script(rate_limited(0.0), prose())

        async def sleep(_: float) -> None:
            return None

        recorder = Recorder(get("anthropic", sleep=sleep))
        request = LLMRequest("judge", Tier.JUDGE, f"is it supported? (debug: {KEY})", expect_json=True)

        async def go() -> LLMResponse:
            try:
                return await recorder.complete(request)
            finally:
                await recorder.aclose()

        response = asyncio.run(go())
        assert response.data == {"supported": True, "reason": "ok"} and response.repaired
        assert any(KEY in str(p.headers) for p in server.posts)  # the key really was in use
        text = recorder.write(tmp_path / "manifest.json").read_text()
        assert KEY not in text and "[REDACTED]" in text
        assert "x-api-key" not in text.lower() and "authorization" not in text.lower()
        calls = json.loads(text)["calls"]
        assert [c["purpose"] for c in calls] == ["judge", "repair"]
        assert calls[0]["response"]["retries"] == 1  # the 429 was retried inside the first call
