"""Installing the ``shad`` kernelspec: ``python -m shad_kernel install`` and the spec shipped in the wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ipykernel.kernelspec import get_kernel_dict
from jupyter_client.kernelspec import KernelSpecManager

import shad_kernel
from engine.errors import UsageError

REPO = Path(__file__).resolve().parents[1]


def run_install(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "shad_kernel", "install", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or REPO,
        timeout=120,
    )


def test_install_into_a_prefix_writes_a_spec_that_starts_this_python(tmp_path: Path) -> None:
    result = run_install("--prefix", str(tmp_path / "env"))
    assert result.returncode == 0, result.stderr
    kernel_dir = tmp_path / "env" / "share" / "jupyter" / "kernels" / "shad"
    assert f"in {kernel_dir}" in result.stdout
    assert "JUPYTER_PATH" in result.stderr  # the prefix is not searched by default: say how to use it
    spec = json.loads((kernel_dir / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "shad_kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "Shad (Python 3)"
    assert spec["language"] == "python"
    # What this ipykernel declares for its own spec (ipykernel 7: CurveZMQ encryption) holds for ours.
    assert spec["metadata"] == {"debugger": True, **get_kernel_dict()["metadata"]}
    assert {p.name for p in kernel_dir.iterdir()} == {"kernel.json", "logo-32x32.png", "logo-64x64.png"}
    found = KernelSpecManager(kernel_dirs=[str(kernel_dir.parent)]).get_kernel_spec("shad")
    assert found.language == "python" and found.argv[:3] == [sys.executable, "-m", "shad_kernel"]


def test_a_relative_prefix_is_taken_from_the_working_directory(tmp_path: Path) -> None:
    result = run_install("--prefix", "rel", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "rel" / "share" / "jupyter" / "kernels" / "shad" / "kernel.json").is_file()


def test_install_function_takes_a_name_and_display_name_and_replaces_an_old_spec(tmp_path: Path) -> None:
    first = shad_kernel.install(prefix=tmp_path, name="shad-dev", display_name="Shad (dev)")
    (first / "stale.txt").write_text("from an older install")
    again = shad_kernel.install(prefix=tmp_path, name="shad-dev", display_name="Shad (dev)")
    assert again == first == tmp_path / "share" / "jupyter" / "kernels" / "shad-dev"
    assert json.loads((again / "kernel.json").read_text())["display_name"] == "Shad (dev)"
    assert not (again / "stale.txt").exists()


def test_a_prefix_that_is_a_file_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    result = run_install("--prefix", str(blocker))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(f"error: cannot write the kernelspec in {blocker}")
    assert "hint:" in lines[0]
    with pytest.raises(shad_kernel.KernelInstallError) as info:
        shad_kernel.install(prefix=blocker)
    assert info.value.hint and "--prefix" in info.value.hint


def test_a_place_nobody_may_write_is_one_clear_error() -> None:
    # sysfs refuses new folders even to root, so this holds on CI machines that run as root.
    result = run_install("--prefix", "/sys/shad-kernel-test")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(("error: no permission to write", "error: cannot write"))
    assert "/sys/shad-kernel-test" in result.stderr


def test_usage_errors(tmp_path: Path) -> None:
    both = run_install("--user", "--prefix", str(tmp_path))
    assert both.returncode == 2 and "not allowed with" in both.stderr and "Traceback" not in both.stderr
    bad_name = run_install("--prefix", str(tmp_path), "--name", "no spaces allowed")
    assert bad_name.returncode == 2
    assert bad_name.stderr.startswith("error: invalid kernel name 'no spaces allowed'")
    with pytest.raises(UsageError):
        shad_kernel.install(user=True, sys_prefix=True)


def test_the_shipped_template_lets_jupyter_pick_the_python() -> None:
    # pip installs this file as share/jupyter/kernels/shad/kernel.json; Jupyter swaps "python" for
    # its own interpreter, which is how the spec works from any environment it is installed in.
    template = json.loads((REPO / "shad_kernel" / "resources" / "kernel.json").read_text())
    assert template["argv"] == ["python", "-m", "shad_kernel", "-f", "{connection_file}"]
    assert shad_kernel.kernel_spec("/opt/py/bin/python")["argv"][0] == "/opt/py/bin/python"


def test_the_wheel_ships_the_kernelspec_and_its_resources(tmp_path: Path) -> None:
    # Built from a copy: setuptools leaves build/ and *.egg-info next to the sources it builds.
    source = tmp_path / "source"
    for name in ("pyproject.toml", "setup.py", "README.md"):
        source.mkdir(exist_ok=True)
        shutil.copy(REPO / name, source / name)
    for package in ("engine", "shad_kernel", "shad_magics", "widgets"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("shad-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = "shad-0.1.0.data/data/share/jupyter/kernels/shad/"
    for name in ("kernel.json", "logo-32x32.png", "logo-64x64.png"):
        assert data + name in names
        assert f"shad_kernel/resources/{name}" in names  # for `python -m shad_kernel install`
