"""The shared store: a Redis server, for many processes or machines.

Keys (seed 000 §2.10): an entry is the hash ``shad:cache:<tier>:<key>`` with a native Redis expiry; the
set ``shad:cache:idx:run:<run_id>`` names the entries a run wrote (for clearing by run); the ledger is
the hash ``shad:ledger:<run_id>`` (``total``, ``spent``); hit and miss counts live in the hash
``shad:stats``. Every read-modify-write is one server-side Lua script, so it is atomic however many
clients share the server. Short socket timeouts and a single reconnect attempt mean a dead or frozen
server turns into a ``StoreUnavailableError`` within seconds, never a hang.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ._base import (
    CacheEntry,
    StoreUnavailableError,
    check_clear,
    check_tier,
    check_tokens,
    check_ttl,
    encode_value,
    redact_url,
    under,
)

if TYPE_CHECKING:
    import redis

__all__ = ["RedisStore"]

CACHE = "shad:cache:"
RUN_INDEX = "shad:cache:idx:run:"
LEDGER = "shad:ledger:"
STATS = "shad:stats"
TIERS = ("main", "staging")
_BATCH = 500

# KEYS: entry, stats. ARGV: now. Returns the entry's fields, or nil (absent or expired).
_GET = """
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then redis.call('HINCRBY', KEYS[2], 'misses', 1) return false end
for i = 1, #h, 2 do
  if h[i] == 'expires_at' and tonumber(h[i + 1]) <= tonumber(ARGV[1]) then
    redis.call('DEL', KEYS[1])
    redis.call('HINCRBY', KEYS[2], 'misses', 1)
    return false
  end
end
redis.call('HINCRBY', KEYS[2], 'hits', 1)
return h
"""

# Keep a run index alive as long as its longest-living entry (ARGV: index key, expiry ms, now ms).
_EXTEND = """
local function extend(idx, at, now)
  local left = redis.call('PTTL', idx)
  if left < 0 or now + left < at then redis.call('PEXPIREAT', idx, at) end
end
"""

# KEYS: entry. ARGV: value, fingerprint, created_at, expires_at, run_id, sources, expires ms,
# run index prefix, index member, now ms.
_PUT = (
    _EXTEND
    + """
local old = redis.call('HGET', KEYS[1], 'run_id')
if old and old ~= '' and old ~= ARGV[5] then redis.call('SREM', ARGV[8] .. old, ARGV[9]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'value', ARGV[1], 'fingerprint', ARGV[2], 'created_at', ARGV[3],
           'expires_at', ARGV[4], 'run_id', ARGV[5], 'sources', ARGV[6])
redis.call('PEXPIREAT', KEYS[1], ARGV[7])
if ARGV[5] ~= '' then
  redis.call('SADD', ARGV[8] .. ARGV[5], ARGV[9])
  extend(ARGV[8] .. ARGV[5], tonumber(ARGV[7]), tonumber(ARGV[10]))
end
return 1
"""
)

# KEYS: staging entry, main entry. ARGV: now, expires_at, expires ms, run index prefix, staging member,
# main member, now ms.
_PROMOTE = (
    _EXTEND
    + """
local exp = redis.call('HGET', KEYS[1], 'expires_at')
if not exp or tonumber(exp) <= tonumber(ARGV[1]) then return 0 end
local old = redis.call('HGET', KEYS[2], 'run_id')
if old and old ~= '' then redis.call('SREM', ARGV[4] .. old, ARGV[6]) end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[2], 'expires_at', ARGV[2])
redis.call('PEXPIREAT', KEYS[2], ARGV[3])
local run = redis.call('HGET', KEYS[2], 'run_id')
if run and run ~= '' then
  redis.call('SREM', ARGV[4] .. run, ARGV[5])
  redis.call('SADD', ARGV[4] .. run, ARGV[6])
  extend(ARGV[4] .. run, tonumber(ARGV[3]), tonumber(ARGV[7]))
end
return 1
"""
)

# KEYS: run index. ARGV: cache prefix, run_id. Members may be stale (overwritten by another run): check.
_CLEAR_RUN = """
local n = 0
for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local k = ARGV[1] .. m
  if redis.call('HGET', k, 'run_id') == ARGV[2] then n = n + redis.call('DEL', k) end
end
redis.call('DEL', KEYS[1])
return n
"""

# KEYS: entry. ARGV: the sources it was seen with, run index prefix, member. Deletes only an unchanged entry.
_DELETE_IF = """
if redis.call('HGET', KEYS[1], 'sources') ~= ARGV[1] then return 0 end
local run = redis.call('HGET', KEYS[1], 'run_id')
if run and run ~= '' then redis.call('SREM', ARGV[2] .. run, ARGV[3]) end
return redis.call('DEL', KEYS[1])
"""

_CHARGE = """
local spent = redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
return tonumber(redis.call('HGET', KEYS[1], 'total') or '0') - spent
"""

_RESERVE = """
local h = redis.call('HMGET', KEYS[1], 'total', 'spent')
local want = tonumber(ARGV[1])
if tonumber(h[1] or '0') - tonumber(h[2] or '0') < want then return 0 end
if want > 0 then redis.call('HINCRBY', KEYS[1], 'spent', want) end
return 1
"""

_ADD = """
local total = redis.call('HINCRBY', KEYS[1], 'total', ARGV[1])
return total - tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
"""

_OPEN = """
redis.call('HSET', KEYS[1], 'total', ARGV[1])
redis.call('HSETNX', KEYS[1], 'spent', 0)
return 1
"""

_UNREACHABLE_HINT = (
    "start Redis (redis-server) or check the URL; "
    "or unset REDIS_URL / drop --redis to use the local SQLite store"
)


class RedisStore:
    """Cache and ledger on a Redis server (``redis://``, ``rediss://`` or ``unix://`` URL)."""

    name = "redis"

    def __init__(self, url: str, *, timeout: float = 3.0) -> None:
        self.url = redact_url(url)
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError as exc:
            raise StoreUnavailableError(
                "the Redis store needs the redis package", hint="pip install redis, or use the SQLite store"
            ) from exc
        self._error: type[Exception] = redis.RedisError
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                # One immediate reconnect (server restarted, idle connection dropped), never a backoff loop.
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
                decode_responses=True,
            )
        except ValueError as exc:
            raise UsageError(f"not a usable Redis URL {self.url!r}: {exc}") from exc
        client = self._client
        self._get = client.register_script(_GET)
        self._put = client.register_script(_PUT)
        self._promote = client.register_script(_PROMOTE)
        self._clear_run = client.register_script(_CLEAR_RUN)
        self._delete_if = client.register_script(_DELETE_IF)
        self._charge = client.register_script(_CHARGE)
        self._reserve = client.register_script(_RESERVE)
        self._add = client.register_script(_ADD)
        self._open = client.register_script(_OPEN)
        try:
            client.ping()
        except redis.AuthenticationError as exc:
            client.close()
            raise StoreUnavailableError(
                f"Redis at {self.url} refused the credentials: {exc}",
                hint="check the password in the URL (redis://:PASSWORD@host:6379)",
                url=self.url,
            ) from exc
        except redis.RedisError as exc:
            client.close()
            raise StoreUnavailableError(
                f"cannot reach Redis at {self.url}: {exc}", hint=_UNREACHABLE_HINT, url=self.url
            ) from exc

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except self._error as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url} failed to {what}: {type(exc).__name__}: {exc}",
                hint=_UNREACHABLE_HINT,
                url=self.url,
            ) from exc

    def close(self) -> None:
        self._client.close()

    # --- ledger --------------------------------------------------------------------------------------

    def open(self, run_id: str, total: int) -> None:
        with self._guard("open a budget"):
            self._open(keys=[LEDGER + run_id], args=[int(total)])

    def charge(self, run_id: str, tokens: int) -> int:
        with self._guard("charge tokens"):
            return int(self._charge(keys=[LEDGER + run_id], args=[max(0, int(tokens))]))

    def reserve(self, run_id: str, tokens: int) -> bool:
        count = check_tokens(tokens, "reserve")
        with self._guard("reserve tokens"):
            return bool(int(self._reserve(keys=[LEDGER + run_id], args=[count])))

    def add(self, run_id: str, tokens: int) -> int:
        count = check_tokens(tokens, "add")
        with self._guard("add tokens"):
            return int(self._add(keys=[LEDGER + run_id], args=[count]))

    def remaining(self, run_id: str) -> int:
        with self._guard("read a budget"):
            total, spent = self._client.hmget(LEDGER + run_id, ["total", "spent"])
        return int(total or 0) - int(spent or 0)

    def spent(self, run_id: str) -> int:
        with self._guard("read a budget"):
            return int(self._client.hget(LEDGER + run_id, "spent") or 0)

    # --- cache ---------------------------------------------------------------------------------------

    def cache_get(self, key: str, *, tier: str = "main") -> CacheEntry | None:
        check_tier(tier)
        with self._guard("read the cache"):
            found = self._get(keys=[f"{CACHE}{tier}:{key}", STATS], args=[repr(time.time())])
        if not found:
            return None
        h = dict(zip(found[::2], found[1::2]))
        return CacheEntry(
            key,
            json.loads(h["value"]),
            h["fingerprint"],
            tier,
            float(h["created_at"]),
            float(h["expires_at"]),
            h["run_id"] or None,
            tuple(json.loads(h["sources"])),
        )

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
        check_tier(tier)
        seconds = check_ttl(ttl)
        data = encode_value(value)
        now = time.time()
        expires = now + seconds
        paths = json.dumps(list(dict.fromkeys(str(s) for s in sources)), ensure_ascii=False)
        args = [data, fingerprint, repr(now), repr(expires), run_id or "", paths]
        with self._guard("write the cache"):
            self._put(
                keys=[f"{CACHE}{tier}:{key}"],
                args=[*args, int(expires * 1000), RUN_INDEX, f"{tier}:{key}", int(now * 1000)],
            )

    def cache_promote(self, key: str, *, ttl: float) -> bool:
        seconds = check_ttl(ttl)
        now = time.time()
        expires = now + seconds
        with self._guard("promote a cache entry"):
            moved = self._promote(
                keys=[f"{CACHE}staging:{key}", f"{CACHE}main:{key}"],
                args=[repr(now), repr(expires), int(expires * 1000), RUN_INDEX, f"staging:{key}",
                      f"main:{key}", int(now * 1000)],
            )  # fmt: skip
        return bool(int(moved))

    def _batches(self, tier: str) -> Iterator[list[str]]:
        """The keys of one tier's entries, a batch at a time (SCAN may repeat a key: callers tolerate it)."""
        return _chunks(self._client.scan_iter(match=f"{CACHE}{tier}:*", count=1000))

    def cache_clear(self, scope: str, *, run_id: str | None = None, source: str | None = None) -> int:
        path = check_clear(scope, run_id, source)
        removed = 0
        with self._guard("clear the cache"):
            if scope == "run" and run_id:
                return int(self._clear_run(keys=[RUN_INDEX + run_id], args=[CACHE, run_id]))
            if scope == "source" and path is not None:
                for tier in TIERS:
                    for batch in self._batches(tier):
                        pipe = self._client.pipeline(transaction=False)
                        for name in batch:
                            pipe.hget(name, "sources")
                        for name, sources in zip(batch, pipe.execute()):
                            if sources and any(under(s, path) for s in json.loads(sources)):
                                args = [sources, RUN_INDEX, name[len(CACHE) :]]
                                removed += int(self._delete_if(keys=[name], args=args))
                return removed
            for tier in TIERS:
                for batch in self._batches(tier):
                    removed += int(self._client.delete(*batch))  # a key SCAN repeats is deleted once
            for batch in _chunks(self._client.scan_iter(match=f"{RUN_INDEX}*", count=1000)):
                self._client.delete(*batch)
        return removed

    def cache_stats(self) -> dict[str, Any]:
        now = time.time()
        entries = dict.fromkeys(TIERS, 0)
        expired = size = 0
        with self._guard("read the cache stats"):
            for tier in TIERS:
                seen: set[str] = set()
                for batch in self._batches(tier):
                    batch = [name for name in batch if name not in seen]
                    seen.update(batch)
                    pipe = self._client.pipeline(transaction=False)
                    for name in batch:
                        pipe.hget(name, "expires_at")
                        pipe.memory_usage(name)
                    replies = pipe.execute()
                    for expires, used in zip(replies[::2], replies[1::2]):
                        if expires is None:  # gone between SCAN and now
                            continue
                        if float(expires) > now:
                            entries[tier] += 1
                        else:
                            expired += 1
                        size += int(used or 0)
            hits, misses = self._client.hmget(STATS, ["hits", "misses"])
        return {
            "store": self.name,
            "url": self.url,
            "entries": entries,
            "expired": expired,  # Redis drops expired keys itself: this is what it has not yet dropped
            "bytes": size,
            "hits": int(hits or 0),
            "misses": int(misses or 0),
        }


def _chunks(names: Iterator[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    for name in names:
        batch.append(name)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
