"""``engine.batch``: one papermill execution per CSV row, gathered into a table read from each executed
notebook's ``application/vnd.shad.run+json`` output (real kernels, the offline provider)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
import pytest
from _demo import DEMO
from nbformat.v4 import new_code_cell, new_notebook, new_output

from engine.batch import COLUMNS, MIME_TYPE, BatchResult, read_goals, read_run_bundle, run_batch
from engine.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
RUN_GOAL = REPO / "example_notebooks" / "batch" / "run_goal.ipynb"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}

# Runs the goal with the engine directly and displays the result bundle the way ShadResult does, so the
# batch machinery is tested apart from the magics (the real run_goal.ipynb is tested below too).
DIRECT_RUN = (
    f'MIME = "{MIME_TYPE}"\n'
    + """
import engine
from IPython.display import display

assert isinstance(max_nodes, int), f"max_nodes arrived as {type(max_nodes).__name__}"
run = engine.run(goal, vault, provider=provider, history_dir=history_dir or None, max_nodes=max_nodes)
bundle = {
    "run_id": run.id, "status": run.status.value, "exit_code": run.exit_code, "goal": goal,
    "metrics": run.summary["metrics"], "citations": run.citations, "failures": run.failures,
    "history_dir": str(run.history.dir),
}
print("status: SUCCESS (printed text that must never be scraped)")
display({MIME: bundle, "text/plain": f"run {run.id}"}, raw=True,
        metadata={MIME: {"run_id": run.id, "status": run.status.value}})
"""
)

GOALS = [
    ("How long should I rest beans after roasting?", "", "8"),
    ("What happens at first crack?", "", ""),
    ("Why does water temperature matter for pour-over?", "missing-vault", ""),
    ("How fine should I grind for espresso?", "", "12"),
    ("Compare washed and natural processing.", "", ""),
]


@pytest.fixture(autouse=True)
def _kernels_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels are separate processes started in other folders: they find this checkout's packages
    through PYTHONPATH (an editable install may point elsewhere)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def write_notebook(path: Path, body: str, parameters: str | None = None) -> Path:
    cells = []
    if parameters is not None:
        cells.append(new_code_cell(parameters, metadata={"tags": ["parameters"]}))
    cells.append(new_code_cell(body))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNEL}), path)
    return path


def direct_notebook(folder: Path) -> Path:
    params = 'goal = "?"\nvault = "../vault"\nprovider = "offline"\nhistory_dir = ""\nmax_nodes = 20'
    return write_notebook(folder / "batch" / "direct.ipynb", DIRECT_RUN, params)


def write_csv(path: Path, header: list[str], rows: list[tuple[str, ...]]) -> Path:
    frame = pd.DataFrame(rows, columns=header)
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def batch_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a copy of the demo vault, the direct-run notebook and a 5-row goals CSV."""
    root = tmp_path_factory.mktemp("batch")
    shutil.copytree(DEMO, root / "vault")
    direct_notebook(root)
    write_csv(root / "goals.csv", ["goal", "vault", "max_nodes"], GOALS)
    return root


def batch(home: Path, out: str, store: str, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> BatchResult:
    # One index folder for both batches (the sequential one builds it: the engine's first-time indexing is
    # not yet safe from several processes at once), but each its own cache, so no row is answered from
    # another batch's cache.
    monkeypatch.setenv("SHAD_HOME", str(home / "home"))
    monkeypatch.setenv("SHAD_STORE", str(home / store))
    return run_batch(
        home / "goals.csv",
        home / "batch" / "direct.ipynb",
        home / out,
        parameters={"history_dir": str(home / "history")},
        **kwargs,
    )


@pytest.fixture(scope="module")
def sequential(batch_home: Path) -> Iterator[tuple[BatchResult, list[int]]]:
    seen: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        result = batch(batch_home, "out-seq", "store-seq.sqlite3", mp, on_row=lambda r: seen.append(r["row"]))
    yield result, seen


def test_five_rows_give_one_row_each_with_the_failing_row_recorded(
    sequential: tuple[BatchResult, list[int]], batch_home: Path
) -> None:
    result, seen = sequential
    frame = result.frame()
    assert list(frame.columns) == COLUMNS
    assert list(frame["row"]) == [1, 2, 3, 4, 5]
    assert list(frame["goal"]) == [g for g, _, _ in GOALS]
    assert list(frame["status"]) == ["SUCCESS", "SUCCESS", "ERROR", "SUCCESS", "SUCCESS"]
    assert sorted(seen) == [1, 2, 3, 4, 5]
    failed = frame[frame["row"] == 3].iloc[0]
    assert failed["error"].startswith("VaultNotFoundError: ") and "missing-vault" in failed["error"]
    assert pd.isna(failed["run_id"]) and pd.isna(failed["tokens"])
    assert [r["row"] for r in result.failed] == [3]
    assert result.exit_code == 3


def test_values_come_from_each_runs_result_bundle(sequential: tuple[BatchResult, list[int]]) -> None:
    result, _ = sequential
    for row in result.rows:
        if row["status"] != "SUCCESS":
            continue
        summary = json.loads(
            (Path(row["notebook"]).parents[2] / "history" / row["run_id"] / "final.summary.json").read_text()
        )
        assert row["tokens"] == summary["metrics"]["total_tokens"] > 0
        assert row["llm_calls"] == summary["metrics"]["llm_calls"] >= 1
        assert row["citations"] == len(summary["citations"]) >= 1
        assert row["failures"] == 0 and row["exit_code"] == 0 and row["error"] is None
        assert row["wall_s"] == pytest.approx(summary["metrics"]["duration_ms"] / 1000, abs=0.001)


def test_executed_notebooks_are_kept_one_per_row(sequential: tuple[BatchResult, list[int]]) -> None:
    result, _ = sequential
    names = sorted(p.name for p in (result.out_dir / "notebooks").iterdir())
    assert names == [
        "001-how-long-should-i-rest-beans-after.ipynb",
        "002-what-happens-at-first-crack.ipynb",
        "003-why-does-water-temperature-matter-for.ipynb",
        "004-how-fine-should-i-grind-for-espresso.ipynb",
        "005-compare-washed-and-natural-processing.ipynb",
    ]
    assert [Path(r["notebook"]).name for r in result.rows] == names
    third = nbformat.read(result.out_dir / "notebooks" / names[2], as_version=4)
    errors = [o for c in third.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "VaultNotFoundError"
    first = nbformat.read(result.out_dir / "notebooks" / names[0], as_version=4)
    assert "max_nodes = 8" in "".join(c.source for c in first.cells)  # the CSV cell, injected as an int


def test_results_csv_and_parquet_hold_the_table(sequential: tuple[BatchResult, list[int]]) -> None:
    pytest.importorskip("pyarrow")
    result, _ = sequential
    assert result.csv_path == result.out_dir / "results.csv"
    from_csv = pd.read_csv(result.csv_path)
    assert list(from_csv.columns) == COLUMNS
    assert list(from_csv["status"]) == list(result.frame()["status"])
    assert list(from_csv["tokens"].fillna(-1)) == list(result.frame()["tokens"].fillna(-1))
    assert result.parquet_path == result.out_dir / "results.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(result.parquet_path), result.frame())


def test_parallel_two_gives_the_same_table(
    sequential: tuple[BatchResult, list[int]], batch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parallel = batch(batch_home, "out-par", "store-par.sqlite3", monkeypatch, parallel=2)
    stable = [c for c in COLUMNS if c not in ("run_id", "wall_s", "notebook")]
    pd.testing.assert_frame_equal(parallel.frame()[stable], sequential[0].frame()[stable])
    assert parallel.frame()["run_id"].notna().sum() == 4
    assert set(parallel.frame()["run_id"].dropna()).isdisjoint(set(sequential[0].frame()["run_id"].dropna()))


def test_a_notebook_that_shows_no_result_is_a_failed_row(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "quiet.ipynb", 'print("status: SUCCESS")', 'goal = ""')
    csv_path = write_csv(tmp_path / "goals.csv", ["goal"], [("Anything at all",)])
    result = run_batch(csv_path, nb, tmp_path / "out")
    (row,) = result.rows
    assert row["status"] == "ERROR" and MIME_TYPE in row["error"]
    assert result.exit_code == 3


def test_an_interrupted_batch_keeps_the_rows_that_finished(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "quiet.ipynb", 'print("done")', 'goal = ""')
    csv_path = write_csv(tmp_path / "goals.csv", ["goal"], [("First",), ("Second",), ("Third",)])

    def interrupt(row: dict[str, Any]) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once the first row is in

    with pytest.raises(KeyboardInterrupt):
        run_batch(csv_path, nb, tmp_path / "out", on_row=interrupt)
    table = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(table["goal"]) == ["First"]


def test_the_example_run_goal_notebook_reports_through_the_magic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    shutil.copytree(DEMO, tmp_path / "vault")
    csv_path = write_csv(
        tmp_path / "goals.csv",
        ["goal", "vault"],
        [("How long should I rest beans after roasting?", ""), ("What is first crack?", "no-such-vault")],
    )
    result = run_batch(
        csv_path,
        RUN_GOAL,
        tmp_path / "out",
        kernel_name="python3",
        parameters={"vault": str(tmp_path / "vault")},
    )
    ok, bad = result.rows
    assert ok["status"] == "SUCCESS" and ok["run_id"] and ok["tokens"] > 0 and ok["citations"] >= 1
    assert (tmp_path / "vault" / "Shad" / "History" / "Runs" / ok["run_id"] / "final.summary.json").is_file()
    assert bad["status"] == "ERROR" and "no-such-vault" in bad["error"]
    assert result.exit_code == 3


# --- no kernel needed: reading the CSV and the outputs, checking the inputs -------------------------------


def test_read_run_bundle_takes_the_last_bundle_and_ignores_text() -> None:
    bundle = {"run_id": "r2", "status": "PARTIAL"}
    nb = new_notebook(
        cells=[
            new_code_cell(
                "x",
                outputs=[
                    new_output("stream", name="stdout", text="status: SUCCESS run_id: r0"),
                    new_output("display_data", data={MIME_TYPE: {"run_id": "r1", "status": "SUCCESS"}}),
                ],
            ),
            new_code_cell(
                "y",
                outputs=[
                    new_output(
                        "execute_result",
                        data={MIME_TYPE: bundle, "text/plain": "SUCCESS"},
                        metadata={MIME_TYPE: {"run_id": "r2", "status": "PARTIAL"}},
                        execution_count=2,
                    )
                ],
            ),
        ]
    )
    assert read_run_bundle(nb) == (bundle, {"run_id": "r2", "status": "PARTIAL"})
    assert read_run_bundle(new_notebook(cells=[new_code_cell("z")])) == (None, {})


def test_read_goals_needs_a_goal_column_and_names_the_columns_found(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "g.csv", ["question", "vault"], [("a", "b")])
    with pytest.raises(UsageError) as err:
        read_goals(path)
    assert "no 'goal' column" in err.value.message and "'question', 'vault'" in err.value.message
    with pytest.raises(UsageError, match="row 2 has an empty goal"):
        read_goals(write_csv(tmp_path / "e.csv", ["goal", "x"], [("a", "1"), ("", "2")]))
    with pytest.raises(UsageError, match="no goals"):
        read_goals(write_csv(tmp_path / "h.csv", ["goal"], []))
    with pytest.raises(UsageError, match="goals file not found"):
        read_goals(tmp_path / "nope.csv")
    assert read_goals(write_csv(tmp_path / "ok.csv", [" goal ", "n"], [("a?", " 3 ")])) == [
        {"goal": "a?", "n": "3"}
    ]


def test_inputs_are_checked_before_any_kernel_starts(tmp_path: Path) -> None:
    csv_path = write_csv(tmp_path / "goals.csv", ["goal", "max_nodes"], [("a", "lots")])
    nb = direct_notebook(tmp_path)
    with pytest.raises(UsageError, match=r"row 1: max_nodes=.lots. is not a valid int"):
        run_batch(csv_path, nb, tmp_path / "out")
    with pytest.raises(UsageError, match="notebook not found"):
        run_batch(csv_path, tmp_path / "missing.ipynb", tmp_path / "out")
    untagged = write_notebook(tmp_path / "untagged.ipynb", "goal = 'x'")
    with pytest.raises(UsageError, match="no cell tagged 'parameters'"):
        run_batch(csv_path, untagged, tmp_path / "out")
    with pytest.raises(UsageError, match="kernel 'no-such-kernel' is not installed"):
        run_batch(csv_path, nb, tmp_path / "out", kernel_name="no-such-kernel")
    with pytest.raises(UsageError, match="at least 1"):
        run_batch(csv_path, nb, tmp_path / "out", parallel=0)
    assert not (tmp_path / "out").exists()
