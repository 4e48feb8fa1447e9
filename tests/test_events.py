"""engine.events: every kind has a typed payload, records keep the events.jsonl format, and every consumer
(the DAG widget, the CLI's live tree) decides about every kind: handled or deliberately ignored."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from _demo import DEMO

from engine import run
from engine.cli import _live
from engine.events import (
    LIVE_ONLY,
    Event,
    EventKind,
    NodeCreated,
    NodeFinished,
    PlanCacheLookup,
    RunResumed,
    kind_of,
    to_record,
)
from engine.runs import resume
from widgets import _state

MULTI = "Compare light and dark roasts, and explain how resting time and water temperature change the cup."


def _event_classes() -> list[type[Event]]:
    found, todo = [], list(Event.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def _kinds_of(cls: type[Event]) -> set[EventKind]:
    """The kinds one payload class can carry (NodeFinished and PlanCacheLookup carry several)."""
    if cls is NodeFinished:
        return {
            EventKind.NODE_SUCCEEDED,
            EventKind.NODE_CACHE_HIT,
            EventKind.NODE_FAILED,
            EventKind.NODE_FAILED_WITH_DIAGNOSTIC,
        }
    if cls is PlanCacheLookup:
        return {EventKind.PLAN_CACHE_HIT, EventKind.PLAN_CACHE_MISS}
    return {cls.KIND}


@pytest.mark.parametrize(
    ("consumer", "handled", "ignored"),
    [("widget", _state.HANDLERS, _state.IGNORED), ("cli tree", _live.HANDLED, _live.IGNORED)],
)
def test_every_consumer_decides_about_every_kind(consumer: str, handled: Any, ignored: Any) -> None:
    undecided = set(EventKind) - set(handled) - set(ignored)
    assert not undecided, f"{consumer} has no decision for {sorted(k.value for k in undecided)}"
    assert not set(handled) & set(ignored), f"{consumer} both handles and ignores some kinds"


def test_every_kind_has_exactly_one_payload_class() -> None:
    owners: dict[EventKind, list[str]] = {}
    for cls in _event_classes():
        for kind in _kinds_of(cls):
            owners.setdefault(kind, []).append(cls.__name__)
    assert set(owners) == set(EventKind)
    assert all(len(names) == 1 for names in owners.values()), owners


def test_records_leave_out_optional_fields_and_internal_ones() -> None:
    root = to_record(NodeCreated(node="root", task="t", stage="goal"), "r1", ts=1.0)
    assert root == {
        "ts": 1.0,
        "run_id": "r1",
        "type": "NODE_CREATED",
        "node": "root",
        "task": "t",
        "stage": "goal",
    }
    child = NodeCreated(node="a", task="t", stage="s", parent="root", hard_deps=[], soft_deps=["b"])
    assert list(to_record(child, "r1", ts=1.0))[3:] == [
        "node",
        "task",
        "stage",
        "parent",
        "hard_deps",
        "soft_deps",
    ]
    hit = to_record(
        NodeFinished(node="a", tokens=0, duration_ms=1.0, error=None, key="k", status="CACHE_HIT"), "r"
    )
    assert hit["type"] == "NODE_CACHE_HIT" and hit["key"] == "k" and "status" not in hit
    done = to_record(NodeFinished(node="a", tokens=5, duration_ms=1.0, error=None), "r")
    assert done["type"] == "NODE_SUCCEEDED" and "key" not in done
    replanned = to_record(RunResumed(kept=[], rerun=[], replanned=True, replay=None), "r")
    assert list(replanned)[3:] == ["kept", "rerun", "replanned", "replay"]
    assert kind_of({"type": "NOT_A_KIND"}) is None and kind_of(hit) is EventKind.NODE_CACHE_HIT


def _check_records(records: list[dict[str, Any]]) -> set[EventKind]:
    """Each record is a known kind whose keys are its payload class's fields (optional ones may be absent)."""
    fields_of = {k: cls for cls in _event_classes() for k in _kinds_of(cls)}
    seen = set()
    for record in records:
        kind = kind_of(record)
        assert kind is not None, record
        seen.add(kind)
        assert list(record)[:3] == ["ts", "run_id", "type"]
        declared = [f for f in dataclasses.fields(fields_of[kind]) if not f.metadata.get("internal")]
        required = [f.name for f in declared if not f.metadata.get("optional")]
        names = [f.name for f in declared]
        keys = list(record)[3:]
        assert set(required) <= set(keys) <= set(names), (kind, keys)
        assert keys == [n for n in names if n in keys], (kind, keys)  # the declared order
    return seen


def test_a_real_run_emits_only_typed_events_and_writes_them_as_received(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    vault = tmp_path / "vault"
    import shutil

    shutil.copytree(DEMO, vault)
    received: list[dict[str, Any]] = []
    first = run(MULTI, str(vault), provider="offline", max_tokens=3000, on_event=received.append)
    again = resume(first.id, add_tokens=40_000, on_event=received.append)
    cached = run(MULTI, str(vault), provider="offline", on_event=received.append)
    seen = _check_records(received)
    on_disk = [*again.history.read_lines("events.jsonl"), *cached.history.read_lines("events.jsonl")]
    assert on_disk == [r for r in received if kind_of(r) not in LIVE_ONLY]  # deltas are live only
    for kind in (EventKind.RUN_STARTED, EventKind.NODE_CREATED, EventKind.LLM_CALL, EventKind.RUN_RESUMED):
        assert kind in seen
    assert EventKind.NODE_CACHE_HIT in seen and EventKind.RUN_FINISHED in seen
    # The widget folds the same records: a node answered from the cache is shown as such, not pruned.
    state = _state.DagState()
    for record in cached.events:
        state.apply(record)
    assert {n.status for n in state.nodes.values()} <= {"CACHE_HIT", "SUCCEEDED"}


def test_the_reports_answer_streams_to_listeners_and_not_into_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline provider streams its extractive answer: the root's deltas, joined, are its answer;
    events.jsonl keeps none of them (the report keeps the whole text)."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    import shutil

    vault = shutil.copytree(DEMO, tmp_path / "vault")
    received: list[dict[str, Any]] = []
    done = run(MULTI, str(vault), provider="offline", use_cache=False, on_event=received.append)
    deltas = [r for r in received if r["type"] == "SYNTHESIS_DELTA"]
    assert len(deltas) > 3 and {r["node"] for r in deltas} == {"root"}
    starts = [i for i, r in enumerate(deltas) if r["first"]]
    assert starts and starts[0] == 0
    streamed = "".join(r["text"] for r in deltas[starts[-1] :])  # the last attempt's text
    # The root's answer is the streamed text as the provider wrote it (the engine strips and checks it).
    assert done.dag.node("root").answer.startswith(streamed.strip()[:200])
    on_disk = done.history.read_lines("events.jsonl")
    assert on_disk and not [r for r in on_disk if r["type"] == "SYNTHESIS_DELTA"]
