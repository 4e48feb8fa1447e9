"""Run a checker tool on model-written code without trusting it.

Each run gets a fresh temporary copy of the files (written from the manifest, never the user's tree) and a
subprocess with a wall-time limit (the whole process group is killed), rlimits (memory, CPU, file size,
processes), a scrubbed environment (no keys or tokens) and, where bubblewrap works, no network, a
read-only host and its own pid namespace. What was achieved is said in ``isolation()``.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from ..output import ManifestFile

__all__ = ["Job", "ToolRun", "Workspace", "copyable", "isolation", "run_tool", "write_copy"]

_OUTPUT_CAP = 4 * 1024 * 1024  # bytes of each stream kept from the head and from the tail
_FSIZE_MB = 256
_lock = threading.Lock()
_cache: dict[str, tuple[bool, str]] = {}
_userns_flag: list[list[str]] = []


@dataclass(frozen=True)
class Workspace:
    """Where one tool runs: ``root`` holds the copy of the files, ``scratch`` is for the tool's caches."""

    root: Path
    scratch: Path


@dataclass(frozen=True)
class ToolRun:
    """How one tool run ended; paths inside the copy are shown relative to it."""

    returncode: int | None  # None when the run was killed for time
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float

    @property
    def output(self) -> str:
        return "\n".join(part for part in (self.stdout.strip(), self.stderr.strip()) if part)

    def killed(self, tool: str, timeout: float) -> str | None:
        """Why the run was cut short (wall time, CPU time, a signal), or None when the tool ended itself."""
        if self.timed_out:
            return f"{tool} did not finish within {timeout:g}s and was killed (an endless loop or a hang?)"
        code = self.returncode or 0
        signum = -code if code < 0 else code - 128 if 128 < code < 160 else 0  # bwrap reports 128 + N
        if signum == signal.SIGXCPU:
            return f"{tool} used up its CPU time limit ({math.ceil(timeout) + 1}s) and was killed"
        if signum in (signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT):
            return f"{tool} was killed by signal {signal.Signals(signum).name} (memory limit?)"
        return None


@dataclass(frozen=True)
class Job:
    """The files to check and the limits every tool run gets."""

    files: tuple[ManifestFile, ...]
    timeout: float = 120.0
    memory_mb: int = 2048
    dependencies: tuple[str, ...] = ()  # the third-party top-level modules the project declares

    def run(
        self,
        argv: Callable[[Workspace], list[str]],
        *,
        only: Callable[[ManifestFile], bool] | None = None,
        env: Callable[[Workspace], Mapping[str, str]] | None = None,
    ) -> ToolRun:
        """``run_tool`` on a copy of the files (those ``only`` keeps) with this job's limits."""
        pairs = [(f.path, f.content) for f in self.files if only is None or only(f)]
        return run_tool(pairs, argv, timeout=self.timeout, memory_mb=self.memory_mb, env=env)


def write_copy(root: Path, files: Iterable[tuple[str, str]]) -> list[str]:
    """Write ``(path, content)`` pairs under ``root``; a path that could land elsewhere is not written
    (the integrity check reports why) and is returned instead. Later duplicates win."""
    skipped = []
    for path, content in files:
        target = _inside(root, path)
        if target is None:
            skipped.append(path)
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8", "surrogatepass"))
        except (OSError, ValueError):
            skipped.append(path)
    return skipped


def copyable(path: str) -> bool:
    """Whether ``write_copy`` writes this path (the tools never see the others)."""
    return _inside(Path("/"), path) is not None


def _inside(root: Path, path: str) -> Path | None:
    """``root / path`` for a plain relative POSIX path; None for anything absolute, ``..``, NUL or ``\\``."""
    if not path or "\x00" in path or "\\" in path:
        return None
    rel = PurePosixPath(path)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts:
        return None
    return root.joinpath(*rel.parts)  # the copy holds only regular files we wrote: no symlink to follow


def isolation() -> tuple[bool, str]:
    """Whether tools run under bubblewrap here, and the sentence the report shows. bubblewrap is probed
    once; ``SHAD_SANDBOX_ISOLATION=subprocess`` (the Code Mode sandbox's switch) turns it off."""
    if os.environ.get("SHAD_SANDBOX_ISOLATION") == "subprocess":
        return False, "rlimits only (bubblewrap not used: SHAD_SANDBOX_ISOLATION=subprocess)"
    with _lock:
        if "bwrap" not in _cache:
            _cache["bwrap"] = _probe()
        return _cache["bwrap"]


def _probe() -> tuple[bool, str]:
    from ..codemode import bwrap_status

    usable, why = bwrap_status()
    if not usable:
        return False, f"rlimits only (bubblewrap unavailable: {why})"
    with tempfile.TemporaryDirectory(prefix="shad-verify-") as tmp:
        argv = [*_bwrap(Path(tmp), Path(tmp)), sys.executable, "-c", "pass"]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=30, env=_env(Path(tmp)), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"rlimits only (bubblewrap unavailable: {exc})"
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit {proc.returncode}"]
        return False, f"rlimits only (bubblewrap unavailable: {lines[-1]})"
    return True, "bubblewrap (no network, read-only host, own pid namespace, temporary copy) + rlimits"


def _bwrap(tmp: Path, cwd: Path) -> list[str]:
    return [
        shutil.which("bwrap") or "bwrap",
        "--unshare-user", "--uid", "65534", "--gid", "65534", "--unshare-net", "--unshare-pid",
        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", *_no_nested_userns(), "--cap-drop", "ALL",
        "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        *_interpreter_under_tmp(), "--bind", str(tmp), str(tmp), "--chdir", str(cwd), "--",
    ]  # fmt: skip


def _interpreter_under_tmp() -> list[str]:
    """Read-only binds for the Python environment when it lives under /tmp (a CI virtualenv, say), which
    the private /tmp would otherwise hide: the tools could not even start."""
    roots: list[Path] = []
    for entry in sorted({sys.prefix, sys.base_prefix, *(p for p in sys.path if p)}, key=len):
        path = Path(entry).resolve()
        if path.is_dir() and path.is_relative_to("/tmp") and not any(path.is_relative_to(r) for r in roots):
            roots.append(path)
    return [arg for root in roots for arg in ("--ro-bind", str(root), str(root))]


def _no_nested_userns() -> list[str]:
    """``--disable-userns`` when this bubblewrap knows it (>= 0.8): no namespaces inside the sandbox."""
    if not _userns_flag:
        try:
            text = subprocess.run(["bwrap", "--help"], capture_output=True, timeout=10, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = b""
        _userns_flag.append(["--disable-userns"] if b"--disable-userns" in text else [])
    return list(_userns_flag[0])


def _env(tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The tool's whole environment: nothing of ours (no keys, tokens or proxies) but what it needs."""
    env = {
        "PATH": os.environ.get("PATH") or os.defpath,
        "HOME": str(tmp / "home"),
        "TMPDIR": str(tmp / "tmp"),
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }
    if site.ENABLE_USER_SITE and site.USER_SITE and os.path.isdir(site.USER_SITE):
        env["PYTHONUSERBASE"] = site.getuserbase()  # tools installed with --user stay importable
    env.update(extra or {})
    return env


def run_tool(
    files: Iterable[tuple[str, str]],
    argv: Callable[[Workspace], list[str]],
    *,
    timeout: float,
    memory_mb: int,
    env: Callable[[Workspace], Mapping[str, str]] | None = None,
) -> ToolRun:
    """Copy ``files`` into a fresh temporary folder and run ``argv(workspace)`` there, isolated."""
    with tempfile.TemporaryDirectory(prefix="shad-verify-") as name:
        tmp = Path(name).resolve()
        ws = Workspace(tmp / "src", tmp / "scratch")
        for folder in (ws.root, ws.scratch, tmp / "home", tmp / "tmp"):
            folder.mkdir()
        write_copy(ws.root, files)  # Job passes only copyable paths; the integrity check judges the rest
        sandboxed, _ = isolation()
        command = [*_bwrap(tmp, ws.root), *argv(ws)] if sandboxed else argv(ws)
        run = _run(command, ws.root, _env(tmp, env(ws) if env else None), timeout, memory_mb)
        _kill_leftovers(tmp)
        prefix = f"{ws.root}/"
        return ToolRun(
            returncode=run[0],
            stdout=run[1].replace(prefix, ""),
            stderr=run[2].replace(prefix, ""),
            timed_out=run[0] is None,
            duration_s=run[3],
        )


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, memory_mb: int
) -> tuple[int | None, str, str, float]:
    limits = _limits(memory_mb, timeout)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True, preexec_fn=limits,  # only setrlimit: safe between fork and exec
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            return 127, "", f"cannot start {Path(argv[0]).name}: {exc}", time.perf_counter() - started
        if hasattr(os, "waitid"):
            exited = _wait_unreaped(proc.pid, timeout)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # the leader is not reaped yet: its group id is ours
        else:  # pragma: no cover - no waitid (not Linux): kill the group only when time ran out
            try:
                proc.wait(timeout)
                exited = True
            except subprocess.TimeoutExpired:
                exited = False
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
        duration = time.perf_counter() - started
        return (code if exited else None), _read(out), _read(err), duration


def _wait_unreaped(pid: int, timeout: float) -> bool:
    """Wait for ``pid`` to exit without reaping it; False when ``timeout`` passed first."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.02)


def _limits(memory_mb: int, timeout: float) -> Callable[[], None]:
    """The ``preexec_fn`` that sets the rlimits; values are computed here, the child only sets them."""
    wanted = [
        (resource.RLIMIT_AS, memory_mb * 1024 * 1024),
        (resource.RLIMIT_CPU, math.ceil(timeout) + 1),
        (resource.RLIMIT_FSIZE, _FSIZE_MB * 1024 * 1024),
        (resource.RLIMIT_NPROC, _tasks_of(os.getuid()) + 512),  # per user: room for pytest's children
        (resource.RLIMIT_CORE, 0),
    ]
    settings = []
    for which, value in wanted:
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        settings.append((which, (value, value)))
    setrlimit = resource.setrlimit

    def apply() -> None:
        for which, pair in settings:
            setrlimit(which, pair)

    return apply


def _tasks_of(uid: int) -> int:
    """Threads this user runs now (RLIMIT_NPROC counts them all, not just the tool's)."""
    total = 0
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            status = Path(entry.path, "status").read_text()
            uid_line = re.search(r"^Uid:\s+(\d+)", status, re.M)
            threads = re.search(r"^Threads:\s+(\d+)", status, re.M)
            if uid_line and int(uid_line.group(1)) == uid:
                total += int(threads.group(1)) if threads else 1
    return total or 1024


def _kill_leftovers(tmp: Path) -> None:
    """Without a pid namespace a tool's child can leave its process group; its working folder (inside
    our temporary folder) still gives it away."""
    marker = str(tmp)
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(os.path.join(entry.path, "cwd"))
            if cwd == marker or cwd.startswith(marker + "/"):
                os.kill(int(entry.name), signal.SIGKILL)


def _read(fh: IO[bytes]) -> str:
    """A stream's text: all of it, or its head and tail when it is very long."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    if size <= 2 * _OUTPUT_CAP:
        data = fh.read()
    else:
        head = fh.read(_OUTPUT_CAP)
        fh.seek(size - _OUTPUT_CAP)
        data = head + b"\n[... output cut ...]\n" + fh.read()
    return data.decode("utf-8", "replace")
