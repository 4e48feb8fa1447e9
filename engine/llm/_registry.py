"""The provider registry: names to factories, imported only when asked for.

``get(name, **options)`` builds a provider; an unknown name raises ``UnknownProviderError`` (listing the
known ones), and a provider whose library is not installed raises ``ProviderError(kind="unavailable")``
with the ``pip install`` line that fixes it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ._base import Provider, ProviderError

__all__ = [
    "ProviderRegistry",
    "UnknownProviderError",
    "available",
    "default_provider_name",
    "get",
    "register",
]


class UnknownProviderError(UsageError):
    """No provider is registered under that name."""


@dataclass(frozen=True)
class _Entry:
    factory: Callable[..., Provider]
    requires: str | None = None  # the importable module the provider needs
    install_hint: str | None = None


class ProviderRegistry:
    """``register(name, factory)`` / ``get(name, **options)`` / ``available()``."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def register(
        self,
        name: str,
        factory: Callable[..., Provider],
        *,
        requires: str | None = None,
        install_hint: str | None = None,
    ) -> None:
        """Register (or replace) ``name``; ``requires`` names the module whose absence ``get`` reports
        with ``install_hint``."""
        self._entries[_normal(name)] = _Entry(factory, requires, install_hint)

    def available(self) -> list[str]:
        """The registered provider names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _normal(name) in self._entries

    def get(self, name: str, **options: Any) -> Provider:
        key = _normal(name)
        entry = self._entries.get(key)
        if entry is None:
            known = ", ".join(self.available())
            raise UnknownProviderError(
                f"unknown provider {name!r}",
                hint=f"known providers: {known}",
                name=name,
                known=self.available(),
            )
        if entry.requires and importlib.util.find_spec(entry.requires) is None:
            raise self._missing(key, entry, entry.requires)
        try:
            return entry.factory(**options)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".")[0]
            if entry.requires and missing == entry.requires.split(".")[0]:
                raise self._missing(key, entry, entry.requires) from None
            raise

    @staticmethod
    def _missing(name: str, entry: _Entry, module: str) -> ProviderError:
        return ProviderError(
            f"the {name} provider needs the {module!r} package, which is not installed",
            kind="unavailable",
            provider=name,
            hint=entry.install_hint or f"pip install {module}",
        )


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def default_provider_name(env: Mapping[str, str] | None = None) -> str:
    """``anthropic`` if ANTHROPIC_API_KEY is set, else ``openai`` if OPENAI_BASE_URL is, else ``offline``."""
    env = os.environ if env is None else env
    if env.get("ANTHROPIC_API_KEY", "").strip():
        return "anthropic"
    if env.get("OPENAI_BASE_URL", "").strip():
        return "openai"
    return "offline"


# --- the built-in providers (each imported on first use) ------------------------------------------------


def _anthropic(**options: Any) -> Provider:
    from ._anthropic import AnthropicProvider

    return AnthropicProvider(**options)


def _openai(**options: Any) -> Provider:
    from ._openai import OpenAIProvider

    return OpenAIProvider(**options)


def _claude_code(**options: Any) -> Provider:
    from ._claude_code import ClaudeCodeProvider

    return ClaudeCodeProvider(**options)


def _replay(**options: Any) -> Provider:
    from ._replay import ReplayProvider

    return ReplayProvider(**options)


def _offline(**options: Any) -> Provider:
    try:
        module = importlib.import_module("engine.llm.offline")
    except ModuleNotFoundError as exc:
        if exc.name != "engine.llm.offline":
            raise
        raise ProviderError(
            "the offline provider is missing from this installation (engine/llm/offline.py)",
            kind="unavailable",
            provider="offline",
            hint="reinstall Shad, or choose another --provider",
        ) from None
    for attr in ("create_provider", "OfflineProvider"):
        factory = getattr(module, attr, None)
        if callable(factory):
            provider: Provider = factory(**options)
            return provider
    raise ProviderError(
        "engine.llm.offline defines neither OfflineProvider nor create_provider",
        kind="unavailable",
        provider="offline",
    )


_REGISTRY = ProviderRegistry()
_REGISTRY.register(
    "anthropic",
    _anthropic,
    requires="anthropic",
    install_hint="pip install 'anthropic>=0.40' (a Shad dependency)",
)
_REGISTRY.register(
    "openai",
    _openai,
    requires="openai",
    install_hint="pip install 'shad[openai]'  (or: pip install 'openai>=1.40')",
)
_REGISTRY.register("claude-code", _claude_code)
_REGISTRY.register("offline", _offline)
_REGISTRY.register("replay", _replay)

register = _REGISTRY.register
get = _REGISTRY.get
available = _REGISTRY.available
