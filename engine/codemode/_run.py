"""One script's exchange with its sandbox child, seen from the trusted parent.

Feed the script, answer broker calls, drain stdout and stderr, enforce the wall clock (ask the zygote to
SIGKILL the child's process group; kill the whole sandbox if it does not answer) and the output cap, and
classify how the child ended.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from ._broker import BrokerRun
from ._errors import SandboxUnavailable
from ._wire import FrameError, decode, encode, read_frame
from ._zygote import Zygote

__all__ = ["Outcome", "ScriptRun"]

MAX_CHILD_FRAME = 1 << 20
STDERR_CAP = 16_384
KILL_GRACE = 2.0
MAX_NOTES = 20


@dataclass
class Outcome:
    result: Any = None
    result_bytes: int = 0
    error: tuple[str, str, str, int | None] | None = None
    stdout_bytes: bytes = b""
    stderr: bytes = b""
    child_stats: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)


class ScriptRun:
    """One script's exchange with its child: feed the script, serve broker calls, collect output."""

    def __init__(self, calls: BrokerRun, zygote: Zygote, script: str, timeout: float, raw: bool) -> None:
        self.raw = raw
        self.zygote = zygote
        self.script = script
        self.timeout = timeout
        self.calls = calls
        self.run_id = -1
        self.broker_ms = 0.0
        self.chan, child_chan = socket.socketpair()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.child_fds = [child_chan.detach(), out_w, err_w]
        self.sel = selectors.DefaultSelector()
        self.notes: dict[str, list[str]] = {"blocked": [], "limited": []}

    def close(self) -> None:
        self.sel.close()
        self.chan.close()
        for fd in (self.out_r, self.err_r, *self.child_fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.child_fds = []

    def execute(self, limits: dict[str, Any]) -> Outcome:
        out = Outcome()
        try:
            self.run_id = self.zygote.start(limits, self.child_fds, self.raw)
        except OSError as exc:
            self.zygote.kill()
            raise SandboxUnavailable(f"the sandbox process is gone: {exc}") from None
        for fd in self.child_fds:
            os.close(fd)
        self.child_fds = []
        pending = bytearray(encode({"script": self.script}))
        inbox = bytearray()
        stdout, stderr = bytearray(), bytearray()
        self.chan.setblocking(False)
        self.sel.register(self.chan, selectors.EVENT_READ | selectors.EVENT_WRITE)
        self.sel.register(self.out_r, selectors.EVENT_READ)
        self.sel.register(self.err_r, selectors.EVENT_READ)
        self.sel.register(self.zygote.ctl, selectors.EVENT_READ)
        open_streams = {"chan", "out", "err"}
        done: dict[str, Any] | None = None
        exit_info: dict[str, Any] | None = None
        deadline = time.monotonic() + self.timeout
        out_cap = int(limits["output_bytes"]) + 4096
        killed_for: tuple[str, str, str] | None = None
        exit_deadline = float("inf")
        while open_streams or exit_info is None:
            now = time.monotonic()
            if exit_info is not None and now > exit_deadline:
                break
            if now >= deadline and killed_for is None:
                killed_for = (
                    "limited",
                    "TimeLimit",
                    f"time limit of {self.timeout:g}s exceeded; the script was killed",
                )
                exit_info = self._kill()
                break
            wait = min(deadline, exit_deadline) - now if exit_info is not None else deadline - now
            for key, mask in self.sel.select(max(wait, 0.0)):
                src = key.fileobj
                if src is self.chan:
                    if mask & selectors.EVENT_WRITE and pending:
                        try:
                            sent = self.chan.send(pending)
                            del pending[:sent]
                        except BlockingIOError:
                            pass
                        except OSError:
                            pending.clear()
                    if not pending:
                        self.sel.modify(self.chan, selectors.EVENT_READ)
                    if mask & selectors.EVENT_READ:
                        try:
                            data = self.chan.recv(1 << 16)
                        except BlockingIOError:
                            continue
                        except OSError:
                            data = b""
                        if not data:
                            self.sel.unregister(self.chan)
                            open_streams.discard("chan")
                            continue
                        inbox.extend(data)
                        try:
                            while (body := read_frame(inbox, MAX_CHILD_FRAME)) is not None:
                                frame = decode(body)
                                if isinstance(frame, dict) and frame.get("t") == "done":
                                    done = frame
                                elif isinstance(frame, dict) and frame.get("t") == "note":
                                    self._note(frame)
                                else:
                                    pending.extend(self._serve(frame))
                                    self.sel.modify(self.chan, selectors.EVENT_READ | selectors.EVENT_WRITE)
                        except FrameError as exc:
                            killed_for = (
                                "blocked",
                                "ProtocolViolation",
                                f"the sandbox child broke the protocol: {exc}",
                            )
                            exit_info = self._kill()
                            open_streams.clear()
                            break
                elif src in (self.out_r, self.err_r):
                    data = os.read(self.out_r if src is self.out_r else self.err_r, 1 << 16)
                    name = "out" if src is self.out_r else "err"
                    if not data:
                        self.sel.unregister(src)
                        open_streams.discard(name)
                    elif name == "out":
                        stdout.extend(data)
                        if len(stdout) > out_cap:
                            killed_for = (
                                "limited",
                                "OutputLimit",
                                f"output exceeded {limits['output_bytes']} bytes",
                            )
                            exit_info = self._kill()
                            open_streams.clear()
                            break
                    elif len(stderr) < STDERR_CAP:
                        stderr.extend(data[: STDERR_CAP - len(stderr)])
                else:
                    for msg in self.zygote.feed():
                        if msg is None:
                            exit_info = {"code": -1, "signal": signal.SIGKILL, "zygote_gone": True}
                            self.sel.unregister(self.zygote.ctl)
                            break
                        if msg.get("t") == "exit" and msg.get("id") == self.run_id:
                            exit_info = msg
                    if exit_info is not None:
                        exit_deadline = time.monotonic() + 1.0
        out.stdout_bytes = bytes(stdout[: int(limits["output_bytes"])])
        out.stderr = bytes(stderr)
        if killed_for is not None:
            out.error = (*killed_for, None)
            return self._judge(out)
        return self._judge(self._classify(out, done, exit_info or {}))

    def _note(self, frame: dict[str, Any]) -> None:
        """The child reports each violation or limit as it is recorded (no reply)."""
        kind, message = frame.get("kind"), frame.get("message")
        if kind in self.notes and len(self.notes[kind]) < MAX_NOTES:
            self.notes[kind].append(str(message)[:500])

    def _judge(self, out: Outcome) -> Outcome:
        """Whatever the child said or however it ended (killed at the wall clock, crashed, or a verdict
        that missed one), a violation it reported, or a request the broker refused as one, makes the
        run blocked; a reported limit makes an errored run limited."""
        refused = [r.partition(": ")[2] for r in self.calls.refused if r.startswith("blocked: ")]
        violations = self.notes["blocked"] + refused
        out.violations = violations[:MAX_NOTES]
        kind = out.error[0] if out.error else None
        if violations and kind != "blocked":
            out.error = ("blocked", "PolicyViolation", violations[0], None)
            out.result = None
        elif self.notes["limited"] and kind in (None, "error"):
            out.error = ("limited", "LimitExceeded", self.notes["limited"][0], None)
            out.result = None
        return out

    def _serve(self, frame: Any) -> bytes:
        t0 = time.perf_counter()
        try:
            return self.calls.handle(frame, encode)
        finally:
            self.broker_ms += (time.perf_counter() - t0) * 1000

    def abort(self) -> None:
        """The parent is leaving mid-run (an exception, an interrupt): the child must not outlive it."""
        with contextlib.suppress(Exception):
            self._kill()

    def _kill(self) -> dict[str, Any]:
        """Kill the child's process group through the zygote; kill everything if that does not work."""
        self.zygote.request_kill()
        deadline = time.monotonic() + KILL_GRACE
        while time.monotonic() < deadline:
            try:
                msg = self.zygote.read(max(deadline - time.monotonic(), 0.01))
            except (FrameError, OSError):
                break
            if msg is None:
                break
            if isinstance(msg, dict) and msg.get("t") == "exit" and msg.get("id") == self.run_id:
                return msg
        self.zygote.kill()
        return {"code": -1, "signal": signal.SIGKILL, "zygote_gone": True}

    def _classify(self, out: Outcome, done: dict[str, Any] | None, exit_info: dict[str, Any]) -> Outcome:
        if done is not None:
            stats = done.get("stats")
            out.child_stats = stats if isinstance(stats, dict) else {}
            status = done.get("status")
            if status == "ok":
                result = done.get("result")
                if _depth(result) > 64:
                    out.error = ("limited", "ResultError", "__result__ is nested deeper than 64 levels", None)
                else:
                    out.result = result
                    out.result_bytes = len(encode(result)) - 4
                return out
            kind = status if status in ("blocked", "limited", "error") else "error"
            line = done.get("line") if isinstance(done.get("line"), int) else None
            out.error = (
                kind,
                str(done.get("type") or "Error"),
                str(done.get("message") or "failed")[:4000],
                line,
            )
            return out
        sig = int(exit_info.get("signal") or 0)
        if sig == signal.SIGXCPU:
            out.error = ("limited", "CPULimit", "CPU time limit exceeded; the script was killed", None)
        elif sig == signal.SIGSYS:
            out.error = (
                "blocked",
                "ForbiddenSyscall",
                "the script made a forbidden system call and was killed",
                None,
            )
        elif sig == signal.SIGKILL:
            out.error = ("limited", "Killed", "the script was killed (memory or CPU hard limit)", None)
        elif sig:
            out.error = (
                "error",
                "Crash",
                f"the sandboxed interpreter crashed ({signal.Signals(sig).name})",
                None,
            )
        else:
            detail = out.stderr.decode("utf-8", "replace").strip().splitlines()
            why = detail[-1] if detail else f"exit code {exit_info.get('code')}"
            out.error = ("error", "SandboxFailure", f"the script ended without a result: {why}", None)
        return out


def _depth(value: Any, level: int = 0) -> int:
    if level > 64:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
