"""Sync safety in runs (V6): a sync-conflict copy is never cited, even when a retrieval script reads it by
name, and the report's diagnostics list every copy with the note it duplicates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _demo import DEMO

from engine import RunConfig, run

pytestmark = pytest.mark.usefixtures("shad_home")

GOAL = "What grinder setting and dose should I use for espresso, and what ratio?"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = Path(shutil.copytree(DEMO, tmp_path / "vault"))
    espresso = (root / "Brewing" / "Espresso.md").read_text(encoding="utf-8")
    # two more copies in the other naming style, each with a different "fact"
    (root / "Brewing" / "Espresso.sync-conflict-20260402-101010-ABCDEF.md").write_text(
        espresso.replace("18 g", "21 g"), encoding="utf-8"
    )
    return root


@pytest.mark.parametrize("code_mode", [False, True])
def test_conflict_copies_are_never_cited_and_are_listed(vault: Path, code_mode: bool) -> None:
    r = run(RunConfig(GOAL, (str(vault),), provider="offline", code_mode=code_mode))
    cited = {c["path"] for c in r.summary["citations"]}
    assert cited and not any("conflict" in p for p in cited)
    assert "conflict" not in " ".join(
        str(i.get("path", "")) for n in r.dag for i in n.retrieval.get("context", [])
    )
    copies = {c["path"]: c["original"] for c in r.summary["diagnostics"]["conflict_copies"]}
    assert copies == {
        "Brewing/Espresso (conflict 2026-04-02).md": "Brewing/Espresso.md",
        "Brewing/Espresso.sync-conflict-20260402-101010-ABCDEF.md": "Brewing/Espresso.md",
    }
    assert "## Diagnostics" in r.report and "Espresso.sync-conflict-20260402-101010-ABCDEF.md" in r.report


@pytest.mark.parametrize("code_mode", [False, True])
def test_shads_working_notes_are_never_sources_but_verified_learnings_are(
    vault: Path, code_mode: bool
) -> None:
    text = "# Espresso grinder\n\nFor espresso use grinder setting 12 and a dose of 18 g at a 1:2 ratio.\n"
    for folder in ("Shad/Reports", "Shad/Staging", "Shad/Scratch", "Shad/Learnings"):
        (vault / folder).mkdir(parents=True, exist_ok=True)
        (vault / folder / "Espresso grinder setting.md").write_text(text, encoding="utf-8")
    r = run(RunConfig(GOAL, (str(vault),), provider="offline", code_mode=code_mode))
    cited = {c["path"] for c in r.summary["citations"]}
    assert not any(p.startswith(("Shad/Reports", "Shad/Staging", "Shad/Scratch")) for p in cited)
    assert "Shad/Learnings/Espresso grinder setting.md" in cited


def test_a_script_that_reads_a_conflict_copy_by_name_cannot_cite_it(vault: Path) -> None:
    from engine.retrieval import CodeModeRetriever
    from engine.vault import VaultSet

    retriever = CodeModeRetriever(VaultSet([vault]), None, None, None)  # type: ignore[arg-type]
    vault_id = retriever.vaults.ids[0]
    copy = "Brewing/Espresso (conflict 2026-04-02).md"
    passage = "Espresso is coffee brewed by forcing hot water through a compacted bed of finely ground coffee"
    real = "Brewing/Espresso.md"
    assert retriever._check(vault_id, real, passage) == (None, real)  # the real note: a source
    assert "sync-conflict copy" in str(retriever._check(vault_id, copy, passage))
