"""Opening a run's context: the store and the vaults opened side by side, the vaults' refresh started
while the run folder, the manifest and the ledger are made, and every failure on the way clean: a clear
error, no run folder where none should be, nothing left running under a closed vault."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine import RunConfig, RunStatus
from engine.errors import UsageError
from engine.runs import start_run
from engine.store import SQLiteStore, StoreUnavailableError

SIMPLE = "How long should roasted beans rest before brewing?"


@pytest.fixture(autouse=True)
def shad_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "shad-home"
    monkeypatch.setenv("SHAD_HOME", str(home))
    monkeypatch.delenv("SHAD_STORE", raising=False)
    return home


@pytest.fixture
def vault(demo_copy: Path) -> Path:
    return demo_copy


def _runs(vault: Path) -> list[Path]:
    folder = vault / "Shad" / "History" / "Runs"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_a_store_that_cannot_open_fails_before_a_run_folder_exists(tmp_path: Path, vault: Path) -> None:
    folder = tmp_path / "not-a-file"
    folder.mkdir()
    config = RunConfig(SIMPLE, (str(vault),), provider="offline", store_url=f"sqlite://{folder}")
    with pytest.raises(UsageError, match="is a folder"):
        asyncio.run(start_run(config))
    assert _runs(vault) == []
    # The vaults opened beside the store were closed again: a run on them goes on as ever.
    done = asyncio.run(start_run(RunConfig(SIMPLE, (str(vault),), provider="offline")))
    assert done.status is RunStatus.SUCCESS


def test_a_ledger_that_fails_to_open_raises_after_the_refresh_is_over(tmp_path: Path, vault: Path) -> None:
    closed = SQLiteStore(tmp_path / "closed.sqlite3")
    closed.close()
    config = RunConfig(SIMPLE, (str(vault),), provider="offline")
    with pytest.raises(StoreUnavailableError, match="closed"):
        asyncio.run(start_run(config, ledger=closed))
    [folder] = _runs(vault)  # its manifest was written beside the ledger's open, whole
    assert json.loads((folder / "run.manifest.json").read_text("utf-8"))["status"] == "RUNNING"
    assert list(folder.glob(".*.tmp")) == []
    done = asyncio.run(start_run(config))  # the refresh had finished: the vault is usable at once
    assert done.status is RunStatus.SUCCESS


def test_a_run_starts_with_its_manifest_and_ledger_and_ends_finished(vault: Path) -> None:
    done = asyncio.run(start_run(RunConfig(SIMPLE, (str(vault),), provider="offline")))
    manifest = json.loads((done.history.dir / "run.manifest.json").read_text("utf-8"))
    assert manifest["status"] == done.status.value == "SUCCESS" and manifest["finished"]
    events = [json.loads(line)["type"] for line in (done.history.dir / "events.jsonl").open(encoding="utf-8")]
    assert events[0] == "RUN_STARTED" and events[-1] == "RUN_FINISHED"
    assert done.summary["citations"]  # the vaults were refreshed and read before the plan
