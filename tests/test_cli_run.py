"""``shad run / resume / status / trace / export / runs`` in process (``engine.cli.main``), plus one real
subprocess. Runs use the offline provider over a copy of the demo vault; ``$SHAD_HOME`` is a temp dir."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from _cli import Result, caller, dead_process
from _fake_llm import FakeLLMServer, prompt_of, well_behaved

from engine import Budgets, Run, RunConfig, run
from engine.store.history import list_runs

REPO = Path(__file__).resolve().parent.parent
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_REPLAY")
TINY = 4000  # lets the first subtask finish, not the others
SIMPLE = "How long should roasted beans rest before brewing?"
MULTI = (
    "How long should roasted beans rest before brewing? What grind size suits a French press? "
    "How do I filter tap water for brewing?"
)


@pytest.fixture(autouse=True)
def shad_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "shad-home"
    monkeypatch.setenv("SHAD_HOME", str(home))
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SHAD_DEBUG", raising=False)
    return home


@pytest.fixture
def vault(demo_copy: Path) -> Path:
    return demo_copy


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def assert_one_line_error(result: Result, *needles: str) -> None:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("shad: error:"), lines[0]
    assert "Traceback" not in result.err + result.out
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def offline_run(goal: str, vault: Path, **budgets: Any) -> Run:
    return run(RunConfig(goal, (str(vault),), provider="offline", budgets=Budgets(**budgets)))


def snapshot(folder: Path, skip: Path | None = None) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file() and (skip is None or skip not in p.parents)
    }


# --- shad run --------------------------------------------------------------------------------------------


def test_run_json_prints_the_summary_and_exits_0(shad: Any, vault: Path) -> None:
    r = shad("run", SIMPLE, "--vault", str(vault), "--provider", "offline", "--json")
    assert r.code == 0, r.err
    summary = r.json()
    assert summary["status"] == "SUCCESS" and summary["goal"] == SIMPLE and summary["provider"] == "offline"
    on_disk = json.loads(Path(summary["history_dir"], "final.summary.json").read_text("utf-8"))
    assert summary == on_disk
    assert Path(summary["report_path"]).is_file()
    assert any(c["path"] == "Roasting/Resting beans.md" for c in summary["citations"])


def test_run_prints_the_report_and_a_status_line(shad: Any, vault: Path) -> None:
    r = shad("run", SIMPLE, "--vault", str(vault), "--provider", "offline")
    assert r.code == 0, r.err
    assert r.out.lstrip().startswith(f"# {SIMPLE}")  # the report, without its frontmatter
    assert "type: report" not in r.out
    assert "[[Roasting/Resting beans#" in r.out
    assert "SUCCESS" in r.err and "provider offline" in r.err and "final.report.md" in r.err


def test_partial_run_exits_3_and_shad_resume_finishes_it(shad: Any, vault: Path) -> None:
    r = shad(
        "run", MULTI, "--vault", str(vault), "--provider", "offline", "--max-tokens", str(TINY), "--json"
    )
    assert r.code == 3, r.err
    summary = r.json()
    run_id = summary["run_id"]
    assert summary["status"] == "PARTIAL" and summary["missing_branches"]
    assert summary["resume_command"].startswith(f"shad resume {run_id} --budget +")
    report = Path(summary["report_path"]).read_text("utf-8")
    assert f"shad resume {run_id}" in [line for line in report.splitlines() if line.strip()][-1]

    text = shad("status", run_id)
    assert text.code == 0 and "PARTIAL" in text.out and "missing" in text.out
    assert f"shad resume {run_id}" in text.out

    resumed = shad("resume", run_id, "--budget", "+30000", "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["status"] == "SUCCESS" and resumed.json()["run_id"] == run_id
    assert resumed.json()["missing_branches"] == []
    events = Path(summary["history_dir"], "events.jsonl").read_text("utf-8")
    assert events.count('"RUN_RESUMED"') == 1


def test_partial_run_without_json_prints_the_resume_command(shad: Any, vault: Path) -> None:
    r = shad("run", MULTI, "--vault", str(vault), "--provider", "offline", "--max-tokens", str(TINY))
    assert r.code == 3
    assert "shad resume " in r.out.strip().splitlines()[-1]
    assert "PARTIAL" in r.err and "to continue: shad resume" in r.err


def test_the_printed_resume_command_finishes_the_run(shad: Any, vault: Path) -> None:
    r = shad("run", MULTI, "--vault", str(vault), "--provider", "offline", "--max-tokens", str(TINY))
    assert r.code == 3
    command = r.out.strip().splitlines()[-1].split("`")[1]
    assert command.startswith("shad resume ")
    assert shad(*shlex.split(command)[1:]).code == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--max-tokens", "5"], "max_tokens"),
        (["--strategy", "bogus"], "unknown strategy"),
        (["--model", "nonsense"], "--model"),
        (["--model", "brain=some-model"], "tier"),
        (["--max-depth", "0"], "max_depth"),
        (["--max-time", "abc"], "--max-time"),
    ],
)
def test_usage_errors_exit_2_with_one_line_and_start_no_run(
    shad: Any, vault: Path, shad_home: Path, args: list[str], needle: str
) -> None:
    r = shad("run", SIMPLE, "--vault", str(vault), "--provider", "offline", *args)
    assert r.code == 2
    assert_one_line_error(r, needle)
    assert r.out == ""
    assert not (shad_home / "runs.jsonl").exists()
    assert not (vault / "Shad").exists()


@pytest.mark.parametrize("goal", ["the and of", "What is this?"])
def test_a_goal_of_only_common_words_is_a_usage_error_and_starts_no_run(
    shad: Any, vault: Path, shad_home: Path, goal: str
) -> None:
    """Nothing to look for: any passage would seem to answer it (it had ended SUCCESS quoting six)."""
    r = shad("run", goal, "--vault", str(vault), "--provider", "offline")
    assert r.code == 2 and r.out == ""
    assert_one_line_error(r, "no word to look for")
    assert not (shad_home / "runs.jsonl").exists() and not (vault / "Shad").exists()


def test_missing_vault_is_a_usage_error(shad: Any, tmp_path: Path) -> None:
    r = shad("run", SIMPLE, "--vault", str(tmp_path / "nowhere"), "--provider", "offline")
    assert r.code == 2
    assert_one_line_error(r, "vault folder not found")
    a_file = tmp_path / "note.md"
    a_file.write_text("# A note\n", "utf-8")
    r = shad("run", SIMPLE, "--vault", str(a_file), "--provider", "offline")
    assert r.code == 2
    assert_one_line_error(r, "vault path is not a folder")
    assert "not a file inside it" in r.err
    no_vault = shad("run", SIMPLE, "--provider", "offline")
    assert no_vault.code == 2
    assert_one_line_error(no_vault, "--vault")


def test_a_folder_without_notes_is_a_usage_error_before_anything_is_spent(
    shad: Any, tmp_path: Path, shad_home: Path
) -> None:
    empty = tmp_path / "empty"
    (empty / "attachments").mkdir(parents=True)
    (empty / "attachments" / "photo.png").write_bytes(b"\x89PNG")
    (empty / "Shad" / "History").mkdir(parents=True)
    (empty / "Shad" / "History" / "old report.md").write_text("# An old run's report\n", "utf-8")
    r = shad("run", SIMPLE, "--vault", str(empty), "--provider", "offline")
    assert r.code == 2
    assert_one_line_error(r, "has no notes")
    assert "point --vault at a folder that contains .md files" in r.err
    assert not (shad_home / "runs.jsonl").exists() and not (empty / "Shad" / "History" / "Runs").exists()
    (empty / "note.md").write_text("# A note\n\nResting beans.\n", "utf-8")
    assert shad("run", SIMPLE, "--vault", str(empty), "--provider", "offline").code in (0, 3)


def test_unknown_provider_is_a_usage_error(shad: Any, vault: Path) -> None:
    r = shad("run", SIMPLE, "--vault", str(vault), "--provider", "nope")
    assert r.code == 2
    assert_one_line_error(r, "unknown provider 'nope'")


def test_the_anthropic_provider_without_a_key_is_a_usage_error_before_the_run(
    shad: Any, vault: Path, shad_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every call would fail: the run spent its recovery ladder and ended FAILED, the SDK's traceback in
    its report and "try again later" as the advice."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    r = shad("run", SIMPLE, "--vault", str(vault), "--provider", "anthropic")
    assert r.code == 2
    assert_one_line_error(r, "needs an API key, and ANTHROPIC_API_KEY is not set")
    assert "--provider offline" in r.err
    assert not (shad_home / "runs.jsonl").exists() and not (vault / "Shad").exists()


def test_unknown_provider_starts_no_run(shad: Any, vault: Path, shad_home: Path) -> None:
    assert shad("run", SIMPLE, "--vault", str(vault), "--provider", "nope").code == 2
    assert not (shad_home / "runs.jsonl").exists()
    assert not (vault / "Shad").exists()


# --- status, trace, export, runs -------------------------------------------------------------------------


def test_status_by_id_alone_in_text_and_json(shad: Any, vault: Path) -> None:
    done = offline_run(SIMPLE, vault)
    as_json = shad("status", done.id, "--json")
    assert as_json.code == 0
    assert as_json.json() == json.loads((done.history.dir / "final.summary.json").read_text("utf-8"))
    text = shad("status", done.id)
    assert text.code == 0
    assert done.id in text.out and "SUCCESS" in text.out and SIMPLE in text.out
    assert "1/1 nodes" in text.out and "provider offline" in text.out
    by_path = shad("status", str(done.history.dir), "--json")  # a run folder works as well as an id
    assert by_path.code == 0 and by_path.json()["run_id"] == done.id


def test_status_without_an_id_is_the_latest_run(shad: Any, vault: Path) -> None:
    nothing = shad("status")
    assert nothing.code == 2
    assert_one_line_error(nothing, "no runs yet", 'shad run "GOAL"')
    offline_run(SIMPLE, vault)
    latest = offline_run(MULTI, vault, max_tokens=TINY)
    text = shad("status")
    assert text.code == 0, text.err
    assert text.out.startswith(f"{latest.id} PARTIAL") and f"shad resume {latest.id}" in text.out
    assert text.out == shad("status", latest.id).out
    as_json = shad("status", "--json")  # the same JSON as with the id
    assert as_json.code == 0 and as_json.json() == shad("status", latest.id, "--json").json()
    assert as_json.json()["run_id"] == latest.id


def test_status_and_runs_of_a_killed_run_say_interrupted_and_resume_finishes_it(
    shad: Any, vault: Path
) -> None:
    first = offline_run(SIMPLE, vault)
    manifest = json.loads((first.history.dir / "run.manifest.json").read_text("utf-8"))
    manifest |= {"status": "RUNNING", "process": dead_process()}  # as a kill in its first session leaves it
    (first.history.dir / "run.manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (first.history.dir / "final.summary.json").unlink()
    text = shad("status", first.id)
    assert text.code == 0 and "INTERRUPTED" in text.out and "RUNNING" not in text.out
    assert "is gone" in text.out and f"shad resume {first.id}" in text.out
    assert shad("status", first.id, "--json").json()["status"] == "INTERRUPTED"
    assert [r["status"] for r in shad("runs", "--json").json() if r["run_id"] == first.id] == ["INTERRUPTED"]
    resumed = shad("resume", first.id, "--json")  # nothing was lost: it ends as the run had
    assert resumed.code == first.exit_code, resumed.err
    assert shad("status", first.id, "--json").json()["status"] == first.status.value != "INTERRUPTED"


def test_trace_tree_shows_every_node_with_its_status(shad: Any, vault: Path) -> None:
    done = offline_run(MULTI, vault, max_tokens=TINY)
    r = shad("trace", "tree", done.id)
    assert r.code == 0
    assert done.id in r.out and "PARTIAL" in r.out
    for node in done.dag:
        line = next(line for line in r.out.splitlines() if f"{node.id} " in line)
        assert node.status.value in line, line
    lines = r.out.splitlines()
    root_at = next(i for i, line in enumerate(lines) if "root " in line)
    child = done.dag.children("root")[0]
    child_at = next(i for i, line in enumerate(lines) if f"{child.id} " in line)
    assert child_at > root_at  # children under their parent


def test_trace_node_in_text_and_json(shad: Any, vault: Path) -> None:
    done = offline_run(SIMPLE, vault)
    as_json = shad("trace", "node", done.id, "root", "--json")
    assert as_json.code == 0
    node = as_json.json()
    assert node["id"] == "root" and node["status"] == "SUCCEEDED" and node["task"] == SIMPLE
    assert node["answer"] == done.dag.root().answer and node["tokens"] > 0
    assert node["retrieval"]["context"] and node["citations"]
    text = shad("trace", "node", done.id, "root")
    assert text.code == 0
    assert f"Task: {SIMPLE}" in text.out and "Answer:" in text.out and "SUCCEEDED" in text.out
    missing = shad("trace", "node", done.id, "no_such_node")
    assert missing.code == 2
    assert_one_line_error(missing, "no_such_node")


def test_export_copies_the_run_and_writes_nothing_else(shad: Any, vault: Path, tmp_path: Path) -> None:
    done = offline_run(SIMPLE, vault)
    (done.history.dir / "artifacts" / "retrieval.py").write_text("print('hi')\n", encoding="utf-8")
    target = tmp_path / "exported"
    before = snapshot(tmp_path)
    r = shad("export", done.id, "--output", str(target))
    assert r.code == 0, r.err
    for name in ("final.report.md", "final.summary.json", "dag.json", "artifacts/retrieval.py"):
        assert (target / name).read_bytes() == (done.history.dir / name).read_bytes(), name
    assert snapshot(tmp_path, skip=target) == before


def test_runs_lists_newest_first(shad: Any, vault: Path, shad_home: Path) -> None:
    assert shad("runs", "--json").json() == []
    # three runs started within one second: their ids differ only in the random suffix
    ids = ["20260101-000000-ffff", "20260101-000000-0000", "20260101-000000-8888"]
    import asyncio

    from engine.runs import start_run

    config = RunConfig(SIMPLE, (str(vault),), provider="offline")
    for run_id in ids:
        asyncio.run(start_run(config, run_id=run_id))
    later = offline_run(SIMPLE, vault)  # a real id, from a later second than the made-up ones
    listed = shad("runs", "--json")
    assert listed.code == 0
    assert [r["run_id"] for r in listed.json()] == [later.id, *reversed(ids)]
    assert all(r["status"] == "SUCCESS" and r["goal"] == SIMPLE for r in listed.json())
    assert [r["run_id"] for r in shad("runs", "--json", "--limit", "2").json()] == [later.id, ids[-1]]
    text = shad("runs")
    assert text.code == 0
    assert text.out.index(later.id) < text.out.index(ids[-1]) < text.out.index(ids[0])


@pytest.mark.parametrize(
    "args",
    [
        ["status", "nope"],
        ["status", "nope", "--json"],
        ["trace", "tree", "nope"],
        ["trace", "node", "nope", "root"],
        ["export", "nope", "--output", "OUT"],
        ["resume", "nope"],
    ],
)
def test_unknown_run_id_is_one_clear_line(shad: Any, args: list[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    r = shad(*[str(out_dir) if a == "OUT" else a for a in args])
    assert r.code != 0
    assert_one_line_error(r, "no run 'nope' found")
    assert not out_dir.exists()


# --- the real console entry point ------------------------------------------------------------------------


def test_subprocess_run_json_and_usage_error(vault: Path, shad_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    env["SHAD_HOME"] = str(shad_home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "engine.cli", "run", SIMPLE, "--vault", str(vault)]
    ok = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert ok.returncode == 0, ok.stderr
    summary = json.loads(ok.stdout)
    assert summary["status"] == "SUCCESS" and summary["provider"] == "offline"  # no key: offline
    assert "Traceback" not in ok.stderr
    bad = subprocess.run(
        [*cmd, "--max-tokens", "5"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_ctrl_c_during_a_run_prints_one_line_with_the_resume_command(vault: Path, shad_home: Path) -> None:
    """A real ``shad run`` process gets SIGINT while its first model call (the plan, to the local stand-in
    for the model API) is in flight: one line naming ``shad resume RUN_ID``, exit 130, no traceback; the
    command it names finishes the run."""
    arrived, release = threading.Event(), threading.Event()

    def reply(body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        if "Reply with JSON only" not in prompt and "as valid JSON only" not in prompt:
            return well_behaved(prompt)
        if not release.is_set():  # the first plan call waits for the Ctrl-C
            arrived.set()
            release.wait(60)
        asks = [a.strip() + "?" for a in MULTI.split("?") if a.strip()]
        return json.dumps({"nodes": [{"id": f"ask{i}", "task": a} for i, a in enumerate(asks)]})

    with FakeLLMServer(reply=reply) as fake:
        env = dict(os.environ, SHAD_HOME=str(shad_home), ANTHROPIC_BASE_URL=fake.base_url)
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-interrupt-0000000000000"
        cmd = [sys.executable, "-m", "engine.cli", "run", MULTI, "--vault", str(vault), "--no-code-mode"]
        proc = subprocess.Popen(
            [*cmd, "--provider", "anthropic"], env=env, cwd=REPO, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert arrived.wait(120), "the run never asked for its plan"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert "Traceback" not in out + err
        (line,) = err.strip().splitlines()
        run_id = next(iter(r["run_id"] for r in list_runs(1)))
        assert line == f"shad: interrupted: run {run_id} stopped PARTIAL; to continue: shad resume {run_id}"
        resumed = subprocess.run(
            [sys.executable, "-m", "engine.cli", *line.split("to continue: shad ")[1].split(), "--json"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["status"] == "SUCCESS"


def test_ctrl_c_in_any_other_command_is_one_line(vault: Path, shad_home: Path) -> None:
    """``shad mcp serve`` (stdio) interrupted once it answered: ``shad: interrupted``, exit 130, nothing
    else (click alone would print an empty line and ``Aborted``)."""
    env = dict(os.environ, SHAD_HOME=str(shad_home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "mcp", "serve", "--vault", str(vault)], env=env, cwd=REPO,
        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n"
        )
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # it serves: now interrupt it
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err == "shad: interrupted\n", err
