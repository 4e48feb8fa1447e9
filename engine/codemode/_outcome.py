"""How one script's run in the sandbox child ends: its capped prints and the verdict on its result or
exception; separate from the process work around it. Loaded inside the sandbox (no ``engine`` imports)."""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from ._client import ResultError, to_plain
from ._policy import MAX_MESSAGE, Recorder, SandboxLimit, SandboxViolation, script_line
from ._wire import encode, write_all

__all__ = ["Output", "TextSink", "execute", "notifier", "result_verdict", "verdict"]


class Output:
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


class TextSink:
    """``sys.stdout`` in the child: text written there goes to the script's capped output."""

    def __init__(self, output: Output) -> None:
        self._output = output

    def write(self, text: str) -> int:
        self._output.write(str(text))
        return len(text)

    def flush(self) -> None:
        pass


def notifier(chan: socket.socket) -> Any:
    """Tell the parent about each violation or limit as it is recorded (a run killed later, or one
    whose process crashes, is still judged by what it tried)."""

    def notify(kind: str, message: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            chan.sendall(encode({"t": "note", "kind": kind, "message": message}))

    return notify


def verdict(recorder: Recorder, status: str, etype: str, message: str, **extra: Any) -> dict[str, Any]:
    """How a run ended, where a recorded violation (even a caught one) outranks everything else and a
    recorded limit outranks an ordinary error."""
    if recorder.violations:
        return {"status": "blocked", "type": "PolicyViolation", "message": recorder.violations[0]}
    if recorder.limits and (status != "limited" or etype == "LimitExceeded"):
        return {"status": "limited", "type": "LimitExceeded", "message": recorder.limits[0]}
    return {"status": status, "type": etype[:200], "message": message, **extra}


def result_verdict(value: Any, budget: int, recorder: Recorder) -> dict[str, Any]:
    try:
        plain = to_plain(value, budget)
    except ResultError as exc:
        return verdict(recorder, exc.kind, "ResultError", str(exc))
    except RecursionError:
        return verdict(recorder, "limited", "ResultError", "__result__ is nested too deeply")
    except MemoryError:
        return verdict(recorder, "limited", "MemoryError", "memory limit reached while returning __result__")
    except BaseException as exc:
        return verdict(
            recorder, "error", "ResultError", f"__result__ could not be converted: {_describe(exc)}"
        )
    if recorder.violations or recorder.limits:
        return verdict(recorder, "ok", "", "")
    return {"status": "ok", "result": plain}


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text[:2000]}"


def execute(code: Any, namespace: dict[str, Any], recorder: Recorder) -> dict[str, Any]:
    """Run the compiled script; classify how it ended."""
    try:
        exec(code, namespace)
    except SandboxViolation as exc:
        # Raised by a guard (recorded), or by the script itself with a class it caught earlier.
        return verdict(recorder, "blocked", "PolicyViolation", str(exc)[:MAX_MESSAGE])
    except SandboxLimit as exc:
        return verdict(recorder, "limited", "LimitExceeded", str(exc)[:MAX_MESSAGE])
    except MemoryError:
        return verdict(recorder, "limited", "MemoryError", "memory limit reached; process less at once")
    except RecursionError as exc:
        line = script_line(exc.__traceback__)
        where = f" (line {line})" if line else ""
        return verdict(recorder, "limited", "RecursionError", f"recursion too deep{where}")
    except BaseException as exc:
        line = script_line(exc.__traceback__)
        message = _describe(exc) + (f" (line {line})" if line else "")
        return verdict(recorder, "error", type(exc).__name__, message, line=line)
    return verdict(recorder, "ok", "", "")
