"""engine/vault/_refresh.py and _lock.py: a refresh looks only at what changed since the last scan, and
one update of an index runs at a time across processes."""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Vault
from engine.vault import _index
from engine.vault._index import VaultIndex
from engine.vault._parse import parse_for_index
from engine.vault._refresh import MARGIN

pytestmark = pytest.mark.usefixtures("shad_home")
MakeVault = Callable[..., Path]


def rows(v: Vault) -> list[tuple[Any, ...]]:
    return sorted(v.index.query("SELECT path, is_note, size, mtime_ns, hash FROM files"))


def fresh_rows(root: Path, tmp: Path) -> list[tuple[Any, ...]]:
    """What a first build of the folder as it is now holds."""
    v = Vault(root, index_path=tmp / f"fresh-{time.monotonic_ns()}.sqlite")
    v.refresh()
    try:
        return rows(v)
    finally:
        v.close()


def full_scans(v: Vault) -> str | None:
    return v.index.meta("full_scan_at")


@pytest.fixture
def vault(make_vault: MakeVault) -> Path:
    files = {f"F{i}/N{j}.md": f"# Note {i} {j}\nbody {i} {j}\n" for i in range(4) for j in range(5)}
    return make_vault({**files, "Top.md": "top\n", "img/pic.png": b"\x89PNG"})


def test_a_refresh_after_the_first_looks_only_at_changes(vault: Path, tmp_path: Path) -> None:
    v = Vault(vault)
    v.refresh()
    first = full_scans(v)
    (vault / "F1" / "N2.md").write_text("# Note\nedited in place with a zebrafish\n")
    (vault / "F2" / "New.md").write_text("new note\n")
    (vault / "F3" / "N0.md").unlink()
    stats = Vault(vault).refresh()
    assert (stats.added, stats.updated, stats.removed) == (1, 1, 1)
    assert (stats.scanned, stats.attachments) == (22, 1) and stats.unchanged == 20
    assert full_scans(v) == first  # no whole walk
    assert [h.path for h in v.search("zebrafish")] == ["F1/N2.md"]
    assert rows(v) == fresh_rows(vault, tmp_path)


def test_nothing_changed_is_nothing_to_do(vault: Path) -> None:
    Vault(vault).refresh()
    stats = Vault(vault).refresh()
    assert (stats.changed, stats.unchanged, stats.scanned) == (0, 22, 22)


def test_a_copied_tree_a_moved_in_tree_and_a_removed_folder_are_seen(
    vault: Path, tmp_path: Path, make_vault: MakeVault
) -> None:
    elsewhere = make_vault({"Deep/A.md": "a\n", "Deep/Er/B.md": "b\n"}, name="elsewhere")
    outside = make_vault({"Tree/C.md": "c\n", "Tree/Sub/D.md": "d\n"}, name="outside")
    old = time.time() - 30 * 86400
    for p in [*elsewhere.rglob("*"), *outside.rglob("*")]:
        os.utime(p, (old, old))
    time.sleep(MARGIN + 0.5)  # the files outside now changed before the scan (and its margin) began
    v = Vault(vault)
    v.refresh()
    shutil.copytree(elsewhere / "Deep", vault / "F0" / "Deep")  # copy2 keeps the old mtimes
    (outside / "Tree").rename(vault / "F3" / "Tree")  # a move keeps the files' ctime: only F3 changed
    shutil.rmtree(vault / "F2")
    (vault / "F1").rename(vault / "Moved")
    stats = v.refresh()
    assert stats.added == 2 + 2 + 5 and stats.removed == 5 + 5
    assert full_scans(v) is not None and rows(v) == fresh_rows(vault, tmp_path)


def test_an_mtime_set_back_is_still_an_edit(vault: Path, tmp_path: Path) -> None:
    note = vault / "F0" / "N0.md"
    v = Vault(vault)
    v.refresh()
    st = note.stat()
    note.write_text(note.read_text().replace("body", "BODY"))  # same size
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    assert v.refresh().updated == 1
    assert rows(v) == fresh_rows(vault, tmp_path)


def test_run_history_stays_out_and_a_scope_change_walks_everything(vault: Path) -> None:
    Vault(vault).refresh()
    (vault / "Shad" / "History" / "Runs").mkdir(parents=True)
    (vault / "Shad" / "History" / "Runs" / "report.md").write_text("a report\n")
    assert Vault(vault).refresh().added == 0
    assert Vault(vault, include_history=True).refresh().added == 1
    assert Vault(vault).refresh().removed == 1


def test_random_changes_end_as_a_first_build_would(vault: Path, tmp_path: Path) -> None:
    rng = random.Random(3)
    v = Vault(vault)
    v.refresh()
    for step in range(20):
        notes = sorted(vault.rglob("*.md"))
        action = rng.choice(["edit", "add", "delete", "move", "mkdir"])
        target = rng.choice(notes)
        if action == "edit":
            target.write_text(target.read_text() + f"more {step}\n")
        elif action == "add":
            target.with_name(f"Added{step}.md").write_text(f"added {step}\n")
        elif action == "delete" and len(notes) > 3:
            target.unlink()
        elif action == "move":
            dest = vault / rng.choice(["F0", "F1", "Other", "Other/Sub"])
            dest.mkdir(parents=True, exist_ok=True)
            target.rename(dest / f"M{step}.md")
        else:
            (vault / f"D{step}" / "E").mkdir(parents=True)
            (vault / f"D{step}" / "E" / "x.md").write_text("deep\n")
        v.refresh()
        assert rows(v) == fresh_rows(vault, tmp_path), step


# --- one builder at a time, across processes ------------------------------------------------------------


def _build(root: str, home: str, barrier: Any, results: Any) -> None:
    os.environ["SHAD_HOME"] = home
    parsed = []

    def counting(path: str, raw: bytes, **kw: Any) -> Any:  # how many notes this process parsed
        parsed.append(path)
        return parse_for_index(path, raw, **kw)

    pytest.MonkeyPatch().setattr(_index, "parse_for_index", counting)  # this process only, which ends
    barrier.wait()
    stats = Vault(root).refresh()
    results.put((len(parsed), stats.added, stats.updated, stats.unchanged))


def test_processes_building_one_fresh_index_wait_for_a_single_builder(
    make_vault: MakeVault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_vault({f"D{i % 20}/Note {i}.md": f"# N{i}\n[[Note {i + 1}]] text {i}\n" for i in range(600)})
    home = str(tmp_path / "home")
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_build, args=(str(root), home, barrier, results)) for _ in range(3)]
    for proc in procs:
        proc.start()
    try:
        reports = sorted(results.get(timeout=240) for _ in procs)
    finally:
        for proc in procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    # One process built everything; the others waited and found it done (nothing parsed twice).
    assert reports == [(0, 0, 0, 600), (0, 0, 0, 600), (600, 600, 0, 0)]
    monkeypatch.setenv("SHAD_HOME", home)
    idx = VaultIndex(str(root))
    assert idx.query("PRAGMA integrity_check")[0][0] == "ok" and idx.note_count() == 600
    assert idx.query("SELECT count(*) FROM edges WHERE dst > 0")[0][0] == 599
    idx.close()
