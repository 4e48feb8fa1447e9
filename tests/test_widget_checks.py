"""A software run in the DAG explorer: the code events (files produced, checks, repairs, contract change
requests) fold into per-node state (``widgets._state``), reach the synced ``nodes`` trait as a small badge
and the details panel in full, live and for a run loaded from history."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import test_browser as browser_tests
from _demo import DEMO

import engine
from engine import Run
from engine.events import (
    CodeProduced,
    CodeRepaired,
    ContractChangeRequested,
    EventKind,
    FilesWritten,
    NodeChecked,
    NodeCreated,
    RunStarted,
    to_record,
)
from widgets import DagExplorer
from widgets._details import MAX_REPAIRS, node_details
from widgets._state import HANDLERS, IGNORED, DagState

RUN = "20261125-000000-code"
GOAL = "How long should I rest beans after roasting, and why?"


def rec(event: Any) -> dict[str, Any]:
    return to_record(event, RUN)


def software_events() -> list[dict[str, Any]]:
    """What a small software run says about its code: two implementation nodes, one repaired."""
    return [
        rec(RunStarted(goal="an adder", provider="offline", budgets={"max_nodes": 9})),
        rec(NodeCreated(node="root", task="an adder", stage="goal")),
        rec(NodeCreated(node="impl", task="write add()", stage="implementation", parent="root")),
        rec(NodeCreated(node="impl_2", task="write sub()", stage="implementation", parent="root")),
        rec(CodeProduced(node="impl", step="implementation", files=["pkg/core.py", "pkg/__init__.py"])),
        rec(CodeProduced(node="impl_2", step="implementation", files=["pkg/sub.py"])),
        rec(CodeProduced(node="impl", step="tests", files=["tests/test_core.py", "pkg/core.py"])),
        rec(
            NodeChecked(
                node="impl",
                level="build",
                status="fail",
                findings=3,
                checks={"syntax": "pass", "imports": "pass", "integrity": "pass", "types": "fail"},
            )
        ),
        rec(
            CodeRepaired(
                node="impl",
                attempt=1,
                error_class="type_error",
                scope="local",
                signature="types:pkg/core.py:2",
                outcome="still failing",
            )
        ),
        rec(
            CodeRepaired(
                node="impl",
                attempt=2,
                error_class="type_error",
                scope="escalate",
                signature="types:pkg/core.py:2",
                outcome="repeated",
            )
        ),
        rec(ContractChangeRequested(node="impl", detail="add() must take floats too")),
        rec(NodeChecked(node="impl_2", level="build", status="pass", findings=0, checks={"syntax": "pass"})),
        rec(NodeChecked(node="root", level="off", status="skip", findings=0, checks={})),
        rec(FilesWritten(output="/tmp/out", written=4, skipped=0, refused=0)),
    ]


def fold(events: list[dict[str, Any]]) -> DagState:
    state = DagState()
    for record in events:
        state.apply(record)
    return state


def test_every_code_event_is_decided() -> None:
    code = {
        EventKind.CODE_PRODUCED,
        EventKind.NODE_CHECKED,
        EventKind.CODE_REPAIRED,
        EventKind.CONTRACT_CHANGE_REQUESTED,
    }
    assert code <= set(HANDLERS) and EventKind.FILES_WRITTEN in IGNORED


def test_checks_files_and_repairs_fold_into_each_node() -> None:
    state = fold(software_events())
    impl = state.code["impl"]
    # A file produced again (the tests step rewrote core.py) keeps its first place.
    assert impl["files"] == ["pkg/core.py", "pkg/__init__.py", "tests/test_core.py"]
    assert impl["check"] == {
        "status": "fail",
        "level": "build",
        "findings": 3,
        "checks": {"syntax": "pass", "imports": "pass", "integrity": "pass", "types": "fail"},
    }
    assert impl["repairs"]["count"] == 2 and impl["repairs"]["last"] == "repeated"
    assert [a["scope"] for a in impl["repairs"]["attempts"]] == ["local", "escalate"]
    assert impl["contract_changes"] == ["add() must take floats too"]
    assert state.nodes["impl"].note == "asked for a change in the contracts"
    assert state.code["impl_2"]["files"] == ["pkg/sub.py"]
    assert state.code["root"]["files"] == [] and state.code["root"]["check"]["status"] == "skip"


def test_the_snapshot_carries_a_badge_per_node() -> None:
    snap = fold(software_events()).snapshot()
    by_id = {n["id"]: n for n in snap.nodes}
    assert by_id["impl"]["code"] == {
        "check": "fail",
        "findings": 3,
        "files": 3,
        "repairs": 2,
        "last_repair": "repeated",
    }
    assert by_id["impl_2"]["code"] == {
        "check": "pass",
        "findings": 0,
        "files": 1,
        "repairs": 0,
        "last_repair": "",
    }
    assert by_id["root"]["code"]["check"] == "skip"
    json.dumps(snap.nodes)  # what the widget syncs must be plain JSON
    # FILES_WRITTEN draws nothing; the status and budget are as without code events.
    assert snap.status == "RUNNING" and snap.budget["nodes_total"] == 3


def test_a_node_that_produced_code_but_is_not_checked_yet() -> None:
    state = fold(software_events()[:5])
    badge = state.snapshot().nodes[1]["code"]
    assert badge == {"check": None, "findings": 0, "files": 2, "repairs": 0, "last_repair": ""}
    assert state.snapshot().nodes[2]["code"] is None  # impl_2: no code event yet


def test_malformed_code_events_change_nothing_or_little() -> None:
    state = DagState()
    for record in (
        {"type": "NODE_CHECKED", "status": "pass"},  # no node: dropped
        {"type": "CODE_PRODUCED", "node": "", "files": ["a.py"]},
        {"type": "CODE_REPAIRED", "node": 7, "outcome": "fixed"},
    ):
        assert state.apply(record) is False
    assert state.nodes == {} and state.code == {}
    state.apply({"type": "CODE_PRODUCED", "node": "n", "files": "a.py"})  # not a list: no files
    state.apply({"type": "NODE_CHECKED", "node": "n", "findings": "many", "checks": ["syntax"]})
    assert state.code["n"]["files"] == []
    assert state.code["n"]["check"] == {"status": "skip", "level": "", "findings": 0, "checks": {}}


def test_repairs_keep_a_bounded_list_and_the_full_count() -> None:
    state = DagState()
    for attempt in range(MAX_REPAIRS + 5):
        state.apply(rec(CodeRepaired("n", attempt, "syntax_error", "local", f"s{attempt}", "still failing")))
    repairs = state.code["n"]["repairs"]
    assert repairs["count"] == MAX_REPAIRS + 5 and len(repairs["attempts"]) == MAX_REPAIRS
    assert repairs["attempts"][-1]["attempt"] == MAX_REPAIRS + 4


def test_the_details_panel_lists_files_checks_repairs_and_contract_changes() -> None:
    state = fold(software_events())
    live = state.live_node("impl")
    assert live is not None
    d = node_details("impl", saved=None, live=live, history_dir=None)
    code = d["code"]
    assert code["files"] == ["pkg/core.py", "pkg/__init__.py", "tests/test_core.py"]
    assert code["files_total"] == 3
    assert code["check"]["status"] == "fail" and code["check"]["checks"]["types"] == "fail"
    assert code["repairs"]["count"] == 2
    assert code["repairs"]["attempts"][0] == {
        "attempt": 1,
        "error_class": "type_error",
        "scope": "local",
        "signature": "types:pkg/core.py:2",
        "outcome": "still failing",
    }
    assert code["contract_changes"] == ["add() must take floats too"]
    # The details are a copy: later events do not change what the panel was given.
    state.apply(rec(CodeProduced(node="impl", step="reconcile", files=["pkg/extra.py"])))
    assert live["code"]["files"] == code["files"] and len(state.code["impl"]["files"]) == 4
    plain = node_details("x", saved={"id": "x", "task": "t"}, live=None, history_dir=None)
    assert plain["code"] is None


def test_the_widget_syncs_the_badges_and_the_details(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))  # the run is in no history: details from events
    explorer = DagExplorer()
    for record in software_events():
        explorer.handle_event(record)
    explorer._flush()
    by_id = {n["id"]: n for n in explorer.nodes}
    assert by_id["impl"]["code"]["check"] == "fail" and by_id["impl"]["code"]["findings"] == 3
    assert by_id["impl_2"]["code"]["check"] == "pass"
    explorer.selected = "impl"
    assert explorer.details["code"]["check"]["level"] == "build"
    assert explorer.details["code"]["repairs"]["last"] == "repeated"
    explorer.close()


@pytest.fixture
def loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """A real offline run whose history gets the code events a software run would have written."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHAD_STORE", str(tmp_path / "store.sqlite3"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    run = engine.run(GOAL, [str(DEMO)], provider="offline", history_dir=str(tmp_path / "h"))
    with (run.history.dir / "events.jsonl").open("a", encoding="utf-8") as out:
        for event in (
            CodeProduced(node="root", step="vault", files=["notes.md"]),
            NodeChecked(node="root", level="basic", status="fail", findings=1, checks={"syntax": "fail"}),
            CodeRepaired("root", 1, "syntax_error", "local", "syntax:notes.md:1", "fixed"),
            NodeChecked(node="root", level="basic", status="pass", findings=0, checks={"syntax": "pass"}),
        ):
            out.write(json.dumps(to_record(event, run.id)) + "\n")
    return Run.load(run.id)


def test_a_run_loaded_from_history_shows_its_checks(loaded: Run) -> None:
    state = DagState()
    state.load_run(loaded)
    root = next(n for n in state.snapshot().nodes if n["id"] == "root")
    assert root["code"] == {"check": "pass", "findings": 0, "files": 1, "repairs": 1, "last_repair": "fixed"}
    assert all(n["code"] is None for n in state.snapshot().nodes if n["id"] != "root")
    explorer = DagExplorer(loaded)
    assert next(n for n in explorer.nodes if n["id"] == "root")["code"]["check"] == "pass"
    explorer.selected = "root"
    assert explorer.details["code"]["files"] == ["notes.md"]
    assert explorer.details["task"] == GOAL  # the saved node's details are still there
    explorer.close()


# --- in a real browser -------------------------------------------------------------------------------------

_BROWSER_SKIP = browser_tests._skip_reason()
lab = browser_tests.lab  # the fixture: a JupyterLab server for this module


def _badge_notebook(root: Path) -> str:
    """A notebook that feeds a DagExplorer the code events of ``software_events`` and shows it."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import json\nfrom widgets import DagExplorer\n"
            f"records = json.loads({json.dumps(json.dumps(software_events()))})\n"
            "explorer = DagExplorer()\nfor record in records:\n    explorer.handle_event(record)\n"
            "explorer._flush()\nexplorer"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "checks.ipynb")
    return "checks.ipynb"


@pytest.mark.browser
@pytest.mark.skipif(_BROWSER_SKIP is not None, reason=_BROWSER_SKIP or "")
def test_the_badges_and_the_code_details_render_in_jupyterlab(lab: browser_tests.Lab) -> None:
    with browser_tests._ran(lab, _badge_notebook(lab.root)) as page:
        dag = page.locator(".shad-dag").last
        dag.locator(".shad-dag__node").first.wait_for()
        badges = {
            dag.locator(f'.shad-dag__node[data-node-id="{node}"] .shad-dag__check').get_attribute(
                "data-check"
            )
            for node in ("impl", "impl_2", "root")
        }
        assert badges == {"fail", "pass", "skip"}
        impl = dag.locator('.shad-dag__node[data-node-id="impl"]')
        assert impl.locator(".shad-dag__check-text").text_content() == "✗ 3"
        assert (
            dag.locator('.shad-dag__node[data-node-id="impl_2"] .shad-dag__check-text').text_content() == "✓"
        )
        assert "checks fail (3 findings)" in (impl.get_attribute("aria-label") or "")
        fills = impl.locator(".shad-dag__check-bg").evaluate("el => getComputedStyle(el).fill")
        text = impl.locator(".shad-dag__check-text").evaluate("el => getComputedStyle(el).fill")
        assert fills not in ("none", "") and text == "rgb(255, 255, 255)"  # the CSS reached the badge
        assert dag.locator(".shad-dag__legend-checks").is_visible()
        impl.click()
        panel = dag.locator(".shad-dag__details")
        panel.locator(".shad-dag__checks").wait_for()
        assert panel.locator(".shad-dag__check-item").count() == 4
        assert panel.locator('.shad-dag__check-item[data-check="fail"]').text_content() == "✗ types: fail"
        assert panel.locator(".shad-dag__file-list li").all_text_contents() == [
            "pkg/core.py",
            "pkg/__init__.py",
            "tests/test_core.py",
        ]
        assert panel.locator(".shad-dag__repair-list li").count() == 2
        assert "add() must take floats too" in (panel.locator(".shad-dag__contract").text_content() or "")
        dag.scroll_into_view_if_needed()
        dag.screenshot(path=str(browser_tests.ARTIFACTS / "checks.png"))
        # The dark theme: the badge keeps white marks on the theme's own fill, distinct from the box.
        page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^JupyterLab Dark$")).click()
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
        page.wait_for_selector("#jupyterlab-splash", state="detached")  # the theme has loaded
        box = impl.locator(".shad-dag__box").evaluate("el => getComputedStyle(el).fill")
        dark_fill = impl.locator(".shad-dag__check-bg").evaluate("el => getComputedStyle(el).fill")
        assert dark_fill != box and dark_fill not in ("none", "")
        dag.screenshot(path=str(browser_tests.ARTIFACTS / "checks-dark.png"))
