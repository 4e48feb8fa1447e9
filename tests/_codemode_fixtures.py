"""Fixtures and helpers shared by the Code Mode tests (``tests/test_codemode_*.py``)."""

from __future__ import annotations

import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine.codemode import Sandbox, SandboxError, SandboxResult, bwrap_status
from engine.codemode._facades import warm_up
from engine.codemode._policy import SCRIPT_MODULE
from engine.vault import Vault, VaultSet

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_VAULT = DEMO  # a pristine copy: the real demo vault may hold run history
ISOLATIONS = ["bubblewrap", "subprocess"]


@pytest.fixture(scope="session")
def codemode_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SHAD_HOME for the Code Mode tests: indexes of the demo vault are built there once."""
    return tmp_path_factory.mktemp("codemode-shad-home")


@pytest.fixture
def script_module() -> Iterator[None]:
    """What the sandbox's zygote does before any script: register module ``__script__`` (dataclasses
    looks a class's module up) and warm lazy imports (``strptime`` imports ``_strptime`` on first use,
    through the script's own, guarded ``__import__``). For tests that run policy code in-process."""
    warm_up()
    added = SCRIPT_MODULE not in sys.modules
    sys.modules.setdefault(SCRIPT_MODULE, types.ModuleType(SCRIPT_MODULE))
    yield
    if added:
        del sys.modules[SCRIPT_MODULE]


@pytest.fixture(autouse=True)
def codemode_env(codemode_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Indexes go to a temporary SHAD_HOME; a generous wall clock bounds any hang; auto isolation."""
    monkeypatch.setenv("SHAD_HOME", str(codemode_home))
    monkeypatch.setenv("SHAD_SANDBOX_TIMEOUT", "20")
    monkeypatch.delenv("SHAD_SANDBOX_ISOLATION", raising=False)
    return codemode_home


def demo_vaults(home: Path) -> VaultSet:
    """The demo vault, indexed under ``home`` (explicit, so module-scoped sandboxes do not depend on
    the environment at the moment they are created)."""
    return VaultSet([Vault(DEMO_VAULT, index_path=home / "index" / "demo.sqlite")])


def require_isolation(isolation: str) -> None:
    if isolation == "bubblewrap":
        usable, why = bwrap_status()
        if not usable:
            pytest.skip(f"bubblewrap is not usable on this machine: {why}")


@pytest.fixture(scope="module", params=ISOLATIONS)
def sandbox(request: pytest.FixtureRequest, codemode_home: Path) -> Iterator[Sandbox]:
    """A warm sandbox on the demo vault, once per isolation path (bubblewrap skipped when unusable)."""
    isolation = str(request.param)
    require_isolation(isolation)
    with Sandbox(demo_vaults(codemode_home), isolation=isolation) as sb:
        assert sb.isolation == isolation
        yield sb


def copy_demo(tmp_path: Path) -> Path:
    """A writable copy of the demo vault (hidden folders included)."""
    target = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, target)
    return target


def run_ok(sb: Sandbox, script: str) -> SandboxResult:
    return sb.run(script)


def run_refused(sb: Sandbox, script: str, kind: str) -> SandboxError:
    """Run ``script`` and require a refusal of ``kind``; fails if the script produced a result."""
    with pytest.raises(SandboxError) as info:
        result = sb.run(script)
        pytest.fail(f"expected a {kind!r} refusal, got result {result.result!r}")
    assert info.value.kind == kind, f"expected {kind!r}, got {info.value.kind!r}: {info.value.message}"
    return info.value


def require_codemode(events: list[dict[str, Any]]) -> None:
    """Skip the test when its run retrieved without Code Mode (no sandbox on this machine): the recovery
    ladder, and so a retrieval that stays weak or a retry, needs one."""
    mode = next(e for e in events if e["type"] == "RETRIEVAL_MODE")
    if mode["mode"] != "codemode":
        pytest.skip(f"Code Mode is unavailable here: {mode.get('reason')}")
