"""``%shad approvals`` (the queue, with an ``ApprovalWidget`` per pending request whose Approve / Reject
really decide) and ``%shad learnings`` (a DataFrame); the widget driven as its JavaScript would drive it,
with custom messages on its comm."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _notebook_helpers import RecordingComm, magics_shell, ok
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import widgets
from engine.curation import (
    approval_log,
    get_approval,
    pending_approvals,
    propose_learning,
    reject_learning,
    request_delete,
    request_publish,
)
from engine.errors import ShadError, UsageError
from shad_magics import ShadUsageError
from shad_magics._curation_lines import LEARNING_COLUMNS, ApprovalList
from widgets import ApprovalWidget

pytestmark = pytest.mark.usefixtures("shad_home")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATIC = Path(widgets.__file__).parent / "static"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Espresso.md").write_text("# Espresso\n\nNine bars.\n")
    (root / "Notes" / "Grinder.md").write_text("# Grinder\n\nBurrs.\n")
    return root


@pytest.fixture
def shell(tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, vault)


def line(sh: InteractiveShell, text: str) -> Any:
    return shown(sh, text)[0]


def shown(sh: InteractiveShell, text: str) -> tuple[Any, list[str]]:
    """What ``%shad TEXT`` returned, and the model ids of the widgets it displayed."""
    with capture_output() as out:
        result = ok(sh.run_cell(f"%shad {text}"))
    return result, [o.data[WIDGET_VIEW]["model_id"] for o in out.outputs if WIDGET_VIEW in o.data]


def fails(sh: InteractiveShell, text: str) -> BaseException:
    with capture_output():
        result = sh.run_cell(f"%shad {text}")
    assert result.error_in_exec is not None
    return result.error_in_exec


def front_end_clicks(widget: ApprovalWidget, action: str, note: str = "") -> None:
    """What the JS sends on a click: a custom message on the widget's comm."""
    content = {"type": "decide", "action": action, "note": note}
    widget._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


# --- %shad approvals -------------------------------------------------------------------------------------


def test_approvals_shows_a_widget_per_pending_request_whose_clicks_decide(
    shell: InteractiveShell, vault: Path, comms: list[RecordingComm]
) -> None:
    one = request_delete(vault, "Notes/Espresso.md", "superseded", requested_by="run-7")
    two = request_delete(vault, "Notes/Grinder.md", "duplicate", requested_by="run-7")
    listing, views = shown(shell, "approvals")
    assert isinstance(listing, ApprovalList) and [a["id"] for a in listing.data] == [one.id, two.id]
    assert "2 request(s) wait" in listing.markdown and "`Notes/Espresso.md`" in listing.markdown
    assert listing.panel is not None and views == [listing.panel.model_id]
    first, second = listing.widgets
    assert isinstance(first, ApprovalWidget) and first.approval["path"] == "Notes/Espresso.md"
    assert first.state == "pending" and first.approval_id == one.id

    front_end_clicks(first, "approve", "fine by me")
    assert not (vault / "Notes" / "Espresso.md").exists()
    assert first.state == "executed" and "deleted Notes/Espresso.md" in first.message
    assert get_approval(one.id).note == "fine by me"
    front_end_clicks(second, "reject", "keep it")
    assert (vault / "Notes" / "Grinder.md").is_file() and second.state == "rejected"
    assert [e.action for e in approval_log()] == ["approved", "executed", "rejected"]
    assert pending_approvals() == []

    sent = [c.custom() for c in comms if c.custom()]
    assert sent == [
        [{"type": "decided", "message": first.message}],
        [{"type": "decided", "message": second.message}],
    ]
    front_end_clicks(first, "reject")  # decided already: refused, the file stays gone, nothing logged
    assert first.state == "executed" and "executed already" in first.message
    assert len(approval_log()) == 3


def test_a_click_on_a_changed_note_fails_without_deleting(
    shell: InteractiveShell, vault: Path, comms: list[RecordingComm]
) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    widget = line(shell, "approvals").widgets[0]
    (vault / "Notes" / "Espresso.md").write_text("# Espresso\n\nEdited by a person.\n")
    front_end_clicks(widget, "approve")
    assert (vault / "Notes" / "Espresso.md").read_text().endswith("Edited by a person.\n")
    assert widget.state == "failed" and "changed since the delete was requested" in widget.message
    assert get_approval(a.id).status == "failed"
    front_end_clicks(widget, "approve")
    assert "failed already" in widget.message  # a failed request can no longer be decided


def test_widget_decide_from_code_and_bad_messages(vault: Path, comms: list[RecordingComm]) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    widget = ApprovalWidget(a, by="ada")
    assert not widget.decide("frobnicate") and "approve or reject" in widget.message
    widget._handle_msg({"content": {"data": {"method": "custom", "content": "noise"}}, "buffers": []})
    assert widget.state == "pending"
    assert widget.decide("reject", "no") and get_approval(a.id).decided_by == "ada"
    assert "Rejected" in widget.message and (vault / "Notes" / "Espresso.md").is_file()
    assert "Approval #" in widget.summary() and "rejected" in widget.summary(markdown=True)
    with pytest.raises(UsageError):
        ApprovalWidget("not an approval")  # type: ignore[arg-type]


def test_a_widget_sees_a_decision_taken_elsewhere(vault: Path, comms: list[RecordingComm]) -> None:
    from engine.curation import reject

    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    widget = ApprovalWidget(a.to_dict(), by="ada")
    reject(a.id, "bob", "from the CLI")
    assert not widget.decide("approve")
    assert widget.state == "rejected" and widget.approval["decided_by"] == "bob"
    assert (vault / "Notes" / "Espresso.md").is_file()


def test_approvals_all_approve_reject_and_log_lines(
    shell: InteractiveShell, vault: Path, tmp_path: Path
) -> None:
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    b = request_publish(vault, "Notes/Grinder.md", tmp_path / "site", "blog", requested_by="run-7")
    done = line(shell, f"approvals approve {b.id} --note ship")
    assert done.data["status"] == "executed" and (tmp_path / "site" / "Grinder.md").is_file()
    rejected = line(shell, f"approvals reject {a.id}")
    assert rejected.data["status"] == "rejected" and (vault / "Notes" / "Espresso.md").is_file()
    assert "nothing waits" in line(shell, "approvals").markdown
    everything, views = shown(shell, "approvals --all")
    assert [x["status"] for x in everything.data] == ["rejected", "executed"]
    assert views == [] and everything.panel is None  # nothing pending: no widget
    log = line(shell, "approvals log")
    assert isinstance(log, pd.DataFrame) and list(log["action"]) == ["approved", "executed", "rejected"]
    assert list(log.columns[:4]) == ["seq", "approval_id", "action", "by"]
    assert list(line(shell, f"approvals log {a.id}")["action"]) == ["rejected"]


def test_approvals_errors_raise(shell: InteractiveShell, vault: Path) -> None:
    assert isinstance(fails(shell, "approvals approve"), ShadUsageError)
    assert isinstance(fails(shell, "approvals frobnicate"), ShadUsageError)
    assert "no approval 9" in str(fails(shell, "approvals approve 9"))
    a = request_delete(vault, "Notes/Espresso.md", "old", requested_by="run-7")
    (vault / "Notes" / "Espresso.md").write_text("changed\n")
    error = fails(shell, f"approvals approve {a.id}")
    assert isinstance(error, ShadError) and "failed" in str(error)
    assert (vault / "Notes" / "Espresso.md").read_text() == "changed\n"


# --- %shad learnings -------------------------------------------------------------------------------------


def test_learnings_is_a_dataframe(shell: InteractiveShell, vault: Path) -> None:
    empty = line(shell, "learnings")
    assert isinstance(empty, pd.DataFrame) and empty.empty and list(empty.columns) == LEARNING_COLUMNS
    propose_learning(vault, "Grind finer", "One step.", run_id="run-9", sources=["Espresso"])
    propose_learning(vault, "Tamp harder", "Maybe.", run_id="run-9")
    reject_learning(vault, "tamp-harder", by="ada")
    frame = line(shell, "learnings")
    assert list(frame.columns) == LEARNING_COLUMNS and set(frame["slug"]) == {"grind-finer", "tamp-harder"}
    staging = line(shell, f"learnings --status staging --vault {vault}")
    assert list(staging["path"]) == ["Shad/Staging/grind-finer.md"]
    assert staging.iloc[0]["sources"] == ["[[Espresso]]"] and staging.iloc[0]["proposed_by"] == "run-9"
    assert isinstance(fails(shell, "learnings --status maybe"), ShadUsageError)


# --- the widget's static files ---------------------------------------------------------------------------


def test_the_widget_ships_its_js_and_css() -> None:
    """What it shares with the checkpoint widget (decision.*) first, then its own; every rule of its own
    stylesheet under .shad-approval (decision.css's scoping is checked in test_checkpoint_widget.py)."""
    read = {f.name: f.read_text() for f in STATIC.iterdir()}
    js = ApprovalWidget._esm
    assert js == read["decision.js"] + read["approvals.js"]
    assert ApprovalWidget._css == read["decision.css"] + read["approvals.css"]
    assert re.findall(r"^export\b.*$", js, re.M) == ["export default { render };"]  # none in decision.js
    assert '"decide"' in js and "innerHTML" not in js
    css = re.sub(r"/\*.*?\*/", "", read["approvals.css"], flags=re.S)
    selectors = [s.strip() for head in re.findall(r"([^{}]+)\{", css) for s in head.split(",")]
    assert "@" not in css and len(selectors) >= 4
    assert all(re.match(r"^\.shad-approval(\[[^\]]+\])?( |$)", s) for s in selectors), selectors


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_js_parses(tmp_path: Path) -> None:
    module = tmp_path / "approvals.mjs"
    module.write_text(ApprovalWidget._esm)  # decision.js + approvals.js: one module, no name twice
    out = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# --- in a real browser: the widget's JS in Chromium, its model bridged to the Python widget ---------------

CHROMIUM = Path("/usr/bin/chromium")
PAGE = """<!doctype html><html><head><style>%(css)s</style></head><body><div id="host"></div><script>
%(js)s
const state = %(state)s;
const listeners = {};
const model = {
  get: (k) => state[k],
  on: (name, fn) => (listeners[name] = listeners[name] || []).push(fn),
  off: () => {},
  send: async (msg) => {
    const back = await window.pyDecide(msg);  // the Python widget handles it, as over a comm
    for (const k of ["approval", "state", "message"]) {
      state[k] = back[k];
      (listeners["change:" + k] || []).forEach((fn) => fn());
    }
    (listeners["msg:custom"] || []).forEach((fn) => fn(back.reply));
  },
};
render({ model, el: document.getElementById("host") });
</script></body></html>"""


def _browser_skip() -> str | None:
    import importlib.util

    if os.environ.get("SHAD_SKIP_BROWSER"):
        return "SHAD_SKIP_BROWSER is set"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed"
    return None


@pytest.mark.browser
@pytest.mark.skipif(_browser_skip() is not None, reason=_browser_skip() or "")
def test_clicking_approve_in_chromium_deletes_the_note(vault: Path, comms: list[RecordingComm]) -> None:
    from playwright.sync_api import sync_playwright

    a = request_delete(vault, "Notes/Espresso.md", "superseded <b>by</b> Brewing", requested_by="run-7")
    widget = ApprovalWidget(a, by="ada")

    def decide(msg: dict[str, Any]) -> dict[str, Any]:
        widget._handle_msg({"content": {"data": {"method": "custom", "content": msg}}, "buffers": []})
        reply = [c.custom() for c in comms if c.custom()][-1][-1]
        return {"approval": widget.approval, "state": widget.state, "message": widget.message, "reply": reply}

    js = ApprovalWidget._esm.replace("export default { render };", "")  # what it ships: decision.js + its own
    state = {"approval": widget.approval, "state": widget.state, "message": widget.message}
    html = PAGE % {"css": ApprovalWidget._css, "js": js, "state": json.dumps(state)}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page()
            page.expose_function("pyDecide", decide)
            page.set_content(html)
            root = page.locator(".shad-approval")
            assert root.get_attribute("data-state") == "pending"
            assert page.locator(".shad-approval__path").inner_text() == "Notes/Espresso.md"
            assert "superseded <b>by</b> Brewing" in root.inner_text()  # text, never HTML
            page.fill(".shad-approval__note", "checked")
            page.click("button[data-action=approve]")
            page.wait_for_function("document.querySelector('.shad-approval').dataset.state === 'executed'")
            assert "deleted Notes/Espresso.md" in page.locator(".shad-approval__message").inner_text()
            assert page.locator("button[data-action=reject]").is_disabled()
        finally:
            browser.close()
    assert not (vault / "Notes" / "Espresso.md").exists()
    assert get_approval(a.id).note == "checked" and get_approval(a.id).decided_by == "ada"
