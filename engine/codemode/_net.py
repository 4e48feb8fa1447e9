"""HTTP GET for the ``extended`` profile, performed by the trusted parent, never by the script.

Rules: https only; the host must be on the allow-list (``example.org`` or ``*.example.org``); no user
info in the URL; every address the host resolves to must be public (no loopback, private, link-local,
multicast or reserved ranges), and the connection goes to the address that was checked (pinned, so a
second DNS answer cannot rebind it); redirects are returned, never followed; size and time are capped.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = ["NetPolicy", "NetRefused", "Target", "check_url", "fetch"]

Resolver = Callable[[str, int], Sequence[str]]


class NetRefused(Exception):
    """The request is not allowed (``kind`` "blocked") or went over a cap (``kind`` "limited")."""

    def __init__(self, message: str, kind: str = "blocked") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class NetPolicy:
    """Allowed hosts and caps. ``https_only`` and ``allow_private`` exist for tests against a local
    server; the CLI never turns them off."""

    allow: tuple[str, ...]
    max_bytes: int = 1_000_000
    timeout: float = 10.0
    https_only: bool = True
    allow_private: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow", tuple(_norm_host(h) for h in self.allow if h.strip()))


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    ip: str
    path: str


def _norm_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    prefix = "*." if host.startswith("*.") else ""
    bare = host[len(prefix) :]
    with contextlib.suppress(UnicodeError):
        bare = bare.encode("idna").decode("ascii")
    return prefix + bare


def host_allowed(host: str, allow: Sequence[str]) -> bool:
    for pattern in allow:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
        elif host == pattern:
            return True
    return False


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def check_url(url: str, policy: NetPolicy, resolver: Resolver | None = None) -> Target:
    """Decide whether ``url`` may be fetched and where to connect; raise NetRefused if not."""
    try:
        parts = urlsplit(url)
        port_value = parts.port
    except ValueError as exc:
        raise NetRefused(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme != "https" and (policy.https_only or scheme != "http"):
        raise NetRefused(f"only https URLs may be fetched (got {scheme or 'no scheme'!r})")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise NetRefused("URLs with user names or passwords are refused")
    if not parts.hostname:
        raise NetRefused("the URL has no host")
    host = _norm_host(parts.hostname)
    default_port = 443 if scheme == "https" else 80
    port = port_value or default_port
    if port != default_port:
        if not host_allowed(f"{host}:{port}", policy.allow):
            raise NetRefused(
                f"port {port} of {host!r} is not on the allow-list (only the scheme's default port)"
            )
    elif not (host_allowed(host, policy.allow) or host_allowed(f"{host}:{port}", policy.allow)):
        raise NetRefused(f"host {host!r} is not on the allow-list (--net-allow)")
    try:
        addresses = list((resolver or _system_resolver)(host, port))
    except OSError as exc:
        raise NetRefused(f"cannot resolve {host!r}: {exc}", kind="error") from None
    if not addresses:
        raise NetRefused(f"{host!r} resolves to no address", kind="error")
    for addr in addresses:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if not policy.allow_private and (not ip.is_global or ip.is_multicast or ip.is_reserved):
            raise NetRefused(f"{host!r} resolves to a non-public address ({ip}); refused")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(scheme, host, port, addresses[0], path)


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._ip = target.ip

    def connect(self) -> None:
        self.sock = socket.create_connection((self._ip, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._ip = target.ip

    def connect(self) -> None:
        raw = socket.create_connection((self._ip, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def fetch(url: str, policy: NetPolicy, resolver: Resolver | None = None) -> dict[str, Any]:
    """GET ``url`` under ``policy``: status, headers, text (``truncated`` when over the size cap)."""
    target = check_url(url, policy, resolver)
    deadline = time.monotonic() + policy.timeout
    conn: http.client.HTTPConnection = (
        _PinnedHTTPS(target, policy.timeout)
        if target.scheme == "https"
        else _PinnedHTTP(target, policy.timeout)
    )
    try:
        conn.request(
            "GET", target.path, headers={"User-Agent": "shad-sandbox/1", "Accept-Encoding": "identity"}
        )
        resp = conn.getresponse()
        chunks: list[bytes] = []
        size = 0
        truncated = False
        while True:
            if time.monotonic() > deadline:
                raise NetRefused(f"the response took longer than {policy.timeout:g}s", kind="limited")
            chunk = resp.read(min(65536, policy.max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > policy.max_bytes:
                truncated = True
                break
        body = b"".join(chunks)[: policy.max_bytes]
        charset = resp.headers.get_content_charset() or "utf-8"
        try:
            text = body.decode(charset, "replace")
        except LookupError:
            text = body.decode("utf-8", "replace")
        return {
            "url": url,
            "status": resp.status,
            "headers": {k.lower(): v for k, v in resp.getheaders()},
            "text": text,
            "truncated": truncated,
            "redirect": resp.headers.get("Location") if 300 <= resp.status < 400 else None,
        }
    except (OSError, http.client.HTTPException) as exc:
        raise NetRefused(f"GET {url} failed: {type(exc).__name__}: {exc}", kind="error") from None
    finally:
        conn.close()
