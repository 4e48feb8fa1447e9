"""``engine.batch._execute``: one row's papermill execution. A kernel that never answers its first request
(kernels started at once from several processes can hang on a port race) is started afresh, and a row
whose cells ran is never run twice. Real kernels: the flaky one is a kernelspec whose first start hangs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from engine.batch._execute import KERNEL_STARTS, Job, Notebook, execute_here

# Hangs (alive, silent) on its first start, then is an ordinary IPython kernel.
FLAKY_LAUNCHER = """
import os, subprocess, sys, time
marker, count_file, connection = sys.argv[1], sys.argv[2], sys.argv[3]
with open(count_file, "a") as fh:
    fh.write("start\\n")
if not os.path.exists(marker):
    open(marker, "w").close()
    time.sleep(120)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", connection])
"""


def install_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, hang_always: bool) -> Path:
    launcher = tmp_path / f"{name}.py"
    launcher.write_text(FLAKY_LAUNCHER if not hang_always else "import time\ntime.sleep(120)\n")
    starts = tmp_path / f"{name}-starts.txt"
    argv = [sys.executable, str(launcher), str(tmp_path / f"{name}.marker"), str(starts), "{connection_file}"]
    spec = tmp_path / "share" / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    return starts


def row(tmp_path: Path, kernel: str, start_timeout: float) -> tuple[Notebook, Job]:
    source = tmp_path / "row.ipynb"
    cells = [new_code_cell("print('ran', 6 * 7)")]
    nbformat.write(
        new_notebook(
            cells=cells,
            metadata={"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}},
        ),
        source,
    )
    notebook = Notebook(source, kernel, tmp_path, start_timeout=start_timeout)
    return notebook, Job(1, "goal", {}, tmp_path / "out.ipynb", tmp_path / "row.log")


def test_a_kernel_that_hangs_at_start_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = install_kernel(tmp_path, monkeypatch, "flaky", hang_always=False)
    notebook, job = row(tmp_path, "flaky", start_timeout=5)
    table_row = execute_here(notebook, job)
    # the cell ran; the row displays no Shad result, which is its only complaint
    assert table_row["error"].startswith("the notebook displayed no Shad run result"), table_row
    assert starts.read_text().split() == ["start", "start"]
    executed = nbformat.read(job.output, as_version=4)
    assert "ran 42" in "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert "starting a new kernel (2/3)" in job.log.read_text()


def test_a_kernel_that_never_starts_fails_the_row_after_the_last_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_kernel(tmp_path, monkeypatch, "dead", hang_always=True)
    notebook, job = row(tmp_path, "dead", start_timeout=2)
    table_row = execute_here(notebook, job)
    assert table_row["error"].startswith("RuntimeError: Kernel didn't respond in 2 seconds")
    log = job.log.read_text()
    assert log.count("starting a new kernel") == KERNEL_STARTS - 1


def test_an_error_in_a_cell_is_never_retried(tmp_path: Path) -> None:
    source = tmp_path / "row.ipynb"
    counter = tmp_path / "count.txt"
    code = f"open({str(counter)!r}, 'a').write('x')\nraise ValueError('boom')"
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=[new_code_cell(code)], metadata={"kernelspec": kernelspec}), source)
    job = Job(1, "goal", {}, tmp_path / "out.ipynb", tmp_path / "row.log")
    table_row = execute_here(Notebook(source, "python3", tmp_path), job)
    assert table_row["error"] == "ValueError: boom"
    assert counter.read_text() == "x"
