"""engine/vault/_scan.py: walking a vault folder the way Obsidian sees it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.vault import _scan
from engine.vault._scan import SKIPPED_DIRS, is_conflict_copy, scan_vault

MakeVault = Callable[..., Path]


def reasons(result: _scan.ScanResult) -> dict[str, str]:
    return dict(result.skipped)


# --- what is listed --------------------------------------------------------------------------------------


def test_notes_and_attachments_are_listed_separately(make_vault: MakeVault) -> None:
    root = make_vault(
        {
            "Home.md": "# Home\n",
            "Folder/Sub/Deep note.md": "deep",
            "Folder/image.png": b"\x89PNG\r\n\x1a\n\x00",
            "Folder/doc.pdf": b"%PDF-1.4",
            "canvas.canvas": "{}",
            "UPPER.MD": "upper-case extension",
            "no extension": "x",
        }
    )
    result = scan_vault(str(root))
    notes = sorted(p for p, e in result.files.items() if e.is_note)
    attachments = sorted(p for p, e in result.files.items() if not e.is_note)
    assert notes == ["Folder/Sub/Deep note.md", "Home.md", "UPPER.MD"]
    assert attachments == ["Folder/doc.pdf", "Folder/image.png", "canvas.canvas", "no extension"]
    assert result.skipped == []


def test_entries_carry_posix_path_size_and_mtime(make_vault: MakeVault) -> None:
    root = make_vault({"A/B/note.md": "12345"})
    os.utime(root / "A/B/note.md", ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_789))
    entry = scan_vault(str(root)).files["A/B/note.md"]
    assert entry.path == "A/B/note.md"
    assert entry.size == 5
    assert entry.mtime_ns == 1_700_000_000_123_456_789
    assert entry.is_note


def test_accepts_a_path_with_trailing_slash(make_vault: MakeVault) -> None:
    root = make_vault({"a.md": "x"})
    assert list(scan_vault(str(root) + "/").files) == ["a.md"]


def test_empty_vault(make_vault: MakeVault) -> None:
    result = scan_vault(str(make_vault({})))
    assert result.files == {}
    assert result.skipped == []


def test_unicode_and_space_names(make_vault: MakeVault) -> None:
    root = make_vault({"Café/Crème brûlée (recipe).md": "x", "日本/ノート.md": "y"})
    assert sorted(scan_vault(str(root)).files) == ["Café/Crème brûlée (recipe).md", "日本/ノート.md"]


# --- what is skipped -------------------------------------------------------------------------------------


def test_obsidian_trash_git_and_other_dot_folders_are_skipped(make_vault: MakeVault) -> None:
    root = make_vault(
        {
            ".obsidian/workspace.md": "x",
            ".obsidian/plugins/p/data.json": "{}",
            ".trash/Deleted.md": "x",
            ".git/HEAD": "ref",
            ".git/notes.md": "x",
            ".stversions/Old.md": "x",
            "Folder/.hidden/Secret.md": "x",
            ".hidden-file.md": "x",
            "Folder/.DS_Store": "x",
            "Folder/Visible.md": "x",
        }
    )
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Folder/Visible.md"]
    assert {".obsidian", ".trash", ".git"} <= SKIPPED_DIRS


def test_symlinked_file_outside_the_vault_is_not_followed(tmp_path: Path, make_vault: MakeVault) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    root = make_vault({"Real.md": "x"})
    os.symlink(outside / "secret.md", root / "Leak.md")
    os.symlink("../outside/secret.md", root / "RelativeLeak.md")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Real.md"]
    why = reasons(result)
    assert "outside" in why["Leak.md"]
    assert "outside" in why["RelativeLeak.md"]


def test_symlinked_folder_outside_the_vault_is_not_followed(tmp_path: Path, make_vault: MakeVault) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "a.md").write_text("a")
    (outside / "deep" / "b.md").write_text("b")
    root = make_vault({"Real.md": "x"})
    os.symlink(outside, root / "Linked folder")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Real.md"]
    assert "outside" in reasons(result)["Linked folder"]


@pytest.mark.timeout(30)  # a regression here would otherwise loop until the global timeout
def test_symlink_to_the_vault_parent_or_itself_does_not_loop(make_vault: MakeVault) -> None:
    root = make_vault({"Real.md": "x", "Sub/n.md": "y"})
    os.symlink("..", root / "up")
    os.symlink(".", root / "Sub" / "self")
    os.symlink("..", root / "Sub" / "parent")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Real.md", "Sub/n.md"]
    why = reasons(result)
    assert set(why) == {"up", "Sub/self", "Sub/parent"}


def test_symlinked_file_inside_the_vault_is_listed(make_vault: MakeVault) -> None:
    root = make_vault({"Folder/Real.md": "x"})
    os.symlink("Folder/Real.md", root / "Shortcut.md")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Folder/Real.md", "Shortcut.md"]
    assert result.files["Shortcut.md"].size == 1


def test_symlinked_folder_inside_the_vault_is_not_listed_twice(make_vault: MakeVault) -> None:
    root = make_vault({"Folder/Real.md": "x"})
    os.symlink("Folder", root / "Alias folder")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Folder/Real.md"]
    assert "Alias folder" in reasons(result)


def test_broken_symlink_does_not_crash(make_vault: MakeVault) -> None:
    root = make_vault({"Real.md": "x"})
    os.symlink("missing.md", root / "Dangling.md")
    os.symlink("/nonexistent/elsewhere.md", root / "Dangling outside.md")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["Real.md"]


def test_vault_root_reached_through_a_symlink(tmp_path: Path, make_vault: MakeVault) -> None:
    root = make_vault({"a.md": "x", "Sub/b.md": "y"})
    os.symlink("Sub/b.md", root / "link-in.md")
    link = tmp_path / "vault-link"
    os.symlink(root, link)
    result = scan_vault(str(link))
    assert sorted(result.files) == ["Sub/b.md", "a.md", "link-in.md"]
    assert result.skipped == []


def test_sibling_folder_with_common_prefix_counts_as_outside(tmp_path: Path, make_vault: MakeVault) -> None:
    root = make_vault({"a.md": "x"}, name="vault")
    sibling = tmp_path / "vault2"
    sibling.mkdir()
    (sibling / "s.md").write_text("s")
    os.symlink(sibling / "s.md", root / "s.md")
    result = scan_vault(str(root))
    assert sorted(result.files) == ["a.md"]
    assert "outside" in reasons(result)["s.md"]


def test_unlistable_folder_is_reported_not_fatal(
    make_vault: MakeVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_vault({"ok.md": "x", "Locked/secret.md": "y", "Locked/Inner/z.md": "z"})
    real_scandir = os.scandir
    locked = str(root / "Locked")

    def fake_scandir(path: str) -> object:
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(_scan.os, "scandir", fake_scandir)
    result = _scan._scan_with_python(str(root))
    assert sorted(result.files) == ["ok.md"]
    assert reasons(result) == {"Locked": "cannot list folder: Permission denied"}


@pytest.mark.skipif(_scan._gnu_find() is None, reason="GNU find is not installed here")
def test_find_walk_reports_unlistable_folder(
    make_vault: MakeVault, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = make_vault({"ok.md": "x", "Locked/secret.md": "y"})
    # Root reads every folder, so a stand-in find drops Locked/ and complains the way find does.
    fake = tmp_path / "find"
    fake.write_text(
        "#!/bin/sh\n"
        f'{_scan._gnu_find()} "$@" | grep -zv Locked\n'
        f"echo \"find: '{root}/Locked': Permission denied\" >&2\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(_scan, "_gnu_find", lambda: str(fake))
    result = _scan._scan_with_find(str(root))
    assert sorted(result.files) == ["ok.md"]
    assert reasons(result) == {"Locked": "cannot list folder: Permission denied"}


@pytest.mark.skipif(_scan._gnu_find() is None, reason="GNU find is not installed here")
def test_find_and_python_walks_agree(make_vault: MakeVault, demo_vault: Path, tmp_path: Path) -> None:
    root = make_vault(
        {"a.md": "x", "Sub/b.md": "y", "Sub/img.png": "z", ".hidden/c.md": "h", "Sub/.d.md": "d"}
    )
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    os.symlink(outside, root / "out.md")
    os.symlink(root / "a.md", root / "alias.md")
    os.symlink(root / "Sub", root / "SubLink")
    for folder in (root, demo_vault):
        by_find, by_python = _scan._scan_with_find(str(folder)), _scan._scan_with_python(str(folder))
        assert by_find.files == by_python.files
        assert sorted(by_find.skipped) == sorted(by_python.skipped)


def _bytes_name(root: Path, rel: bytes, content: bytes = b"# x\n") -> None:
    """Write a file whose name is raw bytes (not UTF-8); skip where the filesystem refuses such names."""
    full = os.path.join(os.fsencode(root), rel)
    try:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(content)
    except OSError as exc:
        pytest.skip(f"this filesystem refuses non-UTF-8 file names: {exc}")


_SCANNERS = [
    pytest.param(
        "find",
        marks=pytest.mark.skipif(_scan._gnu_find() is None, reason="GNU find is not installed here"),
    ),
    "python",
]


@pytest.mark.parametrize("scanner", _SCANNERS)
def test_name_that_is_not_utf8_is_skipped_and_reported(make_vault: MakeVault, scanner: str) -> None:
    # Such a name reaches Python as a surrogate escape ("bad\udcff.md"), which SQLite cannot store:
    # indexed, it broke every index-based call for the whole vault.
    root = make_vault({"ok.md": "x", "Café/fine.md": "y"})
    _bytes_name(root, b"bad\xff.md")
    _bytes_name(root, b"img\xfe.png", b"\x89PNG")
    _bytes_name(root, b"Dir\xfe/in.md")
    _bytes_name(root, b"Dir\xfe/Sub\xfd/deeper.md")
    _bytes_name(root, b"Dir\xfe/Sub/deepest.md")
    scan = _scan._scan_with_find if scanner == "find" else _scan._scan_with_python
    result = scan(str(root))
    assert sorted(result.files) == ["Café/fine.md", "ok.md"]
    assert reasons(result) == {
        "bad\\xff.md": "file name is not valid UTF-8; it is not indexed (rename it to fix this)",
        "img\\xfe.png": "file name is not valid UTF-8; it is not indexed (rename it to fix this)",
        "Dir\\xfe": "folder name is not valid UTF-8; its files are not indexed (rename it to fix this)",
    }
    for path, reason in result.skipped:  # printable and storable as they are
        path.encode("utf-8")
        reason.encode("utf-8")


def test_chmod_000_folder(make_vault: MakeVault) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading the folder")
    root = make_vault({"ok.md": "x", "Locked/secret.md": "y"})
    (root / "Locked").chmod(0)
    try:
        result = scan_vault(str(root))
    finally:
        (root / "Locked").chmod(0o755)
    assert sorted(result.files) == ["ok.md"]
    assert "Locked" in reasons(result)


def test_missing_root_gives_empty_result_with_reason(tmp_path: Path) -> None:
    result = scan_vault(str(tmp_path / "does-not-exist"))
    assert result.files == {}
    assert len(result.skipped) == 1


# --- conflict copies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "Note (conflict 2024-01-02).md",
        "Folder/Note (conflict 2024-01-02).md",
        "Note (Conflict).md",
        "Note (conflicted 2024-01-02 12-00-00).md",
        "Note.sync-conflict-20240101-123456-ABCDEFG.md",
        "Note.sync-conflict-20240101-123456.md",
        "Folder/Note.sync-conflict-20240101-123456-ABCDEFG.md",
        "Note (Jane's conflicted copy 2024-01-02).md",
        "Note (conflicted copy).md",
        "Note (MacBook's conflicted copy).md",
        "image (conflict 2024-01-02).png",
    ],
)
def test_conflict_copies_are_detected(path: str) -> None:
    assert is_conflict_copy(path)


@pytest.mark.parametrize(
    "path",
    [
        "Conflict resolution.md",
        "Note (2).md",
        "Note (copy).md",
        "Note conflict.md",
        "Conflicts (overview).md",
        "Note (conflicts between schools).md",
        "The sync-conflict story.md",
        "Note (conflict 2024-01-02)/Child.md",  # a folder with that name holds ordinary notes
        "Note.md",
        "Conflicted copy.md",
    ],
)
def test_ordinary_names_are_not_conflict_copies(path: str) -> None:
    assert not is_conflict_copy(path)


# --- the demo vault --------------------------------------------------------------------------------------


def test_demo_vault_scan(demo_vault: Path) -> None:
    result = scan_vault(str(demo_vault))
    assert result.skipped == []
    assert not any(p.startswith((".obsidian", ".trash")) for p in result.files)
    assert "Old draft.md" not in {p.rsplit("/", 1)[-1] for p in result.files}
    notes = [p for p, e in result.files.items() if e.is_note]
    attachments = [p for p, e in result.files.items() if not e.is_note]
    assert 30 <= len(notes) <= 60
    assert attachments == ["Equipment/grinder-burrs.svg"]
    assert {"Brewing/Troubleshooting.md", "Roasting/Troubleshooting.md", "Reference/Empty stub.md"} <= set(
        notes
    )
    assert [p for p in notes if is_conflict_copy(p)] == ["Brewing/Espresso (conflict 2026-04-02).md"]
    assert result.files["Reference/Empty stub.md"].size == 0
