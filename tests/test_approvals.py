"""The approval queue (H3, ``engine.curation``): a delete or publish a run requests waits for a person;
approving executes it through the vault's writer and logs who, when and what (the note's hash); a
rejected one leaves the note alone; a note edited after the request is never deleted. Also the
``shad approvals`` commands and their JSON."""

from __future__ import annotations

import getpass
import hashlib
import pickle
import sqlite3
import threading
from pathlib import Path

import pytest
from _cli import caller

from engine.curation import (
    AlreadyDecidedError,
    Approval,
    approval_log,
    approvals,
    approve,
    get_approval,
    pending_approvals,
    reject,
    request_delete,
    request_publish,
)
from engine.errors import NoteNotFoundError, PathOutsideVaultError, UsageError
from engine.vault import VaultWriter, WriteRefusedError

pytestmark = pytest.mark.usefixtures("shad_home")

ESPRESSO = (
    "---\ntype: method\nstatus: staging\nproposed_by: run-7\nshad_run: run-7\n---\n# Espresso\n\nNine bars.\n"
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Espresso.md").write_text(ESPRESSO)
    (root / "Notes" / "Grinder.md").write_text("# Grinder\n\nBurrs, not blades.\n")
    return root


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- deletes ---------------------------------------------------------------------------------------------


def test_a_requested_delete_waits_and_deletes_nothing(vault: Path) -> None:
    note = vault / "Notes" / "Espresso.md"
    a = request_delete(vault, "Notes/Espresso.md", "superseded by Brewing", requested_by="run-7")
    assert note.read_text() == ESPRESSO
    assert (a.kind, a.path, a.status, a.requested_by) == ("delete", "Notes/Espresso.md", "pending", "run-7")
    assert a.vault == str(vault.resolve()) and a.requested_hash == sha(note) and a.content_hash == sha(note)
    assert [p.id for p in pending_approvals()] == [a.id] == [p.id for p in pending_approvals(vault)]
    assert pending_approvals(vault.parent) == []
    assert approval_log() == []  # a request is not a decision
    assert (Path(a.vault) / a.path).is_file()


def test_asking_again_for_the_same_unchanged_note_adds_no_second_request(vault: Path) -> None:
    first = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    again = request_delete(vault, "./Notes/Espresso.md", "old", requested_by="run-8")
    assert again.id == first.id and len(approvals()) == 1


def test_approving_executes_the_delete_and_logs_who_when_and_what(vault: Path) -> None:
    note = vault / "Notes" / "Espresso.md"
    digest = sha(note)
    a = request_delete(vault, "Notes/Espresso.md", "superseded", requested_by="run-7")
    done = approve(a.id, "ada", note="checked it")
    assert not note.exists() and (vault / "Notes" / "Grinder.md").is_file()
    assert (done.status, done.decided_by, done.note, done.decided_hash) == (
        "executed",
        "ada",
        "checked it",
        digest,
    )
    assert done.result == "deleted Notes/Espresso.md" and done.decided_at
    log = approval_log()
    assert [(e.action, e.by, e.kind, e.path, e.hash) for e in log] == [
        ("approved", "ada", "delete", "Notes/Espresso.md", digest),
        ("executed", "ada", "delete", "Notes/Espresso.md", digest),
    ]
    assert all(e.approval_id == a.id and e.at for e in log) and log[0].note == "checked it"
    assert pending_approvals() == [] and get_approval(a.id) == done


def test_a_rejected_delete_leaves_the_note_untouched(vault: Path) -> None:
    note = vault / "Notes" / "Espresso.md"
    a = request_delete(vault, "Notes/Espresso.md", "tidy", requested_by="run-7")
    done = reject(a.id, "ada", note="still useful")
    assert note.read_text() == ESPRESSO
    assert (done.status, done.decided_by, done.note, done.result) == ("rejected", "ada", "still useful", "")
    assert [(e.action, e.by, e.note) for e in approval_log()] == [("rejected", "ada", "still useful")]
    with pytest.raises(AlreadyDecidedError, match="rejected already") as info:
        approve(a.id, "bob")
    assert info.value.exit_code == 3 and note.is_file()


def test_a_note_edited_after_the_request_is_not_deleted(vault: Path) -> None:
    note = vault / "Notes" / "Espresso.md"
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    note.write_text(ESPRESSO + "\nA person added this line.\n")
    done = approve(a.id, "ada")
    assert note.is_file() and "A person added" in note.read_text()
    assert done.status == "failed"
    assert "changed since the delete was requested" in done.result and "nothing was deleted" in done.result
    assert [e.action for e in approval_log()] == ["approved", "failed"]
    assert approval_log()[-1].result == done.result and done.decided_hash == sha(note) != a.requested_hash
    with pytest.raises(AlreadyDecidedError):
        approve(a.id, "ada")  # a failed approval stays failed: request it again


def test_a_note_removed_after_the_request_fails_the_approval(vault: Path) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    (vault / "Notes" / "Espresso.md").unlink()
    done = approve(a.id, "ada")
    assert done.status == "failed" and "it is gone" in done.result


def test_the_writer_refuses_a_delete_without_an_approved_request(vault: Path) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    writer = VaultWriter(vault, role="person", actor="ada")
    with pytest.raises(WriteRefusedError):
        writer.delete_note("Notes/Espresso.md", approval=a)  # pending, not approved
    assert (vault / "Notes" / "Espresso.md").is_file()


def test_a_request_needs_an_existing_note_inside_the_vault_and_a_requester(vault: Path) -> None:
    with pytest.raises(NoteNotFoundError):
        request_delete(vault, "Notes/Nothing.md", "x", requested_by="run-7")
    with pytest.raises(PathOutsideVaultError):
        request_delete(vault, "../outside.md", "x", requested_by="run-7")
    with pytest.raises(UsageError, match="requested_by"):
        request_delete(vault, "Notes/Espresso.md", "x", requested_by=" ")
    with pytest.raises(UsageError, match="no approval 99"):
        approve(99, "ada")
    with pytest.raises(UsageError, match="person"):
        reject(request_delete(vault, "Notes/Espresso.md", "x", requested_by="run-7").id, "")
    assert approvals(status="pending")[0].status == "pending"


def test_two_people_approving_at_once_execute_it_once(vault: Path) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    outcomes: list[str] = []

    def click(who: str) -> None:
        try:
            outcomes.append(approve(a.id, who).status)
        except AlreadyDecidedError:
            outcomes.append("already")

    threads = [threading.Thread(target=click, args=(who,)) for who in ("ada", "bob", "cy")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["already", "already", "executed"]
    assert [e.action for e in approval_log()] == ["approved", "executed"]


def test_the_queue_lives_in_shad_home_outside_the_vault(vault: Path, shad_home: Path) -> None:
    request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    db = shad_home / "approvals.sqlite"
    assert db.is_file() and not list(vault.rglob("*.sqlite*"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT kind, path, status FROM approvals").fetchall() == [
            ("delete", "Notes/Espresso.md", "pending")
        ]


def test_an_approval_is_picklable_with_structured_fields(vault: Path) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    back = pickle.loads(pickle.dumps(a))
    assert back == a and isinstance(back, Approval) and back.to_dict()["path"] == "Notes/Espresso.md"
    done = approve(a.id, "ada")
    assert pickle.loads(pickle.dumps(approval_log()[-1])).to_dict()["result"] == done.result
    with pytest.raises(AlreadyDecidedError) as info:
        approve(a.id, "ada")
    again = pickle.loads(pickle.dumps(info.value))
    assert (again.approval_id, again.status, again.exit_code) == (a.id, "executed", 3)


# --- publishing ------------------------------------------------------------------------------------------


def test_publish_copies_only_once_approved_without_shad_fields(vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    a = request_publish(vault, "Notes/Espresso.md", target, "for the blog", requested_by="run-7")
    assert (a.kind, a.target, a.status) == ("publish", str(target.resolve()), "pending")
    assert not target.exists()
    done = approve(a.id, "ada")
    published = target / "Espresso.md"
    assert done.status == "executed" and str(published) in done.result
    assert published.read_text() == "---\ntype: method\n---\n# Espresso\n\nNine bars.\n"
    assert (vault / "Notes" / "Espresso.md").read_text() == ESPRESSO  # the vault's note is kept
    assert [e.target for e in approval_log()] == [str(target.resolve())] * 2


def test_publish_of_a_note_without_frontmatter_and_a_rejected_publish(vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    done = approve(request_publish(vault, "Notes/Grinder.md", target, "", requested_by="ada").id, "ada")
    assert (
        done.status == "executed"
        and (target / "Grinder.md").read_text() == "# Grinder\n\nBurrs, not blades.\n"
    )
    other = tmp_path / "elsewhere"
    reject(request_publish(vault, "Notes/Espresso.md", other, "", requested_by="run-7").id, "ada")
    assert not other.exists()


def test_publish_never_targets_the_vault_and_refuses_a_changed_note(vault: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="inside the vault"):
        request_publish(vault, "Notes/Espresso.md", vault / "Public", "", requested_by="run-7")
    a = request_publish(vault, "Notes/Espresso.md", tmp_path / "site", "", requested_by="run-7")
    (vault / "Notes" / "Espresso.md").write_text("# Espresso\n\nSecret draft.\n")
    done = approve(a.id, "ada")
    assert done.status == "failed" and "nothing was published" in done.result
    assert not (tmp_path / "site").exists()


# --- the CLI ---------------------------------------------------------------------------------------------


def test_cli_ls_approve_reject_and_log(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shad = caller(capsys)
    one = request_delete(vault, "Notes/Espresso.md", "superseded", requested_by="run-7")
    two = request_delete(vault, "Notes/Grinder.md", "duplicate", requested_by="run-7")
    listed = shad("approvals", "ls", "--json")
    assert listed.code == 0 and [a["id"] for a in listed.json()] == [one.id, two.id]
    assert set(listed.json()[0]) == set(Approval.__dataclass_fields__)
    text = shad("approvals", "ls")
    assert text.code == 0 and f"#{one.id}" in text.out and "Notes/Espresso.md" in text.out

    approved = shad("approvals", "approve", str(one.id), "--note", "ok", "--json")
    assert approved.code == 0 and approved.json()["status"] == "executed"
    assert approved.json()["decided_by"] == getpass.getuser()
    assert not (vault / "Notes" / "Espresso.md").exists()
    rejected = shad("approvals", "reject", str(two.id), "--note", "keep it")
    assert rejected.code == 0 and "stays as it is" in rejected.out
    assert (vault / "Notes" / "Grinder.md").is_file()

    assert shad("approvals", "ls", "--json").json() == []
    assert "nothing waits" in shad("approvals", "ls").out
    assert [a["status"] for a in shad("approvals", "ls", "--all", "--json").json()] == [
        "executed",
        "rejected",
    ]
    log = shad("approvals", "log", "--json")
    assert [(e["approval_id"], e["action"]) for e in log.json()] == [
        (one.id, "approved"),
        (one.id, "executed"),
        (two.id, "rejected"),
    ]
    assert set(log.json()[0]) == set(
        "seq approval_id action by at kind vault path target hash note result".split()
    )
    assert [e["action"] for e in shad("approvals", "log", "--id", str(two.id), "--json").json()] == [
        "rejected"
    ]
    assert "rejected by" in shad("approvals", "log").out


def test_cli_exit_codes(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shad = caller(capsys)
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    (vault / "Notes" / "Espresso.md").write_text("edited\n")
    failed = shad("approvals", "approve", str(a.id))
    assert failed.code == 1 and "changed since the delete was requested" in failed.err
    assert (vault / "Notes" / "Espresso.md").read_text() == "edited\n"
    again = shad("approvals", "approve", str(a.id))
    assert again.code == 3 and "failed already" in again.err
    assert shad("approvals", "reject", "nope").code == 2
    missing = shad("approvals", "approve", "42")
    assert missing.code == 2 and "no approval 42" in missing.err
    b = request_delete(vault, "Notes/Grinder.md", "old", requested_by="run-7")
    (vault / "Notes" / "Grinder.md").write_text("edited\n")
    as_json = shad("approvals", "approve", str(b.id), "--json")
    assert as_json.code == 1 and as_json.json()["status"] == "failed"
