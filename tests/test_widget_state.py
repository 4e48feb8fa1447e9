"""The explorer's model without a widget (``widgets._state``, ``_details``, ``_summary``), fed with the
events and the history of real offline runs over the demo vault."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

import engine
from engine import Run
from engine.runs.budget import overspend
from widgets._details import EXCERPT_CHARS, node_details, read_dag_node
from widgets._state import FINISHED, DagState
from widgets._summary import markdown_summary, plain_summary

GOAL = (
    "How do grind size and brew time affect espresso extraction, "
    "and what water temperature works best for pour-over?"
)


@dataclass
class Recorded:
    run: Run
    events: list[dict[str, Any]]
    home: Path


def _record(root: Path, **options: Any) -> Recorded:
    """A real offline run, its events collected as the engine emitted them."""
    events: list[dict[str, Any]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", str(root / "home"))
        mp.setenv("SHAD_STORE", str(root / "store.sqlite3"))
        mp.delenv("REDIS_URL", raising=False)
        run = engine.run(
            GOAL,
            [str(options.pop("vault", DEMO))],
            provider="offline",
            history_dir=str(root / "history"),
            on_event=events.append,
            **options,
        )
    return Recorded(run, events, root / "home")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return _record(tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="module")
def starved(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """A run the token budget stops after the first subtask: some nodes are pruned (each call reserves
    its worst case before it goes, so 6000 tokens no longer let one subtask finish)."""
    return _record(tmp_path_factory.mktemp("starved"), max_tokens=8000)


def fold(events: list[dict[str, Any]]) -> DagState:
    state = DagState()
    for record in events:
        state.apply(record)
    return state


# --- events ----------------------------------------------------------------------------------------------


def test_events_fold_into_the_runs_dag_and_budget(recorded: Recorded) -> None:
    run, snap = recorded.run, fold(recorded.events).snapshot()
    assert len(run.dag) >= 3
    assert snap.run_id == run.id and snap.goal == GOAL and snap.status == run.status.value
    by_id = {n["id"]: n for n in snap.nodes}
    assert set(by_id) == {n.id for n in run.dag}
    for node in run.dag:
        shown = by_id[node.id]
        assert (shown["status"], shown["depth"], shown["parent"]) == (
            node.status.value,
            node.depth,
            node.parent,
        )
        assert shown["tokens"] == node.tokens and shown["llm_calls"] == node.llm_calls
        assert shown["duration_ms"] == node.duration_ms
    children = {(e["source"], e["target"]) for e in snap.edges if e["kind"] == "child"}
    assert children == {(n.parent, n.id) for n in run.dag if n.parent}
    budgets = run.config.budgets
    assert snap.budget == {
        "tokens_used": run.summary["metrics"]["total_tokens"],
        "tokens_limit": budgets.max_tokens,
        "tokens_over_by": None,
        "nodes_done": len(run.dag),
        "nodes_succeeded": len(run.dag),
        "nodes_pruned": 0,
        "nodes_failed": 0,
        "nodes_total": len(run.dag),
        "nodes_limit": budgets.max_nodes,
        "wall_s": round(run.summary["metrics"]["duration_ms"] / 1000, 2),
        "wall_limit_s": budgets.max_wall_time,
    }


def test_mid_run_state_shows_progress(recorded: Recorded) -> None:
    events = recorded.events
    first_done = next(i for i, e in enumerate(events) if e["type"] == "NODE_SUCCEEDED")
    state = fold(events[: first_done + 1])
    snap = state.snapshot(now=events[first_done]["ts"] + 2.0)
    statuses = {n["id"]: n["status"] for n in snap.nodes}
    assert snap.status == "RUNNING"
    assert statuses[events[first_done]["node"]] == "SUCCEEDED"
    assert statuses["root"] not in FINISHED  # the root synthesizes last
    assert snap.budget["nodes_done"] == 1 < snap.budget["nodes_total"]
    spent = sum(e["tokens"] for e in events[: first_done + 1] if e["type"] == "LLM_CALL")
    assert snap.budget["tokens_used"] == spent > 0
    started = next(e["ts"] for e in events if e["type"] == "RUN_STARTED")
    assert snap.budget["wall_s"] == round(events[first_done]["ts"] + 2.0 - started, 2)


def test_only_the_end_of_a_run_is_urgent(recorded: Recorded) -> None:
    state = DagState()
    urgent = [e["type"] for e in recorded.events if state.apply(e)]
    assert urgent == ["RUN_FINISHED"]


def test_a_budget_stop_prunes_nodes_with_their_reason(starved: Recorded) -> None:
    run, snap = starved.run, fold(starved.events).snapshot()
    pruned = [n for n in snap.nodes if n["status"] == "PRUNED"]
    assert run.status.value == "PARTIAL" and pruned
    assert all("token budget" in n["error"] for n in pruned)
    assert snap.status == "PARTIAL"
    assert snap.budget["nodes_done"] == len(run.dag)  # pruned counts as settled ...
    # ... but never as done: the counters tell answered, pruned and failed nodes apart.
    succeeded = sum(n["status"] in ("SUCCEEDED", "CACHE_HIT") for n in snap.nodes)
    assert snap.budget["nodes_succeeded"] == succeeded < len(run.dag)
    assert snap.budget["nodes_pruned"] == len(pruned) and snap.budget["nodes_failed"] == 0
    from widgets._summary import headline

    assert f"nodes {succeeded}/{len(run.dag)} done · {len(pruned)} pruned" in headline(snap)


def test_cache_lookups_decompositions_and_checkpoints() -> None:
    state = DagState()
    state.apply({"type": "RUN_STARTED", "run_id": "r1", "ts": 1.0, "goal": "g", "budgets": {"max_nodes": 9}})
    state.apply(
        {"type": "NODE_CREATED", "run_id": "r1", "ts": 1.1, "node": "root", "task": "g", "stage": "goal"}
    )
    state.apply(
        {"type": "NODE_CREATED", "node": "a", "task": "A?", "stage": "s", "parent": "root", "ts": 1.2}
    )
    state.apply({"type": "NODE_STARTED", "node": "a", "task": "A?", "ts": 1.3})
    # A cache lookup shares its type with the terminal CACHE_HIT event but carries a key: not terminal.
    state.apply(
        {"type": "NODE_CACHE_HIT", "node": "a", "key": "k", "purpose": "plan", "tier": "main", "ts": 1.4}
    )
    assert state.nodes["a"].status == "STARTED" and state.nodes["a"].note == "cache hit (main)"
    state.apply({"type": "NODE_DECOMPOSED", "node": "a", "children": ["a.x", "a.y"], "ts": 1.5})
    assert state.nodes["a"].status == "CREATED" and state.nodes["a"].phase == "waiting for its subtasks"
    state.apply(
        {"type": "NODE_CREATED", "node": "a.x", "task": "x", "stage": "part", "parent": "a", "ts": 1.6}
    )
    assert state.nodes["a.x"].depth == 2
    state.apply({"type": "NODE_CREATED", "node": "a.y", "parent": "a", "hard_deps": ["a.x"], "ts": 1.65})
    state.apply({"type": "NODE_NEEDS_HUMAN", "node": "a.x", "reason": "low confidence", "ts": 1.7})
    live = state.live_node("a.x")
    assert live is not None and live["status"] == "NEEDS_HUMAN"
    assert live["checkpoint"] == {"reason": "low confidence"}
    state.apply({"type": "NODE_CACHE_HIT", "node": "root", "tokens": 0, "duration_ms": 3.0, "error": None})
    assert state.nodes["root"].status == "CACHE_HIT"
    snap = state.snapshot()
    assert snap.budget["nodes_limit"] == 9 and snap.budget["tokens_limit"] is None
    assert [(e["source"], e["target"], e["kind"]) for e in snap.edges] == [
        ("root", "a", "child"),
        ("a", "a.x", "child"),
        ("a", "a.y", "child"),
        ("a.x", "a.y", "hard"),  # named by the event: drawn while the run is live
    ]


def test_malformed_events_change_nothing() -> None:
    state = DagState()
    for record in (
        {},
        {"type": "NODE_STARTED"},
        {"type": "NODE_CREATED", "node": None},
        {"type": "NODE_SUCCEEDED", "node": ["x"]},
        {"type": "LLM_CALL", "tokens": "many"},
        {"type": "SOMETHING_NEW", "node": "x", "ts": "later"},
    ):
        assert state.apply(record) is False
    assert state.nodes == {} and state.snapshot().budget["tokens_used"] == 0


# --- a whole run -----------------------------------------------------------------------------------------


def test_loading_a_run_matches_its_live_events(recorded: Recorded) -> None:
    loaded = DagState()
    loaded.load_run(Run.load(str(recorded.run.history.dir)))
    live, snap = fold(recorded.events).snapshot(), loaded.snapshot()
    assert [(n["id"], n["status"], n["depth"]) for n in snap.nodes] == [
        (n["id"], n["status"], n["depth"]) for n in live.nodes
    ]
    assert snap.budget == live.budget and snap.status == live.status
    # The saved DAG also knows the dependencies between subtasks, which events do not announce.
    deps = {(e["source"], e["target"]) for e in snap.edges if e["kind"] == "hard"}
    assert deps == {(d, n.id) for n in recorded.run.dag for d in n.hard_deps}


def test_a_stopped_run_says_why(starved: Recorded) -> None:
    state = DagState()
    state.load_run(Run.load(str(starved.run.history.dir)))
    assert state.snapshot().notice.startswith("stopped: token budget exhausted")


def test_a_run_over_its_token_budget_says_so_in_the_token_meter(recorded: Recorded, tmp_path: Path) -> None:
    """A provider that reported more usage than the run allowed: the summary's over_budget (and, live,
    RUN_FINISHED's tokens past the budget RUN_STARTED announced) reach the meter and the text headline."""
    spent = recorded.run.summary["metrics"]["total_tokens"]
    limit = spent - 1234
    # Live: the same events, with a budget the run's reported usage went past.
    events = [
        {**e, "budgets": {**e["budgets"], "max_tokens": limit}} if e["type"] == "RUN_STARTED" else e
        for e in recorded.events
    ]
    finished = next(i for i, e in enumerate(events) if e["type"] == "RUN_FINISHED")
    assert fold(events[:finished]).snapshot().budget["tokens_over_by"] is None  # said once it has finished
    live = fold(events).snapshot()
    assert (live.budget["tokens_used"], live.budget["tokens_limit"]) == (spent, limit)
    assert live.budget["tokens_over_by"] == 1234
    assert f"tokens {spent:,} / {limit:,} (over budget by 1,234)" in markdown_summary(live)
    # Loaded: the summary's over_budget, as the engine writes it (engine.runs.budget.overspend).
    history = tmp_path / "history"
    shutil.copytree(recorded.run.history.dir, history)
    path = history / "final.summary.json"
    summary = json.loads(path.read_text("utf-8"))
    summary["over_budget"] = overspend(spent, limit, [])
    path.write_text(json.dumps(summary), "utf-8")
    state = DagState()
    state.load_run(Run.load(str(history)))
    assert state.snapshot().budget["tokens_over_by"] == 1234
    within = DagState()
    within.load_run(Run.load(str(recorded.run.history.dir)))
    assert within.snapshot().budget["tokens_over_by"] is None
    assert "over budget" not in plain_summary(within.snapshot())


def test_a_run_whose_vault_moved_keeps_its_limits(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO, vault)
    rec = _record(tmp_path, vault=vault, max_nodes=7)
    shutil.rmtree(vault)
    run = Run.load(str(rec.run.history.dir))
    assert run.config is None
    state = DagState()
    state.load_run(run)
    snap = state.snapshot()
    assert snap.goal == GOAL and snap.budget["nodes_limit"] == 7 and len(snap.nodes) == len(rec.run.dag)


# --- details ---------------------------------------------------------------------------------------------


def test_details_of_a_leaf(recorded: Recorded) -> None:
    run = recorded.run
    leaf = next(n for n in run.dag if n.retrieval.get("context") and n.id.startswith("gather_evidence"))
    d = node_details(leaf.id, saved=leaf.to_dict(), live=None, history_dir=run.history.dir)
    assert (d["task"], d["status"], d["tokens"], d["answer"]) == (
        leaf.task,
        leaf.status.value,
        leaf.tokens,
        leaf.answer,
    )
    assert d["started_at"] == leaf.started_at and d["duration_ms"] == leaf.duration_ms
    assert d["retrieval"]["method"].startswith("codemode") and d["retrieval"]["items"] == len(
        leaf.retrieval["context"]
    )
    # The script is the file the Code Mode retriever kept; another node's scripts are not mixed in.
    assert d["scripts"] and all(s["name"].startswith(f"{leaf.id}-") for s in d["scripts"])
    first = d["scripts"][0]
    assert first["code"] == (run.history.dir / "artifacts" / "scripts" / first["name"]).read_text()
    assert first["outcome"].startswith("ran: ")
    assert len(d["context"]) == len(leaf.retrieval["context"])
    for shown, item in zip(d["context"], leaf.retrieval["context"]):
        assert shown["citation"] == item["citation"] and shown["chars"] == len(item["text"])
        assert len(shown["excerpt"]) <= EXCERPT_CHARS and item["text"].startswith(
            shown["excerpt"].rstrip("…")
        )
    assert [c["link"] for c in d["citations"]] == [
        f"[[{c['path'][:-3]}#{c['heading']}]]" if c["heading"] else f"[[{c['path'][:-3]}]]"
        for c in leaf.citations
    ]
    assert all(c["link"] in leaf.answer for c in d["citations"])
    assert d["needs_human"] is False and d["error"] is None


def test_details_of_a_failed_node_and_from_events_only() -> None:
    saved = {
        "id": "n",
        "task": "t",
        "status": "FAILED",
        "error": {
            "message": "boom",
            "error_class": "ValueError",
            "phase": "answer",
            "trace": "Traceback ...",
        },
        "retrieval": {},
    }
    d = node_details("n", saved=saved, live=None, history_dir=None)
    assert d["error"] == {
        "message": "boom",
        "error_class": "ValueError",
        "phase": "answer",
        "trace": "Traceback ...",
    }
    assert d["retrieval"] is None and d["scripts"] == []
    live = {"id": "m", "task": "live task", "status": "STARTED", "phase": "answering", "tokens": 12}
    d = node_details("m", saved=None, live=live, history_dir=None)
    assert (d["task"], d["status"], d["phase"], d["tokens"], d["source"]) == (
        "live task",
        "STARTED",
        "answering",
        12,
        "events",
    )
    assert node_details("zzz", saved=None, live=None, history_dir=None) == {}


def test_read_dag_node(recorded: Recorded, tmp_path: Path) -> None:
    folder = recorded.run.history.dir
    assert read_dag_node(folder, "root") == json.loads((folder / "dag.json").read_text())["nodes"][0]
    assert read_dag_node(folder, "no-such-node") is None
    assert read_dag_node(tmp_path, "root") is None  # no dag.json yet
    (tmp_path / "dag.json").write_text("{ cut by a kill")
    assert read_dag_node(tmp_path, "root") is None


# --- text fallbacks --------------------------------------------------------------------------------------


def test_markdown_and_text_summaries(recorded: Recorded) -> None:
    snap = fold(recorded.events).snapshot()
    md, text = markdown_summary(snap), plain_summary(snap)
    assert md.startswith(f"**Shad run `{snap.run_id}`** — {snap.status}")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(snap.nodes)
    root = next(n for n in snap.nodes if n["id"] == "root")
    assert rows[0].startswith(f"| `root` | {'✅' if root['status'] == 'SUCCEEDED' else ''}")  # parents first
    assert all(f"`{n['id']}`" in md for n in snap.nodes)
    assert "tokens " + f"{snap.budget['tokens_used']:,} / 100,000" in md
    assert text.splitlines()[0].startswith(f"Shad run {snap.run_id}: {snap.status}")
    assert len(text.splitlines()) == 1 + len(snap.nodes)


def test_markdown_escapes_table_breakers() -> None:
    state = DagState()
    state.apply(
        {"type": "NODE_CREATED", "run_id": "r", "node": "root", "task": "a | b <script>", "stage": "goal"}
    )
    md = markdown_summary(state.snapshot())
    row = md.splitlines()[-1]
    assert "a \\| b &lt;script>" in row and row.count(" | ") == 5
