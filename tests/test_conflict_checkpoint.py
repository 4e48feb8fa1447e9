"""Unresolved high-impact conflicts become checkpoints (E8, ``engine/runs/_conflict_checkpoint.py``): a
planted pair of notes that disagree on a number, with no model to reconcile them, asks a person under the
``pause`` policy (both sides with their citations), resumes with the person's reading kept under the
conflict, and is decided by the policy under ``approve``; ``off`` opens none. Real offline runs over a real
vault folder."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _demo import write_vault

from engine import RunConfig, aresume, decide
from engine.errors import UsageError
from engine.retrieval.synthesis import Conflict, ConflictSide
from engine.runs import Run, start_run
from engine.runs._conflict_checkpoint import high_impact
from engine.runs._run import RunStatus
from engine.runs.dag import NodeStatus

pytestmark = pytest.mark.usefixtures("shad_home")

PLANTED = {
    "Plans/Sync plan.md": "# Sync plan\n\nThe Standard plan keeps version history for 30 days.\n",
    "Plans/Pricing 2025.md": "# Pricing 2025\n\nThe Standard plan keeps version history for 90 days.\n",
    "Plans/Plus plan.md": "# Plus plan\n\nThe Plus plan adds more storage and priority support.\n",
}
HISTORY = "How long does the Standard plan keep version history?"
READING = "The 2025 pricing page is the current one: 90 days."


def offline(vault: Path, policy: str) -> Run:
    config = RunConfig(
        HISTORY,
        (str(vault),),
        provider="offline",
        code_mode=False,
        checkpoints=policy,
        history_dir=str(vault.parent / "h"),
    )
    return asyncio.run(start_run(config))


def conflict_checkpoints(run: Run) -> list[dict[str, Any]]:
    return [c for c in run.summary["checkpoints"] if c["kind"] == "conflict"]


def test_a_number_the_sources_disagree_on_waits_for_a_person_with_both_sides(tmp_path: Path) -> None:
    r = offline(write_vault(tmp_path / "v", PLANTED), "pause")
    assert r.status is RunStatus.NEEDS_HUMAN and r.exit_code != 0
    assert r.dag.root().status is NodeStatus.NEEDS_HUMAN
    (c,) = conflict_checkpoints(r)
    assert c["node_id"] == "root" and c["decision"] is None and c["options"] == ["approve", "hint", "stop"]
    sides = {s["value"]: s["citations"] for s in c["signals"]["conflicts"][0]["sides"]}
    assert set(sides) == {"30", "90"}
    assert any("Plans/Sync plan" in x for x in sides["30"])
    assert any("Plans/Pricing 2025" in x for x in sides["90"])
    shown = " ".join(p["text"] + " " + (p["citation"] or "") for p in c["context"])
    assert "30" in shown and "90" in shown and "[[Plans/Pricing 2025" in shown
    # The report says what waits and how to answer it (no --edit: there are no notes to choose here).
    assert "**Waits for a person.**" in r.report and f"shad checkpoint {r.id} root --hint" in r.report
    assert f"shad checkpoint {r.id} root --edit" not in r.report
    assert r.summary["resume_command"] == f"shad checkpoint {r.id}"
    with pytest.raises(UsageError, match="cannot be answered with 'edit'"):
        decide(r.id, "root", "edit", "Plans/Sync plan")

    decide(r.id, "root", "hint", READING)
    done = asyncio.run(aresume(r.id))
    assert done.status is RunStatus.SUCCESS, done.report
    assert done.dag.root().status.ok
    section = done.report.split("### Conflicting findings", 1)[1]
    assert "[[Plans/Sync plan" in section and "[[Plans/Pricing 2025" in section  # both sides stay
    assert f"A person's reading of these conflicting findings: {READING}" in section
    (c,) = conflict_checkpoints(done)
    assert c["decision"]["action"] == "hint" and c["decision"]["by"] == "human"


def test_headless_approve_decides_by_itself_and_says_the_conflict_is_unresolved(tmp_path: Path) -> None:
    r = offline(write_vault(tmp_path / "v", PLANTED), "approve")
    assert r.status is RunStatus.SUCCESS
    (c,) = conflict_checkpoints(r)
    assert c["decision"]["action"] == "approve" and c["decision"]["by"] == "policy"
    assert "Unresolved: no model reconciled these findings and no person has reviewed them." in r.report


def test_off_opens_no_conflict_checkpoint(tmp_path: Path) -> None:
    r = offline(write_vault(tmp_path / "v", PLANTED), "off")
    assert r.status is RunStatus.SUCCESS and conflict_checkpoints(r) == []
    assert "### Conflicting findings" in r.report  # still shown, side by side


def test_a_stop_at_the_conflict_checkpoint_ends_the_session_and_asks_again_on_resume(tmp_path: Path) -> None:
    r = offline(write_vault(tmp_path / "v", PLANTED), "pause")
    decide(r.id, "root", "stop")
    stopped = asyncio.run(aresume(r.id))
    assert stopped.status is not RunStatus.SUCCESS
    assert "stopped at the conflict checkpoint" in (stopped.summary["stop_reason"] or "")
    (c,) = conflict_checkpoints(stopped)
    assert c["decision"] is None  # a resume asks again rather than stopping again


def side(value: str) -> ConflictSide:
    return ConflictSide("n", "t", value, f"It is {value}.", [f"[[Note {value}]]"], f"Note {value}")


def test_only_numbers_and_yes_no_facts_are_high_impact() -> None:
    number = Conflict("rest (days)", "number", [side("3"), side("5")])
    yes_no = Conflict("end-to-end encryption", "key_value", [side("yes"), side("no")])
    words = Conflict("roast", "key_value", [side("light"), side("dark")])
    ratio = Conflict("brew ratio", "key_value", [side("1:15"), side("1:17")])
    days = Conflict("rest", "key_value", [side("3-5 days"), side("7 days")])
    links = Conflict(  # text with digits in it (a link, a name) is not a number
        "repository",
        "key_value",
        [side("[github](https://github.com/a/moon2)"), side("[gh](https://x.io/b)")],
    )
    assert high_impact([number, yes_no, words, ratio, days, links]) == [number, yes_no, ratio, days]


def test_on_a_terminal_the_ask_policy_offers_only_the_actions_a_conflict_takes(
    tmp_path: Path, shad_home: Path
) -> None:
    vault = write_vault(tmp_path / "v", PLANTED)
    env = {**os.environ, "SHAD_HOME": str(shad_home)}
    args = ["run", HISTORY, "--vault", str(vault), "--provider", "offline", "--no-code-mode"]
    args += ["--checkpoints", "ask", "--history-dir", str(tmp_path / "h"), "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        input=f"e\nh\n{READING}\n",  # edit is refused (not one of the choices), then a hint
        env=env,
        text=True,
        capture_output=True,
        timeout=240,
    )
    assert "[a]pprove, [h]int, s[t]op, or decide [l]ater" in done.stderr
    assert "[e]dit" not in done.stderr and "'e' is not one of" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "SUCCESS", done.stderr
    (c,) = [c for c in summary["checkpoints"] if c["kind"] == "conflict"]
    assert c["decision"]["action"] == "hint" and c["decision"]["text"] == READING
