"""The openai provider: the real ``openai`` SDK against our local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Iterator

import pytest

from engine.llm import LLMRequest, ProviderError, Recorder, Tier, get
from engine.llm._openai import PLACEHOLDER_KEY, OpenAIProvider

try:
    from tests._fake_llm import (
        FakeLLMServer,
        cut_stream,
        no_usage,
        rate_limited,
        refusal,
        server_error,
        stall,
        truncated,
    )
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import (  # type: ignore[no-redef]
        FakeLLMServer,
        cut_stream,
        no_usage,
        rate_limited,
        refusal,
        server_error,
        stall,
        truncated,
    )

KEY = "test-key-openai-0123456789"
REPLY = "Rest the beans for about a week [[Coffee/Roasting#Resting]]."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=lambda body: REPLY) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("SHAD_OPENAI_MODEL", "llama-test")
        yield fake


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        await asyncio.sleep(0)


def make(sleeps: Sleeps | None = None, **options: typing.Any) -> OpenAIProvider:
    options.setdefault("timeout", 5.0)
    provider = get("openai", sleep=sleeps if sleeps is not None else Sleeps(), **options)
    assert isinstance(provider, OpenAIProvider)
    return provider


def call(provider: typing.Any, request: LLMRequest | None = None) -> typing.Any:
    async def go() -> typing.Any:
        try:
            return await provider.complete(
                request or LLMRequest("answer", Tier.WORKER, "How long?", system="Be brief.")
            )
        finally:
            await provider.aclose()

    return asyncio.run(go())


def fails(provider: typing.Any, request: LLMRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, request)
    assert KEY not in str(info.value) and KEY not in repr(info.value.fields)
    return info.value


def test_streaming_call_asks_for_usage_and_reads_it(server: FakeLLMServer) -> None:
    response = call(make())
    assert response.text == REPLY and response.provider == "openai" and response.model == "llama-test"
    assert (response.input_tokens, response.output_tokens) == server.usage[-1]
    assert not response.usage_estimated and response.stop_reason == "end_turn"
    seen = server.posts[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.body is not None
    assert seen.body["stream"] is True and seen.body["stream_options"] == {"include_usage": True}
    assert seen.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How long?"},
    ]
    assert seen.body["max_tokens"] == 1024 and seen.body["temperature"] == 0.0
    assert seen.headers.get("authorization") == f"Bearer {KEY}"


def test_plain_json_call(server: FakeLLMServer) -> None:
    response = call(make(stream=False))
    assert response.text == REPLY and (response.input_tokens, response.output_tokens) == server.usage[-1]
    assert server.posts[0].body is not None and not server.posts[0].body.get("stream")


def test_the_text_reaches_on_text_as_the_server_streams_it(server: FakeLLMServer) -> None:
    pieces: list[tuple[str, bool]] = []
    request = LLMRequest("answer", Tier.WORKER, "How long?", on_text=lambda t, f: pieces.append((t, f)))
    response = call(make(), request)
    assert len(pieces) > 1 and "".join(t for t, _ in pieces) == response.text == REPLY  # SSE chunks
    assert [first for _, first in pieces] == [True] + [False] * (len(pieces) - 1)


@pytest.mark.parametrize("stream", [True, False])
def test_missing_usage_is_estimated_and_marked(server: FakeLLMServer, stream: bool) -> None:
    server.script(no_usage())
    response = call(make(stream=stream))
    assert response.text == REPLY and response.usage_estimated
    assert response.input_tokens > 0 and response.output_tokens == (len(REPLY) + 3) // 4


def test_server_rejecting_stream_options_is_asked_again_without(server: FakeLLMServer) -> None:
    server.script(server_error(400, "Unrecognized request argument supplied: stream_options"))
    response = call(make())
    assert response.text == REPLY and response.usage_estimated and response.retries == 1
    first, second = (p.body or {} for p in server.posts)
    assert "stream_options" in first and "stream_options" not in second


def test_without_a_key_a_placeholder_is_sent(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    call(make())
    assert server.posts[0].headers.get("authorization") == f"Bearer {PLACEHOLDER_KEY}"


def test_model_from_tier_override_request_and_server_list(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert call(make(models={"leaf": "tiny"}), LLMRequest("answer", Tier.LEAF, "q")).model == "tiny"
    assert call(make(), LLMRequest("answer", Tier.LEAF, "q", model="mine")).model == "mine"
    monkeypatch.delenv("SHAD_OPENAI_MODEL")
    assert call(make()).model == "fake-local-model"  # the first model GET /v1/models lists
    assert any(r.method == "GET" and r.path == "/v1/models" for r in server.requests)


def test_json_mode_sends_response_format(server: FakeLLMServer) -> None:
    server.set_reply(lambda body: '{"supported": false, "reason": "not in the note"}')
    request = LLMRequest("judge", Tier.JUDGE, "Supported?", expect_json=True)
    response = call(make(json_mode=True), request)
    assert response.data == {"supported": False, "reason": "not in the note"}
    assert (server.posts[0].body or {})["response_format"] == {"type": "json_object"}


def test_429_honours_retry_after(server: FakeLLMServer) -> None:
    server.script(rate_limited(0.02))
    sleeps = Sleeps()
    response = call(make(sleeps))
    assert response.text == REPLY and response.retries == 1 and sleeps == [0.02] and server.count == 2


@pytest.mark.parametrize(
    ("fault", "stream"),
    [
        (server_error(500), True),
        (server_error(502), False),
        (cut_stream(after=2), True),
        (truncated(), False),
    ],
    ids=["500", "502", "cut-stream", "truncated-json"],
)
def test_transient_faults_are_retried(server: FakeLLMServer, fault: typing.Any, stream: bool) -> None:
    server.script(fault)
    response = call(make(stream=stream))
    assert response.text == REPLY and response.retries == 1 and server.count == 2
    assert response.total_tokens == server.reported_tokens


def test_exhausted_retries_raise_with_kind(server: FakeLLMServer) -> None:
    server.script(*[server_error(503)] * 3)
    err = fails(make(max_retries=2))
    assert err.kind == "server" and err.retries == 2 and server.count == 3 and err.provider == "openai"


def test_stall_is_a_timeout(server: FakeLLMServer) -> None:
    server.script(stall(5.0), stall(5.0, after=2))
    err = fails(make(timeout=0.3, max_retries=1))
    assert err.kind == "timeout" and server.count == 2


def test_auth_error_is_not_retried(server: FakeLLMServer) -> None:
    server.script(server_error(401, f"bad key {KEY}"))
    err = fails(make())
    assert err.kind == "auth" and server.count == 1 and "OPENAI_API_KEY" in (err.hint or "")


def test_refusal_is_reported_and_raised_by_the_recorder(server: FakeLLMServer) -> None:
    server.script(refusal())
    assert call(make()).stop_reason == "refusal"
    server.script(refusal())
    with pytest.raises(ProviderError) as info:
        call(Recorder(make()), LLMRequest("answer", Tier.WORKER, "q", node_id="n2"))
    assert info.value.kind == "refused"


def test_missing_base_url_server_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as fake:
        url = fake.openai_base_url
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("SHAD_OPENAI_MODEL", "m")
    err = fails(make(max_retries=0))
    assert err.kind == "unavailable"
