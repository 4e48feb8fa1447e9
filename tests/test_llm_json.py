"""Untrusted model output: JSON parsing, the one repair prompt, refusals and empty answers."""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Iterator

import pytest

from engine.llm import LLMRequest, LLMResponse, ProviderError, Tier, checked_complete, get, parse_json_text

try:
    from tests._fake_llm import FakeLLMServer, empty, prompt_of, prose, refusal, server_error
except ImportError:  # pragma: no cover - run from inside tests/
    from _fake_llm import FakeLLMServer, empty, prompt_of, prose, refusal, server_error  # type: ignore[no-redef]

PLAN = '{"nodes": [{"id": "a", "task": "t", "stage": "s", "depends_on": []}], "waivers": []}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": {"b": [1]}}\n```', {"a": {"b": [1]}}),
        ('```\n{"a": 2}\n```', {"a": 2}),
        ('Here is the plan you asked for:\n\n```json\n{"a": 3}\n```\nLet me know!', {"a": 3}),
        ('Sure. {"a": 4} Hope that helps.', {"a": 4}),
        ('Note [see below]: {"a": [5]}', {"a": [5]}),  # an object wins over bracketed prose
        ('Plan: {not json} then {"a": 6}', {"a": 6}),
    ],
)
def test_parse_tolerates_fences_and_prose(text: str, expected: typing.Any) -> None:
    assert parse_json_text(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here at all", '{"a": 1', "```json\n{oops}\n```"])
def test_parse_rejects_what_is_not_json(text: str) -> None:
    with pytest.raises(ValueError):
        parse_json_text(text)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=lambda body: PLAN) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-json-0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("SHAD_OPENAI_MODEL", "m")
        yield fake


def plan_request() -> LLMRequest:
    return LLMRequest(
        "decompose",
        Tier.ORCHESTRATOR,
        "Plan the goal as JSON.",
        expect_json=True,
        node_id="root",
        inputs={"goal": "g"},
    )


def checked(name: str, request: LLMRequest) -> LLMResponse:
    async def go() -> LLMResponse:
        provider = get(name)
        try:
            return await checked_complete(provider, request)
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_prose_instead_of_json_is_repaired_once(server: FakeLLMServer, name: str) -> None:
    server.script(prose())
    response = checked(name, plan_request())
    assert response.data["nodes"][0]["id"] == "a"
    assert response.repaired and response.retries == 1
    assert response.total_tokens == server.reported_tokens  # the unusable first answer is charged too
    first, second = server.posts
    assert first.body is not None and second.body is not None
    repair_prompt = prompt_of(second.body)
    assert "could not be used" in repair_prompt and "Plan the goal as JSON." in repair_prompt
    assert "plain-language answer" in repair_prompt  # the previous answer is shown to the model


def test_repair_that_fails_again_is_malformed_with_usage(server: FakeLLMServer) -> None:
    server.script(prose(), prose("Still no JSON, sorry."))
    with pytest.raises(ProviderError) as info:
        checked("anthropic", plan_request())
    err = info.value
    assert err.kind == "malformed" and err.node_id == "root" and err.purpose == "decompose"
    assert "root" in err.message and "decompose" in err.message
    assert err.tokens == server.reported_tokens and server.count == 2


def test_repair_call_failing_is_still_malformed(server: FakeLLMServer) -> None:
    server.script(prose(), server_error(400))
    with pytest.raises(ProviderError) as info:
        checked("anthropic", plan_request())
    assert info.value.kind == "malformed" and "repair call failed" in info.value.message


def test_refusal_is_refused_not_repaired(server: FakeLLMServer) -> None:
    server.script(refusal())
    with pytest.raises(ProviderError) as info:
        checked("anthropic", plan_request())
    assert info.value.kind == "refused" and server.count == 1


def test_empty_answer_is_malformed(server: FakeLLMServer) -> None:
    server.script(empty())
    with pytest.raises(ProviderError) as info:
        checked("openai", LLMRequest("answer", Tier.WORKER, "q", node_id="n3"))
    assert info.value.kind == "malformed" and "empty" in info.value.message and info.value.node_id == "n3"


def test_empty_json_answer_gets_one_repair(server: FakeLLMServer) -> None:
    server.script(empty())
    assert checked("anthropic", plan_request()).data["waivers"] == []


def test_data_already_given_is_kept_and_nothing_is_called_again() -> None:
    calls: list[LLMRequest] = []

    async def provider(request: LLMRequest) -> LLMResponse:
        calls.append(request)
        return LLMResponse("", "offline", "x", data={"nodes": []})

    response = asyncio.run(checked_complete(provider, plan_request()))
    assert response.data == {"nodes": []} and len(calls) == 1


def test_repair_request_carries_the_original_inputs() -> None:
    seen: list[LLMRequest] = []

    async def provider(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return LLMResponse("nope" if len(seen) == 1 else "{}", "stub", "x")

    asyncio.run(checked_complete(provider, plan_request()))
    repair = seen[1]
    assert repair.purpose == "repair" and repair.expect_json and repair.node_id == "root"
    assert repair.inputs["purpose"] == "decompose" and repair.inputs["previous"] == "nope"
    assert repair.inputs["inputs"] == {"goal": "g"} and "not valid JSON" in repair.inputs["error"]
