"""Checkpoint triggers (H1): ``[REVIEW]`` / ``[APPROVE]`` in a goal or a plan node, and ``--checkpoint-on
STAGE``, open a checkpoint on the node's evidence however strong it is; under ``pause`` the run ends
NEEDS_HUMAN (exit 4) and ``shad checkpoint`` decides it; ``--no-checkpoints`` opens none."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _demo import DEMO

from engine.runs.checkpoints import requested, strip_markers
from engine.runs.dag import Dag, Node

pytestmark = pytest.mark.usefixtures("shad_home")
GOAL = "How long should I rest beans after roasting?"


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def test_approve_in_the_goal_pauses_and_is_decided_through_shad_checkpoint(shad: Any, vault: Path) -> None:
    paused = shad("run", f"{GOAL} [APPROVE]", "--vault", str(vault), "--checkpoints", "pause", "--json")
    assert paused.code == 4, paused.err
    summary = paused.json()
    assert summary["status"] == "NEEDS_HUMAN"
    (checkpoint,) = summary["checkpoints"]
    assert checkpoint["node_id"] == "root" and checkpoint["kind"] == "review"
    assert "the goal asks for [APPROVE]" in checkpoint["reason"]
    decided = shad("checkpoint", summary["run_id"], "root", "--approve", "--json")
    assert decided.code == 0, decided.err
    assert decided.json()["status"] == "SUCCESS" and decided.json()["citations"]

    unasked = shad("run", f"{GOAL} [APPROVE]", "--vault", str(vault), "--no-checkpoints", "--json")
    assert unasked.code == 0 and unasked.json()["checkpoints"] == []


def test_checkpoint_on_a_stage(shad: Any, vault: Path) -> None:
    r = shad(
        "run", "Compare pour-over and French press", "--vault", str(vault),
        "--checkpoints", "pause", "--checkpoint-on", "gather_evidence", "--json",
    )  # fmt: skip
    assert r.code == 4, r.err
    nodes = {c["node_id"]: c["reason"] for c in r.json()["checkpoints"]}
    assert set(nodes) == {"gather_evidence"} and "--checkpoint-on gather_evidence" in nodes["gather_evidence"]


def test_which_nodes_a_marker_asks_for() -> None:
    dag = Dag()
    dag.add(Node("root", "Compare A and B [REVIEW]", "goal", 0))
    dag.add(Node("frame", "Frame: Compare A and B [REVIEW]", "frame_question", 1, parent="root"))
    dag.add(Node("gather", "Gather: Compare A and B [REVIEW]", "gather_evidence", 1, parent="root"))
    goal = "Compare A and B [REVIEW]"
    ask = {n.id: requested(n, dag, goal, (), "gather_evidence") for n in dag}
    assert ask == {"root": None, "frame": None, "gather": "the goal asks for [REVIEW]"}  # the evidence only
    alone = Dag()
    root = alone.add(Node("root", goal, "goal", 0))
    assert requested(root, alone, goal, (), "gather_evidence") == "the goal asks for [REVIEW]"
    planned = Dag()
    planned.add(Node("root", "Compare A and B", "goal", 0))
    marked = planned.add(Node("x", "Check the licence terms [APPROVE]", "analyze", 1, parent="root"))
    plain = planned.add(Node("y", "Summarise", "analyze", 1, parent="root"))
    assert requested(marked, planned, "Compare A and B", (), None) == "the subtask asks for [APPROVE]"
    assert requested(plain, planned, "Compare A and B", (), None) is None
    assert requested(plain, planned, "Compare A and B", ("analyze",), None) == "--checkpoint-on analyze"
    assert strip_markers("Rest time [APPROVE] of beans [REVIEW]") == "Rest time of beans"
