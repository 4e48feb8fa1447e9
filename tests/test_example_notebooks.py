"""The example notebooks: each runs top to bottom in the ``shad`` kernel (nbclient, a real kernel, the
offline provider, no API key) in a temp copy of ``example_notebooks/``; committed copies carry no outputs;
a papermill run whose Shad run fails stops with an error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest
from nbclient import NotebookClient

import engine
from engine.batch import MIME_TYPE

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "example_notebooks"
NOTEBOOKS = sorted(
    str(p.relative_to(EXAMPLES)) for p in [*EXAMPLES.glob("*.ipynb"), *EXAMPLES.glob("batch/*.ipynb")]
)
SHAD_KERNELSPEC = {"name": "shad", "display_name": "Shad (Python 3)", "language": "python"}


@pytest.fixture(scope="module")
def shad_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``shad`` kernelspec installed into a temp prefix (``python -m shad_kernel install --prefix``)
    and found through JUPYTER_PATH, by this process and by every kernel and batch it starts."""
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    with pytest.MonkeyPatch.context() as mp:
        # Kernels run in other folders: they import this checkout through PYTHONPATH.
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        subprocess.run([sys.executable, "-m", "shad_kernel", "install", "--prefix", str(prefix)], check=True)
        mp.setenv(
            "JUPYTER_PATH",
            os.pathsep.join(
                filter(None, [str(prefix / "share" / "jupyter"), os.environ.get("JUPYTER_PATH")])
            ),
        )
        yield "shad"


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shad_kernel: str) -> Path:
    """A fresh copy of example_notebooks/ (without any run history) and an empty SHAD_HOME."""
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "shad-home"))
    monkeypatch.delenv("SHAD_VAULT", raising=False)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the notebooks' temp folders, for the kernels
    copy = tmp_path / "example_notebooks"
    shutil.copytree(
        EXAMPLES, copy, ignore=lambda folder, names: ["Shad"] if Path(folder).name == "vault" else []
    )
    return copy


def execute(path: Path, kernel: str = "shad") -> Any:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, kernel_name=kernel, timeout=300, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    return nb


def outputs(nb: Any) -> list[Any]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def bundles(nb: Any) -> list[dict[str, Any]]:
    return [dict(o["data"][MIME_TYPE]) for o in outputs(nb) if MIME_TYPE in o.get("data", {})]


def stdout(nb: Any) -> str:
    return "".join(o.get("text", "") for o in outputs(nb) if o.get("name") == "stdout")


def test_there_are_the_documented_notebooks() -> None:
    assert NOTEBOOKS == [
        "batch/run_goal.ipynb",
        "batch_evaluation.ipynb",
        "checkpoints.ipynb",
        "layered_vaults.ipynb",
        "quickstart.ipynb",
        "record_and_replay.ipynb",
        "shad_kernel.ipynb",
    ]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebooks_use_the_shad_kernel_take_parameters_and_hold_no_outputs(name: str) -> None:
    nb = nbformat.read(EXAMPLES / name, as_version=4)
    nbformat.validate(nb)
    assert dict(nb.metadata.kernelspec) == SHAD_KERNELSPEC
    assert nb.metadata.language_info.name == "python"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code), "clear the outputs"
    params = papermill.inspect_notebook(str(EXAMPLES / name))
    assert params["provider"]["default"] == '"offline"'
    assert next(c for c in code if "parameters" in c.metadata.get("tags", [])) is code[0]


@pytest.mark.parametrize("kernel", ["shad", "python3"])  # it loads shad_magics itself: any Python kernel
def test_quickstart(examples: Path, kernel: str) -> None:
    nb = execute(examples / "quickstart.ipynb", kernel)
    (run,) = bundles(nb)
    assert run["status"] == "SUCCESS" and run["metrics"]["nodes_total"] > 1 and run["citations"]
    assert (examples / "vault" / "Shad" / "History" / "Runs" / run["run_id"] / "final.report.md").is_file()
    kinds = [k for o in outputs(nb) for k in o.get("data", {})]
    assert kinds.count("application/vnd.jupyter.widget-view+json") == 2  # live during the run, then reopened
    assert "image/png" in kinds  # tokens per node


def test_layered_vaults(examples: Path) -> None:
    nb = execute(examples / "layered_vaults.ipynb")
    (run,) = bundles(nb)
    assert {c["vault"] for c in run["citations"]} == {"house", "vault"}
    assert "house rule ranks" in stdout(nb)


def test_shad_kernel(examples: Path) -> None:
    nb = execute(examples / "shad_kernel.ipynb")
    goals = [b["goal"] for b in bundles(nb)]
    assert goals == [
        "How long should I rest beans after roasting?",  # plain English: a goal
        "beans",  # forced with >>
        "Plan a first light roast on a popcorn popper: stages, timing and what to listen for.",
    ]
    assert "Object `espresso` not found." in stdout(nb)  # forced Python with #py: IPython's help


def test_record_and_replay(examples: Path) -> None:
    nb = execute(examples / "record_and_replay.ipynb")
    recorded, replayed = bundles(nb)
    assert recorded["status"] == replayed["status"] == "SUCCESS"
    assert replayed["run_id"] != recorded["run_id"]
    assert "replayed: {'replay': " in stdout(nb)
    assert "{'claims': True, 'DAG': True, 'citations': True}" in stdout(nb)


def test_checkpoints(examples: Path) -> None:
    """Headless on purpose: the notebook pauses explicitly, decides with %shad checkpoint, then lets the
    approve policy decide unattended; its own asserts check each step."""
    nb = execute(examples / "checkpoints.ipynb")
    paused, decided, unattended = bundles(nb)
    # Decided and finished; the coffee vault has no note on payments, so the ask stays uncovered: PARTIAL.
    assert decided["run_id"] == paused["run_id"] and decided["status"] == "PARTIAL"
    # The cell that paused was updated in place once the run was decided: no stale NEEDS_HUMAN report,
    # banner or warning is left in it (its own print, a later cell, saw NEEDS_HUMAN at the time).
    paused_cell = next(
        c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%shad run -o paused")
    )
    assert paused["status"] == "PARTIAL" and "NEEDS_HUMAN" not in json.dumps(paused_cell.outputs)
    assert "NEEDS_HUMAN\n" in stdout(nb)
    assert unattended["status"] == "PARTIAL"
    assert "root - retrieval stayed weak after the recovery ladder" in stdout(nb)
    assert "checkpoint: edit by a person" in stdout(nb)


def test_batch_evaluation(examples: Path) -> None:
    nb = execute(examples / "batch_evaluation.ipynb")
    assert "3/3 rows succeeded; results: " in stdout(nb)
    assert "expected note cited in" in stdout(nb)


def test_run_goal_on_its_own(examples: Path) -> None:
    nb = execute(examples / "batch" / "run_goal.ipynb")
    (run,) = bundles(nb)
    assert run["status"] == "SUCCESS" and run["goal"] == "How long should I rest beans after roasting?"


def test_a_failed_run_stops_papermill(examples: Path, tmp_path: Path) -> None:
    vault = examples / "vault"
    recorded = engine.run("What is first crack?", str(vault), provider="offline")
    # Replaying that recording for another goal: the run's first model call was never recorded -> FAILED.
    params = {
        "goal": "How long should I rest beans after roasting?",
        "vault": str(vault),
        "provider": "replay",
        "options": f"--from {recorded.id} --no-cache",
    }
    source = examples / "batch" / "run_goal.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(
            str(source),
            str(tmp_path / "out.ipynb"),
            parameters=params,
            kernel_name="shad",
            progress_bar=False,
        )
    assert err.value.ename == "ShadRunError" and "FAILED" in err.value.evalue
    flags = [x for key, value in params.items() for x in ("-p", key, value)]
    done = subprocess.run(
        [sys.executable, "-m", "papermill", str(source), str(tmp_path / "cli.ipynb"), "-k", "shad", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "ShadRunError" in done.stderr
