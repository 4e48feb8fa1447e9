"""``shad checkpoint`` and the checkpoint options of ``shad run`` / ``resume``: exit codes, the listing,
deciding and continuing, and the terminal prompt of the ``ask`` policy (driven through a real pty)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from _checkpoint_data import SECURITY_GOAL as GOAL

from engine.cli import main
from engine.runs import Run


@pytest.fixture
def vault(coffee_vault: Path) -> Path:
    return coffee_vault


def paused_run(vault: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["run", GOAL, "--vault", str(vault), "--provider", "offline", "--no-cache", "--json", *extra])
    summary = json.loads(capsys.readouterr().out)
    assert code == 4 and summary["status"] == "NEEDS_HUMAN", summary
    assert summary["resume_command"] == f"shad checkpoint {summary['run_id']}"
    return str(summary["run_id"])


def test_without_a_terminal_the_run_pauses_and_exits_4(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = paused_run(vault, capsys)
    assert main(["checkpoint", rid]) == 0
    listing = capsys.readouterr().err
    assert "Checkpoint root" in listing and f"shad checkpoint {rid} root --approve" in listing
    assert main(["checkpoint", rid, "--json"]) == 0
    pending = json.loads(capsys.readouterr().out)
    assert [c["node_id"] for c in pending] == ["root"] and pending[0]["decision"] is None
    assert main(["status", rid]) == 0
    assert "waits for a person root" in capsys.readouterr().out


def test_a_decision_continues_the_run(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rid = paused_run(vault, capsys)
    # The run finishes with the note the person chose; a coffee note does not answer a security question,
    # so the run says so: PARTIAL (exit 3) with the ask not found in the vault, and nothing left waiting.
    assert main(["checkpoint", rid, "--edit", "Coffee/Resting", "--json"]) == 3
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "PARTIAL" and summary["checkpoints"][0]["decision"]["action"] == "edit"
    assert summary["uncovered"] == [GOAL] and summary["missing_branches"] == []
    assert main(["checkpoint", rid]) == 0
    assert "waits for no decision" in capsys.readouterr().out


def test_no_resume_only_records(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rid = paused_run(vault, capsys)
    assert main(["checkpoint", rid, "root", "--skip", "--no-resume"]) == 0
    assert f"shad resume {rid}" in capsys.readouterr().err
    assert Run.load(rid).status.value == "NEEDS_HUMAN"
    assert main(["resume", rid, "--json"]) == 3  # the only node was skipped: PARTIAL, nothing to report
    assert json.loads(capsys.readouterr().out)["checkpoints"][0]["decision"]["action"] == "skip"


def test_bad_decisions_are_usage_errors(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rid = paused_run(vault, capsys)
    assert main(["checkpoint", rid, "--approve", "--skip"]) == 2
    assert "give one decision" in capsys.readouterr().err
    assert main(["checkpoint", rid, "--edit", "Nowhere/Nothing"]) == 2
    assert "do not have" in capsys.readouterr().err
    assert main(["checkpoint", "no-such-run", "--approve"]) != 0
    assert main(["run", GOAL, "--vault", str(vault), "--checkpoints", "maybe"]) == 2
    capsys.readouterr()


# Neither policy waits for a person: the run finishes, PARTIAL (exit 3) only because the coffee vault does
# not answer a security question (its ask is listed as not found), never NEEDS_HUMAN (exit 4).
@pytest.mark.parametrize(
    ("flag", "status"), [("--no-checkpoints", "PARTIAL"), ("--checkpoints=approve", "PARTIAL")]
)
def test_policies_from_the_command_line(
    vault: Path, capsys: pytest.CaptureFixture[str], flag: str, status: str
) -> None:
    code = main(["run", GOAL, "--vault", str(vault), "--provider", "offline", "--no-cache", "--json", flag])
    summary = json.loads(capsys.readouterr().out)
    assert code == 3 and summary["status"] == status
    assert summary["uncovered"] == [GOAL] and summary["missing_branches"] == []


def test_the_environment_sets_the_default_policy(
    vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_CHECKPOINTS", "approve")
    code = main(["run", GOAL, "--vault", str(vault), "--provider", "offline", "--no-cache", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 3 and summary["status"] == "PARTIAL" and summary["missing_branches"] == []  # not waiting


def test_on_a_terminal_the_run_asks(vault: Path, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    env = {**os.environ, "SHAD_HOME": str(tmp_path / "home"), "COLUMNS": "200", "TERM": "dumb"}
    env.pop("ANTHROPIC_API_KEY", None)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "engine.cli", "run", GOAL, "--vault", str(vault), "--provider", "offline", "--no-cache"],
        env=env,
        encoding="utf-8",
        timeout=120,
    )
    child.expect(r"Checkpoint.*root")
    child.expect(r"\[a\]pprove")
    child.sendline("h")
    child.expect("Your hint")
    child.sendline("resting beans carbon dioxide")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3, child.before  # finished; the coffee vault does not answer the question
    rid = next(r for r in (tmp_path / "vault" / "Shad" / "History" / "Runs").iterdir()).name
    decision = Run.load(rid).summary["checkpoints"][0]["decision"]
    assert decision == {**decision, "action": "hint", "by": "human", "text": "resting beans carbon dioxide"}
