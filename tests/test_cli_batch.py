"""``shad batch``: exit codes 0 / 3 / 2, one summary line, and one clear error line (never a traceback)
for every mistake a user can make. Runs the real ``example_notebooks/batch/run_goal.ipynb``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _demo import DEMO

from engine.cli import main

REPO = Path(__file__).resolve().parents[1]
RUN_GOAL = REPO / "example_notebooks" / "batch" / "run_goal.ipynb"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tmp folder with a demo vault copy; SHAD_HOME inside it; kernels import this checkout."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    shutil.copytree(DEMO, tmp_path / "vault")
    return tmp_path


def csv_file(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def batch_args(env: Path, goals: str, *extra: str) -> list[str]:
    # python3 as the kernel: run_goal.ipynb loads shad_magics itself, and the shad kernelspec is tested
    # with the example notebooks.
    out = str(env / "out")
    return ["batch", goals, "--notebook", str(RUN_GOAL), "--out", out, "--kernel", "python3", *extra]


def test_every_row_succeeding_exits_0(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    goals = csv_file(env / "goals.csv", "goal\nHow long should I rest beans after roasting?\n")
    code = main(batch_args(env, goals, "-p", "vault", str(env / "vault")))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == f"1/1 rows succeeded; results: {env / 'out' / 'results.csv'}"
    table = pd.read_csv(env / "out" / "results.csv")
    assert list(table["status"]) == ["SUCCESS"] and table["tokens"][0] > 0
    assert "✓ row 1 SUCCESS" in captured.err


def test_a_failing_row_exits_3_and_the_others_still_run(env: Path) -> None:
    goals = csv_file(
        env / "goals.csv",
        "goal,vault\nWhat is first crack?,\nHow long should I rest beans?,no-such-vault\n",
    )
    args = batch_args(env, goals, "-p", "vault", str(env / "vault"), "--parallel", "2")
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 3, done.stderr
    assert (
        done.stdout.strip()
        == f"1/2 rows succeeded, 1 failed (rows 2); results: {env / 'out' / 'results.csv'}"
    )
    assert "✗ row 2 ERROR" in done.stderr and "no-such-vault" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "[IPKernelApp]" not in done.stderr  # kernels log to out/logs/, not over the terminal
    table = pd.read_csv(env / "out" / "results.csv")
    assert list(table["status"]) == ["SUCCESS", "ERROR"]
    assert len(list((env / "out" / "logs").glob("*.log"))) == 2


@pytest.mark.parametrize(
    ("csv_text", "extra", "message"),
    [
        ("question,vault\nx,y\n", (), "goals.csv has no 'goal' column (columns found: 'question', 'vault')"),
        ("goal\n", (), "goals.csv has no goals"),
        ("goal,max_nodes\nx,many\n", (), "row 1: max_nodes='many' is not a valid int"),
        ("goal\nx\n", ("-p", "max_nodes", "many"), "-p: max_nodes='many' is not a valid int"),
        ("goal\nx\n", ("--parallel", "0"), "Invalid value for '--parallel'"),
        ("goal\nx\n", ("--kernel", "no-such-kernel"), "kernel 'no-such-kernel' is not installed"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    env: Path, capsys: pytest.CaptureFixture[str], csv_text: str, extra: tuple[str, ...], message: str
) -> None:
    goals = csv_file(env / "goals.csv", csv_text)
    assert main(batch_args(env, goals, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("shad: error: ") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (env / "out").exists()


def test_missing_files_are_usage_errors(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    goals = csv_file(env / "goals.csv", "goal\nx\n")
    missing_nb = ["batch", goals, "--notebook", str(env / "nope.ipynb"), "--out", str(env / "out")]
    assert main(missing_nb) == 2
    assert f"shad: error: notebook not found: {env / 'nope.ipynb'}" in capsys.readouterr().err
    assert main(batch_args(env, str(env / "nope.csv"))) == 2
    assert f"goals file not found: {env / 'nope.csv'}" in capsys.readouterr().err
    assert main(["batch", goals, "--notebook", str(RUN_GOAL)]) == 2
    assert "Missing option '--out'" in capsys.readouterr().err
    assert not (env / "out").exists()
