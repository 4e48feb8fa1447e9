"""``shad resume``, ``shad run RUN_ID --resume`` and ``shad replay`` through the CLI (in-process
``main``), with the offline provider over a copy of the demo vault."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _demo import DEMO

from engine.cli import main
from engine.runs import Run

GOAL = "How long should I rest beans after roasting, and why?"


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    target = tmp_path / "vault"
    shutil.copytree(DEMO, target)
    return target


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def first_run(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, object]:
    code, summary = run_json(
        capsys, "run", GOAL, "--vault", str(vault), "--history-dir", str(tmp_path / "runs"), *extra
    )
    assert code == 0, summary
    return summary


def test_replay_reproduces_a_run_without_model_calls(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = first_run(vault, tmp_path, capsys, "--no-cache")
    original = Run.load(str(summary["run_id"]))
    code, replayed = run_json(capsys, "replay", str(summary["run_id"]))
    assert code == 0
    assert replayed["run_id"] != summary["run_id"] and replayed["provider"] == "replay"
    again = Run.load(str(replayed["run_id"]))
    assert sorted(n.id for n in again.dag) == sorted(n.id for n in original.dag)
    assert {n.id: n.task for n in again.dag} == {n.id: n.task for n in original.dag}
    assert replayed["citations"] == summary["citations"]
    assert again.strategy == original.strategy
    assert not [e for e in again.events if e["type"] == "NODE_CACHE_HIT"]  # answered by the recording
    # the same through shad run --provider replay --from
    code, via_run = run_json(capsys, "run", GOAL, "--vault", str(vault), "--from", str(summary["run_id"]))
    assert code == 0 and via_run["citations"] == summary["citations"]


def test_replay_that_diverges_names_the_node(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = first_run(vault, tmp_path, capsys, "--no-cache")
    original = Run.load(str(summary["run_id"]))
    leaf = next(n for n in original.dag if n.retrieval.get("context"))
    item = leaf.retrieval["context"][0]
    root = next(Path(r) for r, p, _ in leaf.retrieval["notes"] if p == item["path"])
    note = root / item["path"]
    text = note.read_text("utf-8")
    line = next(ln for ln in item["text"].splitlines() if len(ln) > 20 and ln in text)
    note.write_text(text.replace(line, line.upper()), "utf-8")  # still found, but shown differently
    code = main(["replay", str(summary["run_id"])])
    err = capsys.readouterr().err
    assert code == 1
    assert "diverged at node" in err and "Traceback" not in err


def test_replay_needs_a_recording(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "no-such-run"]) != 0
    assert "Traceback" not in capsys.readouterr().err


def test_resume_and_run_resume_are_the_same(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = first_run(vault, tmp_path, capsys)
    code, resumed = run_json(capsys, "resume", str(summary["run_id"]))
    assert code == 0 and resumed["run_id"] == summary["run_id"]
    assert resumed["metrics"]["llm_calls"] == 0
    code, again = run_json(capsys, "run", str(summary["run_id"]), "--resume")
    assert code == 0 and again["run_id"] == summary["run_id"]
    events = Run.load(str(summary["run_id"])).events
    assert [e["type"] for e in events].count("RUN_RESUMED") == 2


def test_resume_options_are_checked(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = first_run(vault, tmp_path, capsys)
    run_id = str(summary["run_id"])
    assert main(["resume", run_id, "--budget", "lots"]) == 2
    assert main(["resume", run_id, "--budget", "+10%", "--max-tokens", "5000"]) == 2
    assert main(["resume", run_id, "--replay", "no-such-node"]) == 2
    err = capsys.readouterr().err
    assert "names no node" in err and "Traceback" not in err
    code, deeper = run_json(capsys, "resume", run_id, "--max-depth", "2", "--replay", "stale")
    assert code == 0 and deeper["status"] == "SUCCESS"


def test_cache_commands(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = first_run(vault, tmp_path, capsys)
    assert main(["cache", "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["store"] == "sqlite" and sum(stats["entries"].values()) >= 1
    assert main(["cache", "clear", "--scope", "run"]) == 2  # needs --run
    assert main(["cache", "clear", "--scope", "source"]) == 2  # needs --source
    capsys.readouterr()
    assert main(["cache", "clear", "--scope", "source", "--source", str(vault / "Brewing")]) == 0
    assert main(["cache", "clear", "--scope", "run", "--run", str(summary["run_id"])]) == 0
    assert "removed" in capsys.readouterr().out
    assert main(["cache", "stats", "--json"]) == 0
    assert sum(json.loads(capsys.readouterr().out)["entries"].values()) == 0
    # a cleared cache means the next identical run pays again
    again = first_run(vault, tmp_path, capsys)
    assert again["metrics"]["cache_hits"] == 0 and again["metrics"]["llm_calls"] > 0
    assert main(["cache", "clear", "--scope", "all"]) == 0
    assert main(["cache", "promote", "no-such-key"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_replay_matches_with_history_kept_inside_the_vault(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run reports land in the vault by default; they must not shift what a replayed run retrieves."""
    goal = "Compare washed and natural processing, then plan a first light roast and explain how to rest it."
    for _ in range(2):  # the second run's vault already holds the first run's report
        code, summary = run_json(capsys, "run", goal, "--vault", str(vault), "--no-cache")
        assert code == 0
    assert len(Run.load(str(summary["run_id"])).dag) > 1
    assert (vault / "Shad" / "History" / "Runs").is_dir()
    code, replayed = run_json(capsys, "replay", str(summary["run_id"]))
    assert code == 0 and replayed["citations"] == summary["citations"]
