"""A small local model server for tests: it speaks the Anthropic Messages API and the OpenAI chat
completions API (plain JSON and SSE streaming) on 127.0.0.1, so the real client libraries can be driven
end to end without any network.

Replies come from a callable (request body -> reply text). Faults are scripted per request, in order:
``server.script(rate_limited(0.01), server_error(), ...)`` makes the next requests fail that way, after
which the server answers normally again. The server counts requests, keeps every request's path, headers
and body, and logs the usage it reported for each response (what a provider may charge).

    with FakeLLMServer(reply=lambda body: '{"ok": true}') as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url        # Anthropic: no /v1 suffix
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url    # OpenAI: ends in /v1
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeLLMServer",
    "Fault",
    "Seen",
    "cut_stream",
    "empty",
    "no_usage",
    "overloaded",
    "prompt_of",
    "prose",
    "rate_limited",
    "refusal",
    "server_error",
    "sse_error",
    "stall",
    "truncated",
    "well_behaved",
]

Reply = Callable[[dict[str, Any]], str]
PROSE = "Sure! Here is a plain-language answer instead: the plan has three steps, and all of them matter."


@dataclass
class Fault:
    """One scripted misbehaviour. ``kind``: status | stall | truncate | cut | sse_error | prose | refusal |
    empty | no_usage."""

    kind: str
    status: int = 500
    retry_after: float | None = None
    seconds: float = 5.0
    after: int | None = None  # stall/cut: after this many stream events (None: before any byte / default)
    text: str | None = None


def rate_limited(retry_after: float | None = 0.01) -> Fault:
    return Fault("status", status=429, retry_after=retry_after)


def server_error(status: int = 500, message: str | None = None) -> Fault:
    """Any HTTP error status (4xx too), with an optional error message."""
    return Fault("status", status=status, text=message)


def overloaded() -> Fault:
    return Fault("status", status=529)


def stall(seconds: float = 5.0, after: int | None = None) -> Fault:
    """Say nothing for ``seconds`` (before the headers, or after ``after`` stream events)."""
    return Fault("stall", seconds=seconds, after=after)


def truncated() -> Fault:
    """A complete HTTP response whose JSON body is cut in half (a stream is cut instead)."""
    return Fault("truncate")


def cut_stream(after: int = 3) -> Fault:
    """Send ``after`` stream events, then drop the connection mid-body."""
    return Fault("cut", after=after)


def sse_error(after: int = 2) -> Fault:
    """An Anthropic ``event: error`` (overloaded) after ``after`` events."""
    return Fault("sse_error", after=after)


def prose(text: str = PROSE) -> Fault:
    """Answer in prose whatever format was asked for."""
    return Fault("prose", text=text)


def refusal() -> Fault:
    return Fault("refusal")


def empty() -> Fault:
    return Fault("empty")


def no_usage() -> Fault:
    """OpenAI protocol: report no usage at all (some local servers do not)."""
    return Fault("no_usage")


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any] | None
    fault: str | None


@dataclass
class _Shared:
    reply: Reply
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[Seen] = field(default_factory=list)
    usage: list[tuple[int, int]] = field(default_factory=list)  # (input, output) reported per response
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    pace: float = 0.0  # seconds between two stream events: a model that writes slowly (0: at once)


def prompt_of(body: dict[str, Any]) -> str:
    """The text of the last user message of either protocol's request body."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return ""


def _words(text: str) -> int:
    return max(1, len(text.split()))


def _input_tokens(body: dict[str, Any]) -> int:
    system = body.get("system") or ""
    system_text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    texts = [system_text] + [
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in body.get("messages") or []
    ]
    return _words(" ".join(texts))


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # --- plumbing --------------------------------------------------------------------------------------

    def _receive(self) -> tuple[dict[str, Any] | None, Fault | None]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        shared = self.server.shared
        with shared.lock:
            fault = shared.faults.popleft() if shared.faults and self.command == "POST" else None
            shared.requests.append(
                Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    fault.kind if fault else None,
                )
            )
        return body, fault

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_bytes(status, data, headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_{len(self.server.shared.requests)}")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: str) -> None:
        raw = data.encode()
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _log_usage(self, usage: tuple[int, int]) -> None:
        with self.server.shared.lock:
            self.server.shared.usage.append(usage)

    def _wait(self, seconds: float) -> None:
        self.server.shared.stopping.wait(seconds)

    def _stream(self, events: list[str], fault: Fault | None, usage_at: list[tuple[int, int]]) -> None:
        """Send SSE ``events``; ``usage_at[i]`` is the usage reported once event i has gone out."""
        self._start_stream()
        reported = (0, 0)
        for i, event in enumerate(events):
            if fault and fault.kind in ("cut", "truncate") and i == (fault.after or 3):
                self._log_usage(reported)
                self.close_connection = True
                return
            if fault and fault.kind == "stall" and fault.after is not None and i == fault.after:
                self._log_usage(reported)
                self._wait(fault.seconds)
                self.close_connection = True
                return
            if i == len(events) - 1:  # log before the client can see the end of the stream
                self._log_usage(usage_at[i])
            self._chunk(event)
            reported = usage_at[i]
            if self.server.shared.pace and i < len(events) - 1:
                self._wait(self.server.shared.pace)
        self._end_stream()

    # --- routes ----------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._receive()
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": "fake-local-model", "object": "model", "created": 0, "owned_by": "fake"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})

    def do_POST(self) -> None:
        body, fault = self._receive()
        anthropic = self.path.rstrip("/").endswith("/messages")
        if body is None or not (anthropic or self.path.rstrip("/").endswith("/chat/completions")):
            self._send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})
            return
        if fault and fault.kind == "stall" and fault.after is None:
            self._log_usage((0, 0))
            self._wait(fault.seconds)  # the client has given up by now: hang up without a word
            self.close_connection = True
            return
        if fault and fault.kind == "status":
            self._log_usage((0, 0))
            self._error(anthropic, fault)
            return
        text = self._reply_text(body, fault)
        if anthropic:
            self._anthropic(body, text, fault)
        else:
            self._openai(body, text, fault)

    def _reply_text(self, body: dict[str, Any], fault: Fault | None) -> str:
        if fault and fault.kind == "prose":
            return fault.text or PROSE
        if fault and fault.kind in ("refusal", "empty"):
            return ""
        return self.server.shared.reply(body)

    def _error(self, anthropic: bool, fault: Fault) -> None:
        kinds = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}
        err_type = kinds.get(fault.status, "api_error" if fault.status >= 500 else "invalid_request_error")
        headers = {} if fault.retry_after is None else {"retry-after": f"{fault.retry_after:g}"}
        message = fault.text or f"scripted {fault.status}"
        if anthropic:
            payload: dict[str, Any] = {"type": "error", "error": {"type": err_type, "message": message}}
        else:
            payload = {"error": {"message": message, "type": err_type, "code": str(fault.status)}}
        self._send_json(fault.status, payload, headers)

    # --- Anthropic Messages API ------------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], text: str, fault: Fault | None) -> None:
        model = str(body.get("model", "fake-model"))
        n_in, n_out = _input_tokens(body), (_words(text) if text else 0)
        stop = "refusal" if fault and fault.kind == "refusal" else "end_turn"
        msg_id = f"msg_{len(self.server.shared.requests)}"
        if not body.get("stream"):
            payload = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": n_in, "output_tokens": n_out},
            }
            data = json.dumps(payload).encode()
            if fault and fault.kind in ("truncate", "cut"):
                self._log_usage((0, 0))
                self._send_bytes(200, data[: len(data) // 2])
                return
            self._log_usage((n_in, n_out))
            self._send_bytes(200, data)
            return

        def sse(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        start = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": n_in, "output_tokens": 1},
        }
        events = [
            sse("message_start", {"type": "message_start", "message": start}),
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            sse("ping", {"type": "ping"}),
        ]
        if text:
            events += [
                sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                for piece in _pieces(text)
            ]
        events += [
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": n_out},
                },
            ),
            sse("message_stop", {"type": "message_stop"}),
        ]
        usage_at = [(n_in, 1)] * (len(events) - 2) + [(n_in, n_out), (n_in, n_out)]
        if fault and fault.kind == "sse_error":
            at = fault.after or 2
            error = sse(
                "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            )
            events = [*events[:at], error]
            usage_at = usage_at[: at + 1]
        self._stream(events, fault, usage_at)

    # --- OpenAI chat completions -----------------------------------------------------------------------

    def _openai(self, body: dict[str, Any], text: str, fault: Fault | None) -> None:
        model = str(body.get("model", "fake-model"))
        n_in, n_out = _input_tokens(body), (_words(text) if text else 0)
        usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
        with_usage = not (fault and fault.kind == "no_usage")
        refused = fault is not None and fault.kind == "refusal"
        refusal_text = "I can't help with that." if refused else None
        cid = f"chatcmpl-{len(self.server.shared.requests)}"
        if not body.get("stream"):
            payload: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None if refused else text,
                            "refusal": refusal_text,
                        },
                        "finish_reason": "stop",
                    }
                ],
            }
            if with_usage:
                payload["usage"] = usage
            data = json.dumps(payload).encode()
            if fault and fault.kind in ("truncate", "cut"):
                self._log_usage((0, 0))
                self._send_bytes(200, data[: len(data) // 2])
                return
            self._log_usage((n_in, n_out) if with_usage else (0, 0))
            self._send_bytes(200, data)
            return

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            payload = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(payload)}\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        if refused:
            events.append(chunk({"refusal": refusal_text}))
        else:
            events += [chunk({"content": piece}) for piece in _pieces(text)] if text else []
        events.append(chunk({}, "stop"))
        usage_at = [(0, 0)] * len(events)
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        if include and with_usage:
            final = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": usage,
            }
            events.append(f"data: {json.dumps(final)}\n\n")
            usage_at.append((n_in, n_out))
        events.append("data: [DONE]\n\n")
        usage_at.append(usage_at[-1])
        self._stream(events, fault, usage_at)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    shared: _Shared

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that gave up (timeouts, cut streams) are expected here


class FakeLLMServer:
    """Both wire protocols on one ephemeral port; use as a context manager (or start()/stop())."""

    def __init__(self, reply: Reply | None = None) -> None:
        self._shared = _Shared(reply=reply or (lambda body: "Hello from the fake model."))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeLLMServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.shared = self._shared
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._shared.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """For ANTHROPIC_BASE_URL (the SDK appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For OPENAI_BASE_URL (the SDK appends /chat/completions)."""
        return f"{self.base_url}/v1"

    def set_reply(self, reply: Reply) -> None:
        self._shared.reply = reply

    def set_pace(self, seconds: float) -> None:
        """Wait ``seconds`` between two events of every stream, as a model writing slowly does."""
        self._shared.pace = seconds

    def script(self, *faults: Fault) -> None:
        """The next ``len(faults)`` POST requests misbehave in this order; later ones are answered."""
        with self._shared.lock:
            self._shared.faults.extend(faults)

    @property
    def requests(self) -> list[Seen]:
        with self._shared.lock:
            return list(self._shared.requests)

    @property
    def posts(self) -> list[Seen]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def count(self) -> int:
        return len(self.posts)

    @property
    def usage(self) -> list[tuple[int, int]]:
        with self._shared.lock:
            return list(self._shared.usage)

    @property
    def reported_tokens(self) -> int:
        """Every token the server reported over all responses, failed attempts included."""
        return sum(a + b for a, b in self.usage)


_WHOLE_LINE_LINK = re.compile(r"^\[\[[^\]]+\]\]$", re.M)


def well_behaved(prompt: str) -> str:
    """What a well-behaved model says to Shad's answer, synthesis and support-check prompts: the context
    line that shares most words with the subtask, quoted with its item's citation; a synthesis that keeps
    every cited line of its subtasks; a judge that finds every claim supported."""
    if "Check each claim against the passage" in prompt:
        ids = sorted({int(i) for i in re.findall(r'"id": (\d+)', prompt)})
        return json.dumps({"verdicts": [{"id": i, "supported": True, "reason": "stated"} for i in ids]})
    if "Answers of the subtasks" in prompt:
        return "In short:\n" + "\n".join(dict.fromkeys(re.findall(r"^.*\S.*\[\[[^\]]+\]\]$", prompt, re.M)))
    task = set(re.findall(r"\w+", (re.findall(r"^Your subtask: (.*)$", prompt, re.M) or [""])[0].lower()))
    best: tuple[int, str, str] = (0, "", "")
    start = 0
    for link in _WHOLE_LINE_LINK.finditer(prompt):  # each context item ends with the link to cite for it
        for line in prompt[start : link.start()].splitlines():
            line = line.strip("-*#> ")
            shared = len(task & set(re.findall(r"\w+", line.lower())))
            if shared > best[0] and "[[" not in line:
                best = (shared, line, link.group(0))
        start = link.end()
    if not best[0]:
        return "The context does not answer this."
    return f"{best[1]} {best[2]}"
