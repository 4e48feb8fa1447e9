"""Retention: runs move hot -> warm (large artifacts gzip-compressed, still readable) -> cold (report,
summary and manifests only) by age; pinned and running runs are never touched; a dry run changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from _demo import DEMO

from engine import RunConfig, run
from engine.store.history import find_run, this_process
from engine.store.retention import DAY, WARM_MIN_BYTES, collect, pin, tier_of

pytestmark = pytest.mark.usefixtures("shad_home")
GOAL = "How long should I rest beans after roasting?"


def _run(vault: Path, n: int, age_days: float) -> Path:
    """A real finished run, with a large artifact, whose last session ended ``age_days`` ago."""
    done = run(RunConfig(f"{GOAL} ({n})", (str(vault),), provider="offline", use_cache=False))
    folder = Path(done.history.dir)
    (folder / "artifacts" / "big.json").write_text(json.dumps({"x": "y" * (2 * WARM_MIN_BYTES)}))
    (folder / "artifacts" / "manifest.json").write_text(json.dumps({"files": ["a" * (2 * WARM_MIN_BYTES)]}))
    stamp = time.time() - age_days * DAY
    for name in ("final.summary.json", "run.manifest.json"):
        os.utime(folder / name, (stamp, stamp))
    return folder


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DEMO, tmp_path / "vault"))


def test_runs_move_through_the_tiers_by_age(vault: Path) -> None:
    hot, warm, cold = _run(vault, 1, 1), _run(vault, 2, 10), _run(vault, 3, 60)
    before = {f: _digest(f) for f in (hot, warm, cold)}

    plan = collect(dry_run=True)
    by_dir = {a.dir: a for a in plan.actions}
    assert by_dir[str(hot)].action == "keep" and by_dir[str(warm)].action == "compress"
    assert by_dir[str(cold)].action == "reduce" and plan.bytes_freed > 0
    assert {f: _digest(f) for f in (hot, warm, cold)} == before  # a dry run changes nothing

    report = collect()
    assert report.bytes_freed > 0
    assert _digest(hot) == before[hot] and tier_of(hot) == "hot"
    assert tier_of(warm) == "warm" and not (warm / "artifacts" / "big.json").exists()
    assert (warm / "artifacts" / "big.json.gz").exists() and (warm / "artifacts" / "manifest.json").exists()
    history = find_run(warm.name)
    assert history.read_json("artifacts/big.json")["x"].startswith("yyy")  # still readable
    assert (warm / "dag.json").exists() and (warm / "events.jsonl").exists()
    assert tier_of(cold) == "cold"
    left = sorted(str(p.relative_to(cold)) for p in cold.rglob("*") if p.is_file())
    assert left == [
        "artifacts/manifest.json",
        "final.report.md",
        "final.summary.json",
        "retention.json",
        "run.manifest.json",
    ]
    assert collect().bytes_freed == 0  # nothing more to do


def test_pinned_and_running_runs_are_never_touched(vault: Path) -> None:
    pinned, running = _run(vault, 4, 60), _run(vault, 5, 60)
    assert pin(pinned.name)["pinned"] is True
    manifest = json.loads((running / "run.manifest.json").read_text())
    manifest.update(status="RUNNING", process=this_process())  # a live session (this very process)
    (running / "run.manifest.json").write_text(json.dumps(manifest))
    stamp = time.time() - 60 * DAY
    os.utime(running / "run.manifest.json", (stamp, stamp))
    before = {f: _digest(f) for f in (pinned, running)}
    report = collect(hot_days=0, warm_days=0)
    reasons = {a.dir: (a.action, a.reason) for a in report.actions}
    assert reasons[str(pinned)] == ("skip", "pinned") and reasons[str(running)] == ("skip", "running")
    assert _digest(running) == before[running]
    assert _digest(pinned) == before[pinned]  # retention.json (the pin) included
    pin(pinned.name, False)
    assert tier_of(pinned) == "hot" and collect(hot_days=0, warm_days=0).bytes_freed > 0


def test_bad_tiers_are_usage_errors() -> None:
    from engine.errors import UsageError

    with pytest.raises(UsageError, match="must not outlast"):
        collect(hot_days=10, warm_days=5)
