"""``%shad ingest`` and ``%shad sources`` in a real IPython shell: without ``--yes`` the magic says what
would be ingested and writes nothing (the notebook's confirmation); with it, a snapshot and a small
result; the shadow index as a DataFrame."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from _ingest_repo import commit, head, make_repo, vault_files, write_files
from _notebook_helpers import magics_shell, ok
from IPython.core.interactiveshell import InteractiveShell

from shad_magics import ShadUsageError
from shad_magics._args import parse_subcommand
from shad_magics._ingest_lines import SOURCE_COLUMNS


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_files(root, {"Home.md": "# Home\n"})
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vault: Path) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, vault)


def test_the_line_parses() -> None:
    sub, ns = parse_subcommand("ingest 'My Repo' --vault V --preset deep --yes")
    assert sub == "ingest" and ns.source == "My Repo" and ns.vault == "V" and ns.preset == "deep" and ns.yes
    sub, ns = parse_subcommand("ingest https://github.com/o/r")
    assert ns.preset == "docs" and not ns.yes and ns.vault is None
    with pytest.raises(ShadUsageError):
        parse_subcommand("ingest x --preset everything")
    assert parse_subcommand("sources")[1].source_id is None
    assert parse_subcommand("sources widgets")[1].source_id == "widgets"


def test_without_yes_it_says_what_would_be_ingested_and_writes_nothing(
    shell: InteractiveShell, repo: Path, vault: Path, tmp_path: Path
) -> None:
    before = vault_files(vault)
    result = shell.run_cell(f"%shad ingest {repo}")
    err = result.error_in_exec
    assert isinstance(err, ShadUsageError)
    assert "5 files" in err.message and str(vault.resolve() / "Sources/local/widgets") in err.message
    assert "nothing was written" in err.message
    assert "--yes" in (err.hint or "") and "re-run" in (err.hint or "")
    assert err._render_traceback_()[0].startswith("ShadUsageError")  # one line, no engine frames
    assert vault_files(vault) == before
    assert not (tmp_path / "home" / "sources.sqlite").exists()


def test_with_yes_it_ingests_and_returns_a_small_result(
    shell: InteractiveShell, repo: Path, vault: Path
) -> None:
    info = ok(shell.run_cell(f"%shad ingest {repo} --preset deep --yes"))
    data = info.data
    assert data["source_id"] == "widgets" and data["revision"] == head(repo) and not data["unchanged"]
    assert (vault / data["path"] / "_snapshot.md").is_file()
    assert (vault / data["path"] / "_symbols" / "index.md").is_file()
    md = info._repr_markdown_()
    assert "**ingested** 11 files" in md and data["snapshot_id"] in md and "symbols:" in md
    again = ok(shell.run_cell(f"%shad ingest {repo} --preset deep"))  # unchanged: no consent needed
    assert again.data["unchanged"] is True and "**unchanged**" in again._repr_markdown_()


def test_sources_is_a_dataframe(shell: InteractiveShell, repo: Path, tmp_path: Path) -> None:
    empty = ok(shell.run_cell("%shad sources"))
    assert isinstance(empty, pd.DataFrame) and list(empty.columns) == SOURCE_COLUMNS and empty.empty
    ok(shell.run_cell(f"%shad ingest {repo} --yes"))
    commit(repo, {"docs/more.md": "# More\n"})
    ok(shell.run_cell(f"%shad ingest {repo} --yes"))
    frame = ok(shell.run_cell("%shad sources"))
    assert list(frame.columns) == SOURCE_COLUMNS and len(frame) == 1
    row = frame.iloc[0]
    assert row["source_id"] == "widgets" and row["snapshots"] == 2 and row["revision"] == head(repo)
    snaps = ok(shell.run_cell("%shad sources widgets"))
    assert list(snaps["latest"]) == [True, False]
    assert snaps.iloc[0]["snapshot_id"] == row["latest_snapshot"]
    unknown = shell.run_cell("%shad sources nope")
    assert unknown.error_in_exec is not None and "no source 'nope'" in str(unknown.error_in_exec)
