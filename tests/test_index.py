"""The persistent index: where it lives, incremental updates, crash safety, schema changes, cheap reopen."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO, write_vault

import engine.vault._index as index_mod
from engine import Vault
from engine.config import shad_home
from engine.errors import IndexUnavailableError
from engine.vault import IndexStats, VaultIndex
from engine.vault._search import SearchFilters, search_index

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(DEMO, dest, symlinks=True)
    return dest


def make_many(root: Path, n: int) -> Path:
    """``n`` small notes, each with a unique searchable word ``uniqNNNNN``."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        folder = root / f"f{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"Note {i:05d}.md").write_text(
            f"---\ntype: gen\ntags: [gen, g{i % 7}]\n---\n# Note {i:05d}\n\n"
            f"Generated note number uniq{i:05d} about roasting batch {i}.\n"
            f"Links to [[Note {(i + 1) % n:05d}]].\n",
            encoding="utf-8",
        )
    return root


def bump_mtime(path: Path, seconds: float = 10.0) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


class ParseCounter:
    """Wraps the index's parser so a test can see exactly which notes were re-parsed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = index_mod.parse_for_index

        def counting(path: str, raw: bytes, **kw: Any) -> Any:
            self.paths.append(path)
            return real(path, raw, **kw)

        monkeypatch.setattr(index_mod, "parse_for_index", counting)


def note_count(root: Path) -> int:
    return sum(1 for p in root.rglob("*.md") if not any(s.startswith(".") for s in p.relative_to(root).parts))


# --- where the index lives ---


def test_index_lives_under_shad_home_not_in_vault(demo_copy: Path, shad_home: Path) -> None:
    before = {p.relative_to(demo_copy) for p in demo_copy.rglob("*")}
    v = Vault(demo_copy)
    v.refresh()
    db = Path(v.index.db_path)
    assert db.is_relative_to(shad_home)
    assert db.exists()
    assert not db.is_relative_to(demo_copy)
    assert {p.relative_to(demo_copy) for p in demo_copy.rglob("*")} == before
    assert v.status()["index"]["path"] == str(db)
    assert v.status()["index"]["bytes"] > 0


def test_shad_home_defaults_to_dot_shad_in_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SHAD_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert shad_home() == tmp_path / ".shad"


def test_each_vault_gets_its_own_index(tmp_path: Path) -> None:
    a = write_vault(tmp_path / "a" / "notes", {"x.md": "alpha"})
    b = write_vault(tmp_path / "b" / "notes", {"x.md": "beta"})  # same folder name, different vault
    va, vb = Vault(a), Vault(b)
    va.refresh()
    vb.refresh()
    assert va.index.db_path != vb.index.db_path
    assert [h.path for h in va.search("alpha")] == ["x.md"]
    assert va.search("beta") == []
    assert vb.search("alpha") == []


def test_same_vault_through_symlink_shares_index(tmp_path: Path) -> None:
    real = write_vault(tmp_path / "real", {"x.md": "alpha"})
    link = tmp_path / "link"
    try:
        link.symlink_to(real)
    except OSError:
        pytest.skip("symlinks not supported here")
    assert Vault(real).index.db_path == Vault(link).index.db_path


def test_explicit_index_path(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"x.md": "alpha"})
    db = tmp_path / "elsewhere" / "idx.sqlite"
    v = Vault(root, index_path=db)
    v.refresh()
    assert db.exists()
    assert [h.path for h in v.search("alpha")] == ["x.md"]


def test_opening_a_vault_is_lazy(tmp_path: Path, shad_home: Path) -> None:
    root = write_vault(tmp_path / "v", {"x.md": "alpha"})
    Vault(root)
    assert not list(shad_home.rglob("*.sqlite"))


# --- incremental updates ---


def test_first_update_adds_everything_second_changes_nothing(
    demo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = note_count(demo_copy)
    v = Vault(demo_copy)
    first = v.refresh()
    assert isinstance(first, IndexStats)
    assert (first.added, first.updated, first.removed, first.touched) == (n, 0, 0, 0)
    assert first.attachments == 1
    counter = ParseCounter(monkeypatch)
    second = v.refresh()
    assert (second.added, second.updated, second.removed, second.touched) == (0, 0, 0, 0)
    assert second.unchanged == n + 1  # notes and the attachment
    assert second.changed == 0
    assert counter.paths == []


def test_touch_without_change_counts_as_touched(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = Vault(demo_copy)
    v.refresh()
    bump_mtime(demo_copy / "Brewing/Espresso.md")
    counter = ParseCounter(monkeypatch)
    stats = v.refresh()
    assert stats.touched == 1
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 0)
    assert stats.changed == 0
    assert counter.paths == []  # hashed, found identical, not parsed
    # and the next update sees it as unchanged (the new mtime was stored)
    again = v.refresh()
    assert (again.touched, again.updated) == (0, 0)


def test_edit_reparses_only_that_note(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = Vault(demo_copy)
    v.refresh()
    assert v.search("zanzibarite") == []
    target = demo_copy / "Brewing/Espresso.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nA zanzibarite crema.\n", encoding="utf-8")
    bump_mtime(target)
    counter = ParseCounter(monkeypatch)
    stats = v.refresh()
    assert counter.paths == ["Brewing/Espresso.md"]
    assert (stats.added, stats.updated, stats.removed, stats.touched) == (0, 1, 0, 0)
    assert stats.unchanged == note_count(demo_copy)  # the others + the attachment
    hits = v.search("zanzibarite")
    assert [h.path for h in hits] == ["Brewing/Espresso.md"]


def test_edit_same_size_new_mtime_is_detected(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"a.md": "apple", "b.md": "berry"})
    v = Vault(root)
    v.refresh()
    (root / "a.md").write_text("mango", encoding="utf-8")  # same size
    bump_mtime(root / "a.md")
    stats = v.refresh()
    assert stats.updated == 1
    assert [h.path for h in v.search("mango")] == ["a.md"]
    assert v.search("apple") == []


def test_edit_changes_metadata_too(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"a.md": "---\ntype: old\ntags: [x]\n---\nbody words"})
    v = Vault(root)
    v.refresh()
    (root / "a.md").write_text("---\ntype: new\ntags: [y]\n---\nbody words", encoding="utf-8")
    bump_mtime(root / "a.md")
    v.refresh()
    assert [h.path for h in v.search("body", type="new")] == ["a.md"]
    assert v.search("body", type="old") == []
    assert [h.path for h in v.search("body", tags="y")] == ["a.md"]
    assert v.search("body", tags="x") == []


def test_deleted_note_disappears(demo_copy: Path) -> None:
    v = Vault(demo_copy)
    v.refresh()
    assert "Roasting/Resting beans.md" in [h.path for h in v.search("degassing", limit=20)]
    (demo_copy / "Roasting/Resting beans.md").unlink()
    stats = v.refresh()
    assert stats.removed == 1
    assert (stats.added, stats.updated) == (0, 0)
    assert "Roasting/Resting beans.md" not in [h.path for h in v.search("degassing", limit=50)]
    assert "Roasting/Resting beans.md" not in v.list_notes()
    assert "Roasting/Resting beans.md" not in [h.path for h in v.search("", path="Roasting", limit=100)]
    # links to it are now unresolved
    assert any(u["target"].endswith("Resting beans") for u in v.unresolved_links())


def test_new_note_appears_after_refresh(demo_copy: Path) -> None:
    v = Vault(demo_copy)
    v.refresh()
    (demo_copy / "Roasting/Smoke.md").write_text(
        "---\ntype: concept\ntags: [roasting/smoke]\n---\n# Smoke\n\nQuixotically blue smoke.\n",
        encoding="utf-8",
    )
    stats = v.refresh()
    assert (stats.added, stats.updated, stats.removed) == (1, 0, 0)
    assert [h.path for h in v.search("quixotically")] == ["Roasting/Smoke.md"]
    assert "Roasting/Smoke.md" in v.list_notes("Roasting")
    assert [h.path for h in v.search("smoke", tags="roasting/smoke")] == ["Roasting/Smoke.md"]


def test_rename_is_remove_plus_add(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"old.md": "kumquat"})
    v = Vault(root)
    v.refresh()
    (root / "old.md").rename(root / "new.md")
    stats = v.refresh()
    assert (stats.added, stats.removed) == (1, 1)
    assert [h.path for h in v.search("kumquat")] == ["new.md"]


def test_attachment_changes_are_tracked(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"a.md": "![[pic.png]]"})
    v = Vault(root)
    v.refresh()
    assert v.resolve_link("pic.png") is None
    (root / "pic.png").write_bytes(b"\x89PNG....")
    stats = v.refresh()
    assert stats.attachments_changed == 1
    assert v.resolve_link("pic.png") == "pic.png"
    assert v.status()["attachments"] == 1


def test_update_reports_progress(tmp_path: Path) -> None:
    root = make_many(tmp_path / "v", 30)
    seen: list[tuple[int, int]] = []
    Vault(root).refresh(lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 30)
    assert seen[-1] == (30, 30)


# --- cheap reopen ---


def test_second_vault_object_reuses_index(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v1 = Vault(demo_copy)
    v1.refresh()
    v1.close()
    counter = ParseCounter(monkeypatch)
    v2 = Vault(demo_copy)
    assert v2.index.db_path == v1.index.db_path
    assert not v2.index.is_empty()
    stats = v2.refresh()
    assert stats.added == stats.updated == stats.removed == 0
    assert counter.paths == []
    assert v2.search("first crack")[0].path == "Roasting/First crack.md"


def test_two_open_vault_objects_share_updates(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"a.md": "apple"})
    v1, v2 = Vault(root), Vault(root)
    v1.refresh()
    v2.refresh()
    write_vault(root, {"b.md": "banana"})
    assert v1.refresh().added == 1
    assert v2.refresh().added == 0  # v1 already indexed it
    assert [h.path for h in v2.search("banana")] == ["b.md"]


# --- schema version ---


def test_schema_version_change_rebuilds(demo_copy: Path) -> None:
    n = note_count(demo_copy)
    v = Vault(demo_copy)
    v.refresh()
    db = v.index.db_path
    v.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = 'ancient' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    v2 = Vault(demo_copy)
    stats = v2.refresh()
    assert stats.added == n
    assert v2.index.meta("schema") == index_mod.SCHEMA_VERSION
    assert v2.search("first crack")[0].path == "Roasting/First crack.md"


def test_code_schema_bump_rebuilds(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = note_count(demo_copy)
    v = Vault(demo_copy)
    v.refresh()
    v.close()
    monkeypatch.setattr(index_mod, "SCHEMA_VERSION", "test-bump")
    v2 = Vault(demo_copy)
    assert v2.refresh().added == n
    assert v2.index.meta("schema") == "test-bump"


# What a fixed set of notes is indexed into (content tables only: FTS5's own segment layout depends on the
# SQLite build), per schema version. A change to what notes are parsed into changes it: bump
# ``SCHEMA_VERSION`` (so existing indexes are rebuilt, not left with the old text) and record the new one.
INDEX_FINGERPRINTS = {"15": "1c55540f46701fcaaefaf12e37a8041c82d9adc51c9358eb8eae8c49cb8a2b37"}
_SAMPLE = {
    "Sync/Security.md": "---\naliases:\n  - Privacy\ndescription: Learn about security.\nmobile: false\n"
    "permalink: sync/security\npublish: true\ncreated: 2023-09-12\nurl: https://example.com/x\n"
    'host:\n  - "[[People/Ann]]"\ntags: [sync, privacy]\n---\nLearn about security. #inline-tag\n'
    "## Encryption\n\nEnd-to-end. %% hidden note %% See [[Sync/Plans#Standard|plans]] and "
    "[docs](https://example.com/docs). ^block-1\n\n```py\nprint('code')\n```\n### Keys\n\n- item one\n",
    "Sync/Plans.md": "# Plans\n\n## Standard\n\nRetained for 1 month. ![[People/Ann]]\n"
    '![Plan badge](https://img.example/plans.svg) <span class="note">Billed monthly.</span>\n'
    "<!--\n## Unused placeholder\n\nA template's hidden section, long enough to be a passage.\n-->\n",
    "People/Ann.md": "---\ntype: person\nrating: 7\n---\nAnn writes [[Missing note]].\n",
}


def _index_fingerprint(v: Vault) -> str:
    import hashlib

    conn = sqlite3.connect(v.index.db_path)
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        if name != "meta"
        and not name.endswith(("_data", "_idx", "_docsize", "_config"))
        and name not in ("fts", "names", "docs")
    ]
    digest = hashlib.sha256()
    for table in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] != "mtime_ns"]
        rows = conn.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY {', '.join(cols)}").fetchall()
        digest.update(repr((table, cols, rows)).encode())
    conn.close()
    return digest.hexdigest()


def test_a_change_to_what_notes_are_indexed_as_bumps_the_schema(tmp_path: Path) -> None:
    v = Vault(write_vault(tmp_path / "v", _SAMPLE))
    v.refresh()
    found = _index_fingerprint(v)
    v.close()
    assert INDEX_FINGERPRINTS.get(index_mod.SCHEMA_VERSION) == found, (
        f"what notes are indexed as changed ({found}): bump SCHEMA_VERSION in engine/vault/_index.py so "
        "existing indexes are rebuilt, and record the new fingerprint in INDEX_FINGERPRINTS"
    )


def test_index_from_old_layout_without_meta_is_rebuilt(tmp_path: Path, shad_home: Path) -> None:
    """A foreign or corrupt-ish database with unexpected tables must not break opening."""
    root = write_vault(tmp_path / "v", {"a.md": "apple"})
    db = index_mod.default_index_path(str(root))
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES('schema', '1')")
    conn.execute("CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT)")  # old, incompatible columns
    conn.commit()
    conn.close()
    v = Vault(root)
    assert v.refresh().added == 1
    assert [h.path for h in v.search("apple")] == ["a.md"]


# --- malformed notes never break the others ---

GOOD_NOTES = {
    "Good.md": "---\ntype: idea\nrating: 5\n---\n# Good\n\nRoasting beans well. See [[Other]].\n",
    "Other.md": "---\ntype: idea\n---\n# Other\n\nMore about roasting.\n",
}
BAD_FRONTMATTER = {
    "nan": "x: .nan\ny: .inf\nz: [-.inf]",
    "huge_int": "x: " + "9" * 5000,
    "bad_date": "x: 2024-13-45",
}


def _write_bad_name(root: Path) -> None:
    try:
        with open(os.path.join(os.fsencode(root), b"bad\xff.md"), "wb") as fh:
            fh.write(b"# Bad\n\nRoasting under a name that is not UTF-8.\n")
    except OSError as exc:
        pytest.skip(f"this filesystem refuses non-UTF-8 file names: {exc}")


def _check_good_notes_work(v: Vault) -> None:
    assert {h.path for h in v.search("roasting")} >= {"Good.md", "Other.md"}
    assert [h.path for h in v.search("roasting", where={"rating": 5})] == ["Good.md"]
    assert sorted(h.path for h in v.search("", where={"type": "idea"}, limit=50)) == ["Good.md", "Other.md"]
    assert {"Good.md", "Other.md"} <= set(v.list_notes())
    assert v.read_note("Good.md").links[0].resolved == "Other.md"
    assert v.backlinks("Other.md") == ["Good.md"]
    rows = v.index.query("SELECT count(*) FROM files WHERE NOT json_valid(frontmatter)")
    assert rows[0][0] == 0


@pytest.mark.parametrize("case", ["bad_name", *BAD_FRONTMATTER])
def test_a_malformed_note_does_not_break_the_vault(tmp_path: Path, case: str) -> None:
    root = write_vault(tmp_path / "v", GOOD_NOTES)
    if case == "bad_name":
        _write_bad_name(root)
    else:
        write_vault(root, {"Bad.md": f"---\n{BAD_FRONTMATTER[case]}\n---\n# Bad\n\nRoasting gone odd.\n"})
    v = Vault(root)
    stats = v.refresh()
    _check_good_notes_work(v)
    status = v.status()
    if case == "bad_name":
        # Left out (its path could not be stored or read back), and said so.
        assert v.list_notes() == ["Good.md", "Other.md"]
        assert stats.skipped == [
            ("bad\\xff.md", "file name is not valid UTF-8; it is not indexed (rename it to fix this)")
        ]
        assert status["skipped"] == [{"path": p, "reason": r} for p, r in stats.skipped]
    else:
        # Indexed, the bad value kept as the text written, and listed among the vault's problems.
        assert "Bad.md" in {h.path for h in v.search("roasting")}
        assert [d["code"] for d in status["problems"]] == ["frontmatter_value_as_text"]
        assert status["problems"][0]["path"] == "Bad.md"
        written = v.read_note("Bad.md").frontmatter["x"]
        assert isinstance(written, str)
        assert [h.path for h in v.search("", where={"x": written})] == ["Bad.md"]
    assert v.refresh().changed == 0  # and nothing is redone on the next update
    v.close()


def test_all_malformed_notes_at_once_through_a_fresh_object(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", GOOD_NOTES)
    _write_bad_name(root)
    for case, block in BAD_FRONTMATTER.items():
        write_vault(root, {f"{case}.md": f"---\n{block}\n---\nroasting\n"})
    Vault(root).refresh()
    v = Vault(root)  # reads what the first object indexed
    _check_good_notes_work(v)
    assert sorted(p["path"] for p in v.status()["problems"]) == ["bad_date.md", "huge_int.md", "nan.md"]


def test_index_holding_nan_from_schema_7_is_rebuilt(tmp_path: Path) -> None:
    """Schema 7 stored frontmatter NaN as ``NaN``, which SQLite's JSON functions reject: every
    ``where`` search failed. Schema 8 never writes it, and an index from 7 is rebuilt."""
    root = write_vault(tmp_path / "v", {**GOOD_NOTES, "Nan.md": "---\nx: .nan\n---\nroasting\n"})
    v = Vault(root)
    v.refresh()
    db = v.index.db_path
    v.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE files SET frontmatter = '{\"x\":NaN}' WHERE path = 'Nan.md'")
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema'")
    conn.commit()
    with pytest.raises(sqlite3.OperationalError, match="malformed JSON"):
        conn.execute("SELECT json_extract(frontmatter, '$.x') FROM files").fetchall()
    conn.close()
    v2 = Vault(root)
    assert v2.refresh().added == 3
    _check_good_notes_work(v2)


# --- FTS5 check ---


def test_missing_fts5_is_a_clear_error() -> None:
    class NoFts5:
        def execute(self, sql: str, *args: Any) -> None:
            raise sqlite3.OperationalError("no such module: fts5")

    with pytest.raises(IndexUnavailableError) as exc:
        index_mod._check_fts5(NoFts5())  # type: ignore[arg-type]
    assert "FTS5" in str(exc.value)
    assert exc.value.hint


# --- crash safety ---


def test_exception_mid_update_leaves_usable_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_many(tmp_path / "v", 60)
    monkeypatch.setattr(index_mod, "_BATCH", 10)
    real = index_mod._parse_one
    calls = {"n": 0}

    def flaky(job: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 35:
            raise RuntimeError("simulated crash")
        return real(job)

    monkeypatch.setattr(index_mod, "_parse_one", flaky)
    v = Vault(root)
    with pytest.raises(RuntimeError, match="simulated crash"):
        v.refresh()
    v.close()
    monkeypatch.setattr(index_mod, "_parse_one", real)

    # What was committed before the crash is intact and searchable.
    idx = VaultIndex(str(root))
    committed = idx.query("SELECT count(*) FROM files WHERE is_note = 1")[0][0]
    assert committed == 30  # three full batches of ten
    hits = search_index(idx, "v", "generated", 100, SearchFilters())
    assert len(hits) == 30
    idx.close()

    # A later update completes the job, re-reading only the rest.
    v2 = Vault(root)
    stats = v2.refresh()
    assert stats.added == 30
    assert stats.unchanged == 30
    assert len(v2.list_notes()) == 60
    assert len(v2.search("generated", limit=100)) == 60


def _index_until_killed(root: str, home: str, hang_on_write: int, ready: Any) -> None:
    """Child process: index ``root``, and hang inside write transaction ``hang_on_write`` (uncommitted)."""
    os.setpgrp()  # so the parent can kill us and any pool workers together
    os.environ["SHAD_HOME"] = home
    index_mod._BATCH = 200
    real_write = index_mod.VaultIndex._write
    writes = {"n": 0}

    def write(self: Any, fn: Any) -> None:
        writes["n"] += 1
        if writes["n"] != hang_on_write:
            real_write(self, fn)
            return
        self.conn.execute("BEGIN IMMEDIATE")
        fn()  # half the work of this batch is in the open transaction ...
        ready.set()
        time.sleep(120)  # ... when the process is killed

    index_mod.VaultIndex._write = write  # type: ignore[method-assign]
    Vault(root).refresh()
    ready.set()


def _index_with_progress(root: str, home: str, ready: Any) -> None:
    """Child process: a real (parallel) index run that tells the parent when the first batch is in."""
    os.setpgrp()
    os.environ["SHAD_HOME"] = home

    def progress(done: int, total: int) -> None:
        if 0 < done < total:
            ready.set()
            time.sleep(0.05)

    Vault(root).refresh(progress)
    ready.set()


def _kill_group(proc: Any) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.join(30)


def _fork_ctx() -> Any:
    if "fork" not in multiprocessing.get_all_start_methods() or not hasattr(os, "killpg"):
        pytest.skip("needs fork and process groups")
    return multiprocessing.get_context("fork")


@pytest.fixture(scope="module")
def many_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_many(tmp_path_factory.mktemp("many") / "vault", 2000)


def test_sigkill_inside_a_write_transaction(
    many_notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    ctx = _fork_ctx()
    ready = ctx.Event()
    proc = ctx.Process(target=_index_until_killed, args=(str(many_notes), str(home), 3, ready))
    proc.start()
    try:
        assert ready.wait(120), "indexer never reached the third batch"
    finally:
        _kill_group(proc)
    assert proc.exitcode == -signal.SIGKILL

    monkeypatch.setenv("SHAD_HOME", str(home))
    idx = VaultIndex(str(many_notes))
    assert idx.query("PRAGMA integrity_check")[0][0] == "ok"
    committed = idx.query("SELECT count(*) FROM files WHERE is_note = 1")[0][0]
    assert committed == 400  # two batches of 200 committed; the third was rolled back
    fts_notes = idx.query(f"SELECT count(DISTINCT rowid >> {index_mod.CHUNK_BITS}) FROM fts")[0][0]
    assert fts_notes == committed  # no half-written note
    hits = search_index(idx, "v", "generated roasting", 10, SearchFilters())
    assert len(hits) == 10
    idx.close()

    v = Vault(many_notes)
    stats = v.refresh()
    assert stats.added == 2000 - 400
    assert stats.unchanged == 400
    assert len(v.list_notes()) == 2000
    for i in (0, 999, 1999):
        assert v.search(f"uniq{i:05d}")[0].path == f"f{i % 20:02d}/Note {i:05d}.md"


def test_sigkill_during_parallel_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_many(tmp_path / "v", 3000)  # above the parallel threshold: a worker pool is used
    home = tmp_path / "home"
    ctx = _fork_ctx()
    ready = ctx.Event()
    proc = ctx.Process(target=_index_with_progress, args=(str(root), str(home), ready))
    proc.start()
    try:
        assert ready.wait(120), "indexer made no progress"
    finally:
        _kill_group(proc)

    monkeypatch.setenv("SHAD_HOME", str(home))
    idx = VaultIndex(str(root))
    assert idx.query("PRAGMA integrity_check")[0][0] == "ok"
    committed = idx.query("SELECT count(*) FROM files WHERE is_note = 1")[0][0]
    assert 0 < committed <= 3000
    assert search_index(idx, "v", "generated", 5, SearchFilters())
    idx.close()

    v = Vault(root)
    stats = v.refresh()
    assert stats.added + stats.unchanged == 3000
    assert stats.added == 3000 - committed
    assert v.search("uniq02999")[0].path == "f19/Note 02999.md"
    assert v.status()["notes"] == 3000


def test_note_and_passage_totals_follow_every_change(tmp_path: Path) -> None:
    """The totals kept in meta (used to size search decisions) always equal a full count."""
    root = write_vault(
        tmp_path / "v", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta\n\n## More\n\nmore beta"}
    )
    v = Vault(root)

    def assert_totals() -> None:
        index = VaultIndex(str(root), v.index.db_path)  # a fresh object: nothing cached
        assert index.note_count() == index.query("SELECT count(*) FROM names")[0][0]
        assert index.passage_count() == index.query("SELECT count(*) FROM fts")[0][0]
        index.close()

    v.refresh()
    assert_totals()
    (root / "c.md").write_text("# C\n\n" + "\n\n".join(f"## S{i}\n\ntext {i}" for i in range(5)))
    (root / "b.md").write_text("# B\n\nshorter now")
    bump_mtime(root / "b.md")
    v.refresh()
    assert_totals()
    (root / "a.md").unlink()
    v.refresh()
    assert_totals()
    assert v.index.note_count() == 2


def test_new_notes_written_table_by_table_get_the_rows_of_a_note_by_note_write(tmp_path: Path) -> None:
    """Notes new to the index are written a statement per table for a whole batch: each gets the id SQLite
    would give it (the next after the largest, even where a removed note's id is free again), and every
    table's rows hang off that id, as when a note was written alone (an edited note keeps its id)."""
    root = write_vault(tmp_path / "v", {"a.md": "# A\n\nalpha", "b.md": "# B\n\nbeta"})
    v = Vault(root)
    v.refresh()
    a = dict(v.index.query("SELECT path, id FROM files"))["a.md"]
    (root / "b.md").unlink()
    (root / "a.md").write_text("# A\n\nalpha edited, see [[c]]")
    bump_mtime(root / "a.md")
    c_text = "# C\n\ngamma [[d]] #wet, the first part of c\n\n## More\n\nmore of c, a passage of its own"
    (root / "c.md").write_text("---\naliases: [Sea]\ntags: [water]\n---\n" + c_text)
    (root / "d.md").write_text("# D\n\ndelta, back to [[Sea]] and [[a]]")
    stats = v.refresh()
    assert (stats.added, stats.updated, stats.removed) == (2, 1, 1)
    ids = dict(v.index.query("SELECT path, id FROM files"))
    c, d = ids["c.md"], ids["d.md"]
    assert ids["a.md"] == a
    assert sorted([c, d]) == [a + 1, a + 2]  # the largest id + 1, as SQLite gives it (b's may be reused)
    names = v.index.query("SELECT rowid, title FROM names")
    assert sorted(names) == sorted([(a, "a"), (c, "c"), (d, "d")])
    fts = v.index.query("SELECT rowid >> 10, rowid & 1023, heading FROM fts WHERE rowid >> 10 != ?", (a,))
    assert sorted(fts) == sorted([(c, 0, "C"), (c, 1, "More"), (d, 0, "D")])
    assert v.index.query("SELECT file_id, tag FROM note_tags ORDER BY rowid") == [(c, "wet"), (c, "water")]
    keys = v.index.query("SELECT key, file_id FROM keys WHERE file_id != ?", (a,))
    assert sorted(keys) == [("c", c), ("d", d), ("sea", c)]
    lookup = v.index.query("SELECT key, kind, file_id FROM lookup WHERE file_id != ? ORDER BY rowid", (a,))
    mine = {fid: [row for row in lookup if row[2] == fid] for fid in (c, d)}
    assert mine == {
        c: [("c.md", 0, c), ("c.md", 1, c), ("c", 1, c), ("sea", 2, c)],
        d: [("d.md", 0, d), ("d.md", 1, d), ("d", 1, d)],
    }
    edges = "SELECT s.path, e.target, d.path FROM edges e JOIN files s ON s.id = e.src "
    edges += "LEFT JOIN files d ON d.id = e.dst ORDER BY e.src, e.rowid"
    expected = {"a.md": [("a.md", "c", "c.md")], "c.md": [("c.md", "d", "d.md")]}
    expected["d.md"] = [("d.md", "Sea", "c.md"), ("d.md", "a", "a.md")]
    assert v.index.query(edges) == [
        row for path in sorted(ids, key=ids.__getitem__) for row in expected[path]
    ]
    assert [h.path for h in v.search("delta")] == ["d.md"]
    assert v.index.query("SELECT rowid FROM docs WHERE docs MATCH 'gamma'") == [(c,)]
    # The whole-note row of a note written in a batch is removed with the values it was written with.
    (root / "c.md").unlink()
    v.refresh()
    assert v.index.query("SELECT rowid FROM docs WHERE docs MATCH 'gamma OR water OR passage'") == []
    assert v.index.query("SELECT rowid FROM docs WHERE docs MATCH 'delta'") == [(d,)]


def test_another_objects_writes_are_noticed(tmp_path: Path) -> None:
    """A Vault keeps the index's file state in memory between refreshes; a change made through another
    object (or process) bumps the index generation, and the remembered state is read afresh."""
    root = write_vault(tmp_path / "v", {"a.md": "alpha", "b.md": "beta", "c.md": "gamma"})
    first, second = Vault(root), Vault(root)
    first.refresh()
    (root / "b.md").unlink()
    assert second.refresh().removed == 1  # through the other object
    (root / "c.md").write_text("gamma changed")
    bump_mtime(root / "c.md")
    stats = first.refresh()
    assert stats.removed == 0  # b.md is already gone from the index: not removed twice
    assert stats.updated == 1 and stats.unchanged == 1
    assert [h.path for h in first.search("changed")] == ["c.md"]


def test_remembered_state_follows_own_changes(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", {"a.md": "alpha", "b.md": "beta"})
    v = Vault(root)
    v.refresh()
    (root / "d.md").write_text("delta")
    assert v.refresh().added == 1
    assert v.refresh().changed == 0  # remembered: d.md is not added again
    (root / "d.md").unlink()
    assert v.refresh().removed == 1
    assert v.refresh().removed == 0


# --- several processes at once ---


def _index_in_rounds(root: str, homes: list[str], barrier: Any, results: Any) -> None:
    """Child process: for each fresh ``$SHAD_HOME`` in turn, index ``root`` at the same moment as the
    other children, and report what happened."""
    for home in homes:
        os.environ["SHAD_HOME"] = home
        barrier.wait(120)
        try:
            v = Vault(root)
            stats = v.refresh()
            v.close()
        except Exception as exc:
            results.put((home, f"{type(exc).__name__}: {exc}"))
        else:
            results.put((home, None if stats.added + stats.updated + stats.unchanged else "saw no notes"))


@pytest.mark.parametrize(
    ("vault", "processes", "rounds", "query", "expected"),
    [
        ("demo", 4, 5, "gooseneck", "Equipment/Gooseneck kettle.md"),
        # Above the parallel threshold: the first build also switches the journal mode.
        ("many", 3, 2, "uniq01999", "f19/Note 01999.md"),
    ],
)
def test_processes_indexing_one_fresh_vault_at_once(
    vault: str,
    processes: int,
    rounds: int,
    query: str,
    expected: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Several processes first-index one vault into one index at the same time: each writer checks what it
    writes against the rows another has meanwhile committed, so none fails, and the index ends whole."""
    root: Path = request.getfixturevalue("demo_copy" if vault == "demo" else "many_notes")
    homes = [str(tmp_path / f"home{r}") for r in range(rounds)]
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(processes), ctx.Queue()
    procs = [
        ctx.Process(target=_index_in_rounds, args=(str(root), homes, barrier, results))
        for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    try:
        reports = [results.get(timeout=240) for _ in range(processes * rounds)]
    finally:
        for proc in procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()
    assert [p.exitcode for p in procs] == [0] * processes
    assert [r for r in reports if r[1] is not None] == []

    notes = note_count(root)
    for home in homes:
        monkeypatch.setenv("SHAD_HOME", home)
        idx = VaultIndex(str(root))  # a fresh object: nothing cached, nothing updated
        assert idx.query("PRAGMA integrity_check")[0][0] == "ok"
        assert idx.note_count() == notes
        assert idx.query("SELECT count(*) FROM files WHERE is_note = 1")[0][0] == notes
        assert idx.query("SELECT count(*) FROM names")[0][0] == notes
        passages = idx.query("SELECT count(*) FROM fts")[0][0]
        assert idx.passage_count() == passages
        assert idx.query("SELECT sum(passages) FROM files WHERE is_note = 1")[0][0] == passages
        orphans = idx.query(
            f"SELECT count(*) FROM fts WHERE rowid >> {index_mod.CHUNK_BITS} NOT IN "
            "(SELECT id FROM files WHERE is_note = 1)"
        )[0][0]
        assert orphans == 0
        assert search_index(idx, "v", query, 1, SearchFilters())[0].path == expected
        idx.close()
        v = Vault(root)
        stats = v.refresh()  # nothing is left for a later update to do
        assert (stats.added, stats.updated, stats.removed, stats.touched) == (0, 0, 0, 0)
        v.close()
