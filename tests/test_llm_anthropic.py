"""The anthropic provider: the real ``anthropic`` SDK against our local Messages API server."""

from __future__ import annotations

import asyncio
import pickle
import typing
from collections.abc import Iterator

import anthropic
import pytest

from engine.errors import UsageError
from engine.llm import ANTHROPIC_MODELS, LLMRequest, ProviderError, Recorder, Tier, get
from engine.llm._anthropic import AnthropicProvider

try:
    from tests._fake_llm import (
        FakeLLMServer,
        cut_stream,
        overloaded,
        rate_limited,
        refusal,
        server_error,
        sse_error,
        stall,
        truncated,
    )
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import (  # type: ignore[no-redef]
        FakeLLMServer,
        cut_stream,
        overloaded,
        rate_limited,
        refusal,
        server_error,
        sse_error,
        stall,
        truncated,
    )

KEY = "test-key-anthropic-0123456789"
REPLY = "The beans rest for a week after roasting, citing [[Coffee/Roasting]]."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=lambda body: REPLY) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


class Sleeps(list[float]):
    """Records the backoff delays instead of sleeping through them."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        await asyncio.sleep(0)


def make(sleeps: Sleeps | None = None, **options: typing.Any) -> AnthropicProvider:
    options.setdefault("timeout", 5.0)
    provider = get("anthropic", sleep=sleeps if sleeps is not None else Sleeps(), **options)
    assert isinstance(provider, AnthropicProvider)
    return provider


def call(provider: AnthropicProvider, request: LLMRequest | None = None) -> typing.Any:
    async def go() -> typing.Any:
        try:
            return await provider.complete(
                request or LLMRequest("answer", Tier.WORKER, "How long?", system="Be brief.")
            )
        finally:
            await provider.aclose()

    return asyncio.run(go())


def fails(provider: AnthropicProvider, request: LLMRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, request)
    assert KEY not in str(info.value) and KEY not in repr(info.value.fields)
    return info.value


# --- success ---------------------------------------------------------------------------------------------


def test_streaming_call_reads_text_and_reported_usage(server: FakeLLMServer) -> None:
    response = call(make())
    assert response.text == REPLY
    assert response.provider == "anthropic"
    assert response.model == ANTHROPIC_MODELS[Tier.WORKER]
    assert (response.input_tokens, response.output_tokens) == server.usage[-1]
    assert response.retries == 0 and response.stop_reason == "end_turn"
    seen = server.posts[0]
    assert seen.path == "/v1/messages"
    auth = seen.headers  # this SDK version sends the key as x-api-key or as a bearer token
    assert KEY in (auth.get("x-api-key"), auth.get("authorization", "").removeprefix("Bearer "))
    assert seen.body is not None and seen.body["stream"] is True
    assert seen.body["system"] == "Be brief."
    assert seen.body["messages"] == [{"role": "user", "content": "How long?"}]
    assert seen.body["model"] == ANTHROPIC_MODELS[Tier.WORKER]


def test_the_text_reaches_on_text_as_the_server_streams_it(server: FakeLLMServer) -> None:
    pieces: list[tuple[str, bool]] = []
    request = LLMRequest(
        "synthesize", Tier.ORCHESTRATOR, "Merge.", on_text=lambda t, first: pieces.append((t, first))
    )
    response = call(make(), request)
    assert len(pieces) > 1 and "".join(t for t, _ in pieces) == response.text == REPLY  # SSE deltas
    assert [first for _, first in pieces] == [True] + [False] * (len(pieces) - 1)
    assert "on_text" not in request.to_dict()  # never part of the request's identity (replay keys)


def test_a_retried_stream_starts_its_text_again(server: FakeLLMServer) -> None:
    server.script(cut_stream(after=4))
    pieces: list[tuple[str, bool]] = []
    request = LLMRequest(
        "answer", Tier.WORKER, "How long?", on_text=lambda t, first: pieces.append((t, first))
    )
    response = call(make(), request)
    starts = [i for i, (_, first) in enumerate(pieces) if first]
    assert len(starts) == 2 and response.retries == 1  # the cut attempt, then the whole one
    assert "".join(t for t, _ in pieces[starts[-1] :]) == REPLY


def test_plain_json_call_without_streaming(server: FakeLLMServer) -> None:
    response = call(make(stream=False))
    assert response.text == REPLY
    assert (response.input_tokens, response.output_tokens) == server.usage[-1]
    assert server.posts[0].body is not None and "stream" not in server.posts[0].body


def test_expect_json_fills_data(server: FakeLLMServer) -> None:
    server.set_reply(lambda body: '```json\n{"supported": true, "reason": "quoted"}\n```')
    request = LLMRequest("judge", Tier.JUDGE, "Is it supported?", expect_json=True)
    assert call(make(), request).data == {"supported": True, "reason": "quoted"}


def test_default_models_are_current_and_not_deprecated() -> None:
    from anthropic.resources.messages.messages import DEPRECATED_MODELS

    known = set(typing.get_args(typing.get_args(anthropic.types.Model)[0]))
    for tier in (Tier.ORCHESTRATOR, Tier.WORKER, Tier.LEAF, Tier.JUDGE):
        model = ANTHROPIC_MODELS[tier]
        assert model not in DEPRECATED_MODELS, model
        assert model in known, model
    assert "haiku" in ANTHROPIC_MODELS[Tier.LEAF] and "sonnet" in ANTHROPIC_MODELS[Tier.WORKER]


def test_models_are_overridable_per_tier_and_per_request(server: FakeLLMServer) -> None:
    provider = make(models={"leaf": "claude-leaf-x", Tier.JUDGE: "claude-judge-y"})
    assert provider.models[Tier.LEAF] == "claude-leaf-x" and provider.models[Tier.JUDGE] == "claude-judge-y"
    assert call(provider, LLMRequest("answer", Tier.LEAF, "q")).model == "claude-leaf-x"
    assert call(make(), LLMRequest("answer", Tier.LEAF, "q", model="claude-own")).model == "claude-own"
    assert [p.body["model"] for p in server.posts if p.body] == ["claude-leaf-x", "claude-own"]


# --- faults: retried, counted and charged ----------------------------------------------------------------


def test_429_honours_retry_after_and_is_counted(server: FakeLLMServer) -> None:
    server.script(rate_limited(retry_after=0.01))
    sleeps = Sleeps()
    response = call(make(sleeps))
    assert response.text == REPLY
    assert server.count == 2 and response.retries == 1
    assert sleeps == [0.01]


@pytest.mark.parametrize(
    "fault", [server_error(500), server_error(503), overloaded()], ids=["500", "503", "529"]
)
def test_server_errors_are_retried_with_backoff(server: FakeLLMServer, fault: typing.Any) -> None:
    server.script(fault, fault)
    sleeps = Sleeps()
    response = call(make(sleeps, base_delay=0.5, max_delay=10.0))
    assert server.count == 3 and response.retries == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential, jittered


def test_cut_stream_is_retried_and_its_reported_usage_charged(server: FakeLLMServer) -> None:
    server.script(cut_stream(after=4))
    response = call(make())
    assert response.text == REPLY and response.retries == 1
    cut_in, cut_out = server.usage[0]
    assert cut_in > 0  # message_start had reported the input tokens before the cut
    assert (response.retry_input_tokens, response.retry_output_tokens) == (cut_in, cut_out)
    assert response.total_tokens == server.reported_tokens


def test_error_event_mid_stream_is_retried(server: FakeLLMServer) -> None:
    server.script(sse_error(after=3))
    response = call(make())
    assert response.text == REPLY and response.retries == 1 and server.count == 2
    assert response.total_tokens == server.reported_tokens


def test_truncated_json_body_is_retried(server: FakeLLMServer) -> None:
    server.script(truncated())
    response = call(make(stream=False))
    assert response.text == REPLY and response.retries == 1 and server.count == 2


def test_exhausted_retries_raise_with_kind_and_every_attempts_usage(server: FakeLLMServer) -> None:
    server.script(cut_stream(after=4), overloaded(), overloaded())
    err = fails(make(max_retries=2))
    assert err.kind == "server" and err.provider == "anthropic" and err.retries == 2
    assert server.count == 3
    assert err.tokens == server.reported_tokens > 0  # the cut attempt's usage is still charged
    assert "3 attempts" in err.message and err.hint


def test_rate_limit_exhausted_is_a_rate_limit_error(server: FakeLLMServer) -> None:
    server.script(*[rate_limited(0.0)] * 3)
    err = fails(make(max_retries=2))
    assert err.kind == "rate_limit" and err.status == 429 and server.count == 3


def test_stall_before_any_byte_is_a_timeout(server: FakeLLMServer) -> None:
    server.script(stall(5.0))
    err = fails(make(timeout=0.3, max_retries=0))
    assert err.kind == "timeout" and server.count == 1


def test_stall_mid_stream_is_a_timeout_and_charges_what_was_reported(server: FakeLLMServer) -> None:
    server.script(stall(5.0, after=3), stall(5.0, after=3))
    err = fails(make(timeout=0.3, max_retries=1))
    assert err.kind == "timeout" and server.count == 2 and err.retries == 1
    assert err.tokens == server.reported_tokens > 0


def test_timeout_then_success(server: FakeLLMServer) -> None:
    server.script(stall(5.0))
    response = call(make(timeout=0.3))
    assert response.text == REPLY and response.retries == 1


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "auth"), (403, "auth"), (400, "bad_request"), (404, "bad_request")]
)
def test_client_errors_fail_at_once(server: FakeLLMServer, status: int, kind: str) -> None:
    server.script(server_error(status))
    err = fails(make())
    assert err.kind == kind and err.status == status and server.count == 1 and err.retries == 0


def test_unreachable_server_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as fake:
        url = fake.base_url
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)  # nothing listens there any more
    err = fails(make(max_retries=1))
    assert err.kind == "unavailable" and err.retries == 1


def test_refusal_becomes_a_refused_error(server: FakeLLMServer) -> None:
    server.script(refusal())

    async def go() -> None:
        recorder = Recorder(make())
        try:
            await recorder.complete(LLMRequest("answer", Tier.WORKER, "q", node_id="n1"))
        finally:
            await recorder.aclose()

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert info.value.kind == "refused" and info.value.node_id == "n1"
    assert info.value.tokens == server.reported_tokens


def test_provider_errors_pickle_with_their_fields(server: FakeLLMServer) -> None:
    server.script(server_error(400, "bad things"))
    err = fails(make())
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is ProviderError
    assert (clone.kind, clone.status, clone.message, clone.hint) == (err.kind, 400, err.message, err.hint)


def test_the_key_never_appears_in_errors_even_when_the_server_echoes_it(server: FakeLLMServer) -> None:
    server.script(server_error(400, f"invalid x-api-key {KEY}"))
    err = fails(make())
    assert "[REDACTED]" in err.message


def test_a_failed_attempt_pickles_with_its_fields() -> None:
    from engine.llm._retry import AttemptFailed

    attempt = AttemptFailed("server", "boom", status=503, retry_after=2.0, input_tokens=7, hint="wait")
    clone = pickle.loads(pickle.dumps(attempt))
    assert (clone.kind, clone.message, clone.status, clone.retry_after, clone.input_tokens, clone.hint) == (
        "server",
        "boom",
        503,
        2.0,
        7,
        "wait",
    )


def test_no_key_is_a_usage_error_when_the_provider_is_made() -> None:
    with pytest.raises(UsageError, match="needs an API key") as caught:
        AnthropicProvider(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert "--provider offline" in (caught.value.hint or "")
    AnthropicProvider(env={"ANTHROPIC_AUTH_TOKEN": "t"})  # a gateway's token is enough
    AnthropicProvider(api_key="k", env={})
