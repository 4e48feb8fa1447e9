"""The audit trail of writes (P7, engine/curation/_audit.py): every note a run writes through its writer
is a NOTE_WRITTEN event in its events.jsonl (path, role, bytes, sha256); every write made outside a run
(approvals applied: the gardener's frontmatter, deletes, publishing; learnings decided) is a line of
SHAD_HOME/audit.jsonl that ``shad approvals audit`` prints. No note text, no secret, in either."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from _cli import caller

from engine import RunConfig, run
from engine.curation import (
    approve,
    audit_log,
    audit_path,
    promote_learning,
    request_delete,
    request_frontmatter,
    request_publish,
)
from engine.curation._audit import log_write

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    return Path(shutil.copytree(demo_vault, tmp_path / "vault"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_approved_gardener_change_is_in_the_audit_log(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = "Brewing/Espresso.md"
    asked = request_frontmatter(vault, note, {"type": "method"}, "gardener: 3 of 3 neighbours", "run-1")
    assert audit_log() == []  # a request writes nothing
    done = approve(asked.id, "alice")
    assert done.status == "executed"
    (record,) = audit_log()
    written = vault / note
    assert record["type"] == "NOTE_WRITTEN" and record["run_id"] == ""
    assert (record["vault"], record["path"], record["action"]) == (str(vault), note, "updated")
    assert (
        record["role"] == "person" and f"approval #{asked.id}" in record["why"] and "alice" in record["why"]
    )
    assert record["bytes"] == written.stat().st_size and record["hash"] == sha256(written)
    assert "type: method" not in audit_path().read_text()  # what was written, never its text
    shad = caller(capsys)
    listed = shad("approvals", "audit", "--json")
    assert listed.code == 0 and listed.json() == [record]
    text = shad("approvals", "audit")
    assert "updated Brewing/Espresso.md" in text.out and record["hash"][:12] in text.out


def test_deletes_publishing_and_learnings_are_logged(vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "published"
    publish = request_publish(vault, "Brewing/Espresso.md", out, "share it", "run-1")
    approve(publish.id, "bob")
    delete = request_delete(vault, "Home.md", "stale", "run-1")
    approve(delete.id, "bob")
    records = audit_log()
    assert [(r["action"], r["path"]) for r in records] == [("created", "Espresso.md"), ("deleted", "Home.md")]
    assert records[0]["vault"] == str(out.resolve()) and records[0]["hash"] == sha256(out / "Espresso.md")
    assert records[1]["bytes"] == 0 and not (vault / "Home.md").exists()
    # a learning a person promotes: the write is logged too
    r = run(RunConfig("How do I brew with a French press?", (str(vault),), provider="offline", learn=True))
    staged = r.summary["learning"]
    promoted = promote_learning(vault, staged, by="carol")
    later = audit_log()[2:]
    assert ("created", promoted.path, "learning promoted by carol") in [
        (r["action"], r["path"], r["why"]) for r in later
    ]
    assert ("deleted", staged) in [(r["action"], r["path"]) for r in later]  # the staging note, approved


def test_a_runs_own_write_is_an_event_with_its_size_and_hash(vault: Path) -> None:
    r = run(RunConfig("How do I brew with a French press?", (str(vault),), provider="offline", learn=True))
    path = r.summary["learning"]
    (event,) = [e for e in r.events if e["type"] == "NOTE_WRITTEN"]
    written = vault / path
    assert (event["path"], event["action"], event["why"], event["role"]) == (
        path,
        "created",
        "--learn proposal",
        "root",
    )
    assert event["bytes"] == written.stat().st_size and event["hash"] == sha256(written)
    on_disk = [json.loads(line) for line in (r.history.dir / "events.jsonl").read_text().splitlines()]
    assert [e for e in on_disk if e["type"] == "NOTE_WRITTEN"] == [event]
    assert audit_log() == []  # a run's writes are in its own history


def test_the_audit_log_never_holds_a_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = "s3cr3t-value-for-the-audit-0042"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    why = f"ingest of https://user:{secret}@example.org/repo.git (token {secret})"
    log_write(tmp_path, "Sources/a.md", "created", why, "person", 10, "0" * 64)
    text = audit_path().read_text()
    assert secret not in text and "user:" not in text
    assert audit_log()[-1]["path"] == "Sources/a.md"
