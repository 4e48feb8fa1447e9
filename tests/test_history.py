"""Run history: where the folder goes (``--history-dir``, the vault, ``$SHAD_HOME``), atomic writes,
JSONL appends that survive a kill, secret scrubbing in every file, and finding runs again."""

from __future__ import annotations

import gc
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import ShadError
from engine.store.history import (
    HISTORY_FOLDER,
    History,
    RunNotFoundError,
    find_run,
    list_runs,
    new_run_id,
    process_gone,
    run_status,
    scrub,
    this_process,
)

FAKE_ANTHROPIC_KEY = "sk-ant-api03-FAKE0123456789abcdefFAKE0123456789abcdef-XYZ"


pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Note.md").write_text("# Note\n", encoding="utf-8")
    return root


@pytest.fixture
def history(vault: Path) -> History:
    return History.create("20260101-120000-abcd", str(vault))


def _all_files(folder: Path) -> Iterator[Path]:
    return (p for p in folder.rglob("*") if p.is_file())


# --- where the run folder goes -----------------------------------------------------------------------------


def test_new_run_ids_are_sortable_and_unique() -> None:
    ids = [new_run_id() for _ in range(50)]
    assert len(set(ids)) == 50
    date, time, suffix = ids[0].split("-")
    assert len(date) == 8 and len(time) == 6 and len(suffix) == 4


def test_the_run_folder_is_in_the_vault_by_default(vault: Path) -> None:
    h = History.create("run-1", str(vault))
    assert h.dir == vault / HISTORY_FOLDER / "Runs" / "run-1"
    assert h.dir.is_dir()
    assert h.run_id == "run-1"
    for sub in ("decisions", "metrics", "errors", "artifacts", "replay"):
        assert (h.dir / sub).is_dir()
    assert not (h.dir / ".write-test").exists()  # the writability probe is cleaned up


def test_history_dir_wins_over_the_vault(vault: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    h = History.create("run-2", str(vault), history_dir=str(elsewhere))
    assert h.dir == elsewhere / "run-2"
    assert h.dir.is_dir()
    assert not (vault / "Shad").exists()


def test_an_unwritable_history_dir_is_an_error_not_a_silent_fallback(
    vault: Path, tmp_path: Path, shad_home: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ShadError) as err:
        History.create("run-3", str(vault), history_dir=str(blocker / "sub"))
    assert err.value.hint and "history-dir" in err.value.hint
    assert not (vault / "Shad").exists()
    assert not (shad_home / "history" / "run-3").exists()


def test_an_unwritable_vault_falls_back_to_shad_home(vault: Path, shad_home: Path) -> None:
    # A regular file where the Shad/ folder should be makes the vault location unwritable even for root.
    (vault / "Shad").write_text("in the way")
    h = History.create("run-4", str(vault))
    assert h.dir == shad_home / "history" / "run-4"
    assert h.dir.is_dir()
    h.write_json("run.manifest.json", {"goal": "g"})
    assert find_run("run-4").dir == h.dir


def test_a_read_only_vault_falls_back_to_shad_home(vault: Path, shad_home: Path) -> None:
    vault.chmod(0o555)
    try:
        probe = vault / ".probe"
        try:
            probe.write_text("x")
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip(
                "running with privileges that ignore file modes (root): chmod 0o555 cannot block writes"
            )
        h = History.create("run-5", str(vault))
        assert h.dir == shad_home / "history" / "run-5"
        assert not (vault / "Shad").exists()
    finally:
        vault.chmod(stat.S_IRWXU)


def test_creating_a_run_registers_it_in_shad_home(vault: Path, shad_home: Path) -> None:
    h = History.create("run-6", str(vault))
    lines = (shad_home / "runs.jsonl").read_text().splitlines()
    assert {"run_id": "run-6", "dir": str(h.dir)} in [json.loads(line) for line in lines]


# --- atomic writes -----------------------------------------------------------------------------------------


def test_write_json_and_read_json(history: History) -> None:
    data = {"run_id": history.run_id, "nested": {"a": [1, 2, 3]}, "text": "café ☕"}
    path = history.write_json("final.summary.json", data)
    assert path == history.dir / "final.summary.json"
    assert history.read_json("final.summary.json") == data
    assert "café ☕" in path.read_text(encoding="utf-8")  # not \\u-escaped
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_write_json_into_subfolders_and_new_folders(history: History) -> None:
    history.write_json("decisions/strategy.json", {"strategy": "research"})
    history.write_text("artifacts/deep/new/answer.md", "# answer\n")
    assert history.read_json("decisions/strategy.json") == {"strategy": "research"}
    assert (history.dir / "artifacts/deep/new/answer.md").read_text() == "# answer\n"


def test_write_text_replaces_the_whole_file(history: History) -> None:
    history.write_text("final.report.md", "a long first version\n" * 100)
    history.write_text("final.report.md", "short\n")
    assert (history.dir / "final.report.md").read_text() == "short\n"


def test_writes_leave_no_temporary_files_behind(history: History) -> None:
    for i in range(5):
        history.write_json("dag.json", {"version": i})
        history.write_text("final.report.md", f"report {i}\n")
        history.write_json("metrics/summary.json", {"i": i})
    leftovers = [p.name for p in _all_files(history.dir) if p.name.startswith(".")]
    assert leftovers == []
    assert sorted(p.name for p in history.dir.iterdir() if p.is_file()) == ["dag.json", "final.report.md"]


def test_a_write_that_fails_leaves_the_old_file_intact_and_no_temp_file(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    history.write_json("dag.json", {"version": 1})

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        history.write_json("dag.json", {"version": 2})
    monkeypatch.undo()
    assert history.read_json("dag.json") == {"version": 1}
    assert [p.name for p in history.dir.iterdir() if p.name.startswith(".")] == []


def test_unserialisable_values_are_written_as_strings(history: History) -> None:
    history.write_json("x.json", {"path": Path("/a/b"), "set": {1}})
    data = history.read_json("x.json")
    assert data["path"] == "/a/b"


# --- append and read_lines ---------------------------------------------------------------------------------


def test_append_writes_one_json_line_per_call(history: History) -> None:
    for i in range(3):
        history.append("events.jsonl", {"event": "NODE_STARTED", "i": i, "text": "multi\nline"})
    lines = (history.dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    assert [json.loads(line)["i"] for line in lines] == [0, 1, 2]
    assert history.read_lines("events.jsonl")[0]["text"] == "multi\nline"


def test_each_append_is_on_disk_at_once(history: History) -> None:
    history.append("events.jsonl", {"event": "RUN_STARTED"})
    # read through a different file object before anything else happens, as a killed run would leave it
    assert json.loads((history.dir / "events.jsonl").read_text()) == {"event": "RUN_STARTED"}


def test_read_lines_skips_a_truncated_last_line(history: History) -> None:
    history.append("events.jsonl", {"event": "A"})
    history.append("events.jsonl", {"event": "B"})
    with (history.dir / "events.jsonl").open("a") as fh:
        fh.write('{"event": "C", "cut off by a ki')
    assert [r["event"] for r in history.read_lines("events.jsonl")] == ["A", "B"]


def test_an_append_after_a_truncated_line_is_not_lost(history: History) -> None:
    history.append("events.jsonl", {"event": "A"})
    with (history.dir / "events.jsonl").open("a") as fh:
        fh.write('{"event": "B", "cut off by a ki')  # the run was killed here; now it is resumed
    history.append("events.jsonl", {"event": "RUN_RESUMED"})
    assert [r["event"] for r in history.read_lines("events.jsonl")] == ["A", "RUN_RESUMED"]


def _open_on(path: Path) -> int:
    """How many of this process's descriptors are open on ``path``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


def test_the_run_and_another_writer_append_whole_lines_and_close_releases_the_files(history: History) -> None:
    other = History(history.dir, history.run_id)  # as a checkpoint decided from elsewhere writes
    history.append("events.jsonl", {"event": "A"})
    other.append("events.jsonl", {"event": "CHECKPOINT_DECIDED"})
    history.append("events.jsonl", {"event": "B"})
    assert [r["event"] for r in history.read_lines("events.jsonl")] == ["A", "CHECKPOINT_DECIDED", "B"]
    if not Path("/proc/self/fd").is_dir():
        return  # no way to count descriptors here
    events = history.dir / "events.jsonl"
    assert _open_on(events) == 2  # the run's appends keep their file open
    history.close()
    other.close()
    assert _open_on(events) == 0
    late = History(history.dir, history.run_id)
    late.append("events.jsonl", {"event": "C"})  # after the run closed (a checkpoint decided late)
    assert [r["event"] for r in history.read_lines("events.jsonl")][-1] == "C"
    assert _open_on(events) == 1
    del late  # never closed: its file is let go when it is collected
    gc.collect()
    assert _open_on(events) == 0


def test_read_lines_of_a_missing_file_is_empty(history: History) -> None:
    assert history.read_lines("metrics/nodes.jsonl") == []


def test_appends_from_many_threads_do_not_interleave(history: History) -> None:
    import threading

    def work(t: int) -> None:
        for i in range(100):
            history.append("events.jsonl", {"t": t, "i": i, "pad": "x" * 500})

    pool = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    records = history.read_lines("events.jsonl")
    assert len(records) == 800
    assert len((history.dir / "events.jsonl").read_text().splitlines()) == 800


# --- secrets -----------------------------------------------------------------------------------------------


def test_scrub_redacts_values_of_secret_named_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-value-12345")
    monkeypatch.setenv("SOME_SECRET", "correct horse battery")
    monkeypatch.setenv("DB_API_KEY", "plainkey99")
    text = "a tok-value-12345 b correct horse battery c plainkey99 d"
    assert scrub(text) == "a [redacted] b [redacted] c [redacted] d"


def test_scrub_leaves_short_values_and_ordinary_variables_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_TOKEN", "abc1234")  # 7 chars: too short to be a secret worth redacting
    monkeypatch.setenv("SHAD_GREETING", "hello coffee world")
    text = "abc1234 and hello coffee world"
    assert scrub(text) == text


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-AbCdEf0123456789_xyz",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
        "sk-0123456789abcdefghij",
        "ghp_0123456789abcdefABCDEF",
    ],
)
def test_scrub_redacts_key_shaped_strings_even_without_the_env_var(secret: str) -> None:
    out = scrub(f"key={secret} and more")
    assert secret not in out
    assert "[redacted]" in out
    assert out.endswith(" and more")


def test_scrub_does_not_touch_words_that_merely_contain_sk() -> None:
    text = "ask-me-anything-please-now, a task-oriented risk-assessment"
    assert scrub(text) == text


def test_no_secret_appears_in_any_file_of_the_run(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "opensesame-0123456789")
    h = History.create("run-secret", str(vault))
    secrets = [FAKE_ANTHROPIC_KEY, "opensesame-0123456789"]
    leaky = {
        "headers": {"x-api-key": FAKE_ANTHROPIC_KEY, "authorization": "Bearer opensesame-0123456789"},
        "env": dict(os.environ),
        "list": [FAKE_ANTHROPIC_KEY],
        FAKE_ANTHROPIC_KEY: "as a key too",
    }
    h.write_json("run.manifest.json", leaky)
    h.write_json("replay/manifest.json", {"calls": [leaky]})
    h.write_text("final.report.md", f"---\ntype: report\n---\nThe key is {FAKE_ANTHROPIC_KEY}.\n")
    h.append("events.jsonl", {"event": "ERROR", "message": f"401 for key {FAKE_ANTHROPIC_KEY}"})
    h.append("metrics/nodes.jsonl", leaky)
    files = list(_all_files(h.dir))
    assert len(files) == 5
    for path in files:
        content = path.read_text(encoding="utf-8")
        for secret in secrets:
            assert secret not in content, f"{secret[:10]}… leaked into {path.relative_to(h.dir)}"
        assert "[redacted]" in content
    # the JSON files stay valid JSON after scrubbing
    assert h.read_json("run.manifest.json")["headers"]["x-api-key"] == "[redacted]"
    assert h.read_lines("events.jsonl")[0]["message"] == "401 for key [redacted]"


def test_a_secret_with_json_escaped_characters_does_not_leak_through_json(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = 'pa"ss\\word-0123'
    monkeypatch.setenv("DB_PASSWORD", secret)
    history.write_json("run.manifest.json", {"dsn": f"postgres://u:{secret}@db"})
    history.append("events.jsonl", {"message": f"login failed with {secret}"})
    assert secret not in json.dumps(history.read_json("run.manifest.json"))
    assert secret not in history.read_json("run.manifest.json")["dsn"]
    assert secret not in history.read_lines("events.jsonl")[0]["message"]


# --- finding runs ------------------------------------------------------------------------------------------


def _make_run(vault: Path, run_id: str, goal: str, status: str | None = None) -> History:
    h = History.create(run_id, str(vault))
    h.write_json("run.manifest.json", {"run_id": run_id, "status": "RUNNING", "config": {"goal": goal}})
    if status:
        h.write_json("final.summary.json", {"run_id": run_id, "status": status, "goal": goal})
    return h


def test_find_run_by_id_from_anywhere(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _make_run(vault, "20260101-000000-aaaa", "How?")
    monkeypatch.chdir(tmp_path)  # no vault named, no folder given
    found = find_run("20260101-000000-aaaa")
    assert found.dir == made.dir
    assert found.run_id == "20260101-000000-aaaa"
    assert found.read_json("run.manifest.json")["config"]["goal"] == "How?"


def test_find_run_by_folder_path(vault: Path, tmp_path: Path) -> None:
    other_home = tmp_path / "copied-run"
    made = _make_run(vault, "20260101-000000-bbbb", "Why?")
    made.dir.rename(other_home)  # moved elsewhere: the index no longer knows it, the path still works
    found = find_run(str(other_home))
    assert found.dir == other_home
    assert found.run_id == "copied-run"


def test_an_unknown_run_id_raises_run_not_found() -> None:
    with pytest.raises(RunNotFoundError) as err:
        find_run("20990101-000000-ffff")
    assert "20990101-000000-ffff" in err.value.message
    assert err.value.hint


def test_a_registered_run_whose_folder_is_gone_is_not_found(vault: Path) -> None:
    made = _make_run(vault, "20260101-000000-cccc", "Gone?")
    (made.dir / "run.manifest.json").unlink()
    with pytest.raises(RunNotFoundError):
        find_run("20260101-000000-cccc")


def test_list_runs_is_newest_first_with_status_and_goal(vault: Path) -> None:
    _make_run(vault, "20260102-000000-bbbb", "second goal", status="PARTIAL")
    _make_run(vault, "20260101-000000-aaaa", "first goal", status="SUCCESS")
    _make_run(vault, "20260103-000000-cccc", "third goal")  # still running: manifest only
    runs = list_runs()
    assert [r["run_id"] for r in runs] == [
        "20260103-000000-cccc",
        "20260102-000000-bbbb",
        "20260101-000000-aaaa",
    ]
    assert [r["status"] for r in runs] == ["RUNNING", "PARTIAL", "SUCCESS"]
    assert [r["goal"] for r in runs] == ["third goal", "second goal", "first goal"]
    assert list_runs(limit=1)[0]["run_id"] == "20260103-000000-cccc"


def test_list_runs_with_no_runs_is_empty() -> None:
    assert list_runs() == []


def test_list_runs_survives_a_corrupt_index_line_and_a_deleted_folder(vault: Path, shad_home: Path) -> None:
    made = _make_run(vault, "20260101-000000-aaaa", "kept", status="SUCCESS")
    with (shad_home / "runs.jsonl").open("a") as fh:
        fh.write('{"run_id": "broken')
    gone = _make_run(vault, "20260102-000000-dddd", "deleted")
    for p in sorted(gone.dir.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    gone.dir.rmdir()
    runs = {r["run_id"]: r for r in list_runs()}
    assert runs["20260101-000000-aaaa"]["status"] == "SUCCESS"
    assert runs["20260101-000000-aaaa"]["dir"] == str(made.dir)
    assert runs["20260102-000000-dddd"]["status"] == "UNKNOWN"


# --- who runs a run: a killed run is INTERRUPTED, not RUNNING forever -------------------------------------


def test_this_process_is_alive_and_a_killed_one_is_gone() -> None:
    me = this_process()
    assert me["pid"] == os.getpid() and me["host"] == socket.gethostname()
    assert process_gone(me) is None
    child = subprocess.Popen(
        [sys.executable, "-c", "import json, sys; from engine.store.history import this_process as t; "
         "print(json.dumps(t()), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        theirs = json.loads(child.stdout.readline())
        assert theirs["pid"] == child.pid and process_gone(theirs) is None  # another live process
    finally:
        child.kill()
        child.wait(30)
    why = process_gone(theirs)
    assert why is not None and f"pid {child.pid}" in why and "is gone" in why


def test_a_reused_pid_or_another_host_is_judged_right() -> None:
    me = this_process()
    if me["started"] is not None:  # a pid now held by another process (a later start) is not the run's
        assert process_gone(me | {"started": "1"}) is not None
    assert process_gone(me | {"host": "elsewhere.invalid"}) is None  # cannot tell from here: not gone
    assert process_gone(None) is None and process_gone({"pid": "12"}) is None


def test_run_status_reads_the_manifest_and_the_process() -> None:
    alive = {"status": "RUNNING", "process": this_process()}
    dead = {"status": "RUNNING", "process": this_process() | {"started": "1"}}
    assert run_status(alive, {}) == ("RUNNING", None)
    assert run_status(alive, {"status": "PARTIAL"}) == ("RUNNING", None)  # a resumed session runs
    if this_process()["started"] is not None:
        status, why = run_status(dead, {"status": "PARTIAL"})
        assert status == "INTERRUPTED" and why and "is gone" in why
    assert (
        run_status({"status": "SUCCESS", "process": dead["process"]}, {"status": "SUCCESS"})[0] == "SUCCESS"
    )
    assert run_status({"status": "RUNNING"}, {}) == ("RUNNING", None)  # no process recorded: as before


def test_list_runs_says_interrupted_for_a_run_whose_process_is_gone(vault: Path) -> None:
    if this_process()["started"] is None:
        pytest.skip("no /proc here to tell a reused pid")
    for run_id, process in (
        ("20260101-000000-aaaa", this_process()),
        ("20260102-000000-bbbb", this_process() | {"started": "1"}),
    ):
        h = History.create(run_id, str(vault))
        h.write_json("run.manifest.json", {"status": "RUNNING", "process": process, "config": {"goal": "g"}})
    assert {r["run_id"]: r["status"] for r in list_runs()} == {
        "20260101-000000-aaaa": "RUNNING",
        "20260102-000000-bbbb": "INTERRUPTED",
    }


def test_checkpoints_are_written_off_the_caller_and_never_land_late(history: History) -> None:
    for n in range(50):
        history.write_json_soon("dag.json", {"nodes": n})
    history.flush()
    assert history.read_json("dag.json") == {"nodes": 49}  # the last one, whatever was coalesced
    assert (history.dir / "dag.json").read_text().startswith('{"nodes":49}')  # compact
    history.write_json_soon("dag.json", {"nodes": "queued"})
    history.write_json("dag.json", {"nodes": "final"})  # waits for the queued one, then writes
    history.close()
    assert history.read_json("dag.json") == {"nodes": "final"}


def test_a_secret_set_after_the_history_opened_is_still_scrubbed(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    history.append("events.jsonl", {"message": "before"})
    monkeypatch.setenv("LATE_API_KEY", "late-secret-value-0987")
    history.append("events.jsonl", {"message": "key late-secret-value-0987"})
    assert "late-secret-value-0987" not in (history.dir / "events.jsonl").read_text()
