"""``widgets.DagExplorer`` as real anywidget/ipywidgets objects: live events from the engine's thread,
batched syncs (counted on a recording comm, the seam ``comm.create_comm`` exists for), node details on
selection, finished and resumed runs, the static fallback, and the JS/CSS files it ships."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
import traitlets
from _demo import DEMO
from _notebook_helpers import RecordingComm

import engine
import widgets
from engine import Run, ShadError
from widgets import DagExplorer

STATIC = Path(widgets.__file__).parent / "static"
GOAL = (
    "How do grind size and brew time affect espresso extraction, "
    "and what water temperature works best for pour-over?"
)


def comm_of(explorer: DagExplorer, comms: list[RecordingComm]) -> RecordingComm:
    """The explorer's own comm (its layout widget has another)."""
    return next(c for c in comms if c.comm_id == explorer.model_id)


@dataclass
class Recorded:
    run: Run
    events: list[dict[str, Any]]
    home: Path
    store: Path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One real offline run over the demo vault, with the events it emitted."""
    root = tmp_path_factory.mktemp("explorer")
    events: list[dict[str, Any]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", str(root / "home"))
        mp.setenv("SHAD_STORE", str(root / "store.sqlite3"))
        mp.delenv("REDIS_URL", raising=False)
        run = engine.run(
            GOAL, [str(DEMO)], provider="offline", history_dir=str(root / "h"), on_event=events.append
        )
    return Recorded(run, events, root / "home", root / "store.sqlite3")


def feed(explorer: DagExplorer, events: list[dict[str, Any]]) -> list[str]:
    """Hand the events over from another thread, as the engine does; the names of the calling threads."""
    threads: list[str] = []
    original = explorer.handle_event

    def worker() -> None:
        for record in events:
            threads.append(threading.current_thread().name)
            original(record)

    t = threading.Thread(target=worker, name="engine-like")
    t.start()
    t.join()
    return threads


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def front_end_selects(explorer: DagExplorer, node_id: str) -> None:
    """What the JS does on a click: an ``update`` message on the widget's comm."""
    explorer._handle_msg(
        {"content": {"data": {"method": "update", "state": {"selected": node_id}}}, "buffers": []}
    )


# --- the public surface ----------------------------------------------------------------------------------


def test_public_surface_and_synced_traits() -> None:
    assert widgets.__all__ == ["ApprovalWidget", "CheckpointWidget", "DagExplorer"]
    synced = {"run_id", "goal", "status", "notice", "nodes", "edges", "budget", "selected", "details"}
    synced |= {"can_stop", "cell_waiting", "report_path"}
    traits = DagExplorer.class_traits()
    for name in synced:
        assert traits[name].metadata.get("sync") is True, name
        assert traits[name].help, f"{name} has no help"
    assert isinstance(traits["nodes"], traitlets.List) and isinstance(traits["budget"], traitlets.Dict)
    assert traits["stop_handler"].help and not traits["stop_handler"].metadata.get("sync")  # a callable
    # The front end gets the files' text as synced traits: nothing to fetch.
    explorer = DagExplorer()
    assert explorer._esm == (STATIC / "dag_explorer.js").read_text()
    assert explorer._css == (STATIC / "dag_explorer.css").read_text()


def test_bad_input_is_a_clear_shad_error() -> None:
    with pytest.raises(ShadError) as err:
        DagExplorer("20261122-000000-abcd")  # type: ignore[arg-type]
    assert "engine.Run" in err.value.message and "Run.load" in (err.value.hint or "")
    explorer = DagExplorer()
    with pytest.raises(ShadError):
        explorer.show_run(None)  # type: ignore[arg-type]
    with pytest.raises(ShadError):
        explorer.expect({"goal": "x"})  # type: ignore[arg-type]
    for record in (
        None,
        "RUN_STARTED",
        {"type": "NODE_SUCCEEDED", "node": 3},
        {"type": "LLM_CALL", "tokens": []},
    ):
        explorer.handle_event(record)  # type: ignore[arg-type]  # never raises into the engine
    assert explorer.nodes == [] and explorer.notice == ""


# --- live events -----------------------------------------------------------------------------------------


def test_a_live_run_from_the_engine_thread(
    recorded: Recorded,
    comms: list[RecordingComm],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: Any,
) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    explorer = DagExplorer()
    calls: list[str] = []
    main = threading.current_thread().name

    def sink(record: dict[str, Any]) -> None:
        calls.append(threading.current_thread().name)
        explorer.handle_event(record)

    def engine_thread() -> None:
        asyncio.run(
            engine.arun(GOAL, [str(DEMO)], provider="offline", history_dir=str(tmp_path / "h"), on_event=sink)
        )

    worker = threading.Thread(target=engine_thread, name="shad-engine")
    worker.start()
    worker.join()
    run = Run.load(explorer.run_id)
    assert calls and main not in calls
    assert explorer.status == run.status.value
    assert {n["id"]: n["status"] for n in explorer.nodes} == {n.id: n.status.value for n in run.dag}
    assert explorer.budget["nodes_done"] == explorer.budget["nodes_total"] == len(run.dag)
    assert explorer.budget["tokens_used"] == run.summary["metrics"]["total_tokens"]
    assert explorer.budget["tokens_limit"] == 100_000 and explorer.budget["wall_limit_s"] == 300.0
    # What the front end received ends in the same state, in fewer messages than events.
    updates = comm_of(explorer, comms).updates()
    last: dict[str, Any] = {}
    for state in updates:
        last.update(state)
    assert last["status"] == run.status.value and last["nodes"] == explorer.nodes
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # the explorer never prints


def test_bursts_are_batched(recorded: Recorded, comms: list[RecordingComm]) -> None:
    explorer = DagExplorer()
    explorer._flush_interval = 120.0  # a burst of events well inside one interval
    seen: list[int] = []
    explorer.observe(lambda change: seen.append(len(change["new"])), names="nodes")
    channel = comm_of(explorer, comms)
    before = len(channel.updates())
    feed(explorer, recorded.events)
    updates = channel.updates()[before:]
    # The first event is shown at once, the rest waits for the tick, and the end of the run is sent at
    # once: two syncs for the whole run, each one message carrying every changed trait.
    assert len(recorded.events) > 20
    assert len(updates) == 2
    assert updates[0]["status"] == "RUNNING" and updates[0]["run_id"] == recorded.run.id
    assert {"nodes", "edges", "budget", "status"} <= set(updates[1])
    assert updates[1]["status"] == recorded.run.status.value
    assert seen == [len(recorded.run.dag)]  # the node list changed once, to all of it
    assert explorer._timer is None  # the run is over: no flush left pending


def test_a_pending_tick_flushes_without_more_events(recorded: Recorded, comms: list[RecordingComm]) -> None:
    explorer = DagExplorer()
    explorer._flush_interval = 0.05
    mid = [e for e in recorded.events if e["type"] != "RUN_FINISHED"]
    feed(explorer, mid)
    wait_for(lambda: len(explorer.nodes) == len(recorded.run.dag), "the timer's flush")
    assert explorer.status == "RUNNING"
    wait_for(lambda: explorer._timer is None, "the timer to finish")
    # Every node's last event arrived too (only the run's end is missing).
    assert {n["id"]: n["status"] for n in explorer.nodes} == {n.id: n.status.value for n in recorded.run.dag}


def test_expect_shows_goal_and_limits_before_the_first_event(tmp_path: Path) -> None:
    explorer = DagExplorer()
    explorer.selected = "old"
    config = engine.RunConfig(GOAL, (str(DEMO),), budgets=engine.Budgets(max_tokens=5000, max_nodes=9))
    explorer.expect(config)
    assert (explorer.goal, explorer.status, explorer.selected, explorer.nodes) == (GOAL, "PENDING", "", [])
    assert explorer.budget["tokens_limit"] == 5000 and explorer.budget["nodes_limit"] == 9


# --- details ---------------------------------------------------------------------------------------------


def test_selecting_a_node_fills_its_details(recorded: Recorded, comms: list[RecordingComm]) -> None:
    explorer = DagExplorer(recorded.run)
    leaf = next(n for n in recorded.run.dag if n.retrieval.get("context"))
    channel = comm_of(explorer, comms)
    before = len(channel.updates())
    front_end_selects(explorer, leaf.id)
    d = explorer.details
    assert (d["id"], d["task"], d["answer"], d["tokens"]) == (leaf.id, leaf.task, leaf.answer, leaf.tokens)
    assert d["scripts"] and d["context"] and d["citations"]
    sent = channel.updates()[before:]
    assert [set(s) for s in sent] == [{"details"}]  # only the clicked node's details travel
    # Nothing heavy travels before a click: the node list has no context, script or answer.
    assert not {"context", "scripts", "answer", "retrieval"} & set(explorer.nodes[0])
    front_end_selects(explorer, "")
    assert explorer.details == {}


def test_details_of_a_live_run_come_from_its_history(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_HOME", str(recorded.home))  # where the run registered its folder
    explorer = DagExplorer()
    feed(explorer, [e for e in recorded.events if e["type"] != "RUN_FINISHED"])
    leaf = next(n for n in recorded.run.dag if n.retrieval.get("context"))
    explorer.selected = leaf.id
    d = explorer.details
    assert d["source"] == "history" and d["answer"] == leaf.answer and d["scripts"]


def test_an_open_details_panel_follows_its_node(recorded: Recorded, comms: list[RecordingComm]) -> None:
    explorer = DagExplorer()
    explorer._flush_interval = 0.0  # every event syncs at once
    node_id = next(e["node"] for e in recorded.events if e["type"] == "NODE_STARTED" and e["node"] != "root")
    created = next(
        i for i, e in enumerate(recorded.events) if e["type"] == "NODE_CREATED" and e["node"] == node_id
    )
    feed(explorer, recorded.events[: created + 1])
    explorer.selected = node_id
    assert explorer.details["status"] == "CREATED"
    feed(explorer, recorded.events[created + 1 :])
    final = recorded.run.dag.node(node_id)
    assert explorer.details["status"] == final.status.value and explorer.details["tokens"] == final.tokens > 0


# --- whole runs ------------------------------------------------------------------------------------------


def test_show_run_loaded_from_history(recorded: Recorded) -> None:
    run = Run.load(str(recorded.run.history.dir))
    explorer = DagExplorer(run)
    assert (explorer.run_id, explorer.status, explorer.goal) == (run.id, run.status.value, GOAL)
    assert [n["id"] for n in explorer.nodes] == [n.id for n in run.dag]
    kinds = {e["kind"] for e in explorer.edges}
    assert kinds == {"child", "hard"} and explorer.budget["tokens_limit"] == run.config.budgets.max_tokens
    explorer.selected = "root"
    assert explorer.details["answer"] == run.dag.node("root").answer
    assert explorer.details["children"] == [n.id for n in run.dag.children("root")]
    # A later show_run replaces the whole state, details of the open node included.
    other = DagExplorer()
    other.selected = "root"
    other.show_run(run)
    assert other.details["task"] == GOAL


def test_a_resumed_run_shows_the_nodes_it_adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    stopped = engine.run(  # enough for a subtask or two: each call reserves its worst case first
        GOAL, [str(DEMO)], provider="offline", history_dir=str(tmp_path / "h"), max_tokens=8000
    )
    assert stopped.status.value == "PARTIAL"
    kept = {n.id for n in stopped.dag if n.status.ok}
    explorer = DagExplorer()
    explorer.expect(stopped.config.with_budgets(max_tokens=60_000))
    resumed = asyncio.run(engine.aresume(stopped.id, max_tokens=60_000, on_event=explorer.handle_event))
    started = {e["node"] for e in resumed.events[len(stopped.events) :] if e["type"] == "NODE_STARTED"}
    assert kept - started, "the resume should keep at least one finished node"
    statuses = {n["id"]: n["status"] for n in explorer.nodes}
    assert set(statuses) == {n.id for n in resumed.dag}  # adopted nodes shown, though never re-announced
    assert all(statuses[k] == "SUCCEEDED" for k in kept)
    assert explorer.status == resumed.status.value != "RUNNING" and explorer.budget["tokens_limit"] == 60_000
    assert explorer.budget["tokens_used"] == resumed.summary["metrics"]["total_tokens"]


# --- static fallback -------------------------------------------------------------------------------------


def test_mimebundle_has_a_widget_view_and_text_fallbacks(
    recorded: Recorded, comms: list[RecordingComm]
) -> None:
    explorer = DagExplorer(recorded.run)
    data, metadata = explorer._repr_mimebundle_()
    view = data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == explorer.model_id == comm_of(explorer, comms).comm_id
    md, text = data["text/markdown"], data["text/plain"]
    assert md.startswith(f"**Shad run `{recorded.run.id}`** — {recorded.run.status.value}")
    assert all(f"`{n.id}`" in md for n in recorded.run.dag)
    assert text.startswith(f"Shad run {recorded.run.id}: {recorded.run.status.value}")
    assert len(text.splitlines()) == 1 + len(recorded.run.dag)
    assert isinstance(metadata, dict)


def test_nbconvert_html_shows_the_fallback_when_no_widget_state_was_saved(recorded: Recorded) -> None:
    from nbconvert import HTMLExporter

    data, metadata = DagExplorer(recorded.run)._repr_mimebundle_()
    cell = nbformat.v4.new_code_cell("DagExplorer(run)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data, metadata=metadata)]
    body, _ = HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    assert "<table>" in body and f"<code>{recorded.run.id}</code>" in body
    for node in recorded.run.dag:
        assert f"<code>{node.id}</code>" in body


# --- the front-end files ---------------------------------------------------------------------------------


def _css_selectors(css: str) -> Iterator[tuple[str, str]]:
    """(enclosing at-rule, selector) for every rule; keyframe steps come back with their @keyframes."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    stack: list[str] = []
    prelude = ""
    for ch in css:
        if ch == "{":
            head = prelude.strip()
            stack.append(head)
            if not head.startswith("@"):
                for selector in head.split(","):
                    yield (next((s for s in reversed(stack[:-1]) if s.startswith("@")), ""), selector.strip())
            prelude = ""
        elif ch == "}":
            stack.pop()
            prelude = ""
        elif ch == ";":
            prelude = ""
        else:
            prelude += ch
    assert not stack, "unbalanced braces"


def test_every_css_rule_is_scoped_to_the_widget() -> None:
    css = (STATIC / "dag_explorer.css").read_text()
    rules = list(_css_selectors(css))
    assert len(rules) > 40
    for at_rule, selector in rules:
        if at_rule.startswith("@keyframes"):
            assert at_rule.split()[1].startswith("shad-dag"), at_rule  # animation names are global
            continue
        assert selector == ".shad-dag" or selector.startswith(".shad-dag "), selector
    for at_rule in re.findall(r"@[\w-]+[^{;]*", css):
        assert at_rule.split()[0] in ("@media", "@container", "@keyframes"), (
            at_rule
        )  # no @import, no @font-face


def test_the_js_fetches_nothing() -> None:
    js = (STATIC / "dag_explorer.js").read_text()
    code = re.sub(r"^\s*//[^\n]*", "", js, flags=re.M)
    assert re.findall(r"https?://[^\s\"'`]+", code) == [
        "http://www.w3.org/2000/svg"
    ]  # a namespace, not a fetch
    assert not re.search(r"^\s*import\b|\bimport\s*\(", code, re.M)
    for word in (
        "fetch(",
        "XMLHttpRequest",
        "WebSocket",
        "EventSource",
        "unpkg",
        "jsdelivr",
        "esm.sh",
        "cdn",
    ):
        assert word not in code, word
    assert "innerHTML" not in code  # vault and model text is set as text, never parsed as HTML
    assert re.search(r"^export default \{ render \};$", code, re.M)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_js_layout_runs_and_puts_rows_by_depth(tmp_path: Path) -> None:
    module = tmp_path / "dag_explorer.mjs"
    shutil.copy(STATIC / "dag_explorer.js", module)
    script = f"""
      import {{ layout, BOX_W }} from {str(module.as_uri())!r};
      const nodes = [
        {{id: "root", depth: 0, parent: null}}, {{id: "b", depth: 1, parent: "root"}},
        {{id: "a", depth: 1, parent: "root"}}, {{id: "b.x", depth: 2, parent: "b"}},
        {{id: "a.x", depth: 2, parent: "a"}}, {{id: "a.y", depth: 2, parent: "a"}}];
      const {{ pos, width, height }} = layout(nodes);
      console.log(JSON.stringify({{width, height, box: BOX_W, pos: Object.fromEntries(pos)}}));
    """
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    pos = result["pos"]
    assert pos["b"]["y"] == pos["a"]["y"] > pos["root"]["y"]
    assert pos["a.x"]["y"] == pos["b.x"]["y"] > pos["a"]["y"]
    assert pos["b"]["x"] < pos["a"]["x"]  # creation order within a row
    assert pos["b.x"]["x"] < pos["a.x"]["x"] < pos["a.y"]["x"]  # children follow their parents' order
    row = sorted(p["x"] for p in pos.values() if p["y"] == pos["a.x"]["y"])
    box = result["box"]
    assert all(b - a >= box for a, b in itertools.pairwise(row))  # boxes do not overlap
    assert all(p["x"] >= 0 and p["x"] + box <= result["width"] for p in pos.values())


def test_close_stops_a_pending_flush(recorded: Recorded) -> None:
    explorer = DagExplorer()
    explorer._flush_interval = 120.0
    feed(explorer, recorded.events[:5])
    assert explorer._timer is not None
    explorer.close()
    assert explorer._timer is None
