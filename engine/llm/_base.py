"""The contract between the engine and every model provider.

Every model call the engine makes is an ``LLMRequest``: a ``purpose`` (what the call is for), the
rendered ``system``/``prompt`` text a language model reads, and the same content as structured
``inputs``. Real models read the text; the offline provider (no model at all) and the replay provider
work from ``purpose`` + ``inputs``, which is what lets one engine path run with any model or none.

Purposes and their structured inputs / expected outputs (``expect_json`` says whether ``LLMResponse``
must carry parsed JSON in ``data``):

``decompose``  inputs: goal, strategy, stages (list of {name, description, required}), max_children
               -> data: {"nodes": [{"id", "task", "stage", "depends_on": [ids], "soft_depends_on": [ids]}],
                         "waivers": [stage names deliberately dropped, with "reason"]}
``answer``     inputs: task, goal, context (list of {vault, path, heading, text, citation}),
               packets (list of {node_id, summary}) -> text: the answer, citing ``citation`` wikilinks
``synthesize`` inputs: goal, task, children (list of {node_id, task, answer, citations})
               -> text: a report section that keeps every child's citations
``judge``      inputs: claim, source_text, citation -> data: {"supported": bool, "reason": str}
``script``     inputs: task, api (the obsidian API description), hints (queries to try) -> text: a script
``repair``     inputs: purpose, error, previous (the output that failed) -> as the original purpose
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import ShadError

__all__ = [
    "PURPOSES",
    "LLMRequest",
    "LLMResponse",
    "Provider",
    "ProviderError",
    "TextSink",
    "Tier",
]

PURPOSES = ("decompose", "answer", "synthesize", "judge", "script", "repair")


class Tier(str, enum.Enum):
    """Model tiers; the engine maps each to a configurable model id and degrades them with depth."""

    ORCHESTRATOR = "orchestrator"
    WORKER = "worker"
    LEAF = "leaf"
    JUDGE = "judge"
    EMBEDDER = "embedder"


TextSink = Callable[[str, bool], None]


@dataclass
class LLMRequest:
    purpose: str
    tier: Tier
    prompt: str
    system: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 1024
    temperature: float = 0.0
    expect_json: bool = False
    model: str | None = None  # resolved by the engine from the tier; providers may override
    node_id: str | None = None  # for logs, replay lookups and errors
    # Streaming: a provider that produces the text piece by piece calls ``on_text(piece, first)`` as it
    # goes (``first``: an attempt starts, so a retry's text replaces the failed attempt's). Never part of
    # the request's identity (``to_dict``, replay keys): the response's ``text`` stays the whole answer.
    on_text: TextSink | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "tier": self.tier.value,
            "model": self.model,
            "system": self.system,
            "prompt": self.prompt,
            "inputs": self.inputs,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "expect_json": self.expect_json,
            "node_id": self.node_id,
        }


@dataclass
class LLMResponse:
    text: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    data: Any = None  # parsed JSON when the request expected JSON
    stop_reason: str | None = None
    retries: int = 0
    latency_ms: float = 0.0
    # Tokens spent on failed attempts (retries) that the provider still reported; budgets charge them too.
    retry_input_tokens: int = 0
    retry_output_tokens: int = 0
    # The server reported no usage and the token counts above are estimates (some local servers).
    usage_estimated: bool = False
    # The first answer was unusable JSON and this one came from the repair prompt; the first call's tokens
    # are in retry_input_tokens / retry_output_tokens and it counts in ``retries``.
    repaired: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.retry_input_tokens + self.retry_output_tokens


class ProviderError(ShadError):
    """A provider could not answer. ``kind``: rate_limit | server | timeout | auth | bad_request |
    unavailable | malformed | refused | not_recorded."""

    kind: str
    provider: str
    retries: int

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        provider: str,
        hint: str | None = None,
        retries: int = 0,
        **fields: Any,
    ) -> None:
        super().__init__(message, hint=hint, kind=kind, provider=provider, retries=retries, **fields)


@runtime_checkable
class Provider(Protocol):
    """What the engine needs from a model provider."""

    name: str

    async def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def aclose(self) -> None: ...


ProviderFactory = Callable[..., Provider]
CompleteFn = Callable[[LLMRequest], Awaitable[LLMResponse]]
