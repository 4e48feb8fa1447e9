"""Loopback helpers for tests that start a server in a subprocess.

A free port is only free when it is picked: another test process (a Jupyter kernel of a parallel test
binds several) may take it before the server does. The server then fails to bind and exits, while a
connection to the port reaches the stranger (a kernel answers HTTP with a ZeroMQ greeting). So "listening"
means *this* process holds a listening socket on the port (read from ``/proc`` on Linux), and
``start_server`` tries another port when the server exits before it listens.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["free_port", "start_server", "wait_until_listening"]

_LISTEN = "0A"  # the TCP state "listening" in /proc/net/tcp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    """Until ``proc`` itself listens on ``port``; fails with its stderr if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        if _listens(proc.pid, port):
            return
        assert time.monotonic() < deadline, "the server did not start listening"
        time.sleep(0.1)


def start_server(
    argv_for: Callable[[int], list[str]], attempts: int = 3, **popen: Any
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``argv_for(port)`` on a free port and wait until it listens there; another port (up to
    ``attempts``) when it exits first because the port was taken meanwhile."""
    said = ""
    for _ in range(attempts):
        port = free_port()
        proc: subprocess.Popen[bytes] = subprocess.Popen(argv_for(port), stderr=subprocess.PIPE, **popen)
        try:
            wait_until_listening(proc, port)
            return proc, port
        except AssertionError as exc:
            if proc.poll() is None:  # alive but never listening: not a lost port
                proc.kill()
                proc.communicate()
                raise
            said = str(exc)
    raise AssertionError(f"the server exited on {attempts} ports; last:\n{said}")


def _listens(pid: int, port: int) -> bool:
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():  # not Linux: any listener on the port will do
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False
    inodes = set()
    for table in tables:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            continue
    return False
