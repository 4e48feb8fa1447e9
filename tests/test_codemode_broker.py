"""The broker (the trusted parent's answers to ``obsidian.*``) and the extended profile's HTTP rules.

Requests are fed to the broker directly, as the child would send them, so each validation rule is
tested on its own; a few tests then go end to end through a Sandbox. No test touches the internet:
URL decisions use a fake resolver, and the success path talks to a server on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import threading
import time
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.codemode import Budgets, NetPolicy, Sandbox
from engine.codemode._broker import Broker, FsRoot
from engine.codemode._net import NetRefused, check_url, fetch
from engine.codemode._wire import decode, encode
from engine.errors import UsageError
from engine.vault import Vault, VaultSet

try:
    from tests._codemode_fixtures import DEMO_VAULT, codemode_env, codemode_home, copy_demo, run_refused
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from _codemode_fixtures import (  # type: ignore[no-redef]
        DEMO_VAULT,
        codemode_env,
        codemode_home,
        copy_demo,
        run_refused,
    )

__all__ = ["codemode_env", "codemode_home"]  # fixtures used by name


def broker_for(*roots: Path, profile: str = "strict", budgets: Budgets | None = None, **kw: Any) -> Broker:
    vaults = VaultSet([Vault(r, index_path=r.parent / f".idx-{r.name}.sqlite") for r in roots])
    return Broker(vaults, profile, budgets=budgets, **kw)


def call(run: Any, fn: str, **kwargs: Any) -> dict[str, Any]:
    frame = {"t": "call", "id": 1, "fn": fn, "kwargs": kwargs}
    reply = decode(run.handle(frame, encode)[4:])
    assert reply["id"] == 1
    return reply  # type: ignore[no-any-return]


def refused(run: Any, fn: str, kind: str, **kwargs: Any) -> str:
    reply = call(run, fn, **kwargs)
    assert "err" in reply, f"expected a {kind!r} refusal, got {str(reply.get('ok'))[:200]}"
    assert reply["err"]["kind"] == kind, reply["err"]
    return str(reply["err"]["message"])


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_demo(tmp_path)


# --- paths ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "Brewing/../../outside.md",
        "/etc/passwd",
        "C:/Windows/win.ini",
        "..\\..\\outside.md",
        "a\x00b.md",
        ".obsidian/app.json",
        ".obsidian/plugins/fake-sync/data.json",
        "Brewing/.hidden/x.md",
        ".trash/Old draft.md",
    ],
)
def test_bad_paths_are_blocked_for_every_path_function(vault: Path, path: str) -> None:
    run = broker_for(vault).new_run()
    for fn in (
        "read_note",
        "get_frontmatter",
        "get_hash",
        "links",
        "backlinks",
        "neighbors",
        "create_wikilink",
    ):
        refused(run, fn, "blocked", path=path)
    refused(run, "list_notes", "blocked", folder=path)
    refused(run, "search", "blocked", query="espresso", path=path)


def test_symlinks_out_of_the_vault_are_refused(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntoken: zqxleak42\n---\nzqxleak42 body", encoding="utf-8")
    (vault / "Leak.md").symlink_to(outside / "secret.md")
    (vault / "Brewing" / "LeakDir").symlink_to(outside, target_is_directory=True)
    run = broker_for(vault).new_run()
    assert "outside the vault" in refused(run, "read_note", "blocked", path="Leak.md")
    refused(run, "read_note", "blocked", path="Brewing/LeakDir/secret.md")
    refused(run, "get_frontmatter", "blocked", path="Leak.md")
    hits = call(run, "search", query="zqxleak42")["ok"]
    assert hits == []
    assert not any("Leak" in p for p in call(run, "list_notes")["ok"])


def test_missing_notes_are_ordinary_errors(vault: Path) -> None:
    run = broker_for(vault).new_run()
    reply = call(run, "read_note", path="Brewing/Nope.md")
    assert reply["err"]["kind"] == "error" and reply["err"]["type"] == "NoteNotFoundError"


def test_a_valid_read_answers_from_the_vault(vault: Path) -> None:
    run = broker_for(vault).new_run()
    note = call(run, "read_note", path="Brewing/Espresso")["ok"]  # .md may be left off
    assert note["path"] == "Brewing/Espresso.md" and note["body"] and "backlinks" in note
    assert call(run, "get_hash", path="Brewing/Espresso.md")["ok"] == note["hash"]
    assert run.stats()["by_function"] == {"read_note": 1, "get_hash": 1}


# --- requests and budgets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        None,
        [],
        {"t": "call"},
        {"t": "call", "fn": "read_note", "kwargs": "x"},
        {"t": "nope", "fn": "read_note", "kwargs": {}},
    ],
)
def test_malformed_requests_are_refused(vault: Path, frame: Any) -> None:
    run = broker_for(vault).new_run()
    reply = decode(run.handle(frame, encode)[4:])
    assert reply["err"]["kind"] == "blocked"


def test_argument_validation(vault: Path) -> None:
    run = broker_for(vault).new_run()
    assert refused(run, "read_note", "error", path=5)
    assert refused(run, "read_note", "error", path="x.md", colour="red")
    assert refused(run, "search", "error", query="x", limit=10_000)
    assert refused(run, "search", "error", query="x", limit=True)
    assert refused(run, "search", "limited", query="x" * 5000)
    assert refused(run, "search", "error", query="x", where={"k": {"nested": 1}})
    assert refused(run, "neighbors", "error", path="Brewing/Espresso.md", depth=9)
    assert refused(run, "create_wikilink", "error", path="Brewing/Espresso.md", alias="x]]|[[evil")
    assert refused(run, "no_such_function", "error")


def test_call_and_size_budgets(vault: Path) -> None:
    run = broker_for(vault, budgets=Budgets(calls=3)).new_run()
    for _ in range(3):
        assert "ok" in call(run, "vaults")
    assert "3 obsidian calls" in refused(run, "vaults", "limited")
    run = broker_for(vault, budgets=Budgets(reply_bytes=500)).new_run()
    assert "larger than 500 bytes" in refused(run, "read_note", "limited", path="Brewing/Espresso.md")
    run = broker_for(vault, budgets=Budgets(total_bytes=3000)).new_run()
    replies = [call(run, "search", query="coffee", limit=3) for _ in range(10)]
    errors = [r["err"] for r in replies if "err" in r]
    assert errors and errors[0]["kind"] == "limited" and "read more than 3000 bytes" in errors[0]["message"]


def test_billion_laughs_frontmatter_is_bounded(vault: Path) -> None:
    laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
    )
    (vault / "Bomb.md").write_text(f"---\n{laughs}---\nbody\n", encoding="utf-8")
    run = broker_for(vault).new_run()
    start = time.monotonic()
    reply = call(run, "get_frontmatter", path="Bomb.md")
    assert time.monotonic() - start < 20  # a sanity bound, not a benchmark: 9**9 values would never finish
    data = reply.get("ok")
    if data is not None:
        assert len(encode(data)) < 1_000_000
    assert run.bytes_out < 1_000_000


# --- layered vaults ---------------------------------------------------------------------------------------


def test_vault_namespacing(tmp_path: Path, make_vault: Any) -> None:
    first = copy_demo(tmp_path)
    second = make_vault(
        {"Brewing/Espresso.md": "# Espresso\nsecond vault's espresso", "Only.md": "only here"}, "two"
    )
    broker = broker_for(first, second)
    run = broker.new_run()
    ids = call(run, "vaults")["ok"]
    assert len(ids) == 2
    assert call(run, "read_note", path="Brewing/Espresso.md")["ok"]["vault"] == ids[0]  # priority order
    assert "second vault" in call(run, "read_note", path="Brewing/Espresso.md", vault=ids[1])["ok"]["body"]
    assert call(run, "read_note", path="Only.md")["ok"]["vault"] == ids[1]
    hits = call(run, "search", query="espresso", vaults=[ids[1]])["ok"]
    assert hits and {h["vault"] for h in hits} == {ids[1]}
    assert call(run, "list_notes", vault=ids[1])["ok"] == ["Brewing/Espresso.md", "Only.md"]
    assert refused(run, "read_note", "error", path="Only.md", vault="nope")


# --- profile local: read-only roots -----------------------------------------------------------------------


def test_local_profile_reads_allow_listed_roots_only(vault: Path, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "readme.txt").write_text("hello docs", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[secret]", encoding="utf-8")
    (root / "bin.dat").write_bytes(b"\x00\x01")
    (tmp_path / "private.txt").write_text("PRIVATE", encoding="utf-8")
    (root / "escape.txt").symlink_to(tmp_path / "private.txt")
    strict = broker_for(vault).new_run()
    refused(strict, "read_file", "blocked", path="sub/readme.txt")
    run = broker_for(vault, profile="local", roots=(FsRoot.of(root),)).new_run()
    assert call(run, "read_file", path="sub/readme.txt")["ok"] == "hello docs"
    assert call(run, "roots")["ok"] == ["docs"]
    assert call(run, "list_files")["ok"] == ["bin.dat", "sub/readme.txt"]
    refused(run, "read_file", "blocked", path="../private.txt")
    refused(run, "read_file", "blocked", path="/etc/passwd")
    refused(run, "read_file", "blocked", path=".git/config")
    assert "outside" in refused(run, "read_file", "blocked", path="escape.txt")
    refused(run, "read_file", "error", path="bin.dat")
    refused(run, "http_get", "blocked", url="https://example.org/")
    (attempt,) = run.stats()["external"]  # refused by the profile, and still on the record
    assert attempt["allowed"] is False and attempt["target"] == "https://example.org/"
    assert "allows no network" in attempt["reason"]


def test_profile_options_are_checked() -> None:
    with pytest.raises(UsageError, match="--fs-read needs"):
        Sandbox(DEMO_VAULT, fs_read=[str(DEMO_VAULT)])
    with pytest.raises(UsageError, match="--net-allow needs"):
        Sandbox(DEMO_VAULT, profile="local", net_allow=["example.org"])
    with pytest.raises(UsageError, match="unknown sandbox profile"):
        Sandbox(DEMO_VAULT, profile="lax")


# --- profile extended: the URL decision -------------------------------------------------------------------


def resolver(table: dict[str, list[str]]) -> Any:
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("no such host")
        return table[host]

    return resolve


PUBLIC = resolver(
    {
        "docs.example.org": ["93.184.216.34"],
        "example.org": ["93.184.216.34"],
        "api.example.org": ["93.184.216.34", "10.0.0.5"],  # one private answer is enough to refuse
        "rebind.example.org": ["127.0.0.1"],
        "meta.example.org": ["169.254.169.254"],
        "mapped.example.org": ["::ffff:127.0.0.1"],
        "v6.example.org": ["::1"],
        "ula.example.org": ["fd00::1"],
    }
)


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://docs.example.org/", "only https"),
        ("ftp://docs.example.org/", "only https"),
        ("file:///etc/passwd", "only https"),
        ("https://evil.org/", "not on the allow-list"),
        ("https://docs.example.org.evil.org/", "not on the allow-list"),
        ("https://user:pw@docs.example.org/", "user names"),
        ("https://docs.example.org@evil.org/", "user names"),
        ("https://docs.example.org:8443/", "port 8443"),
        ("https://api.example.org/", "non-public"),
        ("https://rebind.example.org/", "non-public"),
        ("https://meta.example.org/", "non-public"),
        ("https://mapped.example.org/", "non-public"),
        ("https://v6.example.org/", "non-public"),
        ("https://ula.example.org/", "non-public"),
        ("https://127.0.0.1/", "not on the allow-list"),
        ("https:///nohost", "no host"),
    ],
)
def test_url_refusals(url: str, reason: str) -> None:
    policy = NetPolicy(("*.example.org", "example.org"))
    with pytest.raises(NetRefused, match=reason):
        check_url(url, policy, PUBLIC)


def test_url_allowed_is_pinned_to_the_checked_address() -> None:
    target = check_url("https://Docs.Example.org./a?b=1", NetPolicy(("*.example.org",)), PUBLIC)
    assert (target.host, target.port, target.ip, target.path) == (
        "docs.example.org",
        443,
        "93.184.216.34",
        "/a?b=1",
    )
    with pytest.raises(NetRefused, match="allow-list"):  # the wildcard does not cover the bare domain
        check_url("https://example.org/", NetPolicy(("*.example.org",)), PUBLIC)


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: typing.ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/target")
            self.end_headers()
            return
        body = b"x" * 5000 if self.path == "/big" else b"hello from loopback"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    """A bounded HTTP server on 127.0.0.1 (loopback only) for the success path."""
    _Handler.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_success_redirects_and_size_cap(local_server: str) -> None:
    policy = NetPolicy((local_server,), https_only=False, allow_private=True, max_bytes=1000, timeout=5)
    ok = fetch(f"http://{local_server}/hello", policy)
    assert ok["status"] == 200 and ok["text"] == "hello from loopback" and ok["truncated"] is False
    moved = fetch(f"http://{local_server}/redirect", policy)
    assert moved["status"] == 302 and moved["redirect"] == "/target"
    assert "/target" not in _Handler.hits  # never followed
    big = fetch(f"http://{local_server}/big", policy)
    assert big["truncated"] is True and len(big["text"]) == 1000
    strict = NetPolicy((local_server,))  # the defaults refuse plain http and loopback addresses
    with pytest.raises(NetRefused):
        fetch(f"http://{local_server}/hello", strict)
    with pytest.raises(NetRefused, match="non-public"):
        check_url(f"https://{local_server}/hello", strict)


def test_http_get_end_to_end_is_done_by_the_parent(local_server: str, codemode_home: Path) -> None:
    policy = NetPolicy((local_server,), https_only=False, allow_private=True, timeout=5)
    with Sandbox(DEMO_VAULT, profile="extended", net_policy=policy, isolation="subprocess") as sb:
        result = sb.run(
            f"r = obsidian.http_get('http://{local_server}/hello')\n__result__ = [r['status'], r['text']]"
        )
        assert result.result == [200, "hello from loopback"]
        target = f"http://{local_server}/hello"  # the audit trail: every attempt, allowed or not
        assert result.stats["broker"]["external"] == [
            {"kind": "http_get", "target": target, "allowed": True, "status": 200}
        ]
        run_refused(sb, "obsidian.http_get('http://10.1.2.3/')", "blocked")
        run_refused(sb, "import socket", "blocked")
