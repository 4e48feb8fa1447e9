"""Completion webhooks: a signed JSON POST after each task, only to hosts on an allow-list.

- **Where.** ``http``/``https`` URLs whose host (and port, when the allow-list entry names one) is on the
  allow-list; no host is allowed implicitly, not even loopback. URLs carrying credentials
  (``user:pass@``) are refused. Redirects are not followed (they could lead off the list).
- **What.** The body is JSON (the task and its run's summary: status, run id, report, citations count);
  ``X-Shad-Event`` is ``task.completed`` or ``task.failed``; ``X-Shad-Signature`` is
  ``sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>``. Secret values of the environment
  are scrubbed from the body; the secret itself is never in a body or a message.
- **How.** 5 seconds per attempt, one attempt; a failure is returned (and reported), never raised.
  Messages name a URL by scheme, host and port only (paths often hold tokens).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._version import __version__
from ..config import refuse_offline
from ..errors import UsageError
from ..store.history import scrub

__all__ = ["Delivery", "WebhookTarget", "check_webhooks", "deliver", "sign"]

TIMEOUT = 5.0
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class WebhookTarget:
    """A checked webhook URL; ``display`` (scheme://host:port) is what messages show of it."""

    url: str
    host: str
    port: int

    @property
    def display(self) -> str:
        scheme = urlsplit(self.url).scheme
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class Delivery:
    """What one POST did: ``ok``, the HTTP ``status`` (0 when none came back) and the ``error``."""

    target: str
    ok: bool
    status: int = 0
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"webhook": self.target, "ok": self.ok, "status": self.status, "error": self.error}


def _allowed(entries: Iterable[str]) -> list[tuple[str, int | None]]:
    allowed = []
    for entry in entries:
        parts = urlsplit("//" + entry.strip())
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1 or parts.path or parts.username or parts.password:
            raise UsageError(
                f"--webhook-allow takes HOST or HOST:PORT, got {entry!r}",
                hint="e.g. --webhook-allow hooks.example.com or --webhook-allow 127.0.0.1:5678",
            )
        allowed.append((parts.hostname.casefold(), port))
    return allowed


def _refusal(url: str, allowed: list[tuple[str, int | None]]) -> tuple[str, WebhookTarget | None]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return "not a valid URL", None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return "only http:// and https:// URLs with a host are allowed", None
    if parts.username or parts.password:
        return "credentials in the URL are refused (the signature authenticates the POST)", None
    host, port = parts.hostname.casefold(), port or _DEFAULT_PORTS[parts.scheme]
    if not any(host == h and (p is None or p == port) for h, p in allowed):
        return f"{host}:{port} is not on the allow-list (--webhook-allow)", None
    return "", WebhookTarget(url.strip(), host, port)


def check_webhooks(
    urls: Iterable[str], allow: Iterable[str], *, offline: bool | None = None
) -> list[WebhookTarget]:
    """The webhook URLs, checked against the allow-list; a ``UsageError`` names every one refused.
    Offline mode (``offline``, else ``SHAD_OFFLINE``) refuses every webhook."""
    urls = list(urls)
    if urls:
        refuse_offline("webhooks", offline=offline or None)
    allowed = _allowed(allow)
    targets, refused = [], []
    for url in urls:
        reason, target = _refusal(url, allowed)
        if target is None:
            shown = urlsplit(url.strip()).netloc.rpartition("@")[2] or url.strip()[:60]
            refused.append(f"{shown}: {reason}")
        else:
            targets.append(target)
    if refused:
        raise UsageError(
            "webhook refused: " + "; ".join(refused),
            hint="allow a host with --webhook-allow HOST[:PORT] (nothing is allowed by default)",
        )
    return targets


def sign(body: bytes, secret: str) -> str:
    """The ``X-Shad-Signature`` value: ``sha256=`` and the hex HMAC-SHA256 of ``body`` keyed ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx comes back as an HTTPError: reported, not followed


_OPENER = urllib.request.build_opener(_NoRedirect())


def body_of(payload: dict[str, Any]) -> bytes:
    """The raw body sent (and signed): the payload as JSON, secrets of the environment scrubbed."""
    return scrub(json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str)).encode("utf-8")


def deliver(
    target: WebhookTarget, event: str, payload: dict[str, Any], secret: str, *, timeout: float = TIMEOUT
) -> Delivery:
    """POST ``payload`` to ``target``, signed; never raises."""
    body = body_of(payload)
    request = urllib.request.Request(
        target.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": f"shad/{__version__}",
            "X-Shad-Event": event,
            "X-Shad-Signature": sign(body, secret),
        },
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        return Delivery(target.display, False, exc.code, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Delivery(target.display, False, 0, scrub(f"{type(exc).__name__}: {reason}")[:300])
    if not 200 <= status < 300:
        return Delivery(target.display, False, status, f"HTTP {status}")
    return Delivery(target.display, True, status)
