"""The Binder configuration (``binder/``) as repo2docker uses it, in a fresh virtual environment: install
``binder/requirements.txt`` from the repository root, run ``binder/postBuild``, then ``binder/start`` in front
of the notebook server (here: of ``jupyter server --show-config`` and of an nbclient run of the quickstart
with the ``shad`` kernel)."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
QUICKSTART_URL = "/lab/tree/example_notebooks/quickstart.ipynb"
RUN_MIME = "application/vnd.shad.run+json"
pytestmark = pytest.mark.timeout(900)


class Binder(NamedTuple):
    repo: Path  # a copy of the repository, as repo2docker copies it into the image
    venv: Path
    home: Path
    env: dict[str, str]


def copy_repo(target: Path) -> Path:
    """The repository without git data, caches, builds or run history."""
    skip = {".git", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__", ".venv"}
    top_only = {"build", "dist"}  # packaging output at the top; engine/build is source

    def ignore(folder: str, names: list[str]) -> list[str]:
        at_top = Path(folder) == REPO
        dropped = [n for n in names if n in skip or (at_top and n in top_only) or n.endswith(".egg-info")]
        if Path(folder) == REPO / "example_notebooks" / "vault":
            dropped.append("Shad")
        return dropped

    shutil.copytree(REPO, target, ignore=ignore, symlinks=True)
    return target


def run(cmd: list[str], binder: Binder, cwd: Path | None = None, timeout: float = 600) -> str:
    result = subprocess.run(
        cmd, cwd=cwd or binder.repo, env=binder.env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def reuse_installed_packages(venv: Path) -> None:
    """Create ``venv`` so that it sees what is installed where pytest runs instead of downloading it again
    (``binder/requirements.txt`` is installed with ``--no-deps``), whether pytest runs in the machine's
    Python or inside a virtualenv.

    ``--system-site-packages`` alone is not enough: ``venv`` always builds on the base interpreter, so the
    new environment sees the base's site-packages, never those of the virtualenv pytest may run in. A
    ``.pth`` file adds this interpreter's site-packages after the new environment's own, in the order this
    interpreter uses them (plain path lines: the ``.pth`` hooks in those folders, such as this
    environment's own editable install of Shad, are not run there)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300
    )
    here = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    folders = [path for path in here if path in sys.path and Path(path).is_dir()]
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    (Path(purelib) / "_pytest_site_packages.pth").write_text("".join(f"{path}\n" for path in folders))


@pytest.fixture(scope="module")
def binder(tmp_path_factory: pytest.TempPathFactory) -> Binder:
    root = tmp_path_factory.mktemp("binder")
    repo, venv, home = copy_repo(root / "repo"), root / "venv", root / "home"
    home.mkdir()
    reuse_installed_packages(venv)
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SHAD_", "JUPYTER_", "ANTHROPIC_", "OPENAI_"))
    }
    keep.pop("PYTHONPATH", None)  # imports must come from the environment, as in the image
    keep.pop("VIRTUAL_ENV", None)
    env = {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(home)}
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))  # the new HOME has no pip cache
    binder = Binder(repo, venv, home, env)
    # repo2docker: `pip install -r binder/requirements.txt` in the repository root (its "-e ." is the repo).
    run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "-r",
            "binder/requirements.txt",
        ],
        binder,
    )
    run(["bash", str(repo / "binder" / "postBuild")], binder, cwd=root)  # the script finds the repo itself
    return binder


def test_requirements_install_the_repository_itself(binder: Binder) -> None:
    where = run(
        [str(binder.venv / "bin" / "python"), "-c", "import shad_kernel; print(shad_kernel.__file__)"], binder
    )
    assert Path(where.strip()) == binder.repo / "shad_kernel" / "__init__.py"  # editable: the repo's files


def test_postbuild_installs_the_kernelspec_into_the_environment(binder: Binder) -> None:
    listing = json.loads(
        run(
            [str(binder.venv / "bin" / "python"), "-m", "jupyter_client.kernelspecapp", "list", "--json"],
            binder,
        )
    )
    shad = listing["kernelspecs"]["shad"]
    assert Path(shad["resource_dir"]) == binder.venv / "share" / "jupyter" / "kernels" / "shad"
    assert shad["spec"]["argv"] == [
        str(binder.venv / "bin" / "python"),
        "-m",
        "shad_kernel",
        "-f",
        "{connection_file}",
    ]
    assert shad["spec"]["language"] == "python"


def test_postbuild_builds_the_demo_vault_index_where_start_looks(binder: Binder) -> None:
    indexes = list((binder.home / ".shad" / "index").glob("vault-*.sqlite"))
    assert len(indexes) == 1  # built by postBuild under $HOME/.shad, the SHAD_HOME that start sets
    search = ["shad", "vault", "search", "rest beans after roasting", "--vault", "example_notebooks/vault"]
    hits = json.loads(run(["bash", "binder/start", *search, "--limit", "3", "--json"], binder))
    assert hits and all(hit["path"].endswith(".md") for hit in hits)
    assert list((binder.home / ".shad" / "index").glob("vault-*.sqlite")) == indexes


def test_start_sets_shads_environment_then_runs_the_command(binder: Binder) -> None:
    script = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('SHAD_HOME', 'SHAD_VAULT')}))"
    env = json.loads(run(["bash", "binder/start", "python", "-c", script], binder))
    assert env == {
        "SHAD_HOME": str(binder.home / ".shad"),
        "SHAD_VAULT": str(binder.repo / "example_notebooks" / "vault"),
    }


def test_start_makes_the_server_open_the_quickstart(binder: Binder) -> None:
    shown = run(
        ["bash", "binder/start", "python", "-m", "jupyter_server", "--show-config"], binder, timeout=300
    )
    assert f".default_url = '{QUICKSTART_URL}'" in shown
    assert str(binder.home / ".shad" / "jupyter-config" / "jupyter_server_config.json") in shown


_EXECUTE = """
import json, sys
import nbclient, nbformat
from jupyter_client.kernelspec import KernelSpecManager

path, out = sys.argv[1], sys.argv[2]
nb = nbformat.read(path, as_version=4)
resources = {"metadata": {"path": sys.argv[3]}}
client = nbclient.NotebookClient(nb, kernel_name="shad", timeout=600, resources=resources)
client.execute()
nbformat.write(nb, out)
print(json.dumps({"resource_dir": KernelSpecManager().get_kernel_spec("shad").resource_dir}))
"""


def test_the_quickstart_runs_with_the_shad_kernel(binder: Binder) -> None:
    notebook = binder.repo / "example_notebooks" / "quickstart.ipynb"
    executed = binder.home / "quickstart.out.ipynb"
    # Through binder/start, as the server runs; the kernelspec is found the normal way (the environment's).
    found = json.loads(
        run(
            [
                "bash",
                "binder/start",
                "python",
                "-c",
                _EXECUTE,
                str(notebook),
                str(executed),
                str(notebook.parent),
            ],
            binder,
            timeout=900,
        )
    )
    assert Path(found["resource_dir"]) == binder.venv / "share" / "jupyter" / "kernels" / "shad"
    nb = json.loads(executed.read_text())
    outputs = [out for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell["outputs"]]
    assert not [out for out in outputs if out["output_type"] == "error"]
    runs = [out["data"][RUN_MIME] for out in outputs if RUN_MIME in out.get("data", {})]
    assert runs and all(r["status"] in ("SUCCESS", "PARTIAL") for r in runs)
    assert all(
        Path(r["history_dir"]).is_relative_to(binder.repo / "example_notebooks" / "vault") for r in runs
    )
