"""Default model ids per tier, and per-tier overrides.

Anthropic defaults are current, non-deprecated Claude models, checked against the installed SDK
(``anthropic.types.Model`` lists the known ids; ``DEPRECATED_MODELS`` in its messages resource lists
the retiring ones, none of which is used here): Sonnet where quality matters (orchestrator, worker,
judge), Haiku for the many small leaf calls. Claude Code takes its own aliases. OpenAI-compatible
servers have no universal model names: ``SHAD_OPENAI_MODEL``, an override, or the server's first model.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UsageError
from ._base import Tier

__all__ = ["ANTHROPIC_MODELS", "CLAUDE_CODE_MODELS", "resolve_models"]

ANTHROPIC_MODELS: dict[Tier, str] = {
    Tier.ORCHESTRATOR: "claude-sonnet-5-5",
    Tier.WORKER: "claude-sonnet-5-5",
    Tier.JUDGE: "claude-sonnet-5-5",
    Tier.LEAF: "claude-haiku-5-5",
    Tier.EMBEDDER: "claude-haiku-5-5",  # Claude has no embedding model; only used if asked for text
}

CLAUDE_CODE_MODELS: dict[Tier, str] = {
    Tier.ORCHESTRATOR: "sonnet",
    Tier.WORKER: "sonnet",
    Tier.JUDGE: "sonnet",
    Tier.LEAF: "haiku",
    Tier.EMBEDDER: "haiku",
}


def resolve_models(
    defaults: Mapping[Tier, str], overrides: Mapping[str | Tier, str] | None
) -> dict[Tier, str]:
    """``defaults`` with ``overrides`` (keys: ``Tier`` or tier names such as ``"leaf"``) applied."""
    models = dict(defaults)
    for key, model in (overrides or {}).items():
        try:
            tier = key if isinstance(key, Tier) else Tier(str(key).lower())
        except ValueError:
            known = ", ".join(t.value for t in Tier)
            raise UsageError(f"unknown model tier {key!r}", hint=f"tiers: {known}") from None
        models[tier] = model
    return models
