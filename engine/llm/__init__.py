"""Model providers: one contract (``LLMRequest`` -> ``LLMResponse``), a registry, and the helpers every
call goes through.

    from . import get, default_provider_name, Recorder, LLMRequest, Tier

    provider = Recorder(get(default_provider_name()))     # records every call for replay/audit
    response = await provider.complete(LLMRequest("answer", Tier.WORKER, "…"))
    recorder.write(run_dir / "replay" / "manifest.json")

Providers: ``anthropic`` (official SDK), ``openai`` (any OpenAI-compatible server, needs the ``openai``
extra), ``claude-code`` (the ``claude`` CLI), ``offline`` (no model at all) and ``replay`` (answers from
a recorded run). ``checked_complete`` — used by ``Recorder`` — turns refusals, empty answers and
unusable JSON (after one repair prompt) into ``ProviderError``.
"""

from __future__ import annotations

from ._base import (
    PURPOSES,
    LLMRequest,
    LLMResponse,
    Provider,
    ProviderError,
    ProviderFactory,
    TextSink,
    Tier,
)
from ._json import checked_complete, parse_json_text, repair_request
from ._models import ANTHROPIC_MODELS, CLAUDE_CODE_MODELS
from ._registry import ProviderRegistry, UnknownProviderError, available, default_provider_name, get, register
from ._replay import MANIFEST_VERSION, Recorder, ReplayProvider, load_manifest, prompt_hash, request_key

__all__ = [
    "ANTHROPIC_MODELS",
    "CLAUDE_CODE_MODELS",
    "MANIFEST_VERSION",
    "PURPOSES",
    "LLMRequest",
    "LLMResponse",
    "Provider",
    "ProviderError",
    "ProviderFactory",
    "ProviderRegistry",
    "Recorder",
    "ReplayProvider",
    "TextSink",
    "Tier",
    "UnknownProviderError",
    "available",
    "checked_complete",
    "default_provider_name",
    "get",
    "load_manifest",
    "parse_json_text",
    "prompt_hash",
    "register",
    "repair_request",
    "request_key",
]
