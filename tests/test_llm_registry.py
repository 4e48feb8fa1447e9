"""The provider registry: names, lazy imports, clear errors, and the default choice."""

from __future__ import annotations

import asyncio
import importlib.util
import pickle
import typing

import pytest

import engine.llm as llm
from engine.errors import ShadError, UsageError
from engine.llm import LLMRequest, LLMResponse, Provider, ProviderError, Tier, UnknownProviderError
from engine.llm._registry import ProviderRegistry


class Echo:
    name = "echo"

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(self.prefix + request.prompt, self.name, "echo-1")

    async def aclose(self) -> None:
        return None


def test_builtin_providers_are_known() -> None:
    assert {"anthropic", "openai", "claude-code", "offline", "replay"} <= set(llm.available())
    assert llm.available() == sorted(llm.available())


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError) as info:
        llm.get("gpt-omni")
    err = info.value
    assert isinstance(err, UsageError) and isinstance(err, ShadError) and err.exit_code == 2
    assert "gpt-omni" in err.message and err.name == "gpt-omni"
    for name in ("anthropic", "openai", "claude-code", "offline", "replay"):
        assert name in (err.hint or "") and name in err.known
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is UnknownProviderError and clone.known == err.known


def test_register_and_get_with_options() -> None:
    registry = ProviderRegistry()
    registry.register("Echo_Test", Echo)
    assert "echo-test" in registry and registry.available() == ["echo-test"]
    provider = registry.get("echo_test", prefix=">> ")
    assert isinstance(provider, Provider)
    response = asyncio.run(provider.complete(LLMRequest("answer", Tier.LEAF, "hi")))
    assert response.text == ">> hi"


def test_missing_library_gives_the_pip_hint() -> None:
    registry = ProviderRegistry()
    registry.register(
        "exotic", Echo, requires="shad_no_such_module_xyz", install_hint="pip install 'shad[exotic]'"
    )
    with pytest.raises(ProviderError) as info:
        registry.get("exotic")
    assert info.value.kind == "unavailable" and info.value.provider == "exotic"
    assert info.value.hint == "pip install 'shad[exotic]'"
    assert "shad_no_such_module_xyz" in info.value.message


def test_openai_without_its_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: typing.Any) -> typing.Any:
        return None if name == "openai" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ProviderError) as info:
        llm.get("openai")
    assert info.value.kind == "unavailable" and "shad[openai]" in (info.value.hint or "")
    assert "pip install" in str(info.value)


def test_import_error_inside_a_factory_is_reported_the_same_way() -> None:
    def broken(module: str) -> typing.Callable[..., Provider]:
        def factory(**options: typing.Any) -> Provider:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)

        return factory

    registry = ProviderRegistry()
    registry.register(
        "half", broken("email.shad_absent"), requires="email", install_hint="pip install email-x"
    )
    with pytest.raises(ProviderError) as info:  # the package is there but part of it is not
        registry.get("half")
    assert info.value.kind == "unavailable" and info.value.hint == "pip install email-x"
    registry.register("other", broken("shad_unrelated"), requires="email")
    with pytest.raises(ModuleNotFoundError):  # an unrelated import error is a bug: not masked
        registry.get("other")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "offline"),
        ({"ANTHROPIC_API_KEY": "k"}, "anthropic"),
        ({"OPENAI_BASE_URL": "http://localhost:11434/v1"}, "openai"),
        ({"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://x/v1"}, "anthropic"),
        ({"ANTHROPIC_API_KEY": "  ", "OPENAI_BASE_URL": ""}, "offline"),
    ],
)
def test_default_provider_name(env: dict[str, str], expected: str) -> None:
    assert llm.default_provider_name(env) == expected


def test_default_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert llm.default_provider_name() == "openai"


def test_offline_is_registered_lazily_and_works() -> None:
    provider = llm.get("offline")
    assert provider.name == "offline" and isinstance(provider, Provider)


def test_network_providers_build_without_calling_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-registry-012345")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    for name in ("anthropic", "openai"):
        provider = llm.get(name, models={"leaf": "small"})
        assert provider.name == name and isinstance(provider, Provider)
        asyncio.run(provider.aclose())


def test_unknown_tier_in_model_overrides_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        llm.get("anthropic", api_key="k", models={"tiny": "x"})
    assert "tiny" in info.value.message and "leaf" in (info.value.hint or "")


def test_provider_error_is_a_picklable_shad_error() -> None:
    err = ProviderError("boom", kind="server", provider="p", hint="h", retries=2, tokens=5, node_id="n")
    clone = pickle.loads(pickle.dumps(err))
    assert isinstance(clone, ShadError)
    assert (clone.kind, clone.provider, clone.retries, clone.tokens, clone.node_id) == (
        "server",
        "p",
        2,
        5,
        "n",
    )
    assert str(clone) == "boom (h)"
