"""Model output is untrusted input: JSON parsing, one repair attempt, refusals and empty answers.

``checked_complete(provider, request)`` is how the engine should make a call (the ``Recorder`` does it
for every call it records):

- a refusal (``stop_reason == "refusal"``) raises ``ProviderError(kind="refused")``;
- a request without ``expect_json`` whose answer is empty raises ``ProviderError(kind="malformed")``;
- a request with ``expect_json`` gets ``response.data`` parsed from the text (```json fences and prose
  around the JSON are tolerated). If that fails, the provider is asked once more with a ``repair``
  request (inputs ``{purpose, error, previous, inputs}``, ``inputs`` being the original request's);
  the repaired response carries the first call's tokens in its retry counters and ``repaired=True``.
  If the repair fails too: ``ProviderError(kind="malformed")``, and the engine takes its safe fallback.

Every ``ProviderError`` raised here carries ``tokens`` (and ``input_tokens`` / ``output_tokens``): what
the calls cost, so budgets can charge it.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from ._base import CompleteFn, LLMRequest, LLMResponse, Provider, ProviderError

__all__ = ["attach_json", "checked_complete", "parse_json_text", "repair_request"]

_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 64  # positions tried when looking for JSON inside prose
_PREVIOUS_LIMIT = 6000

REPAIR_PROMPT = """\
Your previous answer to the "{purpose}" step could not be used: {error}.

Answer the original request again, as valid JSON only: no prose, no code fences, nothing before or
after the JSON value.

Original request:
{prompt}

Your previous answer:
{previous}
"""


def parse_json_text(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a ```json fenced block, or the first JSON
    object (else array) embedded in prose. Raises ``ValueError`` saying what was wrong."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the answer is empty")
    first_error: ValueError | None = None
    for candidate in [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]:
        try:
            return json.loads(candidate)
        except ValueError as err:
            first_error = first_error or err
    decoder = json.JSONDecoder()
    for opener in "{[":
        start = stripped.find(opener)
        tries = 0
        while start != -1 and tries < _MAX_STARTS:
            try:
                value, _ = decoder.raw_decode(stripped, start)
                return value
            except ValueError:
                start = stripped.find(opener, start + 1)
                tries += 1
    raise ValueError(f"the answer is not valid JSON ({first_error})")


def attach_json(request: LLMRequest, response: LLMResponse) -> LLMResponse:
    """Fill ``response.data`` when JSON was expected and the text parses; leave it None otherwise."""
    if request.expect_json and response.data is None:
        with contextlib.suppress(ValueError):
            response.data = parse_json_text(response.text)
    return response


def repair_request(request: LLMRequest, previous: str, error: str) -> LLMRequest:
    """The one follow-up request that asks the model to fix its unusable JSON."""
    shown = previous if len(previous) <= _PREVIOUS_LIMIT else previous[:_PREVIOUS_LIMIT] + "\n[…cut]"
    return LLMRequest(
        purpose="repair",
        tier=request.tier,
        prompt=REPAIR_PROMPT.format(
            purpose=request.purpose, error=error, prompt=request.prompt, previous=shown or "(empty)"
        ),
        system=request.system,
        inputs={"purpose": request.purpose, "error": error, "previous": previous, "inputs": request.inputs},
        max_tokens=request.max_tokens,
        temperature=0.0,
        expect_json=True,
        model=request.model,
        node_id=request.node_id,
    )


def _where(request: LLMRequest) -> str:
    node = f" of node {request.node_id}" if request.node_id else ""
    return f"the {request.purpose} call{node}"


def _fail(
    kind: str, message: str, request: LLMRequest, spent: list[LLMResponse], **fields: Any
) -> ProviderError:
    spent_in = sum(r.input_tokens + r.retry_input_tokens for r in spent)
    spent_out = sum(r.output_tokens + r.retry_output_tokens for r in spent)
    hint = {
        "refused": "the model declined; Shad falls back where it can — rephrase the goal if this persists",
        "malformed": "the model's answer was unusable; Shad falls back where it can",
    }[kind]
    return ProviderError(
        message,
        kind=kind,
        provider=spent[0].provider if spent else "",
        hint=hint,
        retries=sum(r.retries for r in spent) + len(spent) - 1,
        node_id=request.node_id,
        purpose=request.purpose,
        input_tokens=spent_in,
        output_tokens=spent_out,
        tokens=spent_in + spent_out,
        **fields,
    )


def _check_refusal(request: LLMRequest, response: LLMResponse, spent: list[LLMResponse]) -> None:
    if response.stop_reason == "refusal":
        raise _fail("refused", f"the model refused {_where(request)}", request, spent)


async def checked_complete(provider: Provider | CompleteFn, request: LLMRequest) -> LLMResponse:
    """``provider.complete(request)`` with refusals, empty answers and unusable JSON handled."""
    call: CompleteFn = provider.complete if isinstance(provider, Provider) else provider
    response = await call(request)
    _check_refusal(request, response, [response])
    if not request.expect_json:
        if not response.text.strip():
            raise _fail(
                "malformed", f"the model gave an empty answer to {_where(request)}", request, [response]
            )
        return response
    if response.data is not None:
        return response
    try:
        response.data = parse_json_text(response.text)
        return response
    except ValueError as err:
        error = str(err)
    try:
        second = await call(repair_request(request, response.text, error))
    except ProviderError as exc:
        failed = LLMResponse(
            "",
            exc.provider,
            "",
            input_tokens=int(getattr(exc, "input_tokens", 0) or 0),
            output_tokens=int(getattr(exc, "output_tokens", 0) or 0),
            retries=exc.retries,
        )
        raise _fail(
            "malformed",
            f"{_where(request)} returned unusable JSON ({error}) and the repair call failed: {exc.message}",
            request,
            [response, failed],
            excerpt=response.text[:200],
        ) from exc
    _check_refusal(request, second, [response, second])
    if second.data is None:
        try:
            second.data = parse_json_text(second.text)
        except ValueError as err:
            raise _fail(
                "malformed",
                f"{_where(request)} returned unusable JSON, even after one repair: {err}",
                request,
                [response, second],
                excerpt=second.text[:200],
            ) from None
    second.retries += response.retries + 1
    second.retry_input_tokens += response.input_tokens + response.retry_input_tokens
    second.retry_output_tokens += response.output_tokens + response.retry_output_tokens
    second.latency_ms += response.latency_ms
    second.usage_estimated = second.usage_estimated or response.usage_estimated
    second.repaired = True
    return second
