"""The sandbox side: a warm zygote that forks one fresh, locked-down child per script.

The zygote imports everything a script may use, then waits on its control socket. For each script it
receives three file descriptors (the broker channel, stdout, stderr) and forks. The child joins its own
process group, dies with the zygote, drops root, sets rlimits, installs the seccomp filter (``_lockdown``),
and only then reads the script, compiles it under the restricted policy and runs it (its output and
verdict: ``_outcome``). The result travels as JSON on the broker channel, never on stdout. Loaded inside
the sandbox (no ``engine`` imports).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import gc
import os
import random
import select
import signal
import socket
import sys
import time
import types
from typing import Any

from ._client import Obsidian, to_plain
from ._facades import FacadeModule, build_modules, warm_up
from ._lockdown import PR_SET_DUMPABLE, PR_SET_PDEATHSIG, drop_root, load_seccomp, prctl, set_limits
from ._outcome import Output as _Output
from ._outcome import TextSink, execute, notifier, result_verdict, verdict
from ._policy import (
    SCRIPT_MODULE,
    Guards,
    Recorder,
    SandboxLimit,
    SandboxViolation,
    ScriptCompileError,
    compile_script,
)
from ._scope import ClassMaker, build_globals
from ._wire import FrameError, decode, encode, read_frame, recv_frame, send_frame

__all__ = ["zygote_main"]

CHAN_FD = 3
MAX_SCRIPT_BYTES = 8 << 20  # 256k characters, JSON-escaped (a control character takes 6 bytes)


def _child(fds: list[int], zygote_pid: int, run: dict[str, Any], init: dict[str, Any]) -> None:
    """In the forked child. Never returns."""
    code = 70
    try:
        os.setpgid(0, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != zygote_pid:
            os._exit(71)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
        os.dup2(high[0], CHAN_FD)
        os.dup2(high[1], 1)
        os.dup2(high[2], 2)
        os.closerange(CHAN_FD + 1, 1 << 16)  # the control socket and everything else the zygote held
        random.seed()
        if init.get("drop_root"):
            drop_root()
        set_limits(run["limits"])
        seccomp = False
        if init.get("bpf"):
            load_seccomp(base64.b64decode(init["bpf"]))
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
    recorder = Recorder(notifier(chan))
    _CURRENT["recorder"] = recorder
    cap = int(run["limits"]["output_bytes"])
    output = _Output(cap, recorder)
    sys.stdout = TextSink(output)  # what library code prints (re.DEBUG ...) counts as the script's output
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
        done = execute(compile(script, "<raw>", "exec"), namespace, recorder)
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
    done = execute(code, namespace, recorder)
    stats["exec_ms"] = round((time.perf_counter() - t1) * 1000, 3)
    if done["status"] == "ok":
        # Converting the result may run the script's own code (``__lt__`` while sorting a set, a
        # property of a dataclass): it is judged like the rest of the script.
        done = result_verdict(namespace.get("__result__"), max(cap - output.used, 0), recorder)
    stats["violations"] = recorder.violations[:20]
    stats["limits"] = recorder.limits[:20]
    stats["stdout_bytes"] = output.used
    with contextlib.suppress(OSError):
        output.flush()
    try:
        payload = encode({"t": "done", **done, "stats": stats})
    except (TypeError, ValueError):
        payload = encode(
            {"t": "done", **verdict(recorder, "error", "ResultError", "result not JSON"), "stats": stats}
        )
    chan.sendall(payload)


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
    prctl(PR_SET_DUMPABLE, 0)
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
