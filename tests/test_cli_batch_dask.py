"""``shad batch --scheduler``: the real CLI on a Dask LocalCluster with a real Redis; the refusals (a
multi-machine scheduler without a shared store, a bad scheduler, the missing extra) as one line, exit 2;
``shad --help`` and a local batch never import Dask."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import redis
from _demo import DEMO
from _redis_server import NoRedisServer, redis_server

from engine.cli import main

REPO = Path(__file__).resolve().parents[1]
NO_DASK = "the dask extra is not installed: pip install 'shad[dask]'"
RUN_GOAL = REPO / "example_notebooks" / "batch" / "run_goal.ipynb"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    shutil.copytree(DEMO, tmp_path / "vault")
    return tmp_path


@pytest.fixture
def redis_url() -> Iterator[str]:
    try:
        with redis_server() as server:
            yield server.url
    except NoRedisServer as exc:
        pytest.skip(str(exc))


def batch_args(env: Path, goals: str, *extra: str) -> list[str]:
    out = str(env / "out")
    return ["batch", goals, "--notebook", str(RUN_GOAL), "--out", out, "--kernel", "python3", *extra]


def goals_file(env: Path, text: str) -> str:
    path = env / "goals.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_scheduler_local_runs_the_rows_on_dask_workers(env: Path, redis_url: str) -> None:
    pytest.importorskip("distributed", reason=NO_DASK)
    goals = goals_file(
        env, "goal,vault\nWhat is first crack?,\nHow long should I rest beans?,no-such-vault\n"
    )
    args = batch_args(
        env, goals, "-p", "vault", str(env / "vault"), "--scheduler", "local", "--parallel", "2"
    )
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args, "--redis", redis_url],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stderr
    results = env / "out" / "results.csv"
    assert done.stdout.strip() == f"1/2 rows succeeded, 1 failed (rows 2); results: {results}"
    assert "✓ row 1 SUCCESS" in done.stderr and "✗ row 2 ERROR" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    table = pd.read_csv(results)
    assert list(table["status"]) == ["SUCCESS", "ERROR"] and table["tokens"][0] > 0
    assert "no-such-vault" in table["error"][1]
    assert len(list((env / "out" / "logs").glob("*.log"))) == 2
    client = redis.Redis.from_url(redis_url)  # the row's run charged the Redis ledger, not SQLite
    assert int(client.hget(f"shad:ledger:{table['run_id'][0]}", "spent") or 0) == table["tokens"][0]
    client.close()


@pytest.mark.parametrize(
    ("extra", "message", "hint"),
    [
        (
            ("--scheduler", "tcp://127.0.0.1:1"),
            "a tcp://127.0.0.1:1 scheduler needs a shared store for the cache and ledger",
            "pass --redis redis://HOST:6379/0",
        ),
        (("--scheduler", "somewhere"), "--scheduler must be 'local' or tcp://HOST:PORT", "--scheduler local"),
        (
            ("--scheduler", "tcp://127.0.0.1:1", "--redis", "/tmp/x.sqlite3"),
            "--redis takes a redis://, rediss:// or unix:// URL",
            "redis://127.0.0.1",
        ),
    ],
)
def test_refusals_exit_2_with_one_line(
    env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: tuple[str, ...],
    message: str,
    hint: str,
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(batch_args(env, goals_file(env, "goal\nx\n"), *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("shad: error: ") and message in err and hint in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (env / "out").exists()


def test_an_unreachable_scheduler_is_one_line(
    env: Path, capsys: pytest.CaptureFixture[str], redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed", reason=NO_DASK)
    monkeypatch.setattr("engine.batch._dask.CONNECT_TIMEOUT", 2.0)
    args = batch_args(
        env, goals_file(env, "goal\nx\n"), "--scheduler", "tcp://127.0.0.1:1", "--redis", redis_url
    )
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("shad: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1")
    assert "dask scheduler" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (env / "out").exists()


def test_without_the_extra_the_error_names_it(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: import raises ImportError
    assert main(batch_args(env, goals_file(env, "goal\nx\n"), "--scheduler", "local")) == 2
    err = capsys.readouterr().err
    assert "Dask distributed, which is not installed" in err and "pip install 'shad[dask]'" in err
    assert len(err.strip().splitlines()) == 1


def test_help_and_a_local_batch_never_import_dask(env: Path) -> None:
    quiet = env / "quiet.ipynb"
    quiet.write_text(
        '{"cells": [{"cell_type": "code", "execution_count": null, "id": "p", "metadata": {"tags": '
        '["parameters"]}, "outputs": [], "source": "goal = \'\'"}], "metadata": {"kernelspec": {"name": '
        '"python3", "display_name": "Python 3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}'
    )
    goals = goals_file(env, "goal\nAnything\n")
    script = textwrap.dedent(
        f"""
        import contextlib, io, sys
        from engine.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            main(["--help"])
            main(["batch", {goals!r}, "--notebook", {str(quiet)!r}, "--out", {str(env / "out")!r}])
        print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"dask", "distributed"}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (env / "out" / "results.csv").is_file()  # the batch did run
