"""The ``anthropic`` provider: Claude through the official SDK (``AsyncAnthropic``).

Honours ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` (or ``api_key=`` / ``base_url=``). The text is
streamed (SSE) by default; ``stream=False`` makes one JSON request instead. The SDK's own retries are
off: our loop retries 429 / 5xx / 529 / timeouts / dropped connections / cut streams with backoff and
jitter and honours ``retry-after``, and it charges every attempt's reported usage — a stream cut after
``message_start`` still reported its input tokens.

The Messages API of current SDKs has no ``temperature`` parameter, so it is not sent; ``extra_body``
passes anything else through unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import anthropic
from anthropic.types import (
    Message,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    TextDelta,
)

from ..errors import UsageError
from ._base import LLMRequest, LLMResponse, Tier
from ._json import attach_json
from ._models import ANTHROPIC_MODELS, resolve_models
from ._retry import (
    Attempt,
    AttemptFailed,
    RetryPolicy,
    Sleep,
    parse_retry_after,
    transport_failure,
    with_retries,
)
from ._secrets import Redactor, secret_values

__all__ = ["AnthropicProvider"]

_HINTS = {
    "auth": "check ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if you use a gateway)",
    "unavailable": "could not reach the Anthropic API: check the network or ANTHROPIC_BASE_URL",
}
_RATE_TYPES = {"rate_limit_error"}
_SERVER_TYPES = {"overloaded_error", "api_error", "timeout_error"}


class _Usage:
    def __init__(self) -> None:
        self.input = 0
        self.output = 0


class AnthropicProvider:
    """Claude models over the Messages API."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        models: Mapping[str | Tier, str] | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        stream: bool = True,
        attempt_timeout: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        sleep: Sleep | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        key = api_key or env.get("ANTHROPIC_API_KEY") or None
        url = base_url or env.get("ANTHROPIC_BASE_URL") or None
        if key is None and not env.get("ANTHROPIC_AUTH_TOKEN"):
            # Said before a run starts: without it every call fails, and the run would spend its
            # recovery ladder and end FAILED with the SDK's traceback in its report.
            raise UsageError(
                "the anthropic provider needs an API key, and ANTHROPIC_API_KEY is not set",
                hint="export ANTHROPIC_API_KEY=... (or ANTHROPIC_AUTH_TOKEN), or run without a model: "
                "--provider offline",
            )
        self.models = resolve_models(ANTHROPIC_MODELS, models)
        self.stream = stream
        self.policy = RetryPolicy(max_retries=max_retries, base_delay=base_delay, max_delay=max_delay)
        self.attempt_timeout = attempt_timeout
        self.extra_body = dict(extra_body or {})
        self._sleep = sleep
        self._redactor = Redactor(secret_values(env, [key]))
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=url, timeout=timeout, max_retries=0)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        model = request.model or self.models[request.tier]
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

    # --- one attempt ---------------------------------------------------------------------------------

    def _params(self, request: LLMRequest, model: str) -> dict[str, Any]:
        messages: list[MessageParam] = [{"role": "user", "content": request.prompt}]
        params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
        if request.system:
            params["system"] = request.system
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    async def _json_attempt(self, request: LLMRequest, model: str) -> Attempt:
        try:
            message: Message = await self._client.messages.create(**self._params(request, model))
        except Exception as exc:
            raise self._failure(exc, _Usage()) from exc
        text = "".join(block.text for block in message.content if block.type == "text")
        return Attempt(
            text=text,
            model=message.model or model,
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
            stop_reason=message.stop_reason,
        )

    async def _stream_attempt(self, request: LLMRequest, model: str) -> Attempt:
        usage, parts = _Usage(), list[str]()
        seen_model, stop_reason, finished = model, None, False
        sink = request.on_text
        try:
            stream = await self._client.messages.create(**self._params(request, model), stream=True)
            async with stream:
                async for event in stream:
                    if isinstance(event, RawMessageStartEvent):
                        usage.input = event.message.usage.input_tokens
                        usage.output = event.message.usage.output_tokens
                        seen_model = event.message.model or model
                    elif isinstance(event, RawContentBlockDeltaEvent) and isinstance(event.delta, TextDelta):
                        parts.append(event.delta.text)
                        if sink is not None:  # the text as the model writes it (a notebook shows it)
                            sink(event.delta.text, len(parts) == 1)
                    elif isinstance(event, RawMessageDeltaEvent):
                        usage.output = event.usage.output_tokens
                        usage.input = getattr(event.usage, "input_tokens", None) or usage.input
                        stop_reason = event.delta.stop_reason
                    elif isinstance(event, RawMessageStopEvent):
                        finished = True
        except Exception as exc:
            raise self._failure(exc, usage) from exc
        if not finished:
            raise AttemptFailed(
                "server",
                "the stream ended before message_stop",
                input_tokens=usage.input,
                output_tokens=usage.output,
            )
        return Attempt(
            text="".join(parts),
            model=seen_model,
            input_tokens=usage.input,
            output_tokens=usage.output,
            stop_reason=stop_reason,
        )

    def _failure(self, exc: Exception, usage: _Usage) -> AttemptFailed:
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            err_type, api_message = _error_details(exc.body)
            retry_after = parse_retry_after(exc.response.headers)
            if status == 429 or err_type in _RATE_TYPES:
                kind = "rate_limit"
            elif status in (408, 504) or err_type == "timeout_error":
                kind = "timeout"
            elif status >= 500 or status == 409 or err_type in _SERVER_TYPES:
                kind = "server"
            elif status in (401, 402, 403):
                kind = "auth"
            else:
                kind = "bad_request"
            where = f"HTTP {status}" if status >= 400 else "the stream reported an error"
            detail = f" ({err_type})" if err_type else ""
            message = f"{where}{detail}: {api_message or 'no details'}"
            return AttemptFailed(
                kind,
                message,
                retry_after=retry_after,
                status=status,
                input_tokens=usage.input,
                output_tokens=usage.output,
            )
        transport = transport_failure(exc)
        if transport is not None:
            return AttemptFailed(
                transport[0], transport[1], input_tokens=usage.input, output_tokens=usage.output
            )
        if isinstance(exc, anthropic.AnthropicError):
            kind = "auth" if "credential" in type(exc).__name__.lower() else "bad_request"
            return AttemptFailed(
                kind,
                f"{type(exc).__name__}: {exc}",
                retryable=False,
                input_tokens=usage.input,
                output_tokens=usage.output,
            )
        return AttemptFailed(
            "server",
            f"unexpected {type(exc).__name__}: {exc}",
            retryable=False,
            input_tokens=usage.input,
            output_tokens=usage.output,
        )


def _error_details(body: object) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` from an Anthropic error body, when it has them."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        err_type, message = error.get("type"), error.get("message")
        return (str(err_type) if err_type else None, str(message)[:300] if message else None)
    return None, (str(body)[:300] if body else None)
