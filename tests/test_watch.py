"""``shad watch``: task notes of a copy of the demo vault are run with the offline provider and marked
complete (a link to a real report note) or failed (the reason); nothing Shad wrote and nothing finished is
run (again); a note edited while its run goes on is not written over; Ctrl-C stops the loop cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _cli import caller

from engine.vault import Vault, parse_note
from engine.watch import Watcher, WatchOptions, find_tasks, task_goal

pytestmark = pytest.mark.usefixtures("shad_home")

REPO = Path(__file__).resolve().parent.parent
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")
REST = (
    "---\ntype: task\nstatus: pending\n---\n# Resting beans\n\n"
    "How long should roasted beans rest before brewing?\n"
)
BAD_BUDGET = (
    "---\ntype: task\nstatus: pending\nmax_tokens: 10\ngoal: What grind size suits a French press?\n---\n"
)
EMPTY = "---\ntype: task\nstatus: pending\n---\n\n"


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(demo_vault, target)
    return target


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def add(vault: Path, rel: str, text: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def front(path: Path) -> dict[str, Any]:
    return parse_note(path.name, path.read_bytes()).frontmatter


def runs_in(vault: Path) -> list[str]:
    folder = vault / "Shad" / "History" / "Runs"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# --- the goal of a task note --------------------------------------------------------------------------


def test_the_goal_is_the_goal_field_else_the_first_paragraph_under_the_heading() -> None:
    assert task_goal({"goal": "  Why   roast dark? "}, "# Ignored\n\nbody") == "Why roast dark?"
    assert task_goal({}, "# Resting beans\n\nHow long should\nbeans rest?\n\nMore.") == (
        "Resting beans: How long should beans rest?"
    )
    assert task_goal({"goal": ""}, "Plain question?\n\nSecond paragraph.") == "Plain question?"
    assert task_goal({}, "## Only a heading\n\n## Another") == "Only a heading"
    assert task_goal({"goal": 42}, "\n\n") == ""


# --- one pass -------------------------------------------------------------------------------------------


def test_once_completes_a_task_and_fails_the_bad_ones_with_the_reason(shad: Any, vault: Path) -> None:
    rest = add(vault, "Tasks/Rest.md", REST)
    bad = add(vault, "Tasks/Budget.md", BAD_BUDGET)
    empty = add(vault, "Tasks/Empty.md", EMPTY)
    r = shad("watch", str(vault), "--once", "--provider", "offline", "--json")
    assert r.code == 1, r.err  # some failed
    assert "Traceback" not in r.err and "1/3 tasks complete" in r.err
    lines = {row["task"]: row for row in map(__import__("json").loads, r.out.splitlines())}
    assert set(lines) == {"Tasks/Rest.md", "Tasks/Budget.md", "Tasks/Empty.md"}

    done = front(rest)
    assert done["status"] == "complete" and done["run_status"] == "SUCCESS"
    assert done["completed_at"] and done["started_at"] and done["run_id"] == lines["Tasks/Rest.md"]["run_id"]
    link = done["report"]
    assert link.startswith("[[Shad/History/Runs/") and link.endswith("/final.report]]")
    report = Vault(vault).read_note(link[2:-2] + ".md")  # the link resolves to a real note
    assert report.body.strip() and lines["Tasks/Rest.md"]["citations"] > 0
    assert rest.read_text(encoding="utf-8").endswith(
        "# Resting beans\n\nHow long should roasted beans rest before brewing?\n"
    )  # the body is kept

    failed = front(bad)
    assert failed["status"] == "failed" and failed["failed_at"] and "report" not in failed
    assert "max_tokens 10 leaves nothing to work with" in failed["error"]
    assert front(empty)["status"] == "failed" and "the goal is empty" in front(empty)["error"]
    assert len(runs_in(vault)) == 1  # the bad ones failed before any run started


def test_a_second_pass_runs_nothing_again(shad: Any, vault: Path) -> None:
    add(vault, "Tasks/Rest.md", REST)
    add(vault, "Tasks/Empty.md", EMPTY)
    shad("watch", str(vault), "--once", "--provider", "offline")
    before = {p: p.read_bytes() for p in (vault / "Tasks").iterdir()}
    history = runs_in(vault)
    r = shad("watch", str(vault), "--once", "--provider", "offline")
    assert r.code == 0 and "nothing to do" in r.err
    assert runs_in(vault) == history and {p: p.read_bytes() for p in (vault / "Tasks").iterdir()} == before


def test_every_status_change_of_a_task_note_is_in_the_audit_log(shad: Any, vault: Path) -> None:
    from engine.curation import audit_log, audit_path

    rest = add(vault, "Tasks/Rest.md", REST)
    add(vault, "Tasks/Budget.md", BAD_BUDGET)
    r = shad("watch", str(vault), "--once", "--provider", "offline", "--json")
    runs = {row["task"]: row["run_id"] for row in map(__import__("json").loads, r.out.splitlines())}
    tasks = [rec for rec in audit_log() if rec["path"].startswith("Tasks/")]
    assert [(rec["path"], rec["why"]) for rec in tasks] == [
        ("Tasks/Budget.md", f"shad watch: task pending -> processing (run {runs['Tasks/Budget.md']})"),
        ("Tasks/Budget.md", f"shad watch: task processing -> failed (run {runs['Tasks/Budget.md']})"),
        ("Tasks/Rest.md", f"shad watch: task pending -> processing (run {runs['Tasks/Rest.md']})"),
        ("Tasks/Rest.md", f"shad watch: task processing -> complete (run {runs['Tasks/Rest.md']}, SUCCESS)"),
    ]
    last = tasks[-1]
    assert last["type"] == "NOTE_WRITTEN" and last["action"] == "updated" and last["role"] == "root"
    assert last["vault"] == str(vault.resolve()) and last["bytes"] == rest.stat().st_size
    assert last["hash"] == __import__("hashlib").sha256(rest.read_bytes()).hexdigest()
    logged = audit_path().read_text(encoding="utf-8")  # what changed, never the note's text
    assert "roasted beans rest" not in logged and "leaves nothing to work with" not in logged
    listed = shad("approvals", "audit")
    assert listed.code == 0 and listed.out.count("updated Tasks/Rest.md") == 2


def test_nothing_shad_wrote_and_nothing_started_is_picked_up(shad: Any, vault: Path) -> None:
    pending = "---\ntype: task\nstatus: pending\n{extra}---\nHow long should roasted beans rest?\n"
    notes = [
        add(vault, "Shad/Reports/Task.md", pending.format(extra="")),
        add(vault, "Shad/Staging/Task.md", pending.format(extra="")),
        add(vault, "Tasks/Scratch.md", pending.format(extra="created_by: shad watch\n")),
        add(vault, "Tasks/Learning.md", pending.format(extra="proposed_by: 20261125-080837-581c\n")),
        add(vault, "Tasks/Started.md", pending.format(extra="run_id: 20261125-080837-581c\n")),
        add(vault, "Tasks/Done.md", pending.replace("pending", "complete").format(extra="")),
        add(vault, "Tasks/Running.md", pending.replace("pending", "processing").format(extra="")),
        add(vault, "Tasks/NotATask.md", pending.replace("task", "idea").format(extra="")),
    ]
    before = [p.read_bytes() for p in notes]
    r = shad("watch", str(vault), "--once", "--provider", "offline")
    assert r.code == 0 and "nothing to do" in r.err, r.err
    assert "skipped Tasks/Started.md: run_id 20261125-080837-581c is set" in r.err
    assert "skipped Tasks/Scratch.md: written by Shad" in r.err
    assert [p.read_bytes() for p in notes] == before and runs_in(vault) == []
    assert [t.path for t in find_tasks(vault)[0]] == []


def test_a_person_may_write_created_by_and_the_task_still_runs(vault: Path) -> None:
    add(vault, "Tasks/Mine.md", REST.replace("status: pending\n", "status: pending\ncreated_by: alice\n"))
    assert [t.path for t in find_tasks(vault)[0]] == ["Tasks/Mine.md"]


def test_a_note_edited_while_processing_is_not_overwritten(vault: Path) -> None:
    task = add(vault, "Tasks/Rest.md", REST)
    edited: list[str] = []

    def on_event(event: dict[str, Any]) -> None:
        if not edited:  # a person saves the note while the run goes on
            text = task.read_text(encoding="utf-8") + "\nA line added by a person.\n"
            task.write_text(text, encoding="utf-8")
            edited.append(text)

    watcher = Watcher(vault, options=WatchOptions(provider="offline"), on_event=on_event)
    result = watcher.run_pass()
    [outcome] = result.outcomes
    assert outcome.outcome == "conflict" and "edited while its run was going" in outcome.error
    assert outcome.run_status == "SUCCESS" and not result.all_complete
    assert task.read_text(encoding="utf-8") == edited[0]  # left exactly as the person saved it
    assert front(task)["status"] == "processing" and front(task)["run_id"] == outcome.run_id
    assert Watcher(vault, options=WatchOptions(provider="offline")).run_pass().outcomes == []


def test_a_missing_vault_and_bad_options_are_usage_errors(shad: Any, tmp_path: Path, vault: Path) -> None:
    assert shad("watch", str(tmp_path / "nowhere"), "--once").code == 2
    assert shad("watch", str(vault), "--once", "--max-tokens", "10").code == 2
    r = shad("watch", str(vault), "--once", "--provider", "nonsense")
    assert r.code == 2 and "unknown provider" in r.err


def test_without_once_it_polls_until_ctrl_c(vault: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_ENV}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "watch",
            str(vault),
            "--interval",
            "0.1",
            "--provider",
            "offline",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        task = add(vault, "Tasks/Rest.md", REST)
        deadline = time.monotonic() + 60
        while front(task).get("status") != "complete" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert front(task)["status"] == "complete"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "watching" in err and "stopped" in err and "Traceback" not in err + out


def test_a_partial_run_completes_the_task_with_its_run_status(vault: Path) -> None:
    goal = (
        "How long should roasted beans rest before brewing? What grind size suits a French press? "
        "How do I filter tap water for brewing?"
    )
    task = add(
        vault, "Tasks/Multi.md", f"---\ntype: task\nstatus: pending\nmax_tokens: 4000\ngoal: {goal}\n---\n"
    )
    [outcome] = Watcher(vault, options=WatchOptions(provider="offline")).run_pass().outcomes
    done = front(task)
    assert outcome.outcome == "complete" and done["status"] == "complete"
    assert done["run_status"] == "PARTIAL" and (vault / (done["report"][2:-2] + ".md")).is_file()


def test_an_interrupted_task_is_marked_failed_and_resumable(vault: Path) -> None:
    task = add(vault, "Tasks/Rest.md", REST)

    def ctrl_c(event: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Watcher(vault, options=WatchOptions(provider="offline"), on_event=ctrl_c).run_pass()
    marked = front(task)
    assert marked["status"] == "failed" and f"shad resume {marked['run_id']}" in marked["error"]
