"""A first build streams: the walk, parsing and writing go on together, in windows, so that no list of
every file is held (bounded memory on a big vault); what it writes is what a build from a walk writes."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import engine.vault._index as index_mod
from engine import Vault
from engine.vault._index_db import FTS_TABLES, LINK_INDEXES, SECONDARY_INDEXES
from engine.vault._links import resolve_pending
from engine.vault._scan import FileEntry, scan_vault, stream_vault

pytestmark = pytest.mark.usefixtures("shad_home")


def make_vault(root: Path, notes: int, attachments: int) -> Path:
    for i in range(notes):
        folder = root / f"f{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"Note {i:04d}.md").write_text(
            f"# Note {i:04d}\n\nStreamed note uniq{i:04d}, links to [[Note {(i + 1) % notes:04d}]].\n",
            encoding="utf-8",
        )
    for i in range(attachments):
        (root / f"f{i % 7}" / f"pic{i}.png").write_bytes(b"\x89PNG")
    return root


def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parallel, windowed path on a vault of a few dozen notes."""
    monkeypatch.setattr(index_mod, "_PARALLEL_THRESHOLD", 10)
    monkeypatch.setattr(index_mod, "_WINDOW", 8)
    monkeypatch.setattr(index_mod, "_BATCH", 5)


def test_stream_vault_yields_what_scan_vault_finds(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", 30, 4)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}")
    os.symlink("/etc", root / "outside")
    skipped: list[tuple[str, str]] = []
    streamed = list(stream_vault(str(root), skipped))
    scan = scan_vault(str(root))
    assert streamed == list(scan.files.values())
    assert skipped == scan.skipped and skipped  # the symlink out of the vault is reported


@pytest.mark.parametrize("windowed", [False, True])
def test_first_build_writes_before_the_walk_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, windowed: bool
) -> None:
    if windowed:
        small_windows(monkeypatch)
    else:
        monkeypatch.setattr(index_mod, "_BATCH", 5)
    root = make_vault(tmp_path / "v", 60, 3)
    walked: list[str] = []
    real_stream = stream_vault

    def counting(root: str, skipped: list[tuple[str, str]]) -> Iterator[FileEntry]:
        for entry in real_stream(root, skipped):
            walked.append(entry.path)
            yield entry

    walked_at_first_write: list[int] = []
    real_commit = index_mod.VaultIndex._commit_batch

    def commit(self: index_mod.VaultIndex, batch: list[index_mod._Parsed], stats: object) -> int:
        walked_at_first_write.append(len(walked))
        return real_commit(self, batch, stats)  # type: ignore[arg-type]

    monkeypatch.setattr(index_mod, "stream_vault", counting)
    monkeypatch.setattr(index_mod.VaultIndex, "_commit_batch", commit)
    seen: list[tuple[int, int]] = []
    stats = Vault(root).refresh(lambda done, total: seen.append((done, total)))
    assert len(walked) == 63
    if windowed:
        # Streaming: the first notes were written while most of the vault was still unwalked.
        assert walked_at_first_write[0] < 63 / 2
    else:
        # Smaller than one window: walked whole first, so progress knows the total from the start.
        assert seen[0] == (0, 60)
    assert (stats.added, stats.attachments, stats.scanned) == (60, 3, 63)
    assert seen[-1] == (60, 60)
    assert all(done <= total for done, total in seen)
    v = Vault(root)
    assert [h.path for h in v.search("uniq0042", limit=3)][:1] == ["f0/Note 0042.md"]
    assert v.backlinks("f0/Note 0042.md") == ["f6/Note 0041.md"]
    assert v.status()["attachments"] == 3
    assert v.refresh().changed == 0  # the next update finds the build complete


def test_streamed_build_matches_a_build_from_a_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 2)
    streamed = Vault(root, index_path=tmp_path / "a.sqlite")
    streamed.refresh()
    walked = Vault(root, index_path=tmp_path / "b.sqlite")
    walked.index.update(scan=scan_vault(str(root)))  # a given scan: the non-streaming path
    sql = "SELECT path, size, mtime_ns, hash, passages, title FROM files ORDER BY path"
    assert streamed.index.query(sql) == walked.index.query(sql)
    edges = "SELECT s.path, e.target, d.path FROM edges e JOIN files s ON s.id = e.src "
    edges += "LEFT JOIN files d ON d.id = e.dst ORDER BY 1, 2"
    assert streamed.index.query(edges) == walked.index.query(edges)
    assert streamed.index.query(edges)


def _indexes(v: Vault) -> set[str]:
    return {r[0] for r in v.index.query("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_a_big_first_build_creates_the_secondary_indexes_once_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 2)
    seen: list[set[str]] = []
    commit = index_mod.VaultIndex._commit_batch

    def watch(self: index_mod.VaultIndex, batch: list[object], stats: object) -> int:
        seen.append({r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")})
        return commit(self, batch, stats)  # type: ignore[arg-type]

    monkeypatch.setattr(index_mod.VaultIndex, "_commit_batch", watch)
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    v.refresh()
    wanted = {name for name, _sql in SECONDARY_INDEXES}
    assert seen and all(not (names & wanted) for names in seen)  # written without them
    assert wanted <= _indexes(v)
    assert v.backlinks("f1/Note 0001.md") == ["f0/Note 0000.md"]


def test_a_big_first_build_resolves_its_links_before_indexing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving rewrites every link row: with no index on ``edges`` yet there is none to keep in step.
    The indexes resolution reads (names, files) are there; the link indexes come right after, and an
    index file left without them (a build killed in between) gets them when it is next opened."""
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 0)
    seen: list[set[str]] = []
    resolve = index_mod.resolve_pending

    def watch(conn: sqlite3.Connection) -> int:
        seen.append({r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")})
        return resolve(conn)

    monkeypatch.setattr(index_mod, "resolve_pending", watch)
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    v.refresh()
    wanted = {name for name, _sql in SECONDARY_INDEXES}
    assert seen and not seen[0] & LINK_INDEXES and wanted - LINK_INDEXES <= seen[0]
    assert wanted <= _indexes(v)
    assert v.backlinks("f1/Note 0001.md") == ["f0/Note 0000.md"]
    for name in LINK_INDEXES:
        v.index.conn.execute(f"DROP INDEX {name}")
    v.index.close()
    assert wanted <= _indexes(Vault(root, index_path=tmp_path / "i.sqlite"))


def _fail_commit(
    monkeypatch: pytest.MonkeyPatch, nth: int, after: Callable[[index_mod.VaultIndex], object] | None = None
) -> None:
    """The index's ``nth`` batch commit raises ("disk full"); ``after`` sees it after each earlier one."""
    commit = index_mod.VaultIndex._commit_batch
    calls = 0

    def failing(self: index_mod.VaultIndex, batch: list[object], stats: object) -> int:
        nonlocal calls
        calls += 1
        if calls == nth:
            raise RuntimeError("disk full")
        done = commit(self, batch, stats)  # type: ignore[arg-type]
        if after is not None:
            after(self)
        return done

    monkeypatch.setattr(index_mod.VaultIndex, "_commit_batch", failing)


def test_a_first_build_that_fails_leaves_the_indexes_and_the_next_one_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 0)
    _fail_commit(monkeypatch, 3)
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    with pytest.raises(RuntimeError):
        v.refresh()
    wanted = {name for name, _sql in SECONDARY_INDEXES}
    assert wanted <= _indexes(v)
    monkeypatch.undo()
    again = Vault(root, index_path=tmp_path / "i.sqlite")
    assert again.refresh().added == 30  # the 10 committed notes stay; the rest is written now
    assert again.backlinks("f1/Note 0001.md") == ["f0/Note 0000.md"]


def _automerge(v: Vault) -> list[tuple[str, object]]:
    return [(t, v.index.query(f"SELECT v FROM {t}_config WHERE k = 'automerge'")[0][0]) for t in FTS_TABLES]


def test_a_big_first_build_merges_each_full_text_table_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 0)
    merging: list[list[tuple[str, object]]] = []
    commit = index_mod.VaultIndex._commit_batch

    def watch(self: index_mod.VaultIndex, batch: list[object], stats: object) -> int:
        merging.append(
            [
                (t, self.conn.execute(f"SELECT v FROM {t}_config WHERE k='automerge'").fetchone()[0])
                for t in FTS_TABLES
            ]
        )
        return commit(self, batch, stats)  # type: ignore[arg-type]

    monkeypatch.setattr(index_mod.VaultIndex, "_commit_batch", watch)
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    v.refresh()
    assert merging and all(all(value == 0 for _t, value in m) for m in merging)  # off while writing
    assert all(value == 4 for _t, value in _automerge(v))  # back on after
    assert [h.path for h in v.search("uniq0017", limit=1)] == ["f3/Note 0017.md"]


def test_an_update_after_a_killed_first_build_merges_again(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", 12, 0)
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    v.refresh()
    v.index._transaction(v.index._drop_indexes, bump=False)  # as a build killed midway leaves it
    v.index.close()
    again = Vault(root, index_path=tmp_path / "i.sqlite")
    again.refresh()
    assert all(value == 4 for _t, value in _automerge(again))
    assert {name for name, _sql in SECONDARY_INDEXES} <= _indexes(again)


def test_a_first_build_marks_no_link_tails_and_a_failed_one_resolves_its_links_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No link is resolved before a first build ends, so no tail needs marking as it goes; links written
    by a build that failed midway are still pending, and the next update resolves every one of them."""
    small_windows(monkeypatch)
    root = make_vault(tmp_path / "v", 40, 2)
    dirty: list[int] = []
    _fail_commit(
        monkeypatch,
        4,
        lambda index: dirty.append(index.conn.execute("SELECT count(*) FROM dirty").fetchone()[0]),
    )
    v = Vault(root, index_path=tmp_path / "i.sqlite")
    with pytest.raises(RuntimeError):
        v.refresh()
    assert dirty == [0, 0, 0]
    pending = v.index.query("SELECT count(*) FROM edges WHERE dst IS NULL")[0][0]
    assert pending == v.index.query("SELECT count(*) FROM edges")[0][0] == 15
    monkeypatch.undo()
    again = Vault(root, index_path=tmp_path / "i.sqlite")
    assert again.refresh().added == 25
    fresh = Vault(root, index_path=tmp_path / "fresh.sqlite")
    fresh.refresh()
    sql = "SELECT s.path, e.target, d.path FROM edges e JOIN files s ON s.id = e.src "
    sql += "LEFT JOIN files d ON d.id = e.dst ORDER BY 1, 2"
    assert again.index.query(sql) == fresh.index.query(sql)
    assert all(row[2] is not None for row in again.index.query(sql))  # every link found its note
    # An update after the first build marks the tails a new note answers to, as before.
    (root / "f1" / "Note 0001.md").unlink()
    marked: list[int] = []
    resolve = resolve_pending

    def spy(conn: sqlite3.Connection) -> int:
        marked.append(conn.execute("SELECT count(*) FROM dirty").fetchone()[0])
        return resolve(conn)

    monkeypatch.setattr(index_mod, "resolve_pending", spy)
    again.refresh()
    assert marked and marked[0] > 0
    assert again.read_note("f0/Note 0000.md").links[0].resolved is None
