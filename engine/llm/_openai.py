"""The ``openai`` provider: any OpenAI-compatible chat server (Ollama, vLLM, llama.cpp, LM Studio, …)
through the official ``openai`` SDK (``AsyncOpenAI``, ``chat.completions``).

``OPENAI_BASE_URL`` says where the server is (e.g. ``http://localhost:11434/v1`` for Ollama);
``OPENAI_API_KEY`` is optional (a placeholder is sent when absent: local servers ignore it). The model
is, in order: the request's ``model``, a per-tier override (``models={"leaf": …}``), ``model=`` /
``SHAD_OPENAI_MODEL``, else the first model the server lists. Streaming asks for usage with
``stream_options={"include_usage": True}``; servers that report none get an estimate (about four
characters a token) and ``usage_estimated=True``; a server that rejects ``stream_options`` is asked
again without it. Stop reasons are normalised to the Anthropic words (``end_turn``, ``max_tokens``,
``refusal``). Retries follow the same rules as the Anthropic provider.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from ._base import LLMRequest, LLMResponse, ProviderError, Tier
from ._json import attach_json
from ._models import resolve_models
from ._retry import (
    Attempt,
    AttemptFailed,
    RetryPolicy,
    Sleep,
    estimate_tokens,
    parse_retry_after,
    transport_failure,
    with_retries,
)
from ._secrets import Redactor, secret_values

__all__ = ["PLACEHOLDER_KEY", "OpenAIProvider"]

PLACEHOLDER_KEY = "no-key-needed"
_STOP = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal", "tool_calls": "tool_use"}
_HINTS = {
    "auth": "check OPENAI_API_KEY for this server",
    "unavailable": "could not reach the server at OPENAI_BASE_URL: is it running?",
    "bad_request": "check the model name (SHAD_OPENAI_MODEL or --model TIER=ID) and the request size",
}


class OpenAIProvider:
    """Chat completions on an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        models: Mapping[str | Tier, str] | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        stream: bool = True,
        stream_usage: bool = True,
        json_mode: bool = False,
        attempt_timeout: float | None = None,
        sleep: Sleep | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        url = base_url or env.get("OPENAI_BASE_URL") or None
        key = api_key or env.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
        self.base_url = url
        self.default_model = model or env.get("SHAD_OPENAI_MODEL") or None
        self.models = resolve_models({}, models)
        self.stream = stream
        self.stream_usage = stream_usage
        self.json_mode = json_mode
        self.policy = RetryPolicy(max_retries=max_retries, base_delay=base_delay, max_delay=max_delay)
        self.attempt_timeout = attempt_timeout
        self._sleep = sleep
        self._redactor = Redactor(secret_values(env, [None if key == PLACEHOLDER_KEY else key]))
        self._client = openai.AsyncOpenAI(api_key=key, base_url=url, timeout=timeout, max_retries=0)
        self._discovered: str | None = None
        self._discover_lock = asyncio.Lock()

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        model = request.model or self.models.get(request.tier) or self.default_model or await self._discover()
        attempt = self._stream_attempt if self.stream else self._json_attempt
        response = await with_retries(
            self.name,
            lambda: attempt(request, model),
            policy=self.policy,
            redactor=self._redactor,
            sleep=self._sleep,
            attempt_timeout=self.attempt_timeout,
            hints=_HINTS,
        )
        return attach_json(request, response)

    async def _discover(self) -> str:
        """The server's first listed model, asked once."""
        async with self._discover_lock:
            if self._discovered is None:
                try:
                    page = await self._client.models.list()
                    ids = [m.id for m in page.data]
                except Exception as exc:
                    raise self._no_model(
                        f"listing the server's models failed ({type(exc).__name__})"
                    ) from None
                if not ids:
                    raise self._no_model("the server lists no models")
                self._discovered = ids[0]
            return self._discovered

    def _no_model(self, why: str) -> ProviderError:
        return ProviderError(
            self._redactor.text(f"openai: no model configured and {why}"),
            kind="bad_request",
            provider=self.name,
            hint="set SHAD_OPENAI_MODEL (e.g. llama3.1 for Ollama) or pass --model worker=ID",
        )

    # --- one attempt ---------------------------------------------------------------------------------

    def _params(self, request: LLMRequest, model: str) -> dict[str, Any]:
        messages: list[ChatCompletionMessageParam] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        params: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if self.json_mode and request.expect_json:
            params["response_format"] = {"type": "json_object"}
        return params

    async def _json_attempt(self, request: LLMRequest, model: str) -> Attempt:
        try:
            completion: ChatCompletion = await self._client.chat.completions.create(
                **self._params(request, model)
            )
        except Exception as exc:
            raise self._failure(exc) from exc
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice else ""
        refused = bool(choice and getattr(choice.message, "refusal", None))
        stop = (
            "refusal"
            if refused
            else _STOP.get(str(choice.finish_reason), str(choice.finish_reason))
            if choice
            else None
        )
        return self._attempt(request, completion.model or model, text, stop, completion.usage)

    async def _stream_attempt(self, request: LLMRequest, model: str) -> Attempt:
        params = self._params(request, model)
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        parts: list[str] = []
        usage: Any = None
        finish: str | None = None
        refused, seen_model = False, model
        sink = request.on_text
        try:
            stream = await self._client.chat.completions.create(**params, stream=True)
            async with stream:
                async for chunk in stream:
                    seen_model = chunk.model or seen_model
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices:
                        if choice.delta.content:
                            parts.append(choice.delta.content)
                            if sink is not None:  # the text as the model writes it
                                sink(choice.delta.content, len(parts) == 1)
                        if getattr(choice.delta, "refusal", None):
                            refused = True
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except Exception as exc:
            raise self._failure(exc) from exc
        if finish is None:
            raise AttemptFailed("server", "the stream ended without a finish_reason")
        stop = "refusal" if refused else _STOP.get(finish, finish)
        return self._attempt(request, seen_model, "".join(parts), stop, usage)

    def _attempt(self, request: LLMRequest, model: str, text: str, stop: str | None, usage: Any) -> Attempt:
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if prompt_tokens is None or completion_tokens is None:
            return Attempt(
                text=text,
                model=model,
                input_tokens=estimate_tokens(request.system) + estimate_tokens(request.prompt),
                output_tokens=estimate_tokens(text),
                stop_reason=stop,
                usage_estimated=True,
            )
        return Attempt(text, model, int(prompt_tokens), int(completion_tokens), stop)

    def _failure(self, exc: Exception) -> AttemptFailed:
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = _error_message(exc.body) or exc.message
            if status == 429:
                kind = "rate_limit"
            elif status in (408, 504):
                kind = "timeout"
            elif status >= 500 or status == 409:
                kind = "server"
            elif status in (401, 402, 403):
                kind = "auth"
            else:
                kind = "bad_request"
            if kind == "bad_request" and self.stream_usage and "stream_options" in str(detail):
                self.stream_usage = False  # an older server: ask again without it, at once
                return AttemptFailed(kind, f"HTTP {status}: {detail}", retryable=True, retry_after=0.0)
            retry_after = parse_retry_after(exc.response.headers)
            return AttemptFailed(kind, f"HTTP {status}: {detail}", retry_after=retry_after, status=status)
        transport = transport_failure(exc)
        if transport is not None:
            return AttemptFailed(*transport)
        if isinstance(exc, openai.OpenAIError):
            return AttemptFailed("bad_request", f"{type(exc).__name__}: {exc}", retryable=False)
        return AttemptFailed("server", f"unexpected {type(exc).__name__}: {exc}", retryable=False)


def _error_message(body: object) -> str | None:
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(body, str) and body:
        return body[:300]
    return None
