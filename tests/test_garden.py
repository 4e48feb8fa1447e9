"""The gardener (``--garden``, V8): types for untyped notes a run read, inferred from their neighbours and
proposed through the approval queue — never written silently; a note edited while the run had it open
stops it with StateCorruptionError and nothing is written or asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _demo import write_vault

from engine import RunConfig, run
from engine.curation import approve, infer_type, pending_approvals
from engine.runs import RunStatus
from engine.vault import Vault

pytestmark = pytest.mark.usefixtures("shad_home")

GOAL = "How do I brew coffee with a siphon?"
SIPHON = (
    "# Siphon\n\nA siphon brews coffee with vapour pressure: water rises, steeps for a minute, and falls.\n"
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    method = "---\ntype: method\n---\n# {0}\n\n{0} is a way to brew coffee.\n"
    return write_vault(
        tmp_path / "vault",
        {
            "Brewing/Siphon.md": SIPHON,
            "Brewing/French press.md": method.format("French press"),
            "Brewing/Pour-over.md": method.format("Pour-over"),
            "Brewing/Moka pot.md": method.format("Moka pot"),
            "Brewing/History.md": "---\ntype: essay\n---\n# History\n\nCoffee brewing history.\n",
            "People/Ann.md": "# Ann\n\nAnn brews coffee with a siphon every morning.\n",
        },
    )


def test_types_are_inferred_from_the_neighbours_that_agree(vault: Path) -> None:
    v = Vault(vault)
    assert infer_type(v, "Brewing/Siphon.md") == (
        "method",
        "3 of the 4 typed notes in Brewing/ are type method",
    )
    assert infer_type(v, "People/Ann.md") is None  # no typed neighbour: no guess


def test_garden_proposes_and_only_a_person_applies(vault: Path) -> None:
    r = run(RunConfig(GOAL, (str(vault),), provider="offline", garden=True))
    assert r.status is RunStatus.SUCCESS, r.summary["failures"]
    assert (vault / "Brewing" / "Siphon.md").read_text() == SIPHON  # nothing written by the run
    (proposal,) = [p for p in r.summary["garden"] if p["path"] == "Brewing/Siphon.md"]
    assert proposal["type"] == "method"
    assert f"shad approvals approve {proposal['approval_id']}" in r.report
    (waiting,) = [a for a in pending_approvals(vault) if a.path == "Brewing/Siphon.md"]
    assert waiting.kind == "frontmatter" and waiting.requested_by == r.id
    done = approve(waiting.id, by="tester")
    assert done.status == "executed", done.result
    note = Vault(vault).read_note("Brewing/Siphon.md")
    assert note.type == "method" and note.body.strip() == SIPHON.strip()


def test_without_garden_nothing_is_proposed(vault: Path) -> None:
    r = run(RunConfig(GOAL, (str(vault),), provider="offline"))
    assert r.summary["garden"] is None and not pending_approvals(vault)


def test_a_note_edited_mid_run_stops_the_gardener_and_nothing_is_written(vault: Path) -> None:
    edited = SIPHON + "\nEdited in Obsidian while the run was going.\n"

    def edit_once(event: dict[str, Any]) -> None:
        if event["type"] == "NODE_RETRIEVED" and (vault / "Brewing" / "Siphon.md").read_text() == SIPHON:
            (vault / "Brewing" / "Siphon.md").write_text(edited)

    r = run(RunConfig(GOAL, (str(vault),), provider="offline", garden=True), on_event=edit_once)
    assert (vault / "Brewing" / "Siphon.md").read_text() == edited
    (fail,) = [f for f in r.summary["failures"] if f["phase"] == "garden"]
    assert fail["error_class"] == "StateCorruptionError" and "Brewing/Siphon.md" in fail["message"]
    assert r.status is RunStatus.PARTIAL
    assert not [a for a in pending_approvals(vault) if a.path == "Brewing/Siphon.md"]


def test_learn_proposes_the_cited_answer_as_a_staging_note(vault: Path) -> None:
    from engine.curation import learnings

    r = run(RunConfig(GOAL, (str(vault),), provider="offline", learn=True))
    path = r.summary["learning"]
    assert path and path.startswith("Shad/Staging/") and f"shad learnings promote {path}" in r.report
    note = Vault(vault).read_note(path)
    assert note.frontmatter["status"] == "staging" and note.frontmatter["proposed_by"] == r.id
    assert "[[Brewing/Siphon]]" in note.frontmatter["sources"]
    assert [item.path for item in learnings(vault)] == [path]
    written = [e for e in r.events if e["type"] == "NOTE_WRITTEN"]  # the audit trail of the write
    assert [(e["path"], e["action"]) for e in written] == [(path, "created")]
    again = run(RunConfig("How do I brew with a siphon, step by step?", (str(vault),), provider="offline"))
    assert not any(c["path"].startswith("Shad/Staging") for c in again.summary["citations"])
