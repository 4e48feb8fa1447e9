"""Recording every model call, and answering a run from such a recording (P5 replay, P7 audit).

The manifest, ``<run>/replay/manifest.json``::

    {"version": 1, "created_at": "2025-01-01T00:00:00Z", "provider": "anthropic",
     "calls": [{
        "seq": 0,                      # order of completion within the run
        "key": "<sha256>",             # the request key, below
        "purpose": "decompose", "node_id": "root", "tier": "orchestrator",
        "provider": "anthropic", "model": "claude-sonnet-5-5",
        "params": {"max_tokens": 1500, "temperature": 0.0, "expect_json": true},
        "prompt_hash": "<sha256 of canonical JSON of [system, prompt]>",
        "output_hash": "<sha256 of the answer text>",
        "request": {"system": …, "prompt": …, "inputs": {…}},
        "response": {"text", "data", "input_tokens", "output_tokens", "stop_reason", "retries",
                     "retry_input_tokens", "retry_output_tokens", "usage_estimated"}   # or null
        "error": {"kind", "message", "tokens"},   # only when the call failed
        "latency_ms": 812.4}]}

The request key is the sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of
``{"purpose", "system", "prompt", "inputs"}``: what the model was asked, not who asked or with which
model, so a replay matches whatever provider made the recording. Identical requests are answered in
recorded order; once the recorded answers for a key are used up, the last one is repeated. A recorded
failure is raised again (same kind), so the engine takes the same fallback. A request never recorded
raises ``ProviderError(kind="not_recorded")`` naming its node and purpose.

Nothing secret is recorded: no headers, no keys; secret-looking values from the environment and
key-shaped strings are replaced with ``[REDACTED]`` everywhere in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..fs import atomic_write
from ._base import LLMRequest, LLMResponse, Provider, ProviderError
from ._json import attach_json, checked_complete
from ._secrets import Redactor, secret_values

__all__ = [
    "MANIFEST_VERSION",
    "Recorder",
    "ReplayProvider",
    "canonical_json",
    "load_manifest",
    "prompt_hash",
    "request_key",
]

MANIFEST_VERSION = 1
_REQUEST = "\x00request\x00"  # stands for the request in a record until its encoding is spliced in
_REQUEST_JSON = '"request":"\\u0000request\\u0000"'


def _plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_key(request: LLMRequest) -> str:
    """The replay key: sha256 of canonical JSON of purpose, system, prompt and inputs."""
    return _sha256(
        canonical_json(
            {
                "purpose": request.purpose,
                "system": request.system,
                "prompt": request.prompt,
                "inputs": request.inputs,
            }
        )
    )


def prompt_hash(request: LLMRequest) -> str:
    return _sha256(canonical_json([request.system, request.prompt]))


def load_manifest(path: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    """Read a manifest given its path, a ``replay/`` folder or a run folder."""
    target = Path(path).expanduser()
    if target.is_dir():
        nested = target / "replay" / "manifest.json"
        target = nested if nested.is_file() else target / "manifest.json"
    hint = "pass the run folder (or its replay/manifest.json) of a run recorded by this version of Shad"
    try:
        manifest = json.loads(target.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProviderError(
            f"no replay manifest at {target}", kind="unavailable", provider="replay", hint=hint
        ) from None
    except (OSError, ValueError) as exc:
        raise ProviderError(
            f"the replay manifest {target} cannot be read: {exc}",
            kind="unavailable",
            provider="replay",
            hint=hint,
        ) from None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        version = manifest.get("version") if isinstance(manifest, dict) else None
        raise ProviderError(
            f"the replay manifest {target} has version {version!r}, expected {MANIFEST_VERSION}",
            kind="unavailable",
            provider="replay",
            hint=hint,
        )
    if not isinstance(manifest.get("calls"), list):
        raise ProviderError(
            f"the replay manifest {target} has no list of calls",
            kind="unavailable",
            provider="replay",
            hint=hint,
        )
    return target, manifest


class ReplayProvider:
    """Answers every call from a recorded run; makes no model call at all.

    ``charge_recorded_usage``: report the recorded token counts (default), so budgets make the same
    decisions as in the recorded run; False reports zero tokens.
    """

    name = "replay"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        charge_recorded_usage: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        source = path or env.get("SHAD_REPLAY")
        if not source:
            raise ProviderError(
                "the replay provider needs a recorded run",
                kind="unavailable",
                provider=self.name,
                hint="pass the recorded run's folder (path=… / SHAD_REPLAY=…)",
            )
        self.path, manifest = load_manifest(source)
        self.charge_recorded_usage = charge_recorded_usage
        self._answers: dict[str, list[dict[str, Any]]] = {}
        for call in manifest["calls"]:
            if isinstance(call, dict) and isinstance(call.get("key"), str):
                self._answers.setdefault(call["key"], []).append(call)
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    async def aclose(self) -> None:
        return None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        key = request_key(request)
        with self._lock:
            calls = self._answers.get(key)
            if not calls:
                raise ProviderError(
                    f"replay: node {request.node_id or '(none)'} made a {request.purpose} call that the "
                    f"recording at {self.path} does not have",
                    kind="not_recorded",
                    provider=self.name,
                    hint="the run differs from the recorded one (goal, vault, options or prompts changed): "
                    "run it live, or record it again",
                    node_id=request.node_id,
                    purpose=request.purpose,
                    key=key,
                )
            index = self._next.get(key, 0)
            self._next[key] = index + 1
            call = calls[min(index, len(calls) - 1)]
        error, answer = call.get("error"), call.get("response")
        charge = self.charge_recorded_usage
        if error or not isinstance(answer, dict):
            error = error if isinstance(error, dict) else {}
            raise ProviderError(
                str(error.get("message") or "replay: the recorded call failed"),
                kind=str(error.get("kind") or "server"),
                provider=self.name,
                node_id=request.node_id,
                purpose=request.purpose,
                tokens=int(error.get("tokens") or 0) if charge else 0,
                replayed=True,
            )
        response = LLMResponse(
            text=str(answer.get("text") or ""),
            provider=self.name,
            model=str(call.get("model") or ""),
            input_tokens=int(answer.get("input_tokens") or 0) if charge else 0,
            output_tokens=int(answer.get("output_tokens") or 0) if charge else 0,
            data=answer.get("data"),
            stop_reason=answer.get("stop_reason"),
            retry_input_tokens=int(answer.get("retry_input_tokens") or 0) if charge else 0,
            retry_output_tokens=int(answer.get("retry_output_tokens") or 0) if charge else 0,
            usage_estimated=bool(answer.get("usage_estimated")),
        )
        return attach_json(request, response)


class Recorder:
    """Wraps any provider; records every call it makes, and writes the replay manifest.

    ``complete`` goes through ``checked_complete`` (refusals, empty answers and JSON repair handled;
    the repair call is recorded as a call of its own) unless ``validate=False``.
    """

    def __init__(
        self,
        inner: Provider,
        *,
        validate: bool = True,
        secrets: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.validate = validate
        self._redactor = Redactor(secret_values(env, secrets))
        self._calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.created_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.validate:
            return await checked_complete(self._call, request)
        return await self._call(request)

    async def _call(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        try:
            response = await self.inner.complete(request)
        except ProviderError as err:
            self._record(request, None, err, started)
            raise
        attach_json(request, response)  # so the record shows the parsed data too
        self._record(request, response, None, started)
        return response

    def _record(
        self, request: LLMRequest, response: LLMResponse | None, error: ProviderError | None, started: float
    ) -> None:
        # Each part of the request is encoded once: the key, the prompt hash and the record are built
        # from the same canonical pieces (byte for byte what ``request_key`` and ``prompt_hash`` encode).
        system, prompt = canonical_json(request.system), canonical_json(request.prompt)
        inputs, purpose = canonical_json(request.inputs), canonical_json(request.purpose)
        entry: dict[str, Any] = {
            "key": _sha256(f'{{"inputs":{inputs},"prompt":{prompt},"purpose":{purpose},"system":{system}}}'),
            "purpose": request.purpose,
            "node_id": request.node_id,
            "tier": request.tier.value,
            "provider": response.provider if response else self.name,
            "model": (response.model if response else None) or request.model,
            "params": {
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
                "expect_json": request.expect_json,
            },
            "prompt_hash": _sha256(f"[{system},{prompt}]"),
            "output_hash": _sha256(response.text) if response else None,
            "request": _REQUEST,  # spliced in below, already encoded
            "response": None,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if response is not None:
            entry["response"] = {
                "text": response.text,
                "data": response.data,
                "input_tokens": response.input_tokens,
                "output_tokens": response.output_tokens,
                "stop_reason": response.stop_reason,
                "retries": response.retries,
                "retry_input_tokens": response.retry_input_tokens,
                "retry_output_tokens": response.retry_output_tokens,
                "usage_estimated": response.usage_estimated,
            }
        if error is not None:
            entry["error"] = {
                "kind": error.kind,
                "message": error.message,
                "tokens": int(getattr(error, "tokens", 0) or 0),
                "retries": error.retries,
            }
        # Round-trip through JSON so later changes to the request or response cannot alter the record.
        # The placeholder's encoding (a control character escaped, quotes bare) appears nowhere else.
        text = canonical_json(entry).replace(
            _REQUEST_JSON, f'"request":{{"inputs":{inputs},"prompt":{prompt},"system":{system}}}', 1
        )
        clean = self._redactor.loads(text)
        with self._lock:
            clean["seq"] = len(self._calls)
            self._calls.append(clean)

    @property
    def calls(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._calls)

    def mark(self) -> int:
        """A position in the record; ``since`` returns what was recorded after it."""
        with self._lock:
            return len(self._calls)

    def since(self, mark: int, node_id: str, purposes: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The calls one node made after ``mark`` (others may interleave), optionally of some purposes."""
        wanted = set(purposes) if purposes is not None else None
        with self._lock:
            return [
                dict(c)
                for c in self._calls[mark:]
                if c.get("node_id") == node_id and (wanted is None or c.get("purpose") in wanted)
            ]

    def adopt(self, calls: Iterable[dict[str, Any]], *, origin: str) -> None:
        """Add calls made elsewhere (an earlier session of this run, a cached result) to this record, so
        the manifest can replay the whole run. ``origin`` says where they came from."""
        with self._lock:
            for call in calls:
                entry = {k: v for k, v in call.items() if k != "seq"}
                entry.setdefault("origin", origin)
                entry["seq"] = len(self._calls)
                self._calls.append(entry)

    def manifest(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "created_at": self.created_at,
            "provider": self.name,
            "calls": self.calls,
        }

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the manifest atomically (temp file in the same folder, fsync, rename), one call a
        line: indenting hundreds of kilobytes of prompts took Python's slow encoder, lines its fast one."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        manifest = self.manifest()
        calls = [json.dumps(c, ensure_ascii=False, default=_plain) for c in manifest.pop("calls")]
        head = json.dumps(manifest, ensure_ascii=False, default=_plain)
        atomic_write(target, head[:-1] + ', "calls": [\n' + ",\n".join(calls) + "\n]}\n")
        return target
