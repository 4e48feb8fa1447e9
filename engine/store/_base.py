"""What every store shares: the cache entry, the protocol, the error, and the rules both backends obey."""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..errors import ShadError, UsageError

__all__ = [
    "SCOPES",
    "TIERS",
    "CacheEntry",
    "Store",
    "StoreUnavailableError",
    "check_clear",
    "check_tier",
    "check_tokens",
    "check_ttl",
    "encode_value",
    "redact_url",
    "source_bounds",
    "under",
]

TIERS = ("main", "staging")
SCOPES = ("run", "source", "all")


class StoreUnavailableError(ShadError):
    """The cache and ledger store cannot be used: the server is gone, the file is unwritable, ..."""


@dataclass(frozen=True)
class CacheEntry:
    """One cached node result and what it was computed from."""

    key: str  # logical key, without tier: "<goal_type>:<intent>:<entities>:<context_hash>"
    value: dict[str, Any]  # JSON-able
    fingerprint: str  # subset fingerprint the value was computed against
    tier: str  # "main" | "staging"
    created_at: float  # unix time
    expires_at: float  # unix time
    run_id: str | None  # the run that wrote it
    sources: tuple[str, ...]  # "<vault root abs path>/<vault-relative path>" of the notes it used


@runtime_checkable
class Store(Protocol):
    """The node cache plus the budget ledger, shared by every process that opens the same store.

    It also satisfies ``engine.budget.Ledger``. Every ledger method is atomic across processes.
    """

    name: str  # "sqlite" | "redis"
    url: str  # where it lives; a password is shown as ***

    def open(self, run_id: str, total: int) -> None:
        """Set the run's total; what it already spent is kept (a resumed run continues its account)."""
        ...

    def charge(self, run_id: str, tokens: int) -> int:
        """Add to what was spent, unconditionally (usage is a fact); returns what is left (may be < 0)."""
        ...

    def reserve(self, run_id: str, tokens: int) -> bool:
        """Spend ``tokens`` only if that many remain, atomically; True if they were spent."""
        ...

    def add(self, run_id: str, tokens: int) -> int:
        """Raise the run's total; returns what is left."""
        ...

    def remaining(self, run_id: str) -> int:
        """Total minus spent (0 for an unknown run)."""
        ...

    def spent(self, run_id: str) -> int:
        """Tokens spent so far (0 for an unknown run)."""
        ...

    def cache_get(self, key: str, *, tier: str = "main") -> CacheEntry | None:
        """The live entry, or None when absent or expired; counts a hit or a miss."""
        ...

    def cache_put(
        self,
        key: str,
        value: dict[str, Any],
        *,
        fingerprint: str,
        ttl: float,
        tier: str = "main",
        run_id: str | None = None,
        sources: Sequence[str] = (),
    ) -> None:
        """Write (or overwrite) an entry that lives ``ttl`` seconds."""
        ...

    def cache_promote(self, key: str, *, ttl: float) -> bool:
        """Move a live staging entry to main with a new TTL; False if there is none."""
        ...

    def cache_clear(self, scope: str, *, run_id: str | None = None, source: str | None = None) -> int:
        """Remove entries (scope ``run``, ``source`` or ``all``); returns how many."""
        ...

    def cache_stats(self) -> dict[str, Any]:
        """Entries per tier, expired entries still held, approximate bytes, hits and misses."""
        ...

    def close(self) -> None:
        """Release connections; the data stays."""
        ...


def check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise UsageError(f"unknown cache tier {tier!r}", hint="use 'main' or 'staging'")
    return tier


def encode_value(value: dict[str, Any]) -> str:
    """A cached value as JSON text; anything JSON cannot hold (NaN, objects) is a usage error."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a cached value must be JSON: {exc}") from exc


def check_ttl(ttl: float) -> float:
    try:
        seconds = float(ttl)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds):
        raise UsageError(f"cache TTL must be a number of seconds, not {ttl!r}")
    return seconds


def check_tokens(tokens: int, what: str) -> int:
    """Budgets move in whole, non-negative token counts."""
    count = int(tokens)
    if count < 0:
        raise UsageError(f"cannot {what} a negative number of tokens ({count})")
    return count


def check_clear(scope: str, run_id: str | None, source: str | None) -> str | None:
    """Validate ``cache_clear``'s arguments; returns the normalized source path for scope ``source``."""
    if scope not in SCOPES:
        raise UsageError(f"unknown cache clear scope {scope!r}", hint="use 'run', 'source' or 'all'")
    if scope == "run" and not run_id:
        raise UsageError("clearing the cache by run needs a run id", hint="pass run_id= (--run RUN_ID)")
    if scope == "source":
        if not source:
            raise UsageError(
                "clearing the cache by source needs a path", hint="pass source= a vault, folder or note path"
            )
        return posixpath.normpath(source)
    return None


def source_bounds(source: str) -> tuple[str, str, str]:
    """``(exact, low, high)``: a stored source ``s`` is at or under ``source`` iff ``s == exact`` or
    ``low <= s < high``. The range holds exactly the strings that start with ``exact + "/"`` (``0``
    follows ``/`` in code point order), so ``/v/ab`` is not under ``/v/a`` and no LIKE escaping is needed."""
    exact = source if source == "/" else source.rstrip("/")
    low = exact if exact.endswith("/") else exact + "/"
    return exact, low, low[:-1] + "0"


def under(path: str, source: str) -> bool:
    """Path-segment containment: ``path`` is ``source`` or inside it."""
    exact, low, _ = source_bounds(source)
    return path == exact or path.startswith(low)


def redact_url(url: str) -> str:
    """The URL with any password (in the user info or a ``password=`` query parameter) shown as ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() == "password" for name, _ in pairs):
            query = urlencode([(n, "***" if n.lower() == "password" else v) for n, v in pairs], safe="*")
    # Built by hand: urlunsplit drops the "//" of an empty host (unix:///path -> unix:/path).
    out = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc + parts.path
    return out + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")
