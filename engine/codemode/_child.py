"""The sandbox side: a warm zygote that forks one fresh, locked-down child per script.

The zygote imports everything a script may use, then waits on its control socket. For each script it
receives three file descriptors (the broker channel, stdout, stderr) and forks. The child joins its own
process group, dies with the zygote, drops root, sets rlimits, installs the seccomp filter, and only
then reads the script, compiles it under the restricted policy and runs it. The result travels as JSON
on the broker channel, never on stdout. Loaded inside the sandbox (no ``engine`` imports).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import gc
import os
import random
import resource
import select
import signal
import socket
import sys
import time
import types
from typing import Any

from ._client import Obsidian, ResultError, to_plain
from ._facades import FacadeModule, build_modules, warm_up
from ._policy import (
    MAX_MESSAGE,
    SCRIPT_MODULE,
    Guards,
    Recorder,
    SandboxLimit,
    SandboxViolation,
    ScriptCompileError,
    compile_script,
    script_line,
)
from ._scope import ClassMaker, build_globals
from ._wire import FrameError, decode, encode, read_frame, recv_frame, send_frame, write_all

__all__ = ["zygote_main"]

CHAN_FD = 3
MAX_SCRIPT_BYTES = 8 << 20  # 256k characters, JSON-escaped (a control character takes 6 bytes)
NOBODY = 65534
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: Any) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def _load_seccomp(bpf: bytes) -> None:
    """Install a classic-BPF seccomp program (compiled by libseccomp in the parent)."""
    count = len(bpf) // ctypes.sizeof(_SockFilter)
    program = (_SockFilter * count).from_buffer_copy(bpf)
    prog = _SockFprog(count, ctypes.cast(program, ctypes.POINTER(_SockFilter)))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter not installed: {os.strerror(err)}")


class _Output:
    """The script's prints: written to fd 1 in chunks, capped (prints and result share one budget)."""

    def __init__(self, cap: int, recorder: Recorder) -> None:
        self.cap = cap
        self.used = 0
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.recorder = recorder

    def write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        room = self.cap - self.used
        if len(data) > room:
            self._push(data[: max(room, 0)])
            self.used = self.cap
            self.recorder.limit(f"output limit: prints and result may not exceed {self.cap} bytes")
        self._push(data)

    def _push(self, data: bytes) -> None:
        self.used += len(data)
        self.pending.append(data)
        self.pending_bytes += len(data)
        if self.pending_bytes >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            write_all(1, b"".join(self.pending))
            self.pending.clear()
            self.pending_bytes = 0


def _set_limits(limits: dict[str, Any]) -> None:
    cpu = int(limits["cpu_seconds"])
    mem = int(limits["memory_bytes"])
    for res, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (0, 0)),
        (resource.RLIMIT_NOFILE, (16, 16)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NPROC, (0, 0)),
        (resource.RLIMIT_MEMLOCK, (0, 0)),
        (resource.RLIMIT_MSGQUEUE, (0, 0)),
    ):
        resource.setrlimit(res, value)


def _drop_root() -> None:
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)


def _child(fds: list[int], zygote_pid: int, run: dict[str, Any], init: dict[str, Any]) -> None:
    """In the forked child. Never returns."""
    code = 70
    try:
        os.setpgid(0, 0)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != zygote_pid:
            os._exit(71)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
        os.dup2(high[0], CHAN_FD)
        os.dup2(high[1], 1)
        os.dup2(high[2], 2)
        os.closerange(CHAN_FD + 1, 1 << 16)  # the control socket and everything else the zygote held
        random.seed()
        if init.get("drop_root"):
            _drop_root()
        _set_limits(run["limits"])
        seccomp = False
        if init.get("bpf"):
            _load_seccomp(base64.b64decode(init["bpf"]))
            seccomp = True
        chan = socket.socket(fileno=CHAN_FD)
        _run_script(chan, run, seccomp)
        code = 0
    except BaseException as exc:  # the last resort: say why on stderr and die
        with contextlib.suppress(BaseException):
            os.write(2, f"sandbox child failed: {type(exc).__name__}: {exc}\n".encode())
    finally:
        os._exit(code)


def _run_script(chan: socket.socket, run: dict[str, Any], seccomp: bool) -> None:
    recorder = Recorder(_notifier(chan))
    _CURRENT["recorder"] = recorder
    cap = int(run["limits"]["output_bytes"])
    output = _Output(cap, recorder)
    sys.stdout = _TextSink(output)  # what library code prints (re.DEBUG ...) counts as the script's output
    stats: dict[str, Any] = {"seccomp": seccomp, "uid": os.getuid()}
    frame = recv_frame(chan, MAX_SCRIPT_BYTES)
    script = frame.get("script") if isinstance(frame, dict) else None
    if not isinstance(script, str):
        raise FrameError("no script received")
    modules = dict(_MODULES)
    client = Obsidian(chan, recorder)
    modules["obsidian"] = client
    guards = Guards(recorder, modules, output.write)
    maker = ClassMaker(recorder, (FacadeModule, Obsidian, SandboxViolation, SandboxLimit))
    t0 = time.perf_counter()
    done: dict[str, Any]
    if run.get("raw"):  # the parent's own probe of the OS layers (tests): no restricted policy at all
        namespace: dict[str, Any] = {"__name__": "__raw__"}
        done = _execute(compile(script, "<raw>", "exec"), namespace, recorder)
        if done["status"] == "ok":
            done["result"] = to_plain(namespace.get("__result__"), cap)
        send_frame(chan, {"t": "done", **done, "stats": stats})
        return
    try:
        code = compile_script(script)
    except ScriptCompileError as exc:
        kind = exc.kind
        done = {
            "status": kind,
            "type": "SyntaxError" if kind == "error" else "PolicyViolation",
            "message": str(exc),
        }
        stats["compile_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        send_frame(chan, {"t": "done", **done, "stats": stats})
        return
    t1 = time.perf_counter()
    stats["compile_ms"] = round((t1 - t0) * 1000, 3)
    namespace = build_globals(guards, maker, {"obsidian": client})
    done = _execute(code, namespace, recorder)
    stats["exec_ms"] = round((time.perf_counter() - t1) * 1000, 3)
    if done["status"] == "ok":
        # Converting the result may run the script's own code (``__lt__`` while sorting a set, a
        # property of a dataclass): it is judged like the rest of the script.
        done = _result(namespace.get("__result__"), max(cap - output.used, 0), recorder)
    stats["violations"] = recorder.violations[:20]
    stats["limits"] = recorder.limits[:20]
    stats["stdout_bytes"] = output.used
    with contextlib.suppress(OSError):
        output.flush()
    try:
        payload = encode({"t": "done", **done, "stats": stats})
    except (TypeError, ValueError):
        payload = encode(
            {"t": "done", **_verdict(recorder, "error", "ResultError", "result not JSON"), "stats": stats}
        )
    chan.sendall(payload)


class _TextSink:
    """``sys.stdout`` in the child: text written there goes to the script's capped output."""

    def __init__(self, output: _Output) -> None:
        self._output = output

    def write(self, text: str) -> int:
        self._output.write(str(text))
        return len(text)

    def flush(self) -> None:
        pass


def _notifier(chan: socket.socket) -> Any:
    """Tell the parent about each violation or limit as it is recorded (a run killed later, or one
    whose process crashes, is still judged by what it tried)."""

    def notify(kind: str, message: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            chan.sendall(encode({"t": "note", "kind": kind, "message": message}))

    return notify


def _verdict(recorder: Recorder, status: str, etype: str, message: str, **extra: Any) -> dict[str, Any]:
    """How a run ended, where a recorded violation (even a caught one) outranks everything else and a
    recorded limit outranks an ordinary error."""
    if recorder.violations:
        return {"status": "blocked", "type": "PolicyViolation", "message": recorder.violations[0]}
    if recorder.limits and (status != "limited" or etype == "LimitExceeded"):
        return {"status": "limited", "type": "LimitExceeded", "message": recorder.limits[0]}
    return {"status": status, "type": etype[:200], "message": message, **extra}


def _result(value: Any, budget: int, recorder: Recorder) -> dict[str, Any]:
    try:
        plain = to_plain(value, budget)
    except ResultError as exc:
        return _verdict(recorder, exc.kind, "ResultError", str(exc))
    except RecursionError:
        return _verdict(recorder, "limited", "ResultError", "__result__ is nested too deeply")
    except MemoryError:
        return _verdict(recorder, "limited", "MemoryError", "memory limit reached while returning __result__")
    except BaseException as exc:
        return _verdict(
            recorder, "error", "ResultError", f"__result__ could not be converted: {_describe(exc)}"
        )
    if recorder.violations or recorder.limits:
        return _verdict(recorder, "ok", "", "")
    return {"status": "ok", "result": plain}


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text[:2000]}"


def _execute(code: Any, namespace: dict[str, Any], recorder: Recorder) -> dict[str, Any]:
    """Run the compiled script; classify how it ended."""
    try:
        exec(code, namespace)
    except SandboxViolation as exc:
        # Raised by a guard (recorded), or by the script itself with a class it caught earlier.
        return _verdict(recorder, "blocked", "PolicyViolation", str(exc)[:MAX_MESSAGE])
    except SandboxLimit as exc:
        return _verdict(recorder, "limited", "LimitExceeded", str(exc)[:MAX_MESSAGE])
    except MemoryError:
        return _verdict(recorder, "limited", "MemoryError", "memory limit reached; process less at once")
    except RecursionError as exc:
        line = script_line(exc.__traceback__)
        where = f" (line {line})" if line else ""
        return _verdict(recorder, "limited", "RecursionError", f"recursion too deep{where}")
    except BaseException as exc:
        line = script_line(exc.__traceback__)
        message = _describe(exc) + (f" (line {line})" if line else "")
        return _verdict(recorder, "error", type(exc).__name__, message, line=line)
    return _verdict(recorder, "ok", "", "")


_MODULES: dict[str, Any] = {}


def _hidden(message: str) -> Any:
    """Façades report hidden names through the current script's recorder (set per child)."""
    recorder = _CURRENT.get("recorder")
    if recorder is not None:
        recorder.block(message)
    raise SandboxViolation(message)


_CURRENT: dict[str, Any] = {}


def zygote_main(ctl_fd: int, init: dict[str, Any]) -> None:
    """Serve run requests until the parent closes the control socket."""
    warm_up()
    _MODULES.update(build_modules(_hidden))
    # Classes a script defines live in module "__script__"; dataclasses looks that module up.
    sys.modules.setdefault(SCRIPT_MODULE, types.ModuleType(SCRIPT_MODULE))
    ctl = socket.socket(fileno=ctl_fd)
    _prctl(PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.collect()
    gc.freeze()
    send_frame(ctl, {"t": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    buffer = bytearray()
    pending_fds: list[int] = []
    while True:
        body = read_frame(buffer, 1 << 16)
        if body is None:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 1 << 16, 8)
            if not data:
                return
            buffer.extend(data)
            pending_fds.extend(fds)
            continue
        msg = decode(body)
        if msg.get("t") != "run":
            continue
        fds, pending_fds = pending_fds[:3], pending_fds[3:]
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send_frame(ctl, {"t": "exit", "id": msg.get("id"), "code": -1, "signal": 0, "error": "no fds"})
            continue
        pid = os.fork()
        if pid == 0:
            _CURRENT.clear()
            _child(fds, os.getppid(), msg, init)
        for fd in fds:
            os.close(fd)
        if not _wait_child(pid, ctl, buffer, msg.get("id")):
            return


def _wait_child(pid: int, ctl: socket.socket, buffer: bytearray, run_id: Any) -> bool:
    """Wait for the child; obey "kill" from the parent. False when the parent has gone."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # kernels before 5.3: poll instead
        pidfd = None
    alive = True
    try:
        while True:
            watch = [ctl.fileno()] if pidfd is None else [pidfd, ctl.fileno()]
            ready, _, _ = select.select(watch, [], [], 0.005 if pidfd is None else None)
            if ctl.fileno() in ready:
                data = ctl.recv(1 << 16)
                if not data:
                    _kill(pid)
                    alive = False
                else:
                    buffer.extend(data)
                    while (body := read_frame(buffer, 1 << 16)) is not None:
                        if decode(body).get("t") == "kill":
                            _kill(pid)
            exited, status = os.waitpid(pid, 0 if (not alive or pidfd in ready) else os.WNOHANG)
            if exited:
                if alive:
                    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
                    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
                    send_frame(ctl, {"t": "exit", "id": run_id, "code": code, "signal": sig})
                return alive
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _kill(pid: int) -> None:
    """SIGKILL the child's process group (it made itself a group leader), and the child itself."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
