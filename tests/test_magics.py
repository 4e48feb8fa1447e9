"""``%%shad run`` and the ``%shad`` line magics in a real IPython ``InteractiveShell``, with the offline
provider on the demo vault (and the real ``openai`` client against the local fake server where a run
must fail or hang)."""

from __future__ import annotations

import _thread
import importlib
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _codemode_fixtures import require_codemode
from _demo import DEMO
from _fake_llm import FakeLLMServer, server_error, stall
from _notebook_helpers import magics_of, magics_shell, ok
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell
from IPython.utils.capture import capture_output

import shad_magics
from engine import Run
from shad_magics import (
    RunHandle,
    ShadMagics,
    ShadPartialWarning,
    ShadResult,
    ShadRunError,
    ShadUsageError,
    _runner,
)

MIME = "application/vnd.shad.run+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
GOAL = "How long should I rest beans after roasting, and why?"


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    yield from magics_shell(tmp_path, monkeypatch, DEMO)


def cell(sh: InteractiveShell, line: str, body: str = GOAL) -> ExecutionResult:
    return sh.run_cell(f"%%shad {line}\n{body}")


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply=lambda body: "Rest beans a week [[Roasting/Resting beans]].") as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("SHAD_OPENAI_MODEL", "fake-model")
        yield fake


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def main_thread_is_waiting() -> bool:
    """Is the main thread inside ``_runner.wait`` (where a kernel interrupt must land)?"""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        code = frame.f_code
        if getattr(code, "co_qualname", code.co_name) == "wait" and code.co_filename == _runner.__file__:
            return True
        frame = frame.f_back
    return False


# --- %%shad run ------------------------------------------------------------------------------------------


def test_run_binds_a_rich_result(shell: InteractiveShell, tmp_path: Path) -> None:
    res = ok(cell(shell, "run -o res --no-widget"))
    assert shell.user_ns["res"] is res and isinstance(res, ShadResult)
    assert res.status.value == "SUCCESS" and res.run.history.dir.parent == tmp_path / "history"
    assert any(c["path"] == "Roasting/Resting beans.md" for c in res.citations)
    data, metadata = res._repr_mimebundle_()
    assert set(data) == {MIME, "text/html", "text/markdown", "text/plain"}  # HTML: the notebook report
    payload = data[MIME]
    assert set(payload) == {
        "run_id",
        "status",
        "exit_code",
        "goal",
        "metrics",
        "citations",
        "failures",
        "history_dir",
    }
    assert (payload["run_id"], payload["status"], payload["exit_code"], payload["goal"]) == (
        res.run_id,
        "SUCCESS",
        0,
        GOAL,
    )
    assert payload["metrics"] == res.summary["metrics"] and payload["history_dir"] == str(res.run.history.dir)
    assert metadata == {MIME: {"run_id": res.run_id, "status": "SUCCESS"}}
    assert "obsidian://open?vault=vault&file=Roasting%2FResting%20beans" in data["text/markdown"]
    assert list(res.metrics["node_id"]) == [n.id for n in res.run.dag]
    assert set(res.dag.nodes) == {n.id for n in res.run.dag}


def test_replay_from_a_recorded_run_and_cache_flags(shell: InteractiveShell) -> None:
    first = ok(cell(shell, "run --no-widget"))
    again = ok(cell(shell, f"run --from {first.run_id} --no-widget"))  # --from implies --provider replay
    assert again.run.provider_name == "replay" and again.run_id != first.run_id
    assert again.run.config.replay_from == first.run_id
    assert [c["path"] for c in again.citations] == [c["path"] for c in first.citations]
    fresh = ok(cell(shell, "run --no-cache --no-widget"))
    assert fresh.run.config.use_cache is False and first.run.config.use_cache is True
    assert ok(cell(shell, "run --refresh-cache --no-widget")).run.config.refresh_cache is True


def test_quoted_vault_with_a_space(shell: InteractiveShell, tmp_path: Path) -> None:
    spaced = tmp_path / "dir with space"
    shutil.copytree(DEMO, spaced)
    res = ok(cell(shell, f'run --vault "{spaced}" --no-widget'))
    assert res.run.config.vaults == (str(spaced),)
    assert {c["vault"] for c in res.citations} == {"dir-with-space"}
    assert "obsidian://open?vault=dir%20with%20space&file=" in res.markdown


@pytest.mark.parametrize(
    ("fmt", "keys"),
    [("markdown", {"text/markdown", "text/html"}), ("json", {"application/json"}), ("text", set())],
)
def test_formats(shell: InteractiveShell, fmt: str, keys: set[str]) -> None:
    res = ok(cell(shell, f"run -f {fmt} --no-widget"))
    data, _ = res._repr_mimebundle_()
    assert set(data) == {MIME, "text/plain"} | keys
    if fmt == "json":
        assert data["application/json"]["run_id"] == res.run_id
        assert f'"run_id": "{res.run_id}"' in data["text/plain"]
    else:
        assert "Rest 3–7 days" in data["text/plain"]


def test_format_default_comes_from_the_session(shell: InteractiveShell) -> None:
    magics_of(shell).format = "text"
    assert ok(cell(shell, "run --no-widget")).format == "text"


def test_vars_interpolation_is_opt_in(shell: InteractiveShell) -> None:
    shell.user_ns["x"] = "espresso"
    assert ok(cell(shell, "run --vars x --no-widget", "How long to rest beans for {x}?")).summary["goal"] == (
        "How long to rest beans for espresso?"
    )
    literal = ok(cell(shell, "run --no-widget", "How long to rest beans for {x}?"))
    assert literal.summary["goal"] == "How long to rest beans for {x}?"
    missing = cell(shell, "run --vars nope --no-widget", "About {nope}")
    assert isinstance(missing.error_in_exec, ShadUsageError)
    assert "'nope', which is not defined" in missing.error_in_exec.message


def test_context_of_every_kind_is_cited(shell: InteractiveShell, tmp_path: Path) -> None:
    shell.user_ns["prices"] = pd.DataFrame(
        {"bean": ["Zanzibar peaberry", "Kona extra fancy"], "price_per_kg": [41, 88]}
    )
    shell.user_ns["memo"] = "The quokka blend tastes of blueberry jam and cocoa nibs, says the roastery memo."
    (tmp_path / "wombat.txt").write_text(
        "Set the wombat grinder burrs to step 14 for pour-over.\n", encoding="utf-8"
    )
    folder = tmp_path / "kettle notes"
    folder.mkdir()
    (folder / "Platypus kettle.md").write_text("# Platypus kettle\n\nThe platypus kettle holds 93 degrees.\n")
    (folder / "Other.md").write_text("# Other\n\nNothing about kettles here, only descaling.\n")
    cases = [
        ("prices", "What does the Zanzibar peaberry cost per kg?", ("context", "prices.md")),
        ("memo", "What does the quokka blend taste of?", ("context", "memo.md")),
        (
            str(tmp_path / "wombat.txt"),
            "Which step for the wombat grinder burrs?",
            ("context", "wombat.txt.md"),
        ),
        (
            f'"{folder}"',
            "What temperature does the platypus kettle hold?",
            ("kettle-notes", "Platypus kettle.md"),
        ),
    ]
    for token, goal, cited in cases:
        res = ok(cell(shell, f"run --context {token} --no-widget", goal))
        assert cited in {(c["vault"], c["path"]) for c in res.citations}, (token, res.citations)
        assert res.run.config.vaults[0] == str(DEMO)  # context comes after the user's vaults
    assert Path(res.run.config.vaults[1]) == folder  # a folder of notes is used as it is, never deleted
    assert folder.is_dir()


def test_context_vault_is_removed_after_the_run(shell: InteractiveShell, tmp_path: Path) -> None:
    shell.user_ns["memo"] = "The quokka blend tastes of blueberry jam."
    res = ok(cell(shell, "run --context memo --no-widget", "What does the quokka blend taste of?"))
    temp = Path(res.run.config.vaults[1])
    assert temp.name == "context" and not temp.exists()
    assert not [p for p in (tmp_path / "home" / "index").iterdir() if p.name.startswith("context-")]
    link = next(c for c in res.citations if c["vault"] == "context")
    assert "uri" not in link  # nothing left to open; the citation itself stays


def test_context_errors(shell: InteractiveShell) -> None:
    shell.user_ns["n"] = 42
    for token, message in [("nothing_here", "no notebook variable or file"), ("n", "is a int")]:
        result = cell(shell, f"run --context {token} --no-widget")
        assert isinstance(result.error_in_exec, ShadUsageError) and message in result.error_in_exec.message


def test_failed_run_raises_with_a_short_traceback(
    shell: InteractiveShell, fake_openai: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_openai.script(*[server_error(400, "bad request") for _ in range(50)])
    result = cell(shell, "run --provider openai -o res --no-widget")
    err = result.error_in_exec
    assert isinstance(err, ShadRunError) and err.status == "FAILED"
    assert Run.load(err.run_id).status.value == "FAILED"
    assert shell.user_ns["res"].run_id == err.run_id  # bound anyway, to look into
    out = capsys.readouterr().out
    assert (
        f"ShadRunError: run {err.run_id} FAILED: ProviderError" in out and "hint: details: %shad trace" in out
    )
    assert "Traceback" not in out and "site-packages" not in out


def test_partial_run_warns_and_returns(shell: InteractiveShell) -> None:
    with pytest.warns(ShadPartialWarning, match="is PARTIAL .*%shad resume"):
        res = ok(cell(shell, "run --max-tokens 1000 --no-widget"))
    assert res.status.value == "PARTIAL"
    assert res.markdown.startswith("> **⚠ PARTIAL**")
    assert res._repr_mimebundle_()[1][MIME]["status"] == "PARTIAL"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("%shad", "%shad needs a subcommand"),
        ("%shad frobnicate", "unknown subcommand 'frobnicate'"),
        ("%%shad status\nx", "the cell magic is %%shad run"),
        ("%%shad run --colour red\nx", "unrecognized arguments: --colour"),
        ("%%shad run --no-widget\n   ", "the cell is empty"),
        ('%%shad run --vault "" --no-widget\nx', "an empty vault path"),
        ("%%shad run --max-tokens 10 --no-widget\nx", "max_tokens 10 leaves nothing"),
        ("%%shad run --strategy poetry --no-widget\nx", "unknown strategy"),
        ("%%shad run --provider nope --no-widget\nx", "unknown provider 'nope'"),
        ("%shad config colour=red", "unknown setting 'colour'"),
        ("%shad config checkpoints=sometimes", "bad value for checkpoints"),
        ("%shad config vault=/no/such/folder", "vault folder not found"),
    ],
)
def test_usage_errors(shell: InteractiveShell, source: str, message: str) -> None:
    result = shell.run_cell(source)
    assert result.error_in_exec is not None and message in str(result.error_in_exec)
    assert hasattr(result.error_in_exec, "_render_traceback_")


def test_usage_error_when_no_vault_is_set(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    magics_of(shell).vault = []
    result = cell(shell, "run --no-widget")
    assert isinstance(result.error_in_exec, ShadUsageError)
    assert "%shad config vault=DIR" in (result.error_in_exec.hint or "")
    monkeypatch.setenv("SHAD_VAULT", str(DEMO))
    assert ok(cell(shell, "run --no-widget")).run.config.vaults == (str(DEMO),)


# --- background, cancel, interrupt --------------------------------------------------------------------


def test_background_returns_a_handle(shell: InteractiveShell) -> None:
    handle = ok(cell(shell, "run --background -o h --no-widget"))
    assert isinstance(handle, RunHandle) and shell.user_ns["h"] is handle
    res = handle.result(timeout=120)
    assert handle.done() and isinstance(res, ShadResult) and res.run_id == handle.run_id
    assert handle.result() is res and shell.user_ns["h"] is handle  # -o keeps naming the handle
    assert repr(handle) == f"<RunHandle {res.run_id} SUCCESS · {handle._job.events} events>"


def test_cancel_a_background_run_keeps_its_history(
    shell: InteractiveShell, fake_openai: FakeLLMServer
) -> None:
    fake_openai.script(stall(60))
    handle = ok(cell(shell, "run --background --provider openai --no-widget"))
    wait_for(lambda: len(fake_openai.posts) >= 1, "the first model call")
    assert not handle.done() and "RUNNING" in repr(handle)
    assert handle.cancel() is True and handle.done()
    run = Run.load(str(handle.run_id))
    assert run.status.value == "PARTIAL" and run.summary["stop_reason"] == "interrupted"
    with pytest.raises(ShadRunError, match="was cancelled"):
        handle.result()
    assert "CANCELLED" in repr(handle)


def test_interrupt_cancels_the_run_and_reraises(
    shell: InteractiveShell, fake_openai: FakeLLMServer, tmp_path: Path
) -> None:
    fake_openai.script(stall(60))

    def interrupt_once_the_model_is_asked() -> None:
        wait_for(lambda: len(fake_openai.posts) >= 1 and main_thread_is_waiting(), "the first model call")
        _thread.interrupt_main()  # what a kernel interrupt (SIGINT) does to the waiting cell

    threading.Thread(target=interrupt_once_the_model_is_asked, daemon=True).start()
    result = cell(shell, "run --provider openai --no-widget")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    (folder,) = (tmp_path / "history").iterdir()
    run = Run.load(str(folder))
    assert run.status.value == "PARTIAL" and run.summary["stop_reason"] == "interrupted"


# --- the widget -----------------------------------------------------------------------------------------


def _explorer_class() -> Any:
    cls = getattr(importlib.import_module("widgets"), "DagExplorer", None)
    if cls is None:
        pytest.skip("widgets.DagExplorer is not available in this checkout")
    return cls


def test_widget_follows_the_run(shell: InteractiveShell) -> None:
    explorer = _explorer_class()
    with capture_output() as captured:
        res = ok(cell(shell, "run -o res"))
    widget = res.widget
    assert isinstance(widget, explorer)
    views = [o.data[WIDGET_VIEW]["model_id"] for o in captured.outputs if WIDGET_VIEW in o.data]
    assert views == [widget.model_id]  # displayed once, before the run started
    assert (widget.run_id, widget.status, widget.goal) == (res.run_id, "SUCCESS", GOAL)
    assert {n["id"] for n in widget.nodes} == {n.id for n in res.run.dag}
    assert widget.budget["tokens_used"] == res.summary["metrics"]["total_tokens"]
    assert ok(cell(shell, "run --no-widget")).widget is None
    magics_of(shell).widget = False
    assert ok(cell(shell, "run")).widget is None


def test_widget_of_a_background_run_gets_the_finished_run(shell: InteractiveShell) -> None:
    _explorer_class()
    handle = ok(cell(shell, "run --background"))
    res = handle.result(timeout=120)
    assert handle.widget is res.widget
    wait_for(lambda: res.widget.status == "SUCCESS", "the widget to show the finished run")
    assert {n["id"] for n in res.widget.nodes} == {n.id for n in res.run.dag}


# --- %shad line magics ----------------------------------------------------------------------------------


def test_search_returns_a_dataframe(shell: InteractiveShell, tmp_path: Path) -> None:
    frame = shell.run_line_magic("shad", "search rest beans after roasting --limit 3")
    assert list(frame.columns) == ["path", "title", "heading", "score", "snippet", "vault"]
    assert 1 <= len(frame) <= 3 and frame.iloc[0]["path"] == "Roasting/Resting beans.md"
    spaced = tmp_path / "my notes"
    spaced.mkdir()
    (spaced / "Kettle.md").write_text("# Kettle\n\nThe kettle is descaled monthly.\n", encoding="utf-8")
    (spaced / "Other.md").write_text("# Other\n\nBeans and grinders.\n", encoding="utf-8")
    frame = shell.run_line_magic("shad", f'search descaled --vault "{spaced}"')
    assert list(frame["path"]) == ["Kettle.md"] and list(frame["vault"]) == ["my-notes"]


def test_config_sets_session_defaults(shell: InteractiveShell, tmp_path: Path) -> None:
    spaced = tmp_path / "dir with space"
    shutil.copytree(DEMO, spaced)
    info = shell.run_line_magic(
        "shad", f'config vault="{spaced}" provider=offline widget=false checkpoints=skip'
    )
    magics = magics_of(shell)
    assert (magics.vault, magics.provider, magics.widget, magics.checkpoints) == (
        [str(spaced)],
        "offline",
        False,
        "skip",
    )
    assert info.data["vault"] == [str(spaced)]
    shell.run_line_magic("shad", f'config vault={DEMO} "vault={spaced}"')
    assert magics.vault == [str(DEMO), str(spaced)]
    assert shell.run_line_magic("shad", "config").data["checkpoints"] == "skip"
    bad = shell.run_cell("%shad config provider=anthropic widget=maybe")
    assert (
        isinstance(bad.error_in_exec, ShadUsageError) and "bad value for widget" in bad.error_in_exec.message
    )
    assert (magics.provider, magics.widget) == ("offline", False)  # all or nothing


def test_run_help(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    assert ok(cell(shell, "run --help")) is None
    out = capsys.readouterr().out
    for option in (
        "--vault DIR",
        "--background",
        "--vars A,B",
        "--context VAR_OR_PATH",
        "--from RUN_ID",
        "-o NAME",
    ):
        assert option in out


def test_traitlets_config_and_documentation(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    from traitlets.config import Config

    monkeypatch.setenv("SHAD_CHECKPOINTS", "approve")
    config = Config()
    config.ShadMagics.vault = [str(DEMO)]
    config.ShadMagics.provider = "offline"
    config.ShadMagics.history_dir = "/tmp/shad-history"
    config.ShadMagics.widget = False
    magics = ShadMagics(shell=shell, config=config)
    assert (magics.vault, magics.provider, magics.history_dir, magics.widget) == (
        [str(DEMO)],
        "offline",
        "/tmp/shad-history",
        False,
    )
    assert magics.checkpoints == "approve"
    monkeypatch.delenv("SHAD_CHECKPOINTS")
    assert ShadMagics(shell=shell).checkpoints == "auto"  # pause where a person can click, else fail
    for name, trait in ShadMagics.class_traits(config=True).items():
        assert trait.help, name
    assert {"vault", "provider", "history_dir", "checkpoints", "widget", "format"} <= set(
        ShadMagics.class_traits(config=True)
    )


def test_run_history_subcommands(shell: InteractiveShell, tmp_path: Path) -> None:
    with pytest.warns(ShadPartialWarning):
        partial = ok(cell(shell, "run --max-tokens 1000 --no-widget"))
    run_id = partial.run_id

    status = shell.run_line_magic("shad", f"status {run_id}")
    assert status.data["status"] == "PARTIAL" and f"%shad resume {run_id}" in status.markdown

    tree = shell.run_line_magic("shad", f"trace {run_id}")
    assert "`root` **PRUNED**" in tree.markdown
    node = shell.run_line_magic("shad", f"trace {run_id} root")
    assert node.data["id"] == "root" and "**Retrieval**" in node.markdown
    missing = shell.run_cell(f"%shad trace {run_id} nope")
    assert isinstance(missing.error_in_exec, ShadUsageError)

    runs = shell.run_line_magic("shad", "runs")
    assert list(runs.columns) == ["run_id", "status", "goal", "dir"] and runs.iloc[0]["run_id"] == run_id

    analysis = shell.run_line_magic("shad", f"analyze {run_id}")
    assert len(analysis.metrics) == len(partial.run.dag) and analysis.summary["status"] == "PARTIAL"
    assert analysis.summary["by_status"] == {"PRUNED": 1} and "1 PRUNED" in repr(analysis)

    out = tmp_path / "export dir"
    exported = shell.run_line_magic("shad", f'export {run_id} "{out}"')
    assert {p.name for p in out.iterdir()} >= {"final.report.md", "final.summary.json", "dag.json"}
    assert len(exported.data) >= 3

    resumed = ok(shell.run_cell(f"%shad resume {run_id} --budget +600% -o again --no-widget"))
    assert isinstance(resumed, ShadResult) and shell.user_ns["again"] is resumed
    assert resumed.run_id == run_id and resumed.status.value == "SUCCESS"
    assert Run.load(run_id).status.value == "SUCCESS"

    unknown = shell.run_cell("%shad status 19990101-000000-dead")
    assert "no run '19990101-000000-dead'" in str(unknown.error_in_exec)
    assert unknown.error_in_exec._render_traceback_()[0].startswith("RunNotFoundError")  # type: ignore[union-attr]


def test_resume_with_a_hint_steers_the_nodes_whose_retries_ran_out(shell: InteractiveShell) -> None:
    from engine.runs.dag import NodeStatus

    # Nothing in the demo vault (a coffee vault) is about this: the retrieval ladder runs out.
    with pytest.warns(ShadPartialWarning):
        weak = ok(
            cell(
                shell,
                "run --no-widget",
                "What is the history of quantum chromodynamics lattice gauge theory?",
            )
        )
    require_codemode(weak.run.events)  # the ladder needs the sandbox: without one there is no retry
    assert weak.run.dag.root().status is NodeStatus.FAILED_WITH_DIAGNOSTIC
    with pytest.warns(ShadPartialWarning):  # still nothing on it in the vault
        again = ok(
            shell.run_cell(f'%shad resume {weak.run_id} --hint "Wilson lattice chromodynamics" --no-widget')
        )
    assert again.run_id == weak.run_id
    rungs = [a["rung"] for a in Run.load(weak.run_id).dag.root().retrieval["signals"]["ladder"]]
    assert rungs[-1] == "hint 'Wilson lattice chromodynamics'"  # one more rung: the hint

    # A run with no such node: one line, as `shad resume --hint` says it, and nothing runs.
    strong = ok(cell(shell, "run --no-widget"))
    assert strong.status.value == "SUCCESS"
    refused = shell.run_cell(f"%shad resume {strong.run_id} --hint roasting --background")
    error = refused.error_in_exec
    assert isinstance(error, ShadUsageError) and "no node whose retries ran out" in error.message
    assert error._render_traceback_() == [
        f"ShadUsageError: run {strong.run_id} has no node whose retries ran out: --hint is for those",
        f"hint: to steer a node waiting at a checkpoint: %shad checkpoint {strong.run_id} NODE --hint TEXT",
    ]
    assert not [e for e in Run.load(strong.run_id).events if e["type"] == "RUN_RESUMED"]


def test_providers(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = shell.run_line_magic("shad", "providers")
    assert list(frame.columns) == ["name", "configured", "default", "how"]
    rows = frame.set_index("name")
    assert {"anthropic", "openai", "claude-code", "offline", "replay"} <= set(rows.index)
    assert bool(rows.loc["offline", "configured"]) and bool(rows.loc["offline", "default"])
    assert not bool(rows.loc["anthropic", "configured"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    rows = shell.run_line_magic("shad", "providers").set_index("name")
    assert bool(rows.loc["anthropic", "configured"]) and bool(rows.loc["anthropic", "default"])


def test_unload_removes_the_magics(shell: InteractiveShell) -> None:
    shad_magics.unload_ipython_extension(shell)
    assert "shad" not in shell.magics_manager.magics["line"]
    assert "shad" not in shell.magics_manager.magics["cell"]
    shad_magics.load_ipython_extension(shell)  # the fixture unloads again
