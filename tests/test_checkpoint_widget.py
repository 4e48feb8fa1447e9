"""``widgets.CheckpointWidget`` on real paused runs (the offline provider over a tiny vault about coffee,
asked about authentication: high-impact and nothing to retrieve): what it shows, how a click or
``decide`` is validated and recorded with ``engine.decide``, its states, and the continuation called
once every pending checkpoint of the run is decided. The browser side is in test_browser.py."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _checkpoint_data import COFFEE_FLAT as COFFEE
from _checkpoint_data import SECURITY_GOAL as GOAL
from _checkpoint_data import TWO_STEP_GOAL
from _notebook_helpers import RecordingComm

import engine
import widgets
from engine import Run, RunStatus
from engine.errors import UsageError
from widgets import CheckpointWidget

STATIC = Path(widgets.__file__).parent / "static"


class Resumes:
    """A continuation that records the runs it was asked to resume."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, run_id: str) -> None:
        self.calls.append(run_id)


@pytest.fixture
def vault(make_vault: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    return make_vault(COFFEE)


def pause(vault: Path, goal: str = GOAL, **options: Any) -> Run:
    run = engine.run(
        goal,
        [str(vault)],
        provider="offline",
        checkpoints="pause",
        history_dir=str(vault.parent / "history"),
        **options,
    )
    assert run.status == RunStatus.NEEDS_HUMAN, run.summary.get("stop_reason")
    return run


@pytest.fixture
def paused(vault: Path) -> Run:
    return pause(vault)


def front_end_clicks(widget: CheckpointWidget, action: str, text: str = "") -> None:
    """What the JS sends on a click: a custom message on the widget's comm."""
    widget._handle_msg(
        {
            "content": {
                "data": {"method": "custom", "content": {"type": "decide", "action": action, "text": text}}
            },
            "buffers": [],
        }
    )


def events(run: Run) -> list[dict[str, Any]]:
    lines = (run.history.dir / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# --- what it shows -----------------------------------------------------------------------------------------


def test_public_surface_and_synced_traits() -> None:
    assert "CheckpointWidget" in widgets.__all__ and widgets.CheckpointWidget is CheckpointWidget
    synced = {
        name for name, trait in CheckpointWidget.class_traits(sync=True).items() if not name.startswith("_")
    }
    mine = {"run_id", "node_id", "checkpoint", "decision", "state", "message"}
    assert mine <= synced
    for name in mine:
        assert CheckpointWidget.class_traits()[name].help, name
    # Shipped, not fetched: what it shares with the approval widget first, then its own.
    read = {f.name: f.read_text() for f in STATIC.iterdir()}
    assert CheckpointWidget._esm == read["decision.js"] + read["checkpoint.js"]
    assert CheckpointWidget._css == read["decision.css"] + read["checkpoint.css"]


def test_it_shows_the_checkpoint(paused: Run) -> None:
    (checkpoint,) = engine.pending_checkpoints(paused.id)
    widget = CheckpointWidget(checkpoint)
    assert (widget.run_id, widget.node_id) == (paused.id, checkpoint.node_id)
    assert widget.checkpoint == checkpoint.to_dict()
    assert widget.checkpoint["task"] == GOAL and "security" in widget.checkpoint["impact"]
    assert "retrieval" in widget.checkpoint["reason"]
    assert {"retrieval_score", "confidence"} <= set(widget.checkpoint["signals"])
    assert (widget.state, widget.decision, widget.message) == ("waiting", {}, "")
    # The same from the dict form (what a listing or a JSON file holds).
    again = CheckpointWidget(checkpoint.to_dict())
    assert (again.node_id, again.checkpoint) == (widget.node_id, widget.checkpoint)


def test_bad_input_is_a_clear_usage_error() -> None:
    with pytest.raises(UsageError, match=r"takes an engine\.Checkpoint, not str"):
        CheckpointWidget("root")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="names no run_id or node_id"):
        CheckpointWidget({"task": "x"})
    widget = CheckpointWidget({"run_id": "r", "node_id": "n"})
    with pytest.raises(UsageError, match="unknown checkpoint widget state 'done'"):
        widget.set_state("done")


def test_text_fallbacks_say_how_to_decide(paused: Run) -> None:
    (checkpoint,) = engine.pending_checkpoints(paused.id)
    widget = CheckpointWidget(checkpoint)
    data, _ = widget._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    for text in (data["text/plain"], data["text/markdown"]):
        assert checkpoint.node_id in text and GOAL in text and checkpoint.reason in text
        assert f"%shad checkpoint {paused.id} {checkpoint.node_id} --approve" in text


# --- deciding ----------------------------------------------------------------------------------------------


def test_approve_records_the_decision_and_resumes_once(paused: Run) -> None:
    resumes = Resumes()
    (checkpoint,) = engine.pending_checkpoints(paused.id)
    widget = CheckpointWidget(checkpoint, on_resume=resumes)
    assert widget.decide("Approve") is True
    assert resumes.calls == [paused.id]
    assert widget.decision["action"] == "approve" and widget.decision["by"] == "human"
    assert widget.checkpoint["decision"] == widget.decision
    assert (widget.state, widget.message) == ("resuming", "Decided: approve. Resuming the run…")
    assert engine.pending_checkpoints(paused.id) == []
    decided = [e for e in events(paused) if e["type"] == "CHECKPOINT_DECIDED"]
    assert [(e["node"], e["action"], e["by"]) for e in decided] == [(checkpoint.node_id, "approve", "human")]
    # A second decision is refused, and nothing resumes twice.
    assert widget.decide("skip") is False
    assert "already decided (approve)" in widget.message and resumes.calls == [paused.id]
    # The resumer reports back, from any thread.
    worker = threading.Thread(target=widget.set_state, args=("resumed", "The run resumed and ended SUCCESS."))
    worker.start()
    worker.join()
    assert (widget.state, widget.message) == ("resumed", "The run resumed and ended SUCCESS.")


@pytest.mark.parametrize(
    ("action", "text", "message"),
    [
        ("hint", "   ", "a hint needs its text"),
        ("edit", "", "edit needs the notes to use"),
        ("frobnicate", "", "unknown action 'frobnicate'"),
        ("edit", "Security/OAuth", "edit names notes the vaults do not have"),  # the engine's check
    ],
)
def test_invalid_decisions_leave_it_waiting(paused: Run, action: str, text: str, message: str) -> None:
    resumes = Resumes()
    (checkpoint,) = engine.pending_checkpoints(paused.id)
    widget = CheckpointWidget(checkpoint, on_resume=resumes)
    assert widget.decide(action, text) is False
    assert message in widget.message
    assert (widget.state, widget.decision, resumes.calls) == ("waiting", {}, [])
    assert [c.node_id for c in engine.pending_checkpoints(paused.id)] == [checkpoint.node_id]
    assert widget.decide("hint", "look for the payment notes") is True  # still usable
    assert widget.decision["text"] == "look for the payment notes" and resumes.calls == [paused.id]


def test_edit_takes_notes_of_the_vault(paused: Run) -> None:
    widget = CheckpointWidget(engine.pending_checkpoints(paused.id)[0])
    assert widget.decide("edit", "[[Espresso]], Beans.md") is True
    assert widget.decision["action"] == "edit" and "Espresso" in widget.decision["text"]
    # No continuation: the widget says how to continue by hand, and waits no more.
    assert widget.message == f"Decided: edit. Continue the run with %shad resume {paused.id}."
    assert widget.state == "waiting"


def test_text_of_actions_that_take_none_is_dropped(paused: Run) -> None:
    widget = CheckpointWidget(engine.pending_checkpoints(paused.id)[0])
    assert widget.decide("approve", "some leftover text in the box") is True
    assert widget.decision["text"] == ""


def test_a_click_is_answered(paused: Run, comms: list[RecordingComm]) -> None:
    resumes = Resumes()
    widget = CheckpointWidget(engine.pending_checkpoints(paused.id)[0], on_resume=resumes)
    channel = next(c for c in comms if c.comm_id == widget.model_id)
    front_end_clicks(widget, "hint", "")
    assert channel.custom() == [{"type": "rejected", "message": widget.message}]
    assert "hint needs its text" in widget.message and widget.decision == {}
    front_end_clicks(widget, "hint", "")  # the same mistake again: still answered (buttons come back)
    assert len(channel.custom()) == 2
    front_end_clicks(widget, "skip")
    assert channel.custom()[-1] == {"type": "decided", "message": widget.message}
    assert widget.decision["action"] == "skip" and resumes.calls == [paused.id]
    widget._handle_msg({"content": {"data": {"method": "custom", "content": "noise"}}, "buffers": []})
    assert len(channel.custom()) == 3  # anything else is ignored


def test_a_failing_continuation_shows_failed(paused: Run) -> None:
    def broken(run_id: str) -> None:
        raise RuntimeError("the engine thread is gone")

    widget = CheckpointWidget(engine.pending_checkpoints(paused.id)[0], on_resume=broken)
    assert widget.decide("approve") is True  # the decision stands
    assert widget.state == "failed"
    assert "RuntimeError: the engine thread is gone" in widget.message
    assert f"%shad resume {paused.id}" in widget.message


def test_a_decision_made_elsewhere_is_reported(paused: Run) -> None:
    widget = CheckpointWidget(engine.pending_checkpoints(paused.id)[0])
    engine.decide(paused.id, None, "skip")  # e.g. %shad checkpoint in another cell
    assert widget.decide("approve") is False
    assert "already decided" in widget.message and widget.decision == {}
    shown = CheckpointWidget(Run.load(paused.id).summary["checkpoints"][0] | {"decision": {"action": "skip"}})
    assert shown.decision == {"action": "skip"} and shown.message == "Already decided: skip."
    assert shown.decide("approve") is False


def test_the_run_resumes_once_every_pending_checkpoint_is_decided(vault: Path) -> None:
    run = pause(vault, TWO_STEP_GOAL, strategy="research")
    engine.decide(run.id, None, "approve")
    run = asyncio.run(engine.aresume(run.id, checkpoints="pause"))
    pending = engine.pending_checkpoints(run.id)
    assert run.status == RunStatus.NEEDS_HUMAN and len(pending) == 2
    resumes = Resumes()
    first, second = (CheckpointWidget(c, on_resume=resumes) for c in pending)
    assert first.decide("approve") is True
    assert resumes.calls == [] and first.state == "waiting" and first.decision["action"] == "approve"
    assert second.node_id in first.message and "other checkpoints" in first.message
    assert second.decide("hint", "billing schema") is True
    assert resumes.calls == [run.id] and second.state == "resuming"
    finished = asyncio.run(engine.aresume(run.id, checkpoints="pause"))
    # Every checkpoint decided, every node finished: only what the coffee vault cannot answer is left.
    assert finished.status == RunStatus.PARTIAL and finished.summary["missing_branches"] == []
    assert finished.summary["uncovered"] and not engine.pending_checkpoints(run.id)


# --- the files it ships ------------------------------------------------------------------------------------


def css_selectors(name: str) -> list[str]:
    """Every selector of a shipped stylesheet (comments left out); none may be an at-rule."""
    css = re.sub(r"/\*.*?\*/", "", (STATIC / name).read_text(), flags=re.S)
    assert "@" not in css, name  # no @import, no @font-face, no global keyframes
    return [s.strip() for head in re.findall(r"([^{}]+)\{", css) for s in head.split(",")]


@pytest.mark.parametrize(
    ("name", "scope", "at_least"),
    [("decision.css", "shad-decision", 20), ("checkpoint.css", "shad-checkpoint", 10)],
)
def test_every_css_rule_is_scoped_to_the_widget(name: str, scope: str, at_least: int) -> None:
    """Both stylesheets it ships: the shared one under the class both decision widgets' roots carry,
    its own under its own class."""
    selectors = css_selectors(name)
    assert len(selectors) >= at_least
    for selector in selectors:
        assert re.match(rf"^\.{scope}(\[[^\]]+\])?( |$)", selector), selector


def test_the_js_fetches_nothing_and_sets_text_only() -> None:
    code = re.sub(r"^\s*//[^\n]*", "", CheckpointWidget._esm, flags=re.M)  # decision.js + checkpoint.js
    assert not re.findall(r"https?://", code)
    assert not re.search(r"^\s*import\b|\bimport\s*\(", code, re.M)
    for word in ("fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "innerHTML", "cdn"):
        assert word not in code, word
    assert '{ type: "decide", action, text: box.value }' in code  # the message Python handles
    for action in engine.CHECKPOINT_ACTIONS:
        assert f'["{action}", "' in code
    assert re.findall(r"^export\b.*$", code, re.M) == ["export default { render };"]  # none in decision.js


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_js_parses(tmp_path: Path) -> None:
    module = tmp_path / "checkpoint.mjs"
    module.write_text(CheckpointWidget._esm)  # decision.js + checkpoint.js: one module, no name twice
    out = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
