"""Files written together (a run's end): each whole and in place, the last one only after all the others,
secrets scrubbed, and nothing half-written or left behind when a write fails."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from pathlib import Path

import pytest

from engine.store._together import submit, to_disk_thread, write_together
from engine.store.history import History

pytestmark = pytest.mark.usefixtures("shad_home")


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_every_file_lands_whole_and_the_last_after_the_others(tmp_path: Path) -> None:
    seen: dict[str, bool] = {}

    def alongside() -> None:  # runs while the others wait for the disk: nothing is renamed yet
        (tmp_path / "replay").mkdir(exist_ok=True)
        (tmp_path / "replay" / "manifest.json").write_text("{}")
        seen["last there early"] = (tmp_path / "run.manifest.json").exists()

    write_together(
        tmp_path,
        [("dag.json", '{"nodes": []}\n'), ("metrics/summary.json", "{}\n")],
        ("run.manifest.json", '{"status": "SUCCESS"}\n'),
        [submit(alongside)],
    )
    assert seen == {"last there early": False}
    assert (tmp_path / "dag.json").read_text() == '{"nodes": []}\n'
    assert (tmp_path / "metrics" / "summary.json").read_text() == "{}\n"
    assert json.loads((tmp_path / "run.manifest.json").read_text()) == {"status": "SUCCESS"}
    assert _leftovers(tmp_path) == []


def test_a_write_that_fails_keeps_the_last_file_out_and_leaves_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "run.manifest.json").write_text('{"status": "RUNNING"}\n')
    (tmp_path / "dag.json").write_text("old\n")
    calls = []

    def broken() -> None:
        calls.append(threading.current_thread().name)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_together(
            tmp_path,
            [("dag.json", "new\n")],
            ("run.manifest.json", '{"status": "SUCCESS"}\n'),
            [submit(broken)],
        )
    assert calls  # it ran, beside the fsyncs
    assert (tmp_path / "dag.json").read_text() == "new\n"  # whole and durable: in place
    # The manifest still says RUNNING: the run is not called finished with a file missing.
    assert json.loads((tmp_path / "run.manifest.json").read_text()) == {"status": "RUNNING"}
    assert _leftovers(tmp_path) == []


def test_history_writes_together_scrubbed_json_and_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-value-12345")
    history = History(tmp_path / "run", "run")
    history.write_json_soon("dag.json", {"checkpoint": 1})  # queued: must not land after the final one
    history.write_together(
        [
            ("dag.json", {"final": "tok-value-12345"}),
            ("final.report.md", "# Report\nkey tok-value-12345\n"),
            ("final.summary.json", {"status": "SUCCESS", "nested": {"a": [1, 2]}}),
        ],
        last=("run.manifest.json", {"status": "SUCCESS"}),
        compact=("dag.json",),
    )
    history.close()
    folder = tmp_path / "run"
    assert (folder / "dag.json").read_text() == '{"final":"[redacted]"}\n'  # compact, scrubbed
    assert (folder / "final.report.md").read_text() == "# Report\nkey [redacted]\n"
    summary = (folder / "final.summary.json").read_text()
    assert json.loads(summary) == {"status": "SUCCESS", "nested": {"a": [1, 2]}}
    assert summary.startswith('{\n  "status"')  # indented unless named compact
    assert json.loads((folder / "run.manifest.json").read_text()) == {"status": "SUCCESS"}


def test_a_checkpoint_being_written_never_lands_after_the_final_file(tmp_path: Path) -> None:
    history = History(tmp_path / "run", "run")
    for i in range(3):  # large: the writer thread is still at it when the final files are written
        history.write_json_soon("dag.json", {"checkpoint": i, "pad": "x" * 4_000_000})
    history.write_together([("dag.json", {"final": True})], last=("run.manifest.json", {"status": "SUCCESS"}))
    history.close()
    assert json.loads((tmp_path / "run" / "dag.json").read_text()) == {"final": True}
    assert _leftovers(tmp_path) == []


def test_disk_threads_outlive_an_event_loop_and_carry_the_context() -> None:
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")

    async def one() -> tuple[str, str, int]:
        where.set("the caller's")
        name, seen = await to_disk_thread(lambda: (threading.current_thread().name, where.get()))
        with pytest.raises(ValueError, match="bad"):
            await to_disk_thread(int, "bad")
        return name, seen, threading.get_ident()

    first, second = asyncio.run(one()), asyncio.run(one())  # two loops, as two runs of the CLI
    assert first[0].startswith("shad-disk") and first[1] == "the caller's"
    assert second[0].startswith("shad-disk")
    assert first[0] in {t.name for t in threading.enumerate()}  # still there for the next loop
