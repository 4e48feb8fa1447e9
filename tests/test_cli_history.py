"""``shad history gc | pin | unpin`` and ``shad run pin RUN_ID``."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from _cli import caller
from _demo import DEMO

pytestmark = pytest.mark.usefixtures("shad_home")


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def test_gc_pin_and_unpin(shad: Any, tmp_path: Path) -> None:
    vault = Path(shutil.copytree(DEMO, tmp_path / "vault"))
    done = shad("run", "How long should I rest beans?", "--vault", str(vault), "--json")
    assert done.code == 0, done.err
    run_id = done.json()["run_id"]
    folder = Path(done.json()["report_path"]).parent
    old = time.time() - 90 * 86_400
    for name in ("final.summary.json", "run.manifest.json"):
        os.utime(folder / name, (old, old))

    pinned = shad("run", "pin", run_id)
    assert pinned.code == 0 and "pinned" in pinned.out
    plan = shad("history", "gc", "--dry-run", "--json")
    assert plan.code == 0 and {(r["run_id"], r["action"]) for r in plan.json()["runs"]} == {(run_id, "skip")}
    assert shad("history", "unpin", run_id).code == 0
    text = shad("history", "gc", "--dry-run")
    assert "hot -> cold: would reduce" in text.out and (folder / "dag.json").exists()
    moved = shad("history", "gc")
    assert moved.code == 0 and "1 of 1 run(s) moved" in moved.out and not (folder / "dag.json").exists()
    status = shad("status", run_id, "--json")
    assert status.code == 0 and status.json()["status"] == "SUCCESS"

    missing = shad("history", "pin", "no-such-run")
    assert missing.code != 0 and "no run 'no-such-run'" in missing.err and "Traceback" not in missing.err
    bad = shad("history", "gc", "--hot-days", "40", "--warm-days", "10")
    assert bad.code == 2 and "must not outlast" in bad.err
