"""engine.vault.VaultWriter: the one writer of a vault — roles, paths that never leave the vault (a property
test over hostile paths and symlinks), validated frontmatter and links, atomic writes, approved deletes,
and StateCorruptionError when a note changed on disk after it was read."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import NoteNotFoundError, PathOutsideVaultError
from engine.vault import StateCorruptionError, Vault, VaultWriter, WriteRefusedError

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Espresso.md").write_text("---\ntype: method\n---\n# Espresso\n\nNine bars.\n")
    return root


def files_under(path: Path) -> set[str]:
    return {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file() or p.is_symlink()}


def test_write_creates_a_note_with_frontmatter_that_the_vault_reads_back(vault: Path) -> None:
    w = VaultWriter(vault)
    result = w.write_note(
        "Ideas/Grinder.md", "# Grinder\n\nSee [[Notes/Espresso]].", {"type": "idea", "tags": ["x"]}
    )
    assert result.action == "created" and result.unresolved_links == []
    assert result.hash == hashlib.sha256((vault / "Ideas" / "Grinder.md").read_bytes()).hexdigest()
    note = Vault(vault).read_note("Ideas/Grinder.md")
    assert note.frontmatter == {"type": "idea", "tags": ["x"]} and "Nine" not in note.body
    assert (
        w.write_note(
            "Ideas/Grinder.md",
            "# Grinder\n\nSee [[Notes/Espresso]].",
            {"type": "idea", "tags": ["x"]},
            overwrite=True,
        ).action
        == "unchanged"
    )


def test_an_existing_note_is_not_replaced_without_overwrite(vault: Path) -> None:
    with pytest.raises(WriteRefusedError, match="exists"):
        VaultWriter(vault).write_note("Notes/Espresso.md", "gone")
    assert "Nine bars" in (vault / "Notes" / "Espresso.md").read_text()


def test_update_note_keeps_the_frontmatter_and_update_frontmatter_keeps_the_body(vault: Path) -> None:
    w = VaultWriter(vault)
    assert w.update_note("Notes/Espresso.md", "# Espresso\n\nNine bars, 25 s.").action == "updated"
    w.update_frontmatter("Notes/Espresso.md", {"status": "verified"}, remove=["type"])
    note = Vault(vault).read_note("Notes/Espresso.md")
    assert note.frontmatter == {"status": "verified"} and "25 s" in note.body


def test_unresolved_links_are_reported_and_an_unclosed_link_is_refused(vault: Path) -> None:
    w = VaultWriter(vault)
    assert w.write_note(
        "A.md", "[[Espresso]] and [[Nowhere|x]] and [[Notes/Espresso#Heading]]"
    ).unresolved_links == ["Nowhere"]
    with pytest.raises(WriteRefusedError, match="never closes"):
        w.write_note("B.md", "see [[Espresso")
    assert not (vault / "B.md").exists()


@pytest.mark.parametrize("front", [{1: "x"}, {"": "x"}, {"k": object()}, ["not", "a", "mapping"]])
def test_bad_frontmatter_is_refused_before_writing(vault: Path, front: object) -> None:
    with pytest.raises(WriteRefusedError):
        VaultWriter(vault).write_note("C.md", "body", front)  # type: ignore[arg-type]
    assert not (vault / "C.md").exists()


@pytest.mark.parametrize("role", ["subtask", "sandbox"])
def test_subtasks_and_scripts_only_write_scratch_notes(vault: Path, role: str) -> None:
    w = VaultWriter(vault, role=role, actor="node-3")
    with pytest.raises(WriteRefusedError, match="may not write"):
        w.write_note("X.md", "x")
    with pytest.raises(WriteRefusedError, match="may not write"):
        w.update_note("Notes/Espresso.md", "x")
    with pytest.raises(WriteRefusedError, match="may not write"):
        w.update_frontmatter("Notes/Espresso.md", {"a": 1})
    first, second = w.write_scratch("my findings", "one"), w.write_scratch("my findings", "two")
    assert first.path != second.path and first.path.startswith("Shad/Scratch/my findings-")
    assert Vault(vault).read_note(first.path).frontmatter["created_by"] == "node-3"


def test_a_note_changed_after_it_was_read_is_not_written_over(vault: Path) -> None:
    w = VaultWriter(vault)
    seen = w.note_hash("Notes/Espresso.md")
    (vault / "Notes" / "Espresso.md").write_text("# Espresso\n\nEdited by a person.\n")
    with pytest.raises(StateCorruptionError, match=r"Notes/Espresso\.md changed on disk") as err:
        w.update_frontmatter("Notes/Espresso.md", {"type": "method"}, expected_hash=seen)
    assert err.value.path == "Notes/Espresso.md"  # type: ignore[attr-defined]
    assert (vault / "Notes" / "Espresso.md").read_text() == "# Espresso\n\nEdited by a person.\n"


def test_a_delete_needs_an_approval_for_that_very_note(vault: Path) -> None:
    w = VaultWriter(vault)
    target = "Notes/Espresso.md"
    for approval in (
        None,
        SimpleNamespace(status="pending", kind="delete", path=target),
        SimpleNamespace(status="approved", kind="publish", path=target),
        SimpleNamespace(status="approved", kind="delete", path="Notes/Other.md"),
    ):
        with pytest.raises(WriteRefusedError, match="approved delete"):
            w.delete_note(target, approval=approval)
        assert (vault / target).exists()
    assert (
        w.delete_note(target, approval=SimpleNamespace(status="approved", kind="delete", path=target)).action
        == "deleted"
    )
    assert not (vault / target).exists()
    with pytest.raises(NoteNotFoundError):
        w.update_note(target, "x")


def test_symlinked_folders_and_notes_are_never_written_through(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("keep")
    os.symlink(outside, vault / "Link")
    os.symlink(outside / "secret.md", vault / "Notes" / "Alias.md")
    w = VaultWriter(vault)
    with pytest.raises(PathOutsideVaultError):
        w.write_note("Link/new.md", "x")
    with pytest.raises(PathOutsideVaultError):
        w.write_note("Notes/Alias.md", "x", overwrite=True)
    assert files_under(outside) == {"secret.md"} and (outside / "secret.md").read_text() == "keep"


_SEGMENT = st.sampled_from(
    ["..", ".", "", "Link", "Notes", "a b", " x", ".obsidian", "n\x00", "é", "e\u0301", "\u202e", "C:", "~"]
)
_NAME = st.sampled_from(
    ["note.md", "../x.md", "x.txt", ".md", "évil.md", "a/../../b.md", "/etc/passwd.md", "\\x.md"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_SEGMENT, max_size=4), name=_NAME, absolute=st.booleans())
def test_no_path_writes_outside_the_vault(
    vault: Path, tmp_path: Path, parts: list[str], name: str, absolute: bool
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    if not (vault / "Link").exists():
        os.symlink(outside, vault / "Link")
    path = ("/" if absolute else "") + "/".join([*parts, name])

    def beside_the_vault() -> set[str]:
        return {p for p in files_under(tmp_path) if not p.startswith("vault/")}

    before = beside_the_vault()
    with contextlib.suppress(PathOutsideVaultError, WriteRefusedError):
        written = VaultWriter(vault).write_note(path, "hostile", overwrite=True)
        assert (vault / written.path).resolve().is_relative_to(vault.resolve())
    assert beside_the_vault() == before
    assert not any(outside.iterdir())


def test_conflict_copies_are_left_out_of_search_and_listed(tmp_path: Path) -> None:
    root = tmp_path / "v"
    (root / "Brewing").mkdir(parents=True)
    (root / "Brewing" / "Espresso.md").write_text("# Espresso\n\nGrind setting 12 for espresso.\n")
    (root / "Brewing" / "Espresso (conflict 2026-04-02).md").write_text(
        "# Espresso\n\nGrind setting 9 for espresso.\n"
    )
    (root / "Brewing" / "Espresso.sync-conflict-20260402-101010-ABCDEF.md").write_text(
        "Grind setting 7 espresso.\n"
    )
    v = Vault(root)
    assert [h.path for h in v.search("espresso grind setting")] == ["Brewing/Espresso.md"]
    assert len(v.search("espresso grind setting", include_conflicts=True)) == 3
    assert {c["path"]: c["original"] for c in v.conflict_copies()} == {
        "Brewing/Espresso (conflict 2026-04-02).md": "Brewing/Espresso.md",
        "Brewing/Espresso.sync-conflict-20260402-101010-ABCDEF.md": "Brewing/Espresso.md",
    }


def test_brackets_in_code_are_not_links(vault: Path) -> None:
    code = "```python\ndef f(cb: Callable[[int], None]) -> None: ...\n```"
    body = f"See [[Notes/Espresso]].\n\n{code}\n\n`x[[0]]`\n"
    result = VaultWriter(vault).write_note("Code/f.md", body)
    assert result.action == "created" and result.unresolved_links == []
