"""Completion webhooks of ``shad watch``: a real loopback HTTP receiver (``http.server`` in a thread)
checks the HMAC signature of each POST; URLs off the allow-list are refused before anything runs;
a receiver that fails or is not there is reported, and the watcher goes on."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _cli import caller

from engine.errors import UsageError
from engine.vault import parse_note
from engine.watch import check_webhooks, sign

pytestmark = pytest.mark.usefixtures("shad_home")

SECRET = "webhook-secret-for-tests-7f3a"
REST = "---\ntype: task\nstatus: pending\n---\nHow long should roasted beans rest before brewing?\n"
BAD = "---\ntype: task\nstatus: pending\nmax_tokens: 10\n---\nWhat grind size suits a French press?\n"


class Receiver:
    """A loopback HTTP server that records every POST and answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.posts: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.posts.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/shad"

    @property
    def allow(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SHAD_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vault(tmp_path: Path, demo_vault: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(demo_vault, target)
    (target / "Tasks").mkdir()
    (target / "Tasks" / "Rest.md").write_text(REST, encoding="utf-8")
    return target


@pytest.fixture
def shad(capsys: pytest.CaptureFixture[str]) -> Any:
    return caller(capsys)


def valid(post: dict[str, Any], secret: str = SECRET) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), post["body"], hashlib.sha256).hexdigest()
    return hmac.compare_digest(post["headers"]["X-Shad-Signature"], expected)


def test_each_outcome_reaches_the_receiver_signed(shad: Any, vault: Path, receiver: Receiver) -> None:
    (vault / "Tasks" / "Bad.md").write_text(BAD, encoding="utf-8")
    r = shad(
        "watch", str(vault), "--once", "--provider", "offline", "--webhook", receiver.url,
        "--webhook-allow", receiver.allow, "--webhook-secret", SECRET,
    )  # fmt: skip
    assert r.code == 1, r.err
    assert len(receiver.posts) == 2 and all(valid(p) for p in receiver.posts)
    assert not valid(receiver.posts[0], "another-secret")
    by_task = {json.loads(p["body"])["task"]: p for p in receiver.posts}
    done, failed = by_task["Tasks/Rest.md"], by_task["Tasks/Bad.md"]
    assert done["path"] == "/hooks/shad" and done["headers"]["Content-Type"] == "application/json"
    assert done["headers"]["X-Shad-Event"] == "task.completed"
    body = json.loads(done["body"])
    assert body["status"] == "complete" and body["run_status"] == "SUCCESS" and body["citations"] > 0
    assert (vault / body["report_path"]).is_file() and body["run_id"] in body["report_path"]
    assert failed["headers"]["X-Shad-Event"] == "task.failed"
    assert "max_tokens 10" in json.loads(failed["body"])["error"]
    for post in receiver.posts:  # no secret and no absolute path in a body
        assert SECRET.encode() not in post["body"] and str(vault).encode() not in post["body"]
    assert SECRET not in r.out + r.err


def test_the_secret_may_come_from_the_environment(
    shad: Any, vault: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHAD_WEBHOOK_SECRET", SECRET)
    r = shad(
        "watch", str(vault), "--once", "--provider", "offline", "--webhook", receiver.url,
        "--webhook-allow", "127.0.0.1", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    [post] = receiver.posts
    assert valid(post) and SECRET not in r.out + r.err
    assert json.loads(r.out)["webhooks"] == [
        {"webhook": f"http://127.0.0.1:{receiver.port}", "ok": True, "status": 200, "error": ""}
    ]


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://127.0.0.1:{port}/hook", []),  # loopback is not allowed implicitly
        ("http://127.0.0.1:{port}/hook", ["127.0.0.1:1"]),  # another port
        ("http://localhost:{port}/hook", ["127.0.0.1"]),  # another host name
        ("ftp://127.0.0.1:{port}/hook", ["127.0.0.1"]),  # not http(s)
        ("http://user:pw@127.0.0.1:{port}/hook", ["127.0.0.1"]),  # credentials in the URL
    ],
)
def test_a_url_off_the_allow_list_is_refused_before_anything_runs(
    shad: Any, vault: Path, receiver: Receiver, url: str, allow: list[str]
) -> None:
    task = vault / "Tasks" / "Rest.md"
    args = ["--webhook", url.format(port=receiver.port), "--webhook-secret", SECRET]
    for host in allow:
        args += ["--webhook-allow", host]
    r = shad("watch", str(vault), "--once", "--provider", "offline", *args)
    assert r.code == 2 and "webhook refused" in r.err and "Traceback" not in r.err
    assert "pw" not in r.err
    assert task.read_text(encoding="utf-8") == REST and receiver.posts == []


def test_a_webhook_needs_a_secret(shad: Any, vault: Path, receiver: Receiver) -> None:
    r = shad("watch", str(vault), "--once", "--webhook", receiver.url, "--webhook-allow", receiver.allow)
    assert r.code == 2 and "secret" in r.err
    assert (vault / "Tasks" / "Rest.md").read_text(encoding="utf-8") == REST


def test_a_failing_or_absent_receiver_is_reported_and_the_task_still_completes(
    shad: Any, vault: Path
) -> None:
    failing = Receiver(status=500)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    try:
        r = shad(
            "watch", str(vault), "--once", "--provider", "offline", "--webhook-secret", SECRET,
            "--webhook", failing.url, "--webhook-allow", failing.allow,
            "--webhook", f"http://127.0.0.1:{closed}/x", "--webhook-allow", f"127.0.0.1:{closed}",
        )  # fmt: skip
    finally:
        failing.close()
    assert r.code == 0, r.err
    assert f"webhook http://127.0.0.1:{failing.port} failed: HTTP 500" in r.err
    assert f"webhook http://127.0.0.1:{closed} failed" in r.err and "Traceback" not in r.err
    assert len(failing.posts) == 1 and valid(failing.posts[0])
    front = parse_note("Rest.md", (vault / "Tasks" / "Rest.md").read_bytes()).frontmatter
    assert front["status"] == "complete"


def test_sign_and_check_webhooks() -> None:
    body = b'{"a": 1}'
    assert sign(body, "k") == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    [target] = check_webhooks(["https://Hooks.Example.com/x?token=abc"], ["hooks.example.com"])
    assert (target.host, target.port, target.display) == (
        "hooks.example.com",
        443,
        "https://hooks.example.com:443",
    )
    assert check_webhooks(["http://[::1]:8080/h"], ["[::1]:8080"])[0].display == "http://[::1]:8080"
    with pytest.raises(UsageError, match="HOST or HOST:PORT"):
        check_webhooks([], ["http://example.com/path"])
    with pytest.raises(UsageError, match=r"hooks\.example\.com:80 is not on the allow-list"):
        check_webhooks(["http://hooks.example.com/x"], ["hooks.example.com:443"])
