"""Learnings (C4, ``engine.curation``): a run proposes a staging note through its root writer (a sub-task
cannot); only a person promotes it (verified, moved to Shad/Learnings/, the staging note's removal an
approved and logged delete) or rejects it (kept in Shad/Staging/); the ``shad learnings`` commands."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from _cli import caller

from engine.curation import (
    AlreadyDecidedError,
    Learning,
    approval_log,
    learnings,
    pending_approvals,
    promote_learning,
    propose_learning,
    reject_learning,
)
from engine.errors import NoteNotFoundError, UsageError
from engine.vault import Vault, VaultWriter, WriteRefusedError

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Espresso.md").write_text("# Espresso\n\nNine bars, 25 seconds.\n")
    (root / "Notes" / "Grinder.md").write_text("# Grinder\n\nSetting 8 for espresso.\n")
    return root


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def propose(vault: Path, title: str = "Grind finer when shots run fast", kind: str = "learning") -> str:
    """What a run does: propose through the root writer, acting as its run id."""
    body = "Shots under 20 s: go one step finer."
    return propose_learning(
        vault, title, body, run_id="run-42", sources=["Espresso", "[[Grinder]]"], kind=kind
    )


def test_a_proposal_is_a_staging_note_with_its_provenance(vault: Path) -> None:
    path = propose(vault)
    assert path == "Shad/Staging/grind-finer-when-shots-run-fast.md"
    note = Vault(vault).read_note(path)
    fm = note.frontmatter
    assert (fm["type"], fm["status"], fm["kind"], fm["proposed_by"]) == (
        "learning",
        "staging",
        "learning",
        "run-42",
    )
    assert (
        fm["sources"] == ["[[Espresso]]", "[[Grinder]]"] and fm["title"] == "Grind finer when shots run fast"
    )
    assert str(fm["proposed_at"]).startswith("20") and "go one step finer" in note.body
    assert {link.resolved for link in note.links} >= {"Notes/Espresso.md", "Notes/Grinder.md"}
    assert files(vault) == {"Notes/Espresso.md", "Notes/Grinder.md", path}


def test_a_second_proposal_with_the_same_title_gets_its_own_note(vault: Path) -> None:
    first, second = propose(vault), propose(vault)
    assert second == "Shad/Staging/grind-finer-when-shots-run-fast-2.md" != first
    assert propose_learning(vault, "Ünïcode & ???", "x", run_id="r").endswith("/unicode.md")
    assert propose_learning(vault, "???", "x", run_id="r").endswith("/learning.md")


def test_a_subtask_cannot_propose_and_the_root_writer_can(vault: Path) -> None:
    for role in ("subtask", "sandbox"):
        with pytest.raises(WriteRefusedError, match=f"a {role} may not write"):
            propose_learning(VaultWriter(vault, role=role, actor="run-42/n3"), "Sneaky", "x", run_id="run-42")
    assert not (vault / "Shad").exists()
    path = propose_learning(VaultWriter(vault, role="root", actor="run-42"), "Fine", "x", run_id="run-42")
    assert (vault / path).is_file()


def test_a_proposal_is_validated(vault: Path) -> None:
    with pytest.raises(UsageError, match="title"):
        propose_learning(vault, " ", "x", run_id="run-42")
    with pytest.raises(UsageError, match="run_id"):
        propose_learning(vault, "T", "x", run_id="")
    with pytest.raises(UsageError, match="kind"):
        propose_learning(vault, "T", "x", run_id="run-42", kind="../skills")
    with pytest.raises(WriteRefusedError, match="never closes"):
        propose_learning(vault, "T", "see [[Espresso", run_id="run-42")
    assert not (vault / "Shad" / "Staging").exists() or not list((vault / "Shad" / "Staging").iterdir())


def test_listing_by_status(vault: Path) -> None:
    a = propose(vault, "First")
    b = propose(vault, "Second")
    (vault / "Shad" / "Staging" / "stray.md").write_text("# not a learning\n")
    assert {x.path for x in learnings(vault)} == {a, b}
    assert all(isinstance(x, Learning) and x.status == "staging" for x in learnings(vault))
    reject_learning(vault, "first", by="ada", reason="wrong")
    assert [x.path for x in learnings(vault, "staging")] == [b]
    assert [x.path for x in learnings(vault, "rejected")] == [a]
    assert learnings(vault, "verified") == []
    with pytest.raises(UsageError, match="status"):
        learnings(vault, "maybe")


def test_promote_moves_it_to_learnings_as_verified_and_logs_the_removal(vault: Path) -> None:
    staged = propose(vault)
    promoted = promote_learning(vault, "grind-finer-when-shots-run-fast", by="ada")
    assert promoted.path == "Shad/Learnings/grind-finer-when-shots-run-fast.md"
    assert (promoted.status, promoted.promoted_by, promoted.proposed_by) == ("verified", "ada", "run-42")
    assert promoted.promoted_at and promoted.sources == ["[[Espresso]]", "[[Grinder]]"]
    assert not (vault / staged).exists()
    note = Vault(vault).read_note(promoted.path)
    assert "go one step finer" in note.body and note.frontmatter["status"] == "verified"
    assert files(vault) == {"Notes/Espresso.md", "Notes/Grinder.md", promoted.path}
    log = approval_log()
    assert [(e.action, e.by, e.kind, e.path) for e in log] == [
        ("approved", "ada", "delete", staged),
        ("executed", "ada", "delete", staged),
    ]
    assert "promotion move" in log[0].note and pending_approvals() == []
    with pytest.raises(AlreadyDecidedError, match="verified already"):
        promote_learning(vault, "grind-finer-when-shots-run-fast", by="ada")
    with pytest.raises(AlreadyDecidedError):
        promote_learning(vault, promoted.path, by="ada")


def test_promote_writes_only_under_shad_learnings_whatever_the_kind(vault: Path) -> None:
    """Shad never changes its own skills or policies from a learning: a 'skill' or 'policy' learning is
    promoted to Shad/Learnings/ like any other, and nothing else in the vault is touched."""
    (vault / "Shad" / "Skills").mkdir(parents=True)
    (vault / "Shad" / "Skills" / "retrieval.md").write_text("# Retrieval skill\n")
    before = {p: (vault / p).read_bytes() for p in files(vault)}
    for kind in ("skill", "policy"):
        path = propose(vault, f"Change the {kind}", kind=kind)
        promoted = promote_learning(vault, path, by="ada")
        assert promoted.path.startswith("Shad/Learnings/") and promoted.kind == kind
    after = files(vault)
    assert {p for p in after if p not in before} == {
        "Shad/Learnings/change-the-skill.md",
        "Shad/Learnings/change-the-policy.md",
    }
    assert all((vault / p).read_bytes() == data for p, data in before.items())


def test_only_staging_notes_can_be_promoted(vault: Path) -> None:
    with pytest.raises(UsageError, match="not a staging note"):
        promote_learning(vault, "Notes/Espresso.md", by="ada")
    with pytest.raises(NoteNotFoundError):
        promote_learning(vault, "nothing-here", by="ada")
    (vault / "Shad" / "Staging").mkdir(parents=True)
    (vault / "Shad" / "Staging" / "plain.md").write_text("# plain\n")
    with pytest.raises(UsageError, match="not a learning"):
        promote_learning(vault, "plain", by="ada")
    assert (vault / "Notes" / "Espresso.md").is_file() and approval_log() == []


def test_promote_accepts_a_wikilink_and_a_rejected_learning(vault: Path) -> None:
    propose(vault, "Second thoughts")
    reject_learning(vault, "[[second-thoughts]]", by="ada", reason="not sure")
    promoted = promote_learning(vault, "[[second-thoughts]]", by="bob")
    assert promoted.status == "verified" and promoted.rejected_by == "" and promoted.rejection_reason == ""


def test_reject_keeps_the_note_in_staging_for_the_record(vault: Path) -> None:
    path = propose(vault)
    rejected = reject_learning(vault, path, by="ada", reason="25 s is fine")
    assert rejected.path == path and (vault / path).is_file()
    assert (rejected.status, rejected.rejected_by, rejected.rejection_reason) == (
        "rejected",
        "ada",
        "25 s is fine",
    )
    assert rejected.rejected_at and "go one step finer" in (vault / path).read_text()
    with pytest.raises(AlreadyDecidedError, match="rejected already"):
        reject_learning(vault, path, by="ada")
    assert approval_log() == []  # nothing was deleted


def test_promote_defaults_to_the_login_name(vault: Path) -> None:
    propose(vault, "Who")
    assert promote_learning(vault, "who").promoted_by == getpass.getuser()


# --- the CLI ---------------------------------------------------------------------------------------------


def test_cli_ls_promote_reject(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shad = caller(capsys)
    keep, drop = propose(vault, "Keep me"), propose(vault, "Drop me")
    listed = shad("learnings", "ls", "--vault", str(vault), "--json")
    assert listed.code == 0 and {x["path"] for x in listed.json()} == {keep, drop}
    assert set(listed.json()[0]) == set(Learning.__dataclass_fields__)
    text = shad("learnings", "ls", "--vault", str(vault))
    assert "staging" in text.out and "shad learnings promote keep-me" in text.out

    promoted = shad("learnings", "promote", "keep-me", "--vault", str(vault), "--json")
    assert promoted.code == 0
    assert promoted.json()["path"] == "Shad/Learnings/keep-me.md"
    assert promoted.json()["promoted_by"] == getpass.getuser() and promoted.json()["status"] == "verified"
    rejected = shad("learnings", "reject", drop, "--vault", str(vault), "--reason", "meh")
    assert rejected.code == 0 and f"rejected {drop}" in rejected.out
    assert [
        x["slug"]
        for x in shad("learnings", "ls", "--vault", str(vault), "--status", "verified", "--json").json()
    ] == ["keep-me"]
    staging = shad("learnings", "ls", "--vault", str(vault), "--status", "staging")
    assert staging.code == 0 and "no learnings in status staging" in staging.out
    assert shad("learnings", "promote", "keep-me", "--vault", str(vault)).code == 3
    assert shad("learnings", "reject", drop, "--vault", str(vault)).code == 3
    assert shad("learnings", "ls", "--vault", str(vault), "--status", "maybe").code == 2


def test_cli_vault_from_the_environment(
    vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shad = caller(capsys)
    propose(vault, "Env")
    monkeypatch.delenv("SHAD_VAULT", raising=False)
    missing = shad("learnings", "ls")
    assert missing.code == 2 and "--vault" in missing.err
    monkeypatch.setenv("SHAD_VAULT", str(vault))
    assert [x["slug"] for x in shad("learnings", "ls", "--json").json()] == ["env"]
