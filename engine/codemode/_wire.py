"""Length-prefixed JSON frames: the only language the sandbox child and the trusted parent share.

This module is loaded into the sandbox too, so it imports nothing but the standard library.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

__all__ = ["FrameError", "decode", "encode", "read_frame", "recv_frame", "send_frame"]

_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """A frame that is too large, truncated or not JSON."""


def encode(obj: Any) -> bytes:
    # A lone surrogate (a file name that is not UTF-8, "\ud800" in a script) becomes "?": every frame
    # is valid UTF-8, and neither side fails on text the other side sent.
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    data = text.encode("utf-8", "replace")
    return _HEADER.pack(len(data)) + data


def decode(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise FrameError(f"malformed frame: {type(exc).__name__}") from None


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            if chunks:
                raise FrameError("connection closed inside a frame")
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, limit: int) -> Any:
    """Blocking read of one frame; ``None`` at a clean end of stream."""
    head = _recv_exact(sock, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > limit:
        raise FrameError(f"frame of {size} bytes exceeds the limit of {limit}")
    body = _recv_exact(sock, size)
    if body is None:
        raise FrameError("connection closed inside a frame")
    return decode(body)


def send_frame(sock: socket.socket, obj: Any) -> None:
    sock.sendall(encode(obj))


def read_frame(buffer: bytearray, limit: int) -> bytes | None:
    """Pop one complete frame body from ``buffer`` (non-blocking readers), or ``None`` if incomplete."""
    if len(buffer) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack_from(buffer)
    if size > limit:
        raise FrameError(f"frame of {size} bytes exceeds the limit of {limit}")
    if len(buffer) < _HEADER.size + size:
        return None
    body = bytes(buffer[_HEADER.size : _HEADER.size + size])
    del buffer[: _HEADER.size + size]
    return body


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
