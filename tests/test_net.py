"""``tests/_net.py``: a server counts as listening only when the process itself holds the port, and
``start_server`` moves to another port when the one it picked was taken before the server bound it."""

from __future__ import annotations

import socket
import subprocess
import sys

import _net
import pytest
from _net import start_server, wait_until_listening

SERVE = (
    "import http.server, sys; http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), None).serve_forever()"
)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.communicate()


def test_a_stranger_on_the_port_is_not_the_server() -> None:
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        port = stranger.getsockname()[1]
        idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stderr=subprocess.PIPE)
        try:
            with pytest.raises(AssertionError, match="did not start listening"):
                wait_until_listening(idle, port, timeout=1)
        finally:
            _stop(idle)


def test_a_taken_port_is_left_for_another(monkeypatch: pytest.MonkeyPatch) -> None:
    stranger = socket.socket()
    stranger.bind(("127.0.0.1", 0))
    stranger.listen()
    taken = stranger.getsockname()[1]
    ports = iter([taken])
    monkeypatch.setattr(_net, "free_port", lambda: next(ports, None) or _free())
    try:
        proc, port = start_server(lambda p: [sys.executable, "-c", SERVE, str(p)])
    finally:
        stranger.close()
    try:
        assert port != taken
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        _stop(proc)


def _free() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
