"""The retry loop every network provider shares.

One call is a series of attempts. An attempt either returns an ``Attempt`` or raises ``AttemptFailed``
(with whatever usage the server reported before failing). Rate limits, 5xx, timeouts, dropped
connections and incomplete responses are retried with exponential backoff and jitter, honouring
``retry-after``; everything else fails at once. The SDKs' own retries stay off (``max_retries=0``) so
that every attempt's usage is seen and charged: a success carries the failed attempts' tokens in
``retry_input_tokens`` / ``retry_output_tokens``, a final failure carries them all in
``ProviderError.tokens``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._base import LLMResponse, ProviderError
from ._secrets import Redactor

__all__ = [
    "RETRYABLE",
    "Attempt",
    "AttemptFailed",
    "RetryPolicy",
    "Sleep",
    "estimate_tokens",
    "parse_retry_after",
    "transport_failure",
    "with_retries",
]

RETRYABLE = frozenset({"rate_limit", "server", "timeout", "unavailable"})
Sleep = Callable[[float], Awaitable[None]]

_HINTS = {
    "rate_limit": "the provider is rate-limiting these calls: lower --max-llm, or wait and try again",
    "server": "the model server failed or broke off its answer; try again later",
    "timeout": "the model did not answer in time: raise the provider timeout or try again",
    "auth": "check the provider's API key",
    "bad_request": "check the model id (--model TIER=ID) and the request size",
    "unavailable": "is the model server running and reachable?",
}


@dataclass
class Attempt:
    """What one successful attempt produced."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    usage_estimated: bool = False


class AttemptFailed(Exception):
    """One attempt failed; ``input_tokens`` / ``output_tokens``: usage the server reported anyway."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = kind in RETRYABLE if retryable is None else retryable
        self.retry_after = retry_after
        self.status = status
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its fields (an error that crosses a process, or rides along a ProviderError).
        fields = {
            k: getattr(self, k)
            for k in ("retryable", "retry_after", "status", "input_tokens", "output_tokens", "hint")
        }
        return (_attempt_failed, (self.kind, self.message, fields))


def _attempt_failed(kind: str, message: str, fields: dict[str, Any]) -> AttemptFailed:
    return AttemptFailed(kind, message, **fields)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: attempt n waits between half and all of
    ``min(max_delay, base_delay * 2**n)``; a ``retry-after`` from the server wins (capped)."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        cap = min(self.max_delay, self.base_delay * (2.0**retry))
        return cap / 2 + random.random() * cap / 2


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date), if any."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def transport_failure(exc: BaseException) -> tuple[str, str] | None:
    """Classify HTTP-library errors that escape the SDKs (by class name, so any httpx flavour works):
    ``(kind, message)`` or None when ``exc`` is not one of them."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    cause = exc.__cause__ or exc.__context__
    if names & {"TimeoutException", "TimeoutError", "APITimeoutError"}:
        return "timeout", "the request timed out"
    if (
        names & {"ConnectError", "ConnectionRefusedError", "ConnectionError"}
        and "APIConnectionError" not in names
    ):
        return "unavailable", "could not connect to the model server"
    if names & {
        "RemoteProtocolError",
        "ProtocolError",
        "ReadError",
        "WriteError",
        "NetworkError",
        "TransportError",
        "IncompleteRead",
    }:
        return "server", "the connection broke off before the answer was complete"
    if isinstance(exc, json.JSONDecodeError):
        return "server", "the server's response was not complete JSON"
    if "APIConnectionError" in names:
        if cause is not None and cause is not exc:
            inner = transport_failure(cause)
            if inner is not None:
                return inner
        return "unavailable", "could not connect to the model server"
    return None


def estimate_tokens(text: str) -> int:
    """About four characters a token; used only when a server reports no usage."""
    return (len(text) + 3) // 4


async def with_retries(
    provider: str,
    attempt: Callable[[], Awaitable[Attempt]],
    *,
    policy: RetryPolicy,
    redactor: Redactor,
    sleep: Sleep | None = None,
    attempt_timeout: float | None = None,
    hints: Mapping[str, str] | None = None,
) -> LLMResponse:
    """Run ``attempt`` until it succeeds, fails for good, or the retries are used up."""
    sleep = asyncio.sleep if sleep is None else sleep
    started = time.perf_counter()
    spent_in = spent_out = retries = 0
    while True:
        try:
            if attempt_timeout is None:
                result = await attempt()
            else:
                try:
                    result = await asyncio.wait_for(attempt(), attempt_timeout)
                except asyncio.TimeoutError as exc:
                    raise AttemptFailed(
                        "timeout", f"no complete answer within {attempt_timeout:g} s"
                    ) from exc
        except AttemptFailed as failure:
            spent_in += failure.input_tokens
            spent_out += failure.output_tokens
            if failure.retryable and retries < policy.max_retries:
                await sleep(policy.delay(retries, failure.retry_after))
                retries += 1
                continue
            tries = f" (gave up after {retries + 1} attempts)" if retries else ""
            hint = failure.hint or (hints or {}).get(failure.kind) or _HINTS.get(failure.kind)
            raise ProviderError(
                redactor.text(f"{provider}: {failure.message}{tries}"),
                kind=failure.kind,
                provider=provider,
                hint=redactor.text(hint) if hint else None,
                retries=retries,
                status=failure.status,
                input_tokens=spent_in,
                output_tokens=spent_out,
                tokens=spent_in + spent_out,
            ) from None
        return LLMResponse(
            text=result.text,
            provider=provider,
            model=result.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            stop_reason=result.stop_reason,
            retries=retries,
            latency_ms=(time.perf_counter() - started) * 1000,
            retry_input_tokens=spent_in,
            retry_output_tokens=spent_out,
            usage_estimated=result.usage_estimated,
        )
