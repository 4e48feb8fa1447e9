"""What keeps the API safe to leave running: the bearer token (compared in constant time), the request
size limit, the vaults a request may name (only those the server was started with), and error bodies
that never carry a secret."""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import is_loopback
from ..errors import ShadError, UsageError
from ..store.history import scrub

__all__ = [
    "MAX_BODY",
    "PUBLIC_PATHS",
    "ApiError",
    "BodyLimit",
    "Settings",
    "error_body",
    "is_loopback",
]

MAX_BODY = 1_000_000  # bytes of a request body
PUBLIC_PATHS = ("/v1/health", "/openapi.json")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ApiError(ShadError):
    """An error with its HTTP status (``status``) and JSON ``type``."""

    def __init__(self, status: int, kind: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.kind = kind


@dataclass
class Settings:
    """How the server was started: the token (None: no auth, loopback only), the vaults requests may
    name, and the largest request body."""

    token: str | None = None
    vaults: Sequence[str | Path] = ()
    max_body: int = MAX_BODY
    roots: tuple[Path, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        roots = []
        for v in self.vaults:
            path = Path(v).expanduser()
            if not path.is_dir():
                raise UsageError(
                    f"vault folder not found: {path}", hint="pass --vault with an existing folder"
                )
            roots.append(path.resolve())
        self.roots = tuple(dict.fromkeys(roots))
        self.token = self.token or None

    def authorized(self, header: str | None) -> bool:
        """Constant-time check of an ``Authorization: Bearer TOKEN`` header."""
        if self.token is None:
            return True
        scheme, _, given = (header or "").partition(" ")
        expected = self.token.encode("utf-8")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("utf-8"), expected)

    def vault(self, name: str) -> Path:
        """The allowed vault a request names (its path, or its folder's name); 403 for any other."""
        if not self.roots:
            raise ApiError(
                403, "Forbidden", "this server serves no vault", hint="start it with shad serve --vault DIR"
            )
        for root in self.roots:
            if name == root.name:
                return root
        try:
            path = Path(name).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            path = None
        if path is not None and path in self.roots:
            return path
        raise ApiError(
            403,
            "Forbidden",
            "that vault is not one this server was started with",
            hint="name one of the server's vaults (GET /v1/vault/status lists them)",
        )

    def vaults_of(self, names: Sequence[str] | None) -> tuple[Path, ...]:
        """The allowed vaults named (all of them when none is)."""
        if not names:
            if not self.roots:
                self.vault("")  # raises 403
            return self.roots
        return tuple(dict.fromkeys(self.vault(n) for n in names))

    def allows_run(self, vaults: Sequence[str]) -> bool:
        """Was this run over the server's vaults only?"""
        try:
            return bool(vaults) and all(Path(v).resolve() in self.roots for v in vaults)
        except (OSError, RuntimeError, ValueError):
            return False

    def clean(self, text: str) -> str:
        """``text`` without the token or any secret the environment holds."""
        if self.token:  # as a whole word: a token "tok" leaves the word "token" alone
            text = re.sub(rf"(?<![\w-]){re.escape(self.token)}(?![\w-])", "[redacted]", text)
        return scrub(text)


def error_body(kind: str, message: str, hint: str | None, settings: Settings | None = None) -> bytes:
    def clean(text: str) -> str:
        return settings.clean(text) if settings is not None else scrub(text)

    error = {"type": kind, "message": clean(message), "hint": clean(hint) if hint else None}
    return json.dumps({"error": error}, ensure_ascii=False).encode("utf-8")


class BodyLimit:
    """ASGI middleware: a body larger than ``settings.max_body`` is 413 before the app sees it (by its
    Content-Length, or while a chunked body arrives); a request without the token is 401 here too, so
    that nothing else (body parsing, validation) happens for it."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def _reply(self, send: Send, status: int, kind: str, message: str, hint: str | None) -> None:
        body = error_body(kind, message, hint, self.settings)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = str(scope.get("path", ""))
        if path not in PUBLIC_PATHS and not self.settings.authorized(headers.get("authorization")):
            await self._reply(
                send, 401, "Unauthorized", "missing or wrong bearer token", "send Authorization: Bearer TOKEN"
            )
            return
        limit = self.settings.max_body
        too_big = ("RequestTooLarge", f"the request body is larger than {limit} bytes", "send less")
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await self._reply(send, 413, *too_big)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._reply(send, 413, *too_big)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body"))
        body, delivered = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
