"""Model-written code under test cannot reach the network, touch the user's tree, read our secrets, use
unbounded memory or outlive its time limit. Each planted test file tries; the report shows it could not."""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.output import Manifest, ManifestFile
from engine.verify import verify
from engine.verify._isolate import isolation

MODES = ["bubblewrap", "rlimits"]


def manifest(files: dict[str, str]) -> Manifest:
    return Manifest(files=[ManifestFile.make(p, c) for p, c in files.items()])


@pytest.fixture
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test under bubblewrap (skipped where it is unusable) or with rlimits only."""
    if request.param == "rlimits":
        monkeypatch.setenv("SHAD_SANDBOX_ISOLATION", "subprocess")
    else:
        monkeypatch.delenv("SHAD_SANDBOX_ISOLATION", raising=False)
        usable, why = isolation()
        if not usable and os.environ.get("CI"):  # CI installs bubblewrap: losing it there is a failure
            pytest.fail(f"bubblewrap isolation is unusable in CI: {why}")
        if not usable:
            pytest.skip(why)
    return str(request.param)


@pytest.fixture
def listener() -> Iterator[int]:
    """A listening loopback socket on this machine (outside any sandbox)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


NET_TEST = """import socket

def test_connect() -> None:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
"""


@pytest.mark.parametrize("mode", ["bubblewrap"], indirect=True)
def test_no_network_inside_the_sandbox(mode: str, listener: int) -> None:
    report = verify(manifest({"test_net.py": NET_TEST.format(port=listener)}), "strict")
    result = report.checks["tests"]
    assert result.status == "fail", report.to_dict()
    assert "test_connect failed" in result.findings[0].message
    assert "bubblewrap" in report.isolation and "no network" in report.isolation


@pytest.mark.parametrize("mode", ["rlimits"], indirect=True)
def test_the_network_probe_connects_without_the_sandbox(mode: str, listener: int) -> None:
    """The control: the same test passes when nothing cuts the network: the failure above is the sandbox's."""
    report = verify(manifest({"test_net.py": NET_TEST.format(port=listener)}), "strict")
    assert report.checks["tests"].status == "pass", report.to_dict()
    assert report.isolation.startswith("rlimits only (bubblewrap not used")


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_the_tools_work_on_a_copy_never_the_user_tree(mode: str, tmp_path: Path) -> None:
    """A test writing next to itself (and a tool's caches) lands in the temporary copy, not the project."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_write.py").write_text(
        "from pathlib import Path\n\n\ndef test_write() -> None:\n"
        "    Path(__file__).with_name('written.txt').write_text('x')\n"
        "    Path('also-written.txt').write_text('x')\n",
        encoding="utf-8",
    )
    before = sorted(p.name for p in project.rglob("*"))
    from engine.verify import verify_path

    report = verify_path(project, "strict")
    assert report.checks["tests"].status == "pass", report.to_dict()
    assert (
        sorted(p.name for p in project.rglob("*")) == before
    )  # no written.txt, no .mypy_cache, no .pytest_cache


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder of the user's outside /tmp (the sandbox gives /tmp its own tmpfs, so /tmp proves less)."""
    folder = Path.home() / ".cache" / f"shad-verify-test-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


@pytest.mark.parametrize("mode", ["bubblewrap"], indirect=True)
def test_writing_outside_the_copy_fails_inside_the_sandbox(mode: str, outside: Path) -> None:
    planted = (
        "from pathlib import Path\n\n\ndef test_escape() -> None:\n"
        f"    Path({str(outside / 'escaped.txt')!r}).write_text('x')\n"
    )
    report = verify(manifest({"test_escape.py": planted}), "strict")
    assert not (outside / "escaped.txt").exists()
    findings = report.checks["tests"].findings
    assert report.checks["tests"].status == "fail" and "Read-only file system" in findings[0].message


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_secrets_and_home_are_not_passed_to_the_tools(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    planted = (
        "import os\nfrom pathlib import Path\n\n\ndef test_env() -> None:\n"
        "    assert not [k for k in os.environ if 'KEY' in k or 'TOKEN' in k]\n"
        f"    assert os.environ['HOME'] != {str(Path.home())!r}\n"
        "    assert Path(os.environ['HOME']).is_dir()\n"
    )
    report = verify(manifest({"test_env.py": planted}), "strict")
    assert report.checks["tests"].status == "pass", report.to_dict()


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_memory_is_limited(mode: str) -> None:
    planted = "def test_hog() -> None:\n    block = bytearray(3 * 1024 * 1024 * 1024)\n    assert block\n"
    report = verify(manifest({"test_hog.py": planted}), "strict", memory_mb=512)
    result = report.checks["tests"]
    assert result.status == "fail" and "MemoryError" in result.findings[0].message, report.to_dict()


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_a_test_that_never_ends_is_killed_with_everything_it_started(mode: str) -> None:
    marker = f"shad-verify-sleeper-{uuid.uuid4().hex}"
    planted = (
        "import subprocess\nimport sys\n\n\ndef test_ok() -> None:\n    pass\n\n\n"
        "def test_forever() -> None:\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}])\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}],"
        " start_new_session=True)\n"
        "    while True:\n        pass\n"
    )
    started = time.monotonic()
    report = verify(manifest({"test_loop.py": planted}), "strict", timeout=4)
    assert time.monotonic() - started < 30
    result = report.checks["tests"]
    assert result.status == "fail" and not report.ok
    [finding] = result.findings
    assert (finding.path, finding.line) == ("test_loop.py", 9)
    assert "test_forever did not finish within 4s" in finding.message
    assert "killed" in finding.message
    time.sleep(0.2)
    assert _processes_with(marker) == []
