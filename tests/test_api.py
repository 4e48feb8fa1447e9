"""The HTTP API (issue 15, I5) against a live server on loopback: uvicorn in a thread on a free port,
driven with httpx. Runs use the offline provider over a copy of the demo vault, or the local stand-in
model server (``_fake_llm``) where a model call must be held open."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from _checkpoint_data import COFFEE_NOTES, SECURITY_GOAL
from _cli import dead_process
from _codemode_fixtures import require_codemode
from _demo import DEMO
from _fake_llm import FakeLLMServer, prompt_of, stall, well_behaved

from engine.api import Settings, create_app, is_loopback
from engine.cli import main

pytestmark = pytest.mark.usefixtures("shad_home")

TOKEN = "test-api-token-7f3a9c0e-not-a-key"
SIMPLE = "How long should I rest beans after roasting, and why?"
TWO_PART = "How long should roasted beans rest? What grind size suits a French press?"
# Nothing in the demo vault is about this: every rung of the retrieval ladder stays weak.
WEAK = "What is the history of quantum chromodynamics lattice gauge theory?"
DONE = ("SUCCESS", "PARTIAL", "FAILED", "NEEDS_HUMAN", "FAILED_WITH_DIAGNOSTIC")


class LiveServer:
    """``create_app(settings)`` served by uvicorn in a thread, on a port the OS picked."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="shad-api", daemon=True
        )

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return Path(shutil.copytree(DEMO, tmp_path / "demo"))


@pytest.fixture
def live(vault: Path) -> Iterator[LiveServer]:
    with LiveServer(Settings(token=TOKEN, vaults=[vault])) as server:
        yield server


@pytest.fixture
def api(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as client:
        yield client


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    event, data = "message", list[str]()
    for line in response.iter_lines():
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def stream_run(client: httpx.Client, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", "/v1/run", json=body, headers={"Accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(sse_events(response))


def wait_done(client: httpx.Client, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/v1/run/{run_id}")
        assert response.status_code == 200, response.text
        if response.json()["status"] in DONE:
            return dict(response.json())
        assert time.monotonic() < deadline, f"run {run_id} did not finish"
        time.sleep(0.1)


def assert_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"type", "message", "hint"} and error["type"] and error["message"]
    return dict(error)


# --- auth and security ------------------------------------------------------------------------------------


def test_health_is_open_and_every_other_route_needs_the_token(live: LiveServer) -> None:
    with live.client(token=None) as anonymous, live.client(token="wrong") as wrong, live.client() as good:
        assert anonymous.get("/v1/health").json()["status"] == "ok"
        for client in (anonymous, wrong):
            for method, path in (("GET", "/v1/runs"), ("GET", "/v1/hitl/queue"), ("POST", "/v1/run")):
                error = assert_error(client.request(method, path, json={"goal": "x"}), 401)
                assert TOKEN not in json.dumps(error)
        assert good.get("/v1/runs").status_code == 200
        assert "/v1/run/{run_id}" in anonymous.get("/openapi.json").json()["paths"]


def test_a_non_loopback_host_without_a_token_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SHAD_API_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "without a token" in capsys.readouterr().err
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10")


def test_a_request_naming_another_folder_is_forbidden(api: httpx.Client, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "Secret.md").write_text("# Secret\n\nnot served\n", encoding="utf-8")
    assert_error(api.post("/v1/run", json={"goal": SIMPLE, "vaults": [str(other)]}), 403)
    assert_error(api.post("/v1/run", json={"goal": SIMPLE, "vaults": [f"{other}/../demo/.."]}), 403)
    assert_error(api.get("/v1/vault/search", params={"q": "secret", "vault": str(other)}), 403)
    assert_error(api.get("/v1/vault/status", params={"vault": "/"}), 403)
    assert api.get("/v1/vault/search", params={"q": "rest", "vault": "demo"}).status_code == 200


def test_an_oversized_body_is_413_whether_its_length_is_given_or_not(api: httpx.Client) -> None:
    big = {"goal": "x" * 1_100_000}
    assert_error(api.post("/v1/run", json=big), 413)
    chunks = (b"x" * 100_000 for _ in range(12))  # no Content-Length: chunked
    assert_error(api.post("/v1/run", content=chunks, headers={"content-type": "application/json"}), 413)


def test_errors_are_json_with_proper_codes_and_never_echo_the_token(api: httpx.Client) -> None:
    assert_error(api.post("/v1/run", json={"goal": SIMPLE, "bogus": 1}), 422)
    assert_error(api.post("/v1/run", json={"goal": SIMPLE, "max_depth": 50}), 400)
    nothing = assert_error(api.post("/v1/run", json={"goal": "What is this?"}), 400)  # no run started
    assert "no word to look for" in nothing["message"]
    assert_error(api.post("/v1/run", json={"goal": SIMPLE, "history_dir": "/tmp"}), 422)
    missing = assert_error(api.get("/v1/run/19990101-000000-dead"), 404)
    assert missing["hint"] == "GET /v1/runs lists them"  # this face's route, not the CLI's command
    assert_error(api.delete("/v1/run/19990101-000000-dead"), 404)
    assert_error(api.get("/v1/run/.."), 404)
    assert_error(api.get("/v1/run/%2Ftmp"), 404)
    assert_error(api.post("/v1/hitl/checkpoint:nope/decide", json={"action": "approve"}), 404)
    error = assert_error(api.post("/v1/run", json={"goal": SIMPLE, "vaults": [TOKEN]}), 403)
    assert TOKEN not in json.dumps(error)


# --- runs -------------------------------------------------------------------------------------------------


def test_a_run_streams_node_events_and_a_summary_whose_citations_resolve(
    api: httpx.Client, vault: Path
) -> None:
    events = stream_run(api, {"goal": SIMPLE, "provider": "offline"})
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "RUN_STARTED" and "NODE_STARTED" in kinds and "NODE_SUCCEEDED" in kinds
    assert kinds[-1] == "summary" and kinds.count("summary") == 1
    records = [data for kind, data in events[:-1]]
    assert all(r["type"] == kind for (kind, _), r in zip(events, records))
    summary = events[-1][1]
    run_id = summary["run_id"]
    assert summary["status"] == "SUCCESS" and Path(summary["report_path"]).is_file()
    assert summary["citations"], "the answer cites the vault"
    for citation in summary["citations"]:
        assert (vault / citation["path"]).is_file(), citation
    history = (Path(summary["report_path"]).parent / "events.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line)["type"] for line in history.splitlines()] == kinds[:-1]
    status = api.get(f"/v1/run/{run_id}").json()
    assert status["status"] == "SUCCESS" and status["citations"] == summary["citations"]
    assert run_id in [r["run_id"] for r in api.get("/v1/runs").json()]
    with api.stream("GET", f"/v1/run/{run_id}/events") as response:  # history replayed, then the end
        replayed = [kind for kind, _ in sse_events(response)]
    assert replayed == kinds


def test_two_runs_in_parallel_both_finish(api: httpx.Client) -> None:
    goals = [SIMPLE, "What water temperature suits pour-over brewing?"]
    started = [api.post("/v1/run", json={"goal": g, "provider": "offline"}) for g in goals]
    assert [r.status_code for r in started] == [202, 202]
    ids = [r.json()["run_id"] for r in started]
    assert len(set(ids)) == 2 and all(r.json()["status_url"] == f"/v1/run/{i}" for r, i in zip(started, ids))
    assert [wait_done(api, run_id)["status"] for run_id in ids] == ["SUCCESS", "SUCCESS"]
    assert api.get("/v1/health").json()["runs_in_progress"] == 0


def _model(body: dict[str, Any]) -> str:
    """A well-behaved stand-in model: a JSON plan, answers quoting and citing the context."""
    prompt = prompt_of(body)
    if "Reply with JSON only" in prompt or "as valid JSON only" in prompt:
        tasks = ["How long should roasted beans rest?", "What grind size suits a French press?"]
        nodes = [{"id": f"n{i}", "task": t, "stage": "gather_evidence"} for i, t in enumerate(tasks)]
        return json.dumps({"nodes": nodes})
    return well_behaved(prompt)  # cited quotes, a synthesis keeping them, a judge that agrees


def test_a_cancelled_run_is_partial_and_resumes_through_the_api(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(reply=_model) as model:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-for-the-stand-in-model")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", model.base_url)
        model.script(stall(60))  # the first model call hangs until the run is cancelled
        with LiveServer(Settings(token=TOKEN, vaults=[vault])) as server, server.client() as api:
            body = {"goal": TWO_PART, "provider": "anthropic", "no_code_mode": True, "max_llm": 1}
            run_id = api.post("/v1/run", json=body).json()["run_id"]
            deadline = time.monotonic() + 30
            while not model.requests:  # the stalled call is in flight
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert api.get(f"/v1/run/{run_id}").json()["status"] == "RUNNING"
            cancelled = api.delete(f"/v1/run/{run_id}")
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "PARTIAL"
            assert api.get(f"/v1/run/{run_id}").json()["status"] == "PARTIAL"
            assert_error(api.delete(f"/v1/run/{run_id}"), 409)
            with api.stream("GET", f"/v1/run/{run_id}/events") as response:
                replayed = list(sse_events(response))
            assert replayed[0][0] == "RUN_STARTED" and replayed[-1][0] == "summary"
            assert replayed[-1][1]["status"] == "PARTIAL" and replayed[-1][1]["resume_command"]
            resumed = api.post(f"/v1/run/{run_id}/resume", json={"budget": "+10%"})
            assert resumed.status_code == 202 and resumed.json()["run_id"] == run_id
            assert wait_done(api, run_id)["status"] == "SUCCESS"
            kinds = [json.loads(x)["type"] for x in _history(api, run_id).splitlines()]
            assert "RUN_RESUMED" in kinds or kinds.count("RUN_STARTED") == 2


def test_a_hint_on_resume_steers_the_nodes_whose_retries_ran_out(api: httpx.Client) -> None:
    from engine.runs import Run
    from engine.runs.dag import NodeStatus

    # Nothing in the demo vault (a coffee vault) is about this: the retrieval ladder runs out.
    weak = api.post("/v1/run", json={"goal": WEAK, "provider": "offline"}).json()["run_id"]
    assert wait_done(api, weak)["status"] == "PARTIAL"
    first = Run.load(weak)
    require_codemode(first.events)  # the ladder needs the sandbox: without one there is no retry
    assert first.dag.root().status is NodeStatus.FAILED_WITH_DIAGNOSTIC
    resumed = api.post(f"/v1/run/{weak}/resume", json={"hint": "Wilson lattice quantum chromodynamics"})
    assert resumed.status_code == 202 and resumed.json()["run_id"] == weak
    assert wait_done(api, weak)["status"] == "PARTIAL"  # still nothing on it in the vault
    root = Run.load(weak).dag.root()
    rungs = [a["rung"] for a in root.retrieval["signals"]["ladder"]]
    assert rungs[-1] == "hint 'Wilson lattice quantum chromodynamics'"  # one more rung: the hint

    # A run with no such node: refused in one line, as `shad resume --hint` is, and nothing runs.
    strong = api.post("/v1/run", json={"goal": SIMPLE, "provider": "offline"}).json()["run_id"]
    assert wait_done(api, strong)["status"] == "SUCCESS"
    before = _history(api, strong)
    error = assert_error(api.post(f"/v1/run/{strong}/resume", json={"hint": "roasting"}), 409)
    assert error["type"] == "Conflict" and "no node whose retries ran out" in error["message"]
    assert "\n" not in error["message"] and "/v1/hitl" in error["hint"]
    assert _history(api, strong) == before and api.get(f"/v1/run/{strong}").json()["status"] == "SUCCESS"
    assert_error(api.post(f"/v1/run/{strong}/resume", json={"hint": "x" * 2001}), 422)


def _history(api: httpx.Client, run_id: str) -> str:
    summary = api.get(f"/v1/run/{run_id}").json()
    return (Path(summary["history_dir"]) / "events.jsonl").read_text(encoding="utf-8")


# --- human in the loop ------------------------------------------------------------------------------------


def test_a_checkpoint_is_listed_in_the_queue_and_decided_through_it(
    make_vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    coffee = make_vault(COFFEE_NOTES, name="coffee")
    with LiveServer(Settings(token=TOKEN, vaults=[coffee])) as server, server.client() as api:
        assert api.get("/v1/hitl/queue").json() == {"items": []}
        body = {"goal": SECURITY_GOAL, "provider": "offline", "no_cache": True}
        run_id = api.post("/v1/run", json=body).json()["run_id"]
        assert wait_done(api, run_id)["status"] == "NEEDS_HUMAN"
        items = api.get("/v1/hitl/queue").json()["items"]
        assert [i["id"] for i in items] == [f"checkpoint:{run_id}:root"]
        assert items[0]["checkpoint"]["task"] and "approve" in items[0]["actions"]
        assert_error(api.post(f"/v1/hitl/{items[0]['id']}/decide", json={"action": "dance"}), 422)
        decided = api.post(f"/v1/hitl/{items[0]['id']}/decide", json={"action": "approve"})
        assert decided.status_code == 202 and decided.json()["run_id"] == run_id
        # Decided and finished: PARTIAL only because the coffee vault does not answer a security question.
        assert wait_done(api, run_id)["status"] == "PARTIAL"
        assert api.get("/v1/hitl/queue").json() == {"items": []}
        again = api.post(f"/v1/hitl/{items[0]['id']}/decide", json={"action": "approve"})
        assert_error(again, 400)


# --- vaults -----------------------------------------------------------------------------------------------


def test_vault_search_and_status_give_the_cli_json(api: httpx.Client) -> None:
    hits = api.get("/v1/vault/search", params={"q": "rest beans", "limit": 3}).json()
    assert 1 <= len(hits) <= 3
    assert {"vault", "path", "title", "score", "snippet", "heading", "type", "tags"} <= set(hits[0])
    typed = api.get("/v1/vault/search", params={"q": "rest", "type": "concept", "path": "Roasting"}).json()
    assert typed and all(h["type"] == "concept" and h["path"].startswith("Roasting") for h in typed)
    status = api.get("/v1/vault/status").json()
    assert status["vault"] == "demo" and status["notes"] > 10
    assert_error(api.get("/v1/vault/search", params={"q": "x", "limit": 0}), 422)


def test_skills_are_listed_with_the_vaults_overrides(api: httpx.Client, vault: Path) -> None:
    own = vault / "Shad" / "Skills" / "how-to"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text(
        "---\nname: how-to\ndescription: The vault's own how-to.\nuse_when: ['how do i *']\n---\nSteps.\n",
        encoding="utf-8",
    )
    listing = api.get("/v1/skills").json()
    by_name = {s["name"]: s for s in listing["skills"]}
    assert by_name["how-to"]["source"] == "demo" and by_name["how-to"]["overrides"] == "package"
    assert by_name["compare"]["source"] == "package" and listing["problems"] == []
    routed = api.get("/v1/skills", params={"goal": "Compare drum versus air roasters"}).json()["routing"]
    assert routed["primary"] == "compare" and routed["support"] == ["exact-details"]
    assert api.get("/v1/skills", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_a_pending_approval_is_listed_and_decided_through_the_queue(
    api: httpx.Client, vault: Path, tmp_path: Path
) -> None:
    from engine.curation import request_delete

    note = "Roasting/Resting beans.md"
    pending = request_delete(vault, note, "superseded", requested_by="test")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Other.md").write_text("# Other\n", encoding="utf-8")
    hidden = request_delete(elsewhere, "Other.md", "not this server's vault", requested_by="test")
    items = api.get("/v1/hitl/queue").json()["items"]
    assert [i["id"] for i in items] == [f"approval:{pending.id}"]
    assert items[0]["approval"]["path"] == note
    assert_error(api.post(f"/v1/hitl/approval:{hidden.id}/decide", json={"action": "approve"}), 404)
    assert_error(api.post(f"/v1/hitl/approval:{pending.id}/decide", json={"action": "hint"}), 422)
    decided = api.post(f"/v1/hitl/approval:{pending.id}/decide", json={"action": "reject", "text": "keep it"})
    assert decided.status_code == 200 and decided.json()["approval"]["status"] == "rejected"
    assert (vault / note).is_file() and api.get("/v1/hitl/queue").json() == {"items": []}
    assert_error(api.post(f"/v1/hitl/approval:{pending.id}/decide", json={"action": "approve"}), 409)


def test_the_token_and_api_keys_are_never_in_a_response_or_the_log(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "test-secret-anthropic-key-5d1e0b"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    caplog.set_level("DEBUG")
    goal = f"How long should beans rest? (key {key}, token {TOKEN})"
    events = stream_run(api, {"goal": goal, "provider": "offline"})
    seen = json.dumps(events) + api.get(f"/v1/run/{events[-1][1]['run_id']}").text
    seen += api.get("/v1/runs").text + api.post("/v1/run", json={"goal": goal, "vaults": [key]}).text
    for secret in (key, TOKEN):
        at = seen.find(secret)
        assert at < 0, seen[max(0, at - 300) : at + 40]
    assert events[-1][0] == "summary"
    assert key not in caplog.text and TOKEN not in caplog.text


def test_a_killed_run_is_interrupted_and_resumable_not_running(api: httpx.Client, vault: Path) -> None:
    done = wait_done(api, api.post("/v1/run", json={"goal": SIMPLE, "provider": "offline"}).json()["run_id"])
    folder = Path(done["report_path"]).parent
    manifest = json.loads((folder / "run.manifest.json").read_text("utf-8"))
    manifest |= {"status": "RUNNING", "process": dead_process()}  # as a kill in its first session leaves it
    (folder / "run.manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "final.summary.json").unlink()
    status = api.get(f"/v1/run/{done['run_id']}").json()
    assert status["status"] == "INTERRUPTED" and status["resumable"] is True
    assert "is gone" in status["stop_reason"] and status["resume_command"] == f"shad resume {done['run_id']}"
    listed = {r["run_id"]: r["status"] for r in api.get("/v1/runs").json()}
    assert listed[done["run_id"]] == "INTERRUPTED"
