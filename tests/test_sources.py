"""The shadow index (C2): SQLite under ``$SHAD_HOME``, outside the vault; ``shad sources ls | show |
export | pin | update | policy`` over a real git repository that gets new commits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from _cli import Result, caller
from _ingest_repo import commit, head, make_repo, vault_files, write_files

from engine.cli._sources import POLICIES
from engine.curation import SOURCE_POLICIES, ShadowIndex, ingest

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    return caller(capsys)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "widgets")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_files(root, {"Home.md": "# Home\n"})
    return root


def snapshots(vault: Path) -> list[str]:
    return sorted(p.parent.relative_to(vault).as_posix() for p in vault.glob("Sources/*/*/*/_snapshot.md"))


def test_the_cli_policies_are_the_engine_policies() -> None:
    assert POLICIES == SOURCE_POLICIES


def test_ls_shows_both_snapshots_with_latest_on_the_new_one(
    shad: Callable[..., Result], repo: Path, vault: Path, shad_home: Path
) -> None:
    first = ingest(str(repo), vault, yes=True)
    second_revision = commit(repo, {"docs/more.md": "# More\n"})
    second = ingest(str(repo), vault, yes=True)
    res = shad("sources", "ls", "--json")
    assert res.code == 0, res.err
    [source] = res.json()
    assert source["id"] == "widgets" and source["type"] == "git" and source["policy"] == "manual"
    assert source["url"] == repo.resolve().as_uri() and source["vault"] == str(vault.resolve())
    assert [s["id"] for s in source["snapshots"]] == [first.snapshot_id, second.snapshot_id]
    assert [s["latest"] for s in source["snapshots"]] == [False, True]
    assert source["latest"] == second.snapshot_id
    assert source["snapshots"][1]["revision"] == second_revision
    assert source["snapshots"][0]["path"] == first.path and source["snapshots"][0]["files"] == first.files
    # the index lives in $SHAD_HOME, not in the vault
    assert (shad_home / "sources.sqlite").is_file()
    assert not list(vault.rglob("*.sqlite*"))
    text = shad("sources", "ls")
    assert (
        text.code == 0 and f" {second.snapshot_id} " in text.out and f" {first.snapshot_id} " not in text.out
    )


def test_show_and_export(shad: Callable[..., Result], repo: Path, vault: Path, tmp_path: Path) -> None:
    result = ingest(str(repo), vault, yes=True)
    shown = shad("sources", "show", "widgets", "--json").json()
    assert shown["id"] == "widgets" and shown["latest"] == result.snapshot_id
    text = shad("sources", "show", "widgets")
    assert result.snapshot_id + " (latest)" in text.out
    exported = shad("sources", "export", "--json").json()
    assert exported["version"] == 1 and [s["id"] for s in exported["sources"]] == ["widgets"]
    assert exported["sources"][0]["snapshots"][0]["id"] == result.snapshot_id
    out = tmp_path / "sources.yaml"
    assert shad("sources", "export", "--format", "yaml", "--out", str(out)).code == 0
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["sources"][0]["id"] == "widgets"
    missing = shad("sources", "show", "nope")
    assert missing.code == 2 and "no source 'nope'" in missing.err


def test_an_empty_index_lists_nothing(shad: Callable[..., Result], shad_home: Path) -> None:
    assert shad("sources", "ls", "--json").json() == []
    assert "no sources yet" in shad("sources", "ls").out
    assert shad("sources", "export").json()["sources"] == []
    assert not (shad_home / "sources.sqlite").exists()  # reading never creates the index


def test_update_follows_each_policy(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    ingest(str(repo), vault, yes=True)
    newer = commit(repo, {"docs/more.md": "# More\n"})
    # manual: nothing happens unless the source is named
    [manual] = shad("sources", "update", "--yes", "--json").json()
    assert manual["action"] == "skipped" and len(snapshots(vault)) == 1
    # notify: the newer revision is reported, not ingested
    assert shad("sources", "policy", "widgets", "notify").code == 0
    [notify] = shad("sources", "update", "--yes", "--json").json()
    assert notify["action"] == "available" and notify["revision"] == newer
    assert len(snapshots(vault)) == 1
    # auto: ingested (with consent)
    assert shad("sources", "policy", "widgets", "auto", "--json").json()["policy"] == "auto"
    [auto] = shad("sources", "update", "--yes", "--json").json()
    assert auto["action"] == "ingested" and auto["revision"] == newer and len(snapshots(vault)) == 2
    [again] = shad("sources", "update", "--yes", "--json").json()
    assert again["action"] == "unchanged"
    # a manual source named on the command line is updated
    shad("sources", "policy", "widgets", "manual")
    newest = commit(repo, {"docs/last.md": "# Last\n"})
    [named] = shad("sources", "update", "widgets", "--yes", "--json").json()
    assert named["action"] == "ingested" and named["revision"] == newest and len(snapshots(vault)) == 3
    bad = shad("sources", "policy", "widgets", "sometimes")
    assert bad.code == 2


def test_update_without_yes_refuses_headless(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    ingest(str(repo), vault, yes=True)
    shad("sources", "policy", "widgets", "auto")
    commit(repo, {"docs/more.md": "# More\n"})
    before = vault_files(vault)
    res = shad("sources", "update")
    assert res.code == 2 and "--yes" in res.err
    assert vault_files(vault) == before
    assert len(ShadowIndex().source("widgets").snapshots) == 1


def test_pin_keeps_the_source_at_its_revision(shad: Callable[..., Result], repo: Path, vault: Path) -> None:
    first_revision = head(repo)
    ingest(str(repo), vault, yes=True)
    pinned = shad("sources", "pin", "widgets", "--json").json()
    assert pinned["pinned_revision"] == first_revision
    commit(repo, {"docs/more.md": "# More\n"})
    [outcome] = shad("sources", "update", "widgets", "--yes", "--json").json()
    assert outcome["action"] == "pinned" and len(snapshots(vault)) == 1
    assert ingest(str(repo), vault, yes=True).unchanged  # ingest keeps the pinned revision too
    # unpinned, the new commit comes in; pinned back to the first, ingest goes back to it
    assert "no longer pinned" in shad("sources", "pin", "widgets", "--clear").out
    newer = ingest(str(repo), vault, yes=True)
    assert newer.revision == head(repo) and len(snapshots(vault)) == 2
    assert shad("sources", "pin", "widgets", first_revision).code == 0
    back = ingest(str(repo), vault, yes=True)
    assert back.revision == first_revision and not back.unchanged
    assert not (vault / back.path / "docs/more.md").exists()
    both = shad("sources", "pin", "widgets", first_revision, "--clear")
    assert both.code == 2


def test_a_pinned_folder_that_changed_is_not_ingested(tmp_path: Path, vault: Path) -> None:
    folder = tmp_path / "handbook"
    write_files(folder, {"intro.md": "# Intro\n"})
    ingest(str(folder), vault, yes=True)
    ShadowIndex().pin("handbook", ShadowIndex().source("handbook").snapshots[0].revision)
    (folder / "intro.md").write_text("# Intro, changed\n", encoding="utf-8")
    with pytest.raises(Exception, match="pinned"):
        ingest(str(folder), vault, yes=True)


def test_two_sources_with_one_name_get_distinct_ids(tmp_path: Path, vault: Path) -> None:
    a = make_repo(tmp_path / "a" / "widgets")
    b = make_repo(tmp_path / "b" / "widgets")
    assert ingest(str(a), vault, yes=True).source_id == "widgets"
    assert ingest(str(b), vault, yes=True).source_id == "widgets-2"
    assert ingest(str(a), vault, yes=True).source_id == "widgets"  # stable per source
