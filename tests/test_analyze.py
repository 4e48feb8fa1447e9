"""``shad vault analyze`` (C3): a copy of the demo vault with real runs recorded by the offline provider,
some on a topic the vault covers well (resting coffee beans) and some on one it does not cover at all (the
tea ceremony, matcha): the struggled topic ranks first, with its runs, queries and nodes as evidence."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import Result, caller
from _demo import DEMO
from _fake_llm import FakeLLMServer, prompt_of, well_behaved
from test_novelty import GOAL as REPEATING_GOAL
from test_novelty import PLAN as REPEATING_PLAN
from test_novelty import REST

import engine
from engine.curation import GAP_COLUMNS, analyze_vault
from engine.curation._analyze_runs import load_runs, strip_stage
from engine.curation._analyze_topics import cluster
from engine.vault import Vault

pytestmark = pytest.mark.usefixtures("shad_home")

COFFEE = (
    "How long should I rest beans after roasting?",
    "How many days should roasted beans rest before espresso?",
    "Why do freshly roasted beans need to rest?",
)
# A topic the coffee vault has no word of ("tea" and "Japanese" are in it, in unrelated notes: a search
# now finds those, and the runs would be answered from them partly).
TEA = (
    "What is the etiquette of a matcha ceremony?",
    "How do I whisk matcha for a ceremony?",
    "Matcha whisking technique and ceremony etiquette",
)
# Decomposed, and paused: its framing subtask is weak and high-impact ("securely": security at depth 1).
TEA_DECOMPOSED = "What is the etiquette of a matcha ceremony and how do I whisk matcha securely?"
REDISTRIBUTED = "the audit weight 0.20 was redistributed to history pain and coverage"


def _copy_demo(root: Path) -> Path:
    vault = root / "vault"
    shutil.copytree(DEMO, vault)
    return vault


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo vault with seven offline runs in its history: three on resting beans, four on tea (one of
    them decomposed, pausing at a checkpoint for a person)."""
    base = tmp_path_factory.mktemp("analyze")
    vault = _copy_demo(base)
    ids: dict[str, list[str]] = {"coffee": [], "tea": []}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", str(base / "home"))
        mp.setenv("SHAD_STORE", str(base / "store.sqlite3"))
        for name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "SHAD_CHECKPOINTS", "REDIS_URL"):
            mp.delenv(name, raising=False)
        for goal in COFFEE:
            ids["coffee"].append(engine.run(goal, str(vault), provider="offline").id)
        for goal in TEA:
            ids["tea"].append(engine.run(goal, str(vault), provider="offline").id)
        paused = engine.run(TEA_DECOMPOSED, str(vault), provider="offline", checkpoints="pause")
        assert paused.status.value == "NEEDS_HUMAN"
        ids["tea"].append(paused.id)
    yield {"vault": vault, **ids}


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return caller(capsys)


def _topic_with(data: dict[str, Any], word: str) -> dict[str, Any]:
    return next(t for t in data["topics"] if word in t["terms"])


# --- ranking and evidence ------------------------------------------------------------------------------


def test_the_struggled_topic_ranks_first_with_its_runs_and_queries(
    shad: Any, recorded: dict[str, Any]
) -> None:
    result: Result = shad("vault", "analyze", "--vault", str(recorded["vault"]), "--json", "--no-write")
    assert result.code == 0, result.err
    data = result.json()
    assert data["vault"] == str(recorded["vault"].resolve())
    assert data["runs_analyzed"] == 7 and data["audit"] == "not requested"
    assert data["weights"] == {"history_pain": 0.6875, "coverage_miss": 0.3125, "audit": 0.0}
    assert REDISTRIBUTED in data["weights_note"]
    assert data["report"] is None  # --no-write

    first = data["topics"][0]
    assert {"ceremony", "matcha"} <= set(first["terms"]), first["topic"]
    assert set(first["evidence"]["runs"]) == set(recorded["tea"])
    for goal in (*TEA, TEA_DECOMPOSED):
        assert goal in first["evidence"]["queries"]
    assert first["coverage_miss"] > 0.8 and first["history_pain"] > 0.4 and first["priority"] == "high"
    assert first["audit"] is None
    # the paused run's checkpointed node is named in the evidence, with why it stopped
    paused = recorded["tea"][-1]
    checkpointed = [n for n in first["evidence"]["nodes"] if n["run_id"] == paused and n["checkpoint"]]
    assert checkpointed and "recovery ladder" in checkpointed[0]["problem"]
    assert any(n["nothing_found"] and n["retrieval_score"] == 0.0 for n in first["evidence"]["nodes"])
    assert first["suggestions"][0].startswith("a note on ") and "no note covers it" in first["suggestions"][0]

    coffee = _topic_with(data, "rest")
    assert set(coffee["evidence"]["runs"]) == set(recorded["coffee"])
    assert coffee["coverage_miss"] == 0.0 and coffee["history_pain"] < 0.2
    assert coffee["signals"]["median_retrieval_score"] >= 0.45
    assert coffee["gap_score"] < first["gap_score"]
    assert "[[Roasting/Resting beans]]" in json.dumps(coffee["closest_notes"]).replace(
        '"path": "', "[["
    ).replace('.md"', "]]")

    scores = [t["gap_score"] for t in data["topics"]]
    assert scores == sorted(scores, reverse=True)
    for t in data["topics"]:  # the formula, with the audit weight redistributed
        assert t["gap_score"] == pytest.approx(
            0.6875 * t["history_pain"] + 0.3125 * t["coverage_miss"], abs=2e-3
        )
        assert set(t["evidence"]) == {"runs", "queries", "nodes", "pruned_redundant"}


def test_text_output_writes_the_report_note_through_the_writer(shad: Any, recorded: dict[str, Any]) -> None:
    vault = _copy_demo(Path(recorded["vault"]).parent / "text-copy")
    shutil.copytree(recorded["vault"] / "Shad", vault / "Shad", dirs_exist_ok=True)
    result = shad("vault", "analyze", "--vault", str(vault))
    assert result.code == 0, result.err
    rel = f"Shad/Reports/Vault analysis {dt.date.today().isoformat()}.md"
    assert f"report note: {vault.resolve() / rel}" in " ".join(result.out.split())
    assert "1. tea" in result.out or "1. matcha" in result.out or "1. ceremony" in result.out
    assert "no model audit (not requested" in " ".join(result.out.split())
    for run_id in recorded["tea"][:3]:
        assert run_id in result.out

    v = Vault(vault)
    v.refresh()
    note = v.read_note(rel)
    assert note.frontmatter["type"] == "report" and note.frontmatter["runs_analyzed"] == 7
    assert note.frontmatter["audit"] == "not requested"
    assert "## Top gaps (ranked)" in note.body and "### 1." in note.body
    assert all(run_id in note.body for run_id in recorded["tea"])
    assert REDISTRIBUTED in note.body
    assert all(link.resolved for link in note.links), [
        link.target for link in note.links if not link.resolved
    ]
    assert "Roasting/Resting beans.md" in {link.resolved for link in note.links}

    again = shad("vault", "analyze", "--vault", str(vault), "--json")  # the same day: the note is replaced
    assert again.code == 0 and again.json()["report"] == rel
    assert (vault / rel).read_text(encoding="utf-8").count("# Vault analysis") == 1
    # the report note is Shad's own: it never counts as a note that covers a topic
    assert again.json()["topics"][0]["coverage_miss"] > 0.8


def test_llm_audit_without_a_model_says_so_and_redistributes(shad: Any, recorded: dict[str, Any]) -> None:
    result = shad(
        "vault", "analyze", "--vault", str(recorded["vault"]), "--llm-audit", "--json", "--no-write"
    )
    assert result.code == 0, result.err
    data = result.json()
    assert data["audit"] == "no model"
    assert data["weights"] == {"history_pain": 0.6875, "coverage_miss": 0.3125, "audit": 0.0}
    assert data["weights_note"].startswith(f"no model: {REDISTRIBUTED}")
    assert all(t["audit"] is None for t in data["topics"])

    text = shad("vault", "analyze", "--vault", str(recorded["vault"]), "--llm-audit", "--no-write")
    flat = " ".join(text.out.split())
    assert "model audit: no model" in flat and f"no model: {REDISTRIBUTED}" in flat
    assert "no report note written" in flat


def _audit_reply(body: dict[str, Any]) -> str:
    """A model's audit: the topics it is given, the tea one scored as a gap."""
    prompt = prompt_of(body)
    listed = prompt.split("Topics the runs asked about:\n", 1)[1].split("\n\nReturn JSON", 1)[0]
    topics = json.loads(listed)
    scored = [
        {"topic": t["topic"], "gap": 0.9 if "matcha" in t["terms"] else 0.1, "reason": "from the titles"}
        for t in topics
    ]
    return json.dumps({"topics": scored, "missing": [{"title": "Tea ceremony", "why": "asked often"}]})


def test_llm_audit_with_a_model_uses_the_full_weights(
    shad: Any, recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(reply=_audit_reply) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-for-the-fake-server")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        result = shad(
            "vault", "analyze", "--vault", str(recorded["vault"]), "--llm-audit", "--json", "--no-write"
        )
        assert result.code == 0, result.err
        assert len(server.requests) == 1
    data = result.json()
    assert data["audit"] == "used" and data["audit_provider"]["provider"] == "anthropic"
    assert data["weights"] == {"history_pain": 0.55, "coverage_miss": 0.25, "audit": 0.2}
    assert data["model_suggestions"] == [{"title": "Tea ceremony", "why": "asked often"}]
    first = data["topics"][0]
    assert "matcha" in first["terms"] and first["audit"] == 0.9 and first["audit_reason"]
    for t in data["topics"]:
        expected = 0.55 * t["history_pain"] + 0.25 * t["coverage_miss"] + 0.2 * t["audit"]
        assert t["gap_score"] == pytest.approx(expected, abs=2e-3)


def test_a_model_that_cannot_answer_leaves_the_audit_out_and_says_so(
    shad: Any, recorded: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(reply=lambda body: "Sure! The vault looks fine to me.") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-for-the-fake-server")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        result = shad(
            "vault", "analyze", "--vault", str(recorded["vault"]), "--llm-audit", "--json", "--no-write"
        )
    assert result.code == 0, result.err
    data = result.json()
    assert data["audit"] == "failed" and data["weights"]["audit"] == 0.0
    assert (
        data["weights_note"].startswith("the model audit failed (") and REDISTRIBUTED in data["weights_note"]
    )
    assert "matcha" in data["topics"][0]["terms"] and data["topics"][0]["audit"] is None


# --- edges ---------------------------------------------------------------------------------------------


def test_a_vault_with_no_runs_says_so_and_exits_0(shad: Any, tmp_path: Path) -> None:
    vault = _copy_demo(tmp_path)
    result = shad("vault", "analyze", "--vault", str(vault), "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["runs_analyzed"] == 0 and data["topics"] == [] and data["report"] is None
    assert data["message"].startswith(f"no runs recorded in {vault.resolve()}; run shad run")
    text = shad("vault", "analyze", "--vault", str(vault))
    assert text.code == 0 and "no runs recorded in" in text.out and "first" in text.out
    assert not (vault / "Shad").exists()  # nothing written


def test_a_missing_vault_is_a_usage_error(shad: Any, tmp_path: Path) -> None:
    result = shad("vault", "analyze", "--vault", str(tmp_path / "nope"))
    assert result.code == 2 and "no vault folder" in result.err


def test_runs_whose_history_went_elsewhere_and_killed_runs_still_count(tmp_path: Path) -> None:
    vault = _copy_demo(tmp_path)
    elsewhere = tmp_path / "history"
    run = engine.run(TEA[1], str(vault), provider="offline", history_dir=str(elsewhere))
    assert not (vault / "Shad").exists() and (elsewhere / run.id / "dag.json").is_file()
    killed = elsewhere / run.id
    (killed / "dag.json").unlink()  # killed before the DAG was written; the events log cut mid-line
    events = (killed / "events.jsonl").read_text(encoding="utf-8")
    (killed / "events.jsonl").write_text(events[: len(events) - 40], encoding="utf-8")

    report = analyze_vault(vault, top=None)
    assert report.runs_analyzed == 1
    (topic,) = report.topics
    assert topic.runs == [run.id] and "matcha" in topic.terms
    assert topic.coverage_miss > 0.8 and topic.nodes  # the node is known from its events
    assert list(report.rows()[0]) == list(GAP_COLUMNS)


def test_grouping_is_deterministic_and_stage_phrases_are_not_topics(recorded: dict[str, Any]) -> None:
    runs = load_runs(recorded["vault"])
    first, second = cluster(runs), cluster(runs)
    assert [(t.name, t.runs) for t in first] == [(t.name, t.runs) for t in second]
    assert len(first) == 2
    words = {w for t in first for w in t.terms}
    assert not words & {"frame", "criteria", "answering", "analyse", "evidence"}
    ask, prefix = strip_stage(f"Frame the question and the criteria for answering: {TEA[0]}")
    assert ask == TEA[0] and prefix.startswith("Frame the question")
    assert strip_stage("how do I whisk matcha?") == ("how do I whisk matcha?", "")


def test_top_limits_the_topics_shown(shad: Any, recorded: dict[str, Any]) -> None:
    data = shad(
        "vault", "analyze", "--vault", str(recorded["vault"]), "--json", "--no-write", "--top", "1"
    ).json()
    assert len(data["topics"]) == 1 and data["topics_total"] == 2


def test_asks_a_run_said_the_vault_does_not_answer_count_as_nothing_found(recorded: dict[str, Any]) -> None:
    from engine.curation._analyze_runs import load_runs

    runs = {r.run_id: r for r in load_runs(recorded["vault"])}
    for run_id in recorded["tea"][:3]:
        summary = json.loads((runs[run_id].dir / "final.summary.json").read_text(encoding="utf-8"))
        assert summary["uncovered"]  # the run itself said so
        root = next(n for n in runs[run_id].nodes if n.node_id == "root")
        assert root.nothing_found
    for run_id in recorded["coffee"]:
        assert not any(n.nothing_found for n in runs[run_id].nodes)


# --- subtasks pruned as redundant: a saving, not trouble -------------------------------------------------


def _planner(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        return json.dumps(REPEATING_PLAN)  # the same subtask twice: the second is pruned (E10)
    return well_behaved(prompt)


def test_a_subtask_pruned_as_redundant_is_counted_as_budget_saved_never_as_a_problem(
    shad: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = _copy_demo(tmp_path)
    goal = REPEATING_GOAL
    with FakeLLMServer(reply=_planner) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-for-the-fake-server")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        r = engine.run(goal, str(vault), provider="anthropic", code_mode=False, max_parallel=1)
    pruned = r.dag.node("rest_again")
    assert pruned.redundant_with == ["rest"] and r.status.value == "SUCCESS"
    saved = r.summary["pruned_redundant"][0]["tokens_saved_est"]
    assert saved > 0

    runs = load_runs(vault)  # read back from the run's folder, as the analysis does
    (record,) = [n for run in runs for n in run.nodes if n.node_id == "rest_again"]
    assert record.redundant and record.redundant_with == ["rest"] and record.tokens_saved == saved
    assert not record.troubled and record.problem == ""

    data = shad("vault", "analyze", "--vault", str(vault), "--json", "--no-write").json()
    topic = next(t for t in data["topics"] if r.id in t["evidence"]["runs"] and "rest" in t["terms"])
    assert topic["signals"]["pruned_redundant"] == 1 and topic["signals"]["tokens_saved_est"] == saved
    assert topic["signals"]["trouble"] == 0.0  # every other node of the run answered
    assert topic["evidence"]["pruned_redundant"] == [
        {"run_id": r.id, "node": "rest_again", "task": REST, "same_as": ["rest"], "tokens_saved_est": saved}
    ]
    assert all(n["node"] != "rest_again" for t in data["topics"] for n in t["evidence"]["nodes"])

    text = shad("vault", "analyze", "--vault", str(vault))
    assert text.code == 0 and f"1 pruned as redundant (~{saved} tokens saved)" in " ".join(text.out.split())
    note = next((vault / "Shad" / "Reports").glob("Vault analysis *.md")).read_text("utf-8")
    section = note.split("Pruned as redundant", 1)[1].split("\n- **", 1)[0]
    assert f"`{r.id}` `rest_again` repeats `rest`, ~{saved} tokens saved" in section
    struggled = note.split("- **Nodes**:", 1)[1].split("\n- **", 1)[0] if "- **Nodes**:" in note else ""
    assert "rest_again" not in struggled  # never listed among the nodes that struggled
