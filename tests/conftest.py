"""Shared fixtures: throwaway vaults, the demo vault and the real vaults in ``../shared/vaults``."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import comm
import pytest
from _checkpoint_data import COFFEE_NOTES
from _demo import DEMO
from _notebook_helpers import RecordingComm

from engine import Vault

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_VAULT = DEMO  # a pristine copy: the real demo vault may hold run history
SHARED_VAULTS = REPO_ROOT.parent / "shared" / "vaults"

MakeVault = Callable[..., Path]


@pytest.fixture
def make_vault(tmp_path: Path) -> MakeVault:
    """``make_vault({"Folder/Note.md": "text", "img.png": b"..."}, name="vault")`` writes the files
    (``str`` as UTF-8, ``bytes`` as they are) under ``tmp_path / name`` and returns that folder.
    Call it more than once with different names for several vaults."""

    def make(files: Mapping[str, str | bytes], name: str = "vault") -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        for rel, content in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        return root

    return make


@pytest.fixture
def demo_vault() -> Path:
    """A pristine copy of the demo vault (``tests/_demo.py``); read it, do not write into it."""
    assert DEMO_VAULT.is_dir(), f"demo vault missing at {DEMO_VAULT}"
    return DEMO_VAULT


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """The demo vault as a ``Vault``, read in place (never modified), indexed once per test module. A
    module with a ``demo`` fixture of its own (a ``VaultSet``, a copy) uses that instead."""
    v = Vault(DEMO, index_path=tmp_path_factory.mktemp("demo_index") / "demo.sqlite")
    v.refresh()
    yield v
    v.close()


@pytest.fixture
def demo_copy(tmp_path: Path, demo_vault: Path) -> Path:
    """A private copy of the demo vault at ``tmp_path / "vault"``: a test may run on it and write into it."""
    target = tmp_path / "vault"
    shutil.copytree(demo_vault, target)
    return target


@pytest.fixture
def shared_vaults() -> Path:
    """``../shared/vaults`` next to the repository; the test is skipped when it is absent."""
    if not SHARED_VAULTS.is_dir():
        pytest.skip(f"real vaults not available: {SHARED_VAULTS} does not exist")
    return SHARED_VAULTS


@pytest.fixture(autouse=True)
def _own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has its own cache and budget ledger, so a run in one test is never answered from the
    cache another test filled (tests that share a store on purpose set SHAD_STORE themselves)."""
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "shad-store.sqlite3"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("SHAD_CHECKPOINTS", raising=False)  # a developer's own default must not leak in
    monkeypatch.delenv("SHAD_OFFLINE", raising=False)


PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")


@pytest.fixture
def offline_home(shad_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``shad_home``, and no model provider settings from the developer's environment: runs pick the
    offline provider unless a test says otherwise. A module opts in with
    ``pytestmark = pytest.mark.usefixtures("offline_home")``."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    return shad_home


@pytest.fixture
def shad_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty ``$SHAD_HOME`` for this test (outside ``tmp_path``, so never inside a vault built
    there), so indexes and run history land neither in ``~/.shad`` nor in the repository. A module opts in
    with ``pytestmark = pytest.mark.usefixtures("shad_home")``; a test that needs the folder asks for it."""
    home = tmp_path_factory.mktemp("shad_home")
    monkeypatch.setenv("SHAD_HOME", str(home))
    return home


@pytest.fixture
def coffee_vault(make_vault: MakeVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three notes on coffee, no model key, run history under ``tmp_path``: any goal about payment
    security retrieves weakly here, which is what the checkpoint tests need."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return make_vault(COFFEE_NOTES)


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Every comm a widget opens during the test, recording (the seam ``comm.create_comm`` exists for)."""
    made: list[RecordingComm] = []

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        made.append(RecordingComm(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create)
    return made
