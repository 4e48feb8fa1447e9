"""Vault backends: ``SCHEME:...`` vaults open through a registered opener (``mcp:`` through the entry point
``engine.mcp`` declares), folders stay folders, and a run over a backend's vault keeps its history and
cache keys off the (absent) folder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine.config import RunConfig, remote_scheme
from engine.errors import UsageError
from engine.vault import (
    Vault,
    VaultSet,
    _backends,
    backend_names,
    get_backend,
    is_local,
    location,
    open_vault,
    register_backend,
)

pytestmark = pytest.mark.usefixtures("shad_home")


class FolderBehind:
    """A read-only stand-in for a remote vault: a Vault's answers under another name, with no root."""

    read_only = True
    root = None

    def __init__(self, spec: str, folder: Path, opened: list[Any]) -> None:
        self.spec, self.id, self._inner, self.closed = spec, "behind", Vault(folder, id="behind"), False
        opened.append(self)

    @property
    def location(self) -> str:
        return self.spec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def registry() -> Any:
    saved = dict(_backends._registry)
    yield _backends._registry
    _backends._registry.clear()
    _backends._registry.update(saved)


def test_schemes_are_told_apart_from_folders(tmp_path: Path) -> None:
    odd = tmp_path / "notes:old"
    odd.mkdir()
    assert remote_scheme("mcp:shad mcp serve --vault x") == "mcp"
    assert remote_scheme("mcp:http://127.0.0.1:9/mcp") == "mcp"
    assert remote_scheme("mcp:") == "mcp"  # a backend with nothing to start: its opener says so
    for folder in (str(tmp_path), "C:\\Notes", "./mcp:x", "relative/path", str(odd)):
        assert remote_scheme(folder) is None, folder
    assert remote_scheme(Path("mcp:x")) is None  # a Path is always a folder


def test_mcp_is_an_entry_point_backend() -> None:
    assert "mcp" in backend_names()
    from engine.mcp import open_mcp_vault

    assert get_backend("mcp") is open_mcp_vault
    with pytest.raises(UsageError, match="not an MCP backend"):
        open_vault("mcp:")


def test_an_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="no vault backend for notion:") as info:
        open_vault("notion:workspace")
    assert info.value.hint is not None and "mcp:" in info.value.hint
    with pytest.raises(UsageError, match="not a backend vault"):
        open_vault(str(DEMO))


def test_a_vault_set_opens_specs_through_their_backend(tmp_path: Path, registry: Any) -> None:
    opened: list[Any] = []
    register_backend("fake", lambda spec, **kw: FolderBehind(spec, DEMO, opened))
    vaults = VaultSet([str(DEMO), "fake:one"])
    assert vaults.ids[1] == "behind"
    local, remote = vaults.vaults
    assert is_local(local) and not is_local(remote)
    assert location(local) == str(local.root) and location(remote) == "fake:one"
    assert [h.path for h in vaults.search("first crack", vault="behind")] == [
        h.path for h in local.search("first crack")
    ]
    vaults.close()
    assert opened[0].closed

    def broken(spec: str, **kw: Any) -> Any:
        raise UsageError("cannot reach it")

    register_backend("broken", broken)
    with pytest.raises(UsageError, match="cannot reach it"):
        VaultSet(["fake:two", "broken:x"])
    assert opened[1].closed  # what was opened before the failure is closed again


def test_run_config_keeps_specs_and_refuses_writes_to_them(tmp_path: Path) -> None:
    folder = shutil.copytree(DEMO, tmp_path / "v")
    config = RunConfig("goal", ("mcp:shad mcp serve --vault x", str(folder)))
    assert config.vaults == ("mcp:shad mcp serve --vault x", str(folder.resolve()))
    with pytest.raises(UsageError, match="--learn writes a staging note"):
        RunConfig("goal", ("mcp:shad mcp serve",), learn=True)
    RunConfig("goal", (str(folder), "mcp:shad mcp serve"), learn=True, garden=True)  # a folder first: fine
    with pytest.raises(UsageError, match="--garden"):
        RunConfig("goal", ("mcp:a", "mcp:b"), garden=True)


def test_a_run_over_a_backend_keeps_its_history_under_shad_home(tmp_path: Path, registry: Any) -> None:
    from engine.runs import run

    folder = Path(shutil.copytree(DEMO, tmp_path / "v"))
    opened: list[Any] = []
    register_backend("fake", lambda spec, **kw: FolderBehind(spec, folder, opened))
    first = run(RunConfig("How long should I rest beans after roasting?", ("fake:demo",), provider="offline"))
    assert first.status.value == "SUCCESS"
    assert not (folder / "Shad").exists()  # nothing written into the vault behind the backend
    history = Path(first.history.dir)
    assert history.parent.name == "history" and (history / "final.report.md").is_file()
    cited = first.summary["citations"]
    assert cited and all(c["resolved"] and c["vault"] == "behind" for c in cited)
    assert opened[0].closed  # the run closed the backend it opened
    again = run(RunConfig("How long should I rest beans after roasting?", ("fake:demo",), provider="offline"))
    assert again.summary["metrics"]["cache_hits"] >= 1  # cache keys by the spec, stable across runs
