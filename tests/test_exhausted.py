"""The max-iteration policy (H4, engine/runs/_exhausted.py): a node whose retries ran out ends
FAILED_WITH_DIAGNOSTIC with its best artifact, a failure report and suggested next inputs; the run is
PARTIAL (or FAILED_WITH_DIAGNOSTIC under ``--on-exhausted fail``), and every face shows it: the DAG,
dag.json, events, the --json summary, ``shad status``, ``shad trace``, the report, the widget's state; a
resume runs such nodes again (with ``--hint``, one more rung).

Real runs: the offline provider over a copy of the demo vault with Code Mode (the sandbox, scripts, the
recovery ladder); a software run against the stand-in Anthropic server whose repairs never fix anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _codemode_fixtures import require_codemode

from engine import Run, RunConfig, RunStatus, run
from engine.runs import resume
from engine.runs.dag import NodeStatus

# Nothing in the demo vault (a coffee vault) is about this: every rung of the ladder stays weak.
WEAK = "What is the history of quantum chromodynamics lattice gauge theory?"
# One ask the vault answers, one it cannot.
MIXED = (
    "How long should roasted beans rest before brewing? "
    "What is the history of lattice gauge theory in physics?"
)
LATTICE_NOTE = """---
type: note
---
# Lattice gauge theory

The history of lattice gauge theory in physics starts in 1974, when Kenneth Wilson put quantum
chromodynamics on a lattice of points in spacetime. Lattice gauge theory made the theory computable:
the history since is one of bigger lattices and faster computers.
"""
FAILED = NodeStatus.FAILED_WITH_DIAGNOSTIC


@pytest.fixture(autouse=True)
def _home(shad_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    return Path(shutil.copytree(demo_vault, tmp_path / "vault"))


def offline(goal: str, vault: Path, **options: Any) -> Run:
    r = run(RunConfig(goal, (str(vault),), provider="offline", **options))
    require_codemode(r.events)  # the ladder needs the sandbox: without one there is no retry
    return r


def test_a_leaf_whose_ladder_ran_out_keeps_its_flagged_answer_and_says_what_to_try(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = offline(WEAK, vault)
    root = r.dag.root()
    # the node: its best answer kept, the status says the retries ran out
    assert root.status is FAILED and root.answer
    assert r.status is RunStatus.PARTIAL and r.exit_code == 3
    d = root.diagnostic
    rungs = [a["rung"] for a in d["failure_report"]["attempts"]]
    assert rungs == ["retrieval script 1", "retrieval script 2", "broadened direct search"]
    assert all(a["problem"] and a["score"] < 0.45 for a in d["failure_report"]["attempts"])
    # dag.json and the events carry it
    saved = json.loads((r.history.dir / "dag.json").read_text())
    (node,) = [n for n in saved["nodes"] if n["id"] == "root"]
    assert node["status"] == "FAILED_WITH_DIAGNOSTIC" and node["diagnostic"]["next_inputs"]
    (event,) = [e for e in r.events if e["type"] == "NODE_FAILED_WITH_DIAGNOSTIC"]
    assert event["node"] == "root" and "stayed weak" in event["error"]
    assert event["diagnostic"]["failure_report"]["attempts"] == d["failure_report"]["attempts"]
    # the summary: a failure with the best artifact, the report of what was tried, and what to try
    (f,) = r.summary["failures"]
    assert f["status"] == "FAILED_WITH_DIAGNOSTIC" and f["node_id"] == "root" and f["phase"] == "retrieval"
    assert f["best_artifact"]["kind"] == "answer" and f["best_artifact"]["answer"] == root.answer
    commands = [i["command"] for i in f["next_inputs"]]
    assert any(c.startswith(f"shad resume {r.id} --hint ") for c in commands)
    assert any(c.startswith("shad vault search ") for c in commands)
    assert r.summary["resume_command"] == f"shad resume {r.id}"
    # the report: the answer, then what failed and what to try
    assert "## What failed and what to try" in r.report and "broadened direct search" in r.report
    assert f"shad resume {r.id} --hint" in r.report and "## Failures" not in r.report
    # the CLI: shad status (text and --json) and shad trace
    shad = caller(capsys)
    status = shad("status", r.id, "--json")
    assert status.code == 0 and status.json()["status"] == "PARTIAL"
    assert status.json()["failures"][0]["failure_report"]["attempts"] == d["failure_report"]["attempts"]
    text = shad("status", r.id)
    assert "failed with diagnostic root" in text.out and f"shad resume {r.id} --hint" in text.out
    assert "FAILED_WITH_DIAGNOSTIC" in shad("trace", "tree", r.id).out
    assert "Failed with diagnostic" in shad("trace", "node", r.id, "root").out
    # the widget's state, from the events as they came and from the finished run
    from widgets._state import DagState

    live = DagState()
    for e in r.events:
        live.apply(e)
    assert live.nodes["root"].status == "FAILED_WITH_DIAGNOSTIC"
    assert "stayed weak" in live.nodes["root"].error  # the node's detail says why
    assert Run.load(r.id).dag.root().status is FAILED


def test_a_weak_subtask_is_flagged_and_its_parent_still_answers(vault: Path) -> None:
    r = offline(MIXED, vault)
    failed = [n for n in r.dag if n.status is FAILED]
    assert [n.task for n in failed] == ["What is the history of lattice gauge theory in physics?"]
    assert r.dag.root().status is NodeStatus.SUCCEEDED and r.status is RunStatus.PARTIAL
    assert not r.summary["missing_branches"]  # its answer is kept, not missing
    assert f"`{failed[0].id}`" in r.report.split("## What failed and what to try")[1]


def test_on_exhausted_fail_makes_the_run_failed_with_diagnostic(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = offline(WEAK, vault, on_exhausted="fail")
    assert r.status is RunStatus.FAILED_WITH_DIAGNOSTIC and r.exit_code == 1
    assert r.summary["failures"][0]["next_inputs"]
    shad = caller(capsys)
    out = shad(
        "run", WEAK, "--vault", str(vault), "--provider", "offline", "--on-exhausted", "fail", "--json"
    )
    if out.json()["status"] == "FAILED_WITH_DIAGNOSTIC":  # (Code Mode was available: checked above)
        assert out.code == 1
    assert shad("run", WEAK, "--vault", str(vault), "--on-exhausted", "never").code == 2


def test_resume_runs_the_node_again_and_a_note_added_since_answers_it(vault: Path) -> None:
    first = offline(WEAK, vault)
    assert first.dag.root().status is FAILED
    (vault / "Physics").mkdir()
    (vault / "Physics" / "Lattice gauge theory.md").write_text(LATTICE_NOTE, encoding="utf-8")
    again = resume(first.id)
    resumed = [e for e in again.events if e["type"] == "RUN_RESUMED"][-1]
    assert "root" in resumed["rerun"] and "root" in resumed["fresh"]  # never answered from the cache
    root = again.dag.root()
    assert root.status is NodeStatus.SUCCEEDED and not root.diagnostic, root.note
    assert any(c["path"] == "Physics/Lattice gauge theory.md" for c in root.citations)
    assert again.status is RunStatus.SUCCESS and not again.summary["failures"]


def test_resume_with_a_hint_adds_a_rung(vault: Path) -> None:
    first = offline(WEAK, vault)
    again = resume(first.id, hint="Wilson lattice quantum chromodynamics")
    root = again.dag.root()
    rungs = [a["rung"] for a in root.retrieval["signals"]["ladder"]]
    assert rungs[-1] == "hint 'Wilson lattice quantum chromodynamics'"
    assert root.retrieval["method"].endswith("+hint")
    # still nothing on it in the vault: flagged again, the hint among what was tried
    assert root.status is FAILED and again.status is RunStatus.PARTIAL
    assert root.diagnostic["failure_report"]["attempts"][-1]["rung"].startswith("hint ")


def test_a_strong_retrieval_is_not_flagged(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = offline("How long should roasted beans rest before brewing?", vault)
    assert r.status is RunStatus.SUCCESS and not any(n.status is FAILED for n in r.dag)
    assert "What failed and what to try" not in r.report
    # a hint has nothing to apply to: said in one line, nothing runs
    refused = caller(capsys)("resume", r.id, "--hint", "roasting")
    assert refused.code == 2 and "no node whose retries ran out" in refused.err


def test_a_software_node_whose_repairs_ran_out_keeps_its_code_and_the_attempts(
    tmp_path: Path, demo_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The stand-in model writes code with planted faults and never repairs them (test_software_run).
    from test_software_run import Model, _never_repairs

    monkeypatch.setattr(Model, "__call__", _never_repairs(Model.__call__))
    r = _software_run(demo_vault, tmp_path, monkeypatch, verify="build")
    assert r.status is RunStatus.PARTIAL and r.summary["software"]["ok"] is False
    failed = {n.id: n for n in r.dag if n.status is FAILED}
    assert "impl" in failed, {n.id: n.status.value for n in r.dag}
    d = failed["impl"].diagnostic
    assert d["kind"] == "code" and "pkg/fmt.py" in d["best_artifact"]["files"]
    attempts = d["failure_report"]["attempts"]
    assert attempts and all(a["signature"] for a in attempts)  # each repair with its error signature
    assert {a["outcome"] for a in attempts} & {"still failing", "repeated", "refused"}
    assert any(f["where"].startswith("pkg/fmt.py:") for f in d["failure_report"]["failures"])
    (entry,) = [f for f in r.summary["failures"] if f["node_id"] == "impl"]
    assert entry["status"] == "FAILED_WITH_DIAGNOSTIC" and entry["phase"] == "code"
    assert any("shad verify" in i["command"] for i in entry["next_inputs"])
    assert "fails its blocking checks" in " ".join(f["message"] for f in r.summary["failures"])  # as before
    event = [e for e in r.events if e["type"] == "NODE_FAILED_WITH_DIAGNOSTIC" and e["node"] == "impl"]
    assert event and event[-1]["diagnostic"]["kind"] == "code"
    section = r.report.split("## What failed and what to try")[1]
    assert "`impl`" in section and "repair #" in section and "still failing" in section
    shad = caller(capsys)
    assert shad("status", r.id, "--json").json()["failures"] == r.summary["failures"]


def test_when_repairs_made_the_code_worse_the_best_version_is_kept(
    tmp_path: Path, demo_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each "repair" fixes fmt.py but adds two imports of modules that do not exist to core.py: the version
    # checked before any repair has the fewest findings, and it is the one kept as the best code.
    from _fake_llm import prompt_of
    from test_software_run import CORE_FAULTY, FMT_FIXED, Model, block

    from engine.output import Manifest

    def reply(self: Model, body: dict[str, Any]) -> str:
        if prompt_of(body).startswith("Checks failed"):
            self.repairs.append(prompt_of(body))
            bad = "".join(f"import nowhere_{n}\n" for n in range(2 * len(self.repairs)))
            return block("pkg/fmt.py", FMT_FIXED) + block("pkg/core.py", bad + CORE_FAULTY)
        return str(original(self, body))

    original = Model.__call__
    monkeypatch.setattr(Model, "__call__", reply)
    r = _software_run(demo_vault, tmp_path, monkeypatch, verify="basic")
    impl = r.dag.node("impl")
    assert impl.status is FAILED, impl.note
    best = impl.diagnostic["best_artifact"]
    assert "best_version" in best, (best, impl.diagnostic["failure_report"])
    kept = json.loads(Path(best["best_version"]).read_text())
    final = len(impl.diagnostic["failure_report"]["failures"])
    assert kept["findings"] == best["best_findings"] < final
    last = next(f for f in Manifest.load(Path(best["manifest"])).files if f.path == "pkg/core.py").content
    assert kept["files"]["pkg/core.py"].count("import nowhere_") < last.count("import nowhere_")
    assert "an earlier version with" in r.report


def _software_run(demo_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, verify: str) -> Run:
    """test_software_run's goal, answered by its stand-in model (as patched by the test) through the real
    anthropic SDK, on a copy of the demo vault."""
    import asyncio

    from _fake_llm import FakeLLMServer
    from test_software_run import GOAL, KEY, Model

    from engine.runs import start_run

    vault = Path(shutil.copytree(demo_vault, tmp_path / "vault"))
    with FakeLLMServer(reply=Model()) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        config = RunConfig(
            GOAL, (str(vault),), provider="anthropic", strategy="software", code_mode=False, verify=verify
        )
        return asyncio.run(start_run(config))
