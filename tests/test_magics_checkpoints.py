"""Checkpoints from a notebook (``shad_magics._checkpoints``): the session policy and the engine policy it
maps to, ``auto`` telling an interactive front end from a headless one in a real kernel, a headless run
that needs a human raising (in IPython and under nbclient), a paused cell showing checkpoint widgets
whose last decision resumes the run with the DAG widget live, and ``%shad checkpoint``.

The runs use the offline provider over a tiny vault about coffee, asked about authentication: the node
is high-impact and nothing can be retrieved, so it pauses every time."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from _checkpoint_data import COFFEE_FLAT as COFFEE
from _checkpoint_data import SECURITY_GOAL as GOAL
from _checkpoint_data import TWO_STEP_GOAL
from _notebook_helpers import magics_of, magics_shell, ok
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell
from IPython.utils.capture import capture_output
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import engine
from engine import RunStatus
from shad_magics import ShadMagics, ShadPartialWarning, ShadResult, ShadRunError, ShadUsageError
from shad_magics._checkpoints import engine_policy, interactive_frontend, resolve_policy
from widgets import CheckpointWidget, DagExplorer

REPO = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def vault(make_vault: Callable[..., Path]) -> Path:
    return make_vault(COFFEE)


@pytest.fixture
def shell(tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, vault)


def cell(sh: InteractiveShell, line: str, body: str = GOAL) -> ExecutionResult:
    return sh.run_cell(f"%%shad {line}\n{body}")


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def paused_cell(sh: InteractiveShell, line: str = "run -o res --checkpoints pause", body: str = GOAL) -> Any:
    """Run a cell that pauses; return (its result, the model ids of the widgets it displayed). A person
    can decide in this cell, so no warning goes to stderr (it could not be taken back once decided):
    the report's banner says it, in a display replaced in place when the run goes on."""
    with warnings.catch_warnings(record=True) as caught, capture_output() as out:
        warnings.simplefilter("always")
        res = ok(cell(sh, line, body))
    assert not [w for w in caught if issubclass(w.category, ShadPartialWarning)]
    views = [o.data[WIDGET_VIEW]["model_id"] for o in out.outputs if WIDGET_VIEW in o.data]
    banner = res._repr_mimebundle_()[0]["text/markdown"].splitlines()[0]
    assert "NEEDS_HUMAN" in banner and f"`%shad checkpoint {res.run_id}`" in banner
    assert "%shad resume" not in banner  # the one way to go on here is to decide
    return res, views


# --- the policies ------------------------------------------------------------------------------------------


class FakeKernel:
    """What ``interactive_frontend`` reads of an ipykernel kernel."""

    def __init__(self, parent: Any, allow_stdin: bool = False) -> None:
        self._parent = parent
        self._allow_stdin = allow_stdin

    def get_parent(self, channel: str = "shell") -> Any:
        return self._parent


class FakeShell:
    def __init__(self, kernel: Any = None) -> None:
        self.kernel = kernel


class TerminalInteractiveShell:  # only its name matters: a person at a terminal prompt
    kernel = None


def test_the_policy_maps_to_the_engine() -> None:
    assert [engine_policy(p) for p in ("fail", "approve", "skip", "pause", "off")] == [
        "pause",
        "approve",
        "skip",
        "pause",
        "off",
    ]
    mapped = set(map(engine_policy, ("fail", "approve", "skip", "pause", "off")))
    assert mapped <= set(engine.CHECKPOINT_POLICIES)
    interactive = FakeShell(FakeKernel({"content": {"allow_stdin": True}}))
    headless = FakeShell(FakeKernel({"content": {"allow_stdin": False}}))
    assert (resolve_policy("auto", interactive), resolve_policy("AUTO", headless)) == ("pause", "fail")
    for policy in ("fail", "approve", "skip", "pause"):  # the others mean what they say, anywhere
        assert resolve_policy(policy, interactive) == resolve_policy(policy, headless) == policy


def test_interactive_frontend_detection() -> None:
    assert interactive_frontend(FakeShell(FakeKernel({"content": {"allow_stdin": True}}))) is True
    assert interactive_frontend(FakeShell(FakeKernel({"content": {"allow_stdin": False}}))) is False
    # No parent request to read: the flag ipykernel keeps for input().
    assert interactive_frontend(FakeShell(FakeKernel({}, allow_stdin=True))) is True
    assert interactive_frontend(FakeShell(FakeKernel(None, allow_stdin=False))) is False
    assert interactive_frontend(TerminalInteractiveShell()) is True
    assert interactive_frontend(InteractiveShell.instance()) is False  # embedded, no person to click


def test_the_default_policy(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ShadMagics(shell=shell).checkpoints == "auto"
    monkeypatch.setenv("SHAD_CHECKPOINTS", "Pause")
    assert ShadMagics(shell=shell).checkpoints == "pause"
    monkeypatch.setenv("SHAD_CHECKPOINTS", "sometimes")
    assert ShadMagics(shell=shell).checkpoints == "auto"
    assert "auto" in ShadMagics.class_traits()["checkpoints"].help


def test_the_kernel_tells_interactive_from_headless(tmp_path: Path) -> None:
    """The installed ipykernel really carries ``allow_stdin`` of the request: True from Lab-like
    clients, False from nbclient-like ones."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        code = "from shad_magics._checkpoints import interactive_frontend as f; print(f(get_ipython()))"
        seen = []
        for allow in (True, False, True):
            printed: list[str] = []

            def hook(msg: dict[str, Any], printed: list[str] = printed) -> None:
                if msg["msg_type"] == "stream":
                    printed.append(msg["content"]["text"])

            reply = kc.execute_interactive(code, allow_stdin=allow, timeout=120, output_hook=hook)
            assert reply["content"]["status"] == "ok", reply["content"]
            seen.append("".join(printed).strip())
        assert seen == ["True", "False", "True"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# --- headless: fail ------------------------------------------------------------------------------------


def test_headless_auto_raises_naming_the_node(shell: InteractiveShell) -> None:
    result = cell(shell, "run -o res")
    error = result.error_in_exec
    assert isinstance(error, ShadRunError) and error.status == "NEEDS_HUMAN"
    res = shell.user_ns["res"]  # bound all the same, to look into
    assert res.status == RunStatus.NEEDS_HUMAN and res.run.config.checkpoints == "pause"
    assert error.run_id == res.run_id
    assert "needs a human at node root" in error.message and "retrieval" in error.message
    assert "security" in error.message  # why it matters
    assert f"%shad checkpoint {res.run_id} root --approve" in (error.hint or "")
    assert error._render_traceback_()[0].startswith("ShadRunError: run ")
    # The history keeps the checkpoint: deciding it continues the run.
    assert [c.node_id for c in engine.pending_checkpoints(res.run_id)] == ["root"]


def test_approve_and_skip_decide_by_themselves(shell: InteractiveShell) -> None:
    approved = ok(cell(shell, "run --checkpoints approve --no-widget"))
    # Decided by the policy and finished: PARTIAL only because the vault does not answer the question.
    assert approved.status == RunStatus.PARTIAL and approved.run.config.checkpoints == "approve"
    (decided,) = approved.summary["checkpoints"]
    assert decided["decision"]["action"] == "approve" and decided["decision"]["by"] == "policy"
    magics_of(shell).checkpoints = "skip"
    # --no-cache: the approved answer of the same goal is in the cache, whatever the policy.
    with pytest.warns(ShadPartialWarning):  # its only node skipped by the policy: PARTIAL, no answer
        result = ok(shell.run_cell(f"%%shad run --no-widget --no-cache\n{GOAL}"))
    assert result.status == RunStatus.PARTIAL
    skipped = engine.Run.load(result.run.id)
    assert skipped.config is not None and skipped.config.checkpoints == "skip"
    assert skipped.summary["checkpoints"][0]["decision"]["action"] == "skip"


def test_headless_notebook_fails_the_cell(tmp_path: Path, vault: Path) -> None:
    """A real kernel under nbclient (what papermill and nbval use): nobody can click, so ``auto``
    fails the cell with the node named, and the notebook stops there."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext shad_magics"),
        nbformat.v4.new_code_cell(f'%%shad run --vault "{vault}" --provider offline --no-widget\n{GOAL}'),
        nbformat.v4.new_code_cell("print('not reached')"),
    ]
    env = {
        "SHAD_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    saved = {k: os.environ.get(k) for k in (*env, "SHAD_CHECKPOINTS")}
    os.environ.update(env)
    os.environ.pop("SHAD_CHECKPOINTS", None)
    try:
        client = NotebookClient(
            nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}}
        )
        with pytest.raises(CellExecutionError) as info:
            client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = str(info.value)
    assert "ShadRunError" in text and "needs a human at node root" in text
    assert "%shad checkpoint" in text and "--approve" in text
    assert nb.cells[2].outputs == []


# --- interactive: pause ------------------------------------------------------------------------------------


def test_a_paused_cell_shows_its_checkpoints_and_a_click_resumes(shell: InteractiveShell) -> None:
    res, views = paused_cell(shell)
    assert isinstance(res, ShadResult) and res.status == RunStatus.NEEDS_HUMAN
    panel = res.checkpoints
    (widget,) = panel.widgets
    assert isinstance(widget, CheckpointWidget) and (widget.run_id, widget.node_id) == (res.run_id, "root")
    assert views == [res.widget.model_id, panel.box.model_id]  # the DAG widget, then the checkpoints
    assert list(panel.box.children) == [widget] and res.widget.status == "NEEDS_HUMAN"

    assert widget.decide("approve") is True  # as the Approve button does
    wait_for(lambda: widget.state != "resuming", "the resumed run to end")
    assert (widget.state, widget.message) == ("resumed", "The run resumed and ended PARTIAL.")
    dag = res.widget
    assert isinstance(dag, DagExplorer) and (dag.run_id, dag.status) == (res.run_id, "PARTIAL")
    assert {n["status"] for n in dag.nodes} == {"SUCCEEDED"}
    finished = shell.user_ns["res"]  # -o follows the run
    assert finished is panel.result and finished.status == RunStatus.PARTIAL and finished.run_id == res.run_id
    assert list(panel.box.children) == [widget]  # the report is replaced in place, not appended
    assert finished._display_id == res._display_id is not None


def test_a_run_that_pauses_again_shows_new_checkpoints(shell: InteractiveShell) -> None:
    res, _ = paused_cell(shell, "run -o res --checkpoints pause --strategy research", TWO_STEP_GOAL)
    panel = res.checkpoints
    (first,) = panel.widgets
    assert first.decide("approve")
    wait_for(lambda: len(panel.widgets) == 3, "the checkpoints of the resumed run")
    assert first.state == "resumed" and "paused again" in first.message
    second, third = panel.widgets[1:]
    assert {second.node_id, third.node_id} == {"gather_sources", "gather_sources_2"}
    assert list(panel.box.children) == [first, second, third]
    assert res.widget.status == "NEEDS_HUMAN"
    assert second.decide("skip") and second.state == "waiting"  # the run waits for the other one
    assert third.node_id in "".join(second.message.split())
    assert third.decide("hint", "billing schema")
    wait_for(lambda: third.state not in ("waiting", "resuming"), "the run to end")
    assert (second.state, third.state) == ("resumed", "resumed")
    assert (
        res.widget.status in ("SUCCESS", "PARTIAL") and shell.user_ns["res"].status.value == res.widget.status
    )


def test_a_background_run_shows_its_checkpoints_when_it_pauses(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        handle = ok(cell(shell, "run --background --checkpoints pause"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShadPartialWarning)  # its checkpoint widgets say it: no warning
        res = handle.result(timeout=120)
    panel = res.checkpoints
    views = [o.data[WIDGET_VIEW]["model_id"] for o in captured.outputs if WIDGET_VIEW in o.data]
    assert views == [res.widget.model_id, panel.box.model_id]  # shown at once, filled when it paused
    assert [w.node_id for w in panel.box.children] == ["root"]


# --- %shad checkpoint --------------------------------------------------------------------------------------


def test_checkpoint_lists_then_decides_and_resumes(shell: InteractiveShell) -> None:
    paused = shell.run_cell(f"%%shad run -o res --no-widget\n{GOAL}")
    assert isinstance(paused.error_in_exec, ShadRunError)
    run_id = shell.user_ns["res"].run_id
    with capture_output() as captured:
        listing = shell.run_line_magic("shad", f"checkpoint {run_id}")
    assert (
        "| `root` |" in listing.markdown and f"%shad checkpoint {run_id} root --approve" in listing.markdown
    )
    assert [c["node_id"] for c in listing.data] == ["root"]
    assert sum(WIDGET_VIEW in o.data for o in captured.outputs) == 1  # their widgets
    only = shell.run_line_magic("shad", f"checkpoint {run_id} root")
    assert [c["node_id"] for c in only.data] == ["root"]
    bad = shell.run_cell(f"%shad checkpoint {run_id} nosuch")
    assert isinstance(bad.error_in_exec, ShadUsageError) and "pending: root" in (bad.error_in_exec.hint or "")
    empty_hint = shell.run_cell(f'%shad checkpoint {run_id} root --hint "  "')
    assert "a hint needs its text" in str(empty_hint.error_in_exec)

    with capture_output() as captured:
        res = shell.run_line_magic(
            "shad", f'checkpoint {run_id} root --hint "look for payment notes" -o done'
        )
    assert isinstance(res, ShadResult) and res.run_id == run_id and shell.user_ns["done"] is res
    assert res.status == RunStatus.PARTIAL and res.widget is not None and res.widget.status == "PARTIAL"
    assert res.summary["checkpoints"][0]["decision"]["text"] == "look for payment notes"
    assert shell.run_line_magic("shad", f"checkpoint {run_id}").data == []


def test_a_listed_checkpoint_resumes_on_a_click(shell: InteractiveShell) -> None:
    failed = cell(shell, "run --no-widget").error_in_exec
    assert isinstance(failed, ShadRunError)
    with capture_output() as captured:
        listed = shell.run_line_magic("shad", f"checkpoint {failed.run_id}")
    panel = listed.panel
    assert [o.data[WIDGET_VIEW]["model_id"] for o in captured.outputs] == [panel.box.model_id]
    (widget,) = panel.widgets
    assert widget.decide("approve")
    wait_for(lambda: widget.state == "resumed", "the resumed run to end")
    dag, report = panel.box.children[1:]  # a DAG widget appeared for the resumed run, then its report
    assert isinstance(dag, DagExplorer) and (dag.run_id, dag.status) == (failed.run_id, "PARTIAL")
    assert panel.result is not None and panel.result.status == RunStatus.PARTIAL
    assert "Decided: approve by human" in report.outputs[0]["data"]["text/markdown"]


def test_checkpoint_waits_for_every_decision_before_resuming(shell: InteractiveShell) -> None:
    first = ok(cell(shell, "run --checkpoints pause --strategy research --no-widget", TWO_STEP_GOAL))
    again = shell.run_line_magic("shad", f"checkpoint {first.run_id} --approve --checkpoints pause")
    assert again.status == RunStatus.NEEDS_HUMAN  # the resumed run paused at two sources
    info = shell.run_line_magic("shad", f"checkpoint {first.run_id} gather_sources --skip")
    assert info.markdown.startswith("recorded `skip` for `gather_sources`; the run resumes once")
    assert [c["node_id"] for c in info.data] == ["gather_sources_2"]
    assert status_of(first.run_id) == "NEEDS_HUMAN"  # nothing resumed yet
    with pytest.warns(ShadPartialWarning, match="is PARTIAL"):  # one source skipped
        done = shell.run_line_magic("shad", f"checkpoint {first.run_id} --approve")
    assert done.status == RunStatus.PARTIAL and status_of(first.run_id) == "PARTIAL"


def test_resume_of_an_undecided_run_under_fail_raises(shell: InteractiveShell) -> None:
    ok(cell(shell, "run -o res --checkpoints pause --no-widget"))
    run_id = shell.user_ns["res"].run_id
    result = shell.run_cell(f"%shad resume {run_id} --checkpoints fail --no-widget")
    assert isinstance(result.error_in_exec, ShadRunError) and "node root" in result.error_in_exec.message


def status_of(run_id: str) -> str:
    return engine.Run.load(run_id).status.value
