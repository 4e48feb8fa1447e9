"""``engine.vault._aside``: a search's passage ranking on a worker thread with its own read-only connection,
inline when no worker may be used, and safe across ``close``, a journal switch and ``fork``."""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from _demo import write_vault

from engine import Vault
from engine.vault import _aside
from engine.vault._aside import THREADS_ENV, close_readers, connection_for, run_aside, threads

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    notes: dict[str, str | bytes] = {
        f"topic {i}.md": f"# Topic {i}\n\nAbout bread and baking, part {i}.\n\n## Crust\n\nA crust note.\n"
        for i in range(8)
    }
    notes["zebra.md"] = "---\naliases: [striped horse]\n---\nThe zebra eats grass and bread crust.\n"
    v = Vault(write_vault(tmp_path, notes))
    v.refresh()
    return v


def test_threads_follow_the_setting_and_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "0")
    assert threads() == 0
    monkeypatch.setenv(THREADS_ENV, "3")
    assert threads() == 3
    monkeypatch.setenv(THREADS_ENV, "many")  # unreadable: the default
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    assert threads() == 0  # one usable CPU: a thread would only add its hand-over
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    assert threads() == 1


def test_a_job_reads_on_a_worker_thread_through_its_own_connection(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    index = vault.index
    seen: dict[str, object] = {}

    def job() -> int:
        seen["thread"] = threading.current_thread().name
        seen["conn"] = connection_for(index.db_path)
        return int(index.query("SELECT count(*) FROM files WHERE is_note = 1")[0][0])

    assert run_aside(index.db_path, job)() == 9
    assert str(seen["thread"]).startswith("shad-search")
    assert isinstance(seen["conn"], sqlite3.Connection) and seen["conn"] is not index.conn
    assert connection_for(index.db_path) is None  # this thread keeps the index's own connection
    with pytest.raises(sqlite3.OperationalError, match="readonly"):  # a worker never writes
        run_aside(index.db_path, lambda: index.query("DELETE FROM meta"))()
    assert index.meta("schema") is not None


def test_inline_when_no_worker_may_be_used(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "0")
    here = threading.current_thread().name
    assert run_aside(vault.index.db_path, lambda: threading.current_thread().name)() == here


def test_inline_when_every_worker_is_busy(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    release, started = threading.Event(), threading.Event()

    def hold() -> str:
        started.set()
        release.wait(10)
        return threading.current_thread().name

    first = run_aside(vault.index.db_path, hold)
    assert started.wait(10)
    here = threading.current_thread().name
    assert run_aside(vault.index.db_path, lambda: threading.current_thread().name)() == here  # not queued
    release.set()
    assert first().startswith("shad-search")


def test_an_exception_in_a_job_reaches_the_caller(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")

    def broken() -> None:
        raise ValueError("bad job")

    wait = run_aside(vault.index.db_path, broken)
    with pytest.raises(ValueError, match="bad job"):
        wait()
    assert run_aside(vault.index.db_path, lambda: 7)() == 7  # the worker is free again


def test_search_gives_the_same_hits_with_and_without_a_worker(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = ["bread crust", "striped horse", "topic 3", "zebra grass bread", "crust", "nothing like this"]

    def hits(setting: str) -> list[list[tuple[str, float, str]]]:
        monkeypatch.setenv(THREADS_ENV, setting)
        return [[(h.path, h.score, h.snippet) for h in vault.search(q)] for q in queries]

    inline = hits("0")
    assert inline[1][0][0] == "zebra.md" and not inline[-1]
    assert hits("1") == inline


def test_close_and_a_journal_switch_close_the_workers_connections(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    index = vault.index
    vault.search("bread crust")
    assert any(path == index.db_path for _, path in _aside._READERS)
    # SQLite refuses to leave WAL while another connection has the file open: the switch closes them
    assert index._journal_mode("delete")
    assert not any(path == index.db_path for _, path in _aside._READERS)
    assert index._journal_mode("wal")
    assert vault.search("striped horse")[0].path == "zebra.md"  # a new connection, opened when needed
    close_readers(index.db_path)
    assert not any(path == index.db_path for _, path in _aside._READERS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_worker(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    assert vault.search("striped horse")[0].path == "zebra.md"  # the parent's worker and connection exist
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker thread does not exist here
        try:
            os.close(read)
            name = run_aside(vault.index.db_path, lambda: threading.current_thread().name)()
            path = vault.search("striped horse")[0].path
            os.write(write, f"{name} {path}".encode())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 30)
    if not ready:  # a child waiting for a worker that does not exist
        os.kill(pid, signal.SIGKILL)
    with os.fdopen(read) as answer:
        said = answer.read() if ready else "hung"
    os.waitpid(pid, 0)
    assert said.startswith("shad-search") and said.endswith("zebra.md")
    assert vault.search("bread crust")  # the parent's connections are untouched


def test_a_worker_never_makes_an_index_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    gone = tmp_path / "no such index.sqlite"
    with pytest.raises(sqlite3.OperationalError):
        run_aside(gone, lambda: None)()
    assert not gone.exists()
