"""Loopback helpers for tests that start a server in a subprocess."""

from __future__ import annotations

import socket
import subprocess
import time

__all__ = ["free_port", "wait_until_listening"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    """Until ``proc`` accepts connections on ``port``; fails with its stderr if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.1)
