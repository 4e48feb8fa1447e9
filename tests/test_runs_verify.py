"""The root's answer checked (``engine/runs/_verify.py``) in real runs: coverage of the goal's asks,
support of every claim by its cited passage, conflicting sources kept side by side, repeats dropped."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _demo import write_vault

from engine import RunConfig
from engine.llm import LLMRequest, LLMResponse
from engine.llm.offline import OfflineProvider
from engine.retrieval.support import UNSUPPORTED_MARK
from engine.runs import Run, start_run
from engine.runs._run import RunStatus

pytestmark = pytest.mark.usefixtures("shad_home")

PLANTED = {
    "Plans/Sync plan.md": "# Sync plan\n\nThe Standard plan keeps version history for 30 days.\n",
    "Archive/Sync plan copy.md": "# Sync plan copy\n\nThe Standard plan keeps version history for 30 days.\n",
    "Plans/Pricing 2025.md": "# Pricing 2025\n\nThe Standard plan keeps version history for 90 days.\n",
    "Plans/Plus plan.md": "# Plus plan\n\nThe Plus plan adds more storage and priority support.\n",
}
HISTORY = "How long does the Standard plan keep version history?"
SIDES = {
    "Sync/Security.md": "# Security\n\nSync encrypts your notes end-to-end before upload.\n",
    "Sync/Regions.md": "# Regions\n\nSync security keeps your encrypted vault in the region you choose.\n",
    "Teams/Accounts.md": "# Accounts\n\nUsers of Sync and Publish with 2FA confirm their key at login.\n",
}


def offline(goal: str, vault: Path) -> Run:
    """An offline run that opens no checkpoint (a tiny vault's retrieval is weak: it would wait)."""
    config = RunConfig(
        goal,
        (str(vault),),
        provider="offline",
        code_mode=False,
        checkpoints="off",
        history_dir=str(vault.parent / "h"),
    )
    return asyncio.run(start_run(config))


def body(run: Run) -> str:
    return run.report.split("\n---\n", 1)[1]


def test_a_planted_pair_that_disagrees_shows_both_values_with_their_citations(tmp_path: Path) -> None:
    r = offline(HISTORY, write_vault(tmp_path / "v", PLANTED))
    text = body(r)
    assert "### Conflicting findings" in text
    section = text.split("### Conflicting findings", 1)[1]
    assert "30" in section and "[[Plans/Sync plan" in section
    assert "90" in section and "[[Plans/Pricing 2025" in section
    assert "Archive/Sync plan copy" not in section  # a copy of the same words is not another side
    (conflict,) = r.summary["conflicts"]
    assert sorted(s["value"] for s in conflict["sides"]) == ["30", "90"]
    assert r.summary["metrics"]["conflicts"] == 1
    assert r.status is RunStatus.SUCCESS and r.summary["uncovered"] == [] and r.summary["answered"] is True


def test_the_subtask_a_conflict_names_covers_no_ask(tmp_path: Path) -> None:
    """A conflict's sides name the subtask that found them ("from “TASK”"), here the goal itself: those
    are the run's words, not the sources', and the two notes on version history do not answer it."""
    goal = "How many moons orbit Neptune under the Standard plan?"
    r = offline(goal, write_vault(tmp_path / "v", PLANTED))
    assert r.summary["conflicts"] and f"from “{goal}”" in body(r)
    assert r.summary["uncovered"] == [goal] and r.status is RunStatus.PARTIAL and r.exit_code == 3
    assert r.summary["answered"] is False


def test_identical_copies_alone_are_neither_conflict_nor_agreement(tmp_path: Path) -> None:
    notes = {k: v for k, v in PLANTED.items() if "Pricing" not in k}
    r = offline(HISTORY, write_vault(tmp_path / "v", notes))
    assert r.summary["conflicts"] == [] and "Conflicting findings" not in r.report


def test_a_question_the_vault_cannot_answer_is_partial_with_no_citation_as_an_answer(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", PLANTED)
    r = offline("What is the boiling point of mercury?", vault)
    assert r.status is RunStatus.PARTIAL and r.exit_code == 3
    assert r.summary["uncovered"] == ["What is the boiling point of mercury?"]
    assert r.citations == [] and "[[" not in body(r).split("## Coverage")[0]
    assert "Not found in the vault:\n\n- What is the boiling point of mercury?" in r.report
    assert r.summary["next_command"].startswith("shad vault search 'What is the boiling point of mercury?'")
    assert r.summary["resume_command"] == r.summary["next_command"]  # nothing to resume: look instead
    saved = json.loads((r.history.dir / "final.summary.json").read_text("utf-8"))
    assert saved["uncovered"] == r.summary["uncovered"] and saved["status"] == "PARTIAL"


def test_the_next_command_for_a_second_step_keeps_the_step_before_it(tmp_path: Path) -> None:
    """ "What theme did that developer make?" means nothing alone: the command the report ends with keeps
    the clause that says which developer."""
    notes = {
        "Plugins/Grinder.md": "# Grinder\n\nThe Grinder plugin is developed by Ada, a chemist.\n",
        "Plugins/Kettle.md": "# Kettle\n\nThe Kettle plugin boils notes.\n",
        "People/Ada.md": "# Ada\n\nAda writes plugins. She likes tea.\n",
    }
    goal = (
        "Which plugin boils notes? The Grinder plugin's developer is a chemist. "
        "What theme did that developer make?"
    )
    r = offline(goal, write_vault(tmp_path / "v", notes))
    assert "What theme did that developer make?" in r.summary["uncovered"]
    assert r.status is RunStatus.PARTIAL
    command = r.summary["next_command"]
    assert "developer is a chemist. What theme did that developer make?" in command, command
    assert "Which plugin boils notes" not in command  # answered: left out


def test_passages_that_do_not_answer_are_kept_as_the_closest_not_as_an_answer(tmp_path: Path) -> None:
    r = offline(
        "How do I descale the espresso machine of the Plus plan?", write_vault(tmp_path / "v", PLANTED)
    )
    assert r.status is RunStatus.PARTIAL and r.summary["answered"] is False
    assert r.summary["uncovered"] == ["How do I descale the espresso machine of the Plus plan?"]
    text = body(r)
    warning = text.index("[!warning] Not found in the vault")
    assert "not presented as an answer" in text and warning < text.index("[[Plans/Plus plan")


def test_a_comparison_names_the_side_it_found_nothing_for(tmp_path: Path) -> None:
    r = offline("Compare security in Sync versus Publish", write_vault(tmp_path / "v", SIDES))
    assert r.summary["uncovered"] == ["Publish"]  # the 2FA note names both sides in one breath
    assert r.status is RunStatus.PARTIAL and r.exit_code == 3
    assert "Not found in the vault:\n\n- Publish" in r.report
    assert "'security in Publish'" in r.summary["next_command"]
    assert {c["path"] for c in r.citations} >= {"Sync/Security.md"}
    metrics = r.summary["metrics"]
    assert metrics["asks"] == 2 and metrics["asks_uncovered"] == 1
    assert metrics["claims_checked"] >= 1 and metrics["claims_unsupported"] == 0
    assert metrics["support_check"] == "lexical"


def test_sections_do_not_repeat_each_others_passages(tmp_path: Path) -> None:
    r = offline("Compare security in Sync versus Publish", write_vault(tmp_path / "v", SIDES))
    bullets = [ln for ln in body(r).splitlines() if ln.startswith("- ") and "[[" in ln]
    assert len(bullets) == len(set(bullets)) and r.summary["metrics"]["repeats_dropped"] >= 1


class Judging:
    """The offline provider's answers, billed as a model whose judge rejects the first claim of each
    batch and whose reconciliation cites only one side; counts its calls."""

    name = "judging"

    def __init__(self) -> None:
        self.offline = OfflineProvider()
        self.calls: list[str] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request.purpose)
        inputs: dict[str, Any] = request.inputs or {}
        if request.purpose == "support":
            ids = [c["id"] for c in inputs["claims"]]
            reply = {"verdicts": [{"id": i, "supported": i != 0, "reason": "checked"} for i in ids]}
            return LLMResponse(json.dumps(reply), "judging", "m-1", input_tokens=300, output_tokens=50)
        if request.purpose == "reconcile":
            side = inputs["conflicts"][0]["sides"][0]
            text = f"The plans differ; one note says {side['value']} days. {side['citations'][0]}"
            return LLMResponse(text, "judging", "m-1", input_tokens=300, output_tokens=50)
        answer = await self.offline.complete(request)
        return LLMResponse(
            answer.text, "judging", "m-1", input_tokens=100, output_tokens=50, data=answer.data
        )

    async def aclose(self) -> None:
        return None


def test_with_a_model_the_judge_flags_and_the_reconciliation_keeps_every_side(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", PLANTED)
    model = Judging()
    config = RunConfig(HISTORY, (str(vault),), code_mode=False, history_dir=str(tmp_path / "h"))
    r = asyncio.run(start_run(config, provider=model))
    assert model.calls.count("support") == 1 and model.calls.count("reconcile") == 1
    metrics = r.summary["metrics"]
    assert metrics["support_check"] == "judge"
    assert metrics["claims_unsupported"] == 1 == len(r.summary["unsupported_claims"])
    assert metrics["claims_checked"] > 1
    assert UNSUPPORTED_MARK in r.report and "## Unsupported claims" in r.report
    section = body(r).split("### Conflicting findings", 1)[1]
    assert "The plans differ" in section
    assert "[[Plans/Sync plan" in section and "[[Plans/Pricing 2025" in section  # the side it left out, added
    # An identical run is answered by the cache: no call at all, and the same checks.
    made = len(model.calls)
    again = asyncio.run(start_run(config, provider=model))
    assert len(model.calls) == made and again.summary["metrics"]["cache_hits"] >= 1
    assert again.summary["metrics"]["claims_unsupported"] == 1
    assert again.summary["conflicts"] == r.summary["conflicts"]


def test_real_vault_how_to_gives_the_syntax_and_an_unanswerable_question_is_uncovered(
    shared_vaults: Path, tmp_path: Path
) -> None:
    vault = tmp_path / "obsidian-help"
    shutil.copytree(shared_vaults / "obsidian-help", vault)
    how = offline("How do I embed a heading?", vault)
    assert how.status is RunStatus.SUCCESS and how.summary["uncovered"] == []
    assert "`![[" in body(how)  # the embed syntax itself, as the vault's note shows it
    assert how.summary["metrics"]["claims_checked"] >= 1 and how.summary["metrics"]["claims_unsupported"] == 0
    nothing = offline("What is the boiling point of mercury?", vault)
    assert nothing.status is RunStatus.PARTIAL and nothing.summary["uncovered"]
    # What it quotes (if anything) is under the warning, as the closest passages, not as an answer.
    warned = "[!warning] Not found in the vault" in body(nothing) and nothing.summary["answered"] is False
    assert not nothing.citations or warned
