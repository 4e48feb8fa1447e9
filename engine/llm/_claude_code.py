"""The ``claude-code`` provider: the ``claude`` CLI (Claude Code) in print mode.

Each call runs ``claude -p --output-format json --model M [--system-prompt S]`` with the prompt on
stdin, in a neutral working directory, and reads the single JSON result it prints::

    {"type": "result", "subtype": "success", "is_error": false, "result": "<text>",
     "usage": {"input_tokens": …, "output_tokens": …, "cache_read_input_tokens": …, …},
     "modelUsage": {"<model id>": {…}}, "total_cost_usd": …}

Input tokens are charged with the cache reads and writes included. The CLI uses its own login (or
``ANTHROPIC_API_KEY``); Shad passes the environment through and records none of it. No binary on
``PATH`` (or at ``binary=`` / ``SHAD_CLAUDE_BIN``) raises ``ProviderError(kind="unavailable")``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import LLMRequest, LLMResponse, ProviderError, Tier
from ._json import attach_json
from ._models import CLAUDE_CODE_MODELS, resolve_models
from ._retry import Attempt, AttemptFailed, RetryPolicy, Sleep, with_retries
from ._secrets import Redactor, secret_values

__all__ = ["ClaudeCodeProvider"]

_INSTALL = (
    "install Claude Code (npm install -g @anthropic-ai/claude-code) and log in, or choose another --provider"
)


class ClaudeCodeProvider:
    """Claude through the Claude Code CLI."""

    name = "claude-code"

    def __init__(
        self,
        *,
        binary: str | None = None,
        models: Mapping[str | Tier, str] | None = None,
        timeout: float = 300.0,
        max_retries: int = 1,
        base_delay: float = 1.0,
        extra_args: Sequence[str] = (),
        cwd: str | None = None,
        sleep: Sleep | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        wanted = binary or env.get("SHAD_CLAUDE_BIN") or "claude"
        found = shutil.which(wanted, path=env.get("PATH"))
        if found is None:
            raise ProviderError(
                f"the Claude Code CLI ({wanted!r}) was not found on PATH",
                kind="unavailable",
                provider=self.name,
                hint=_INSTALL,
            )
        self.binary = found
        self.models = resolve_models(CLAUDE_CODE_MODELS, models)
        self.timeout = timeout
        self.extra_args = list(extra_args)
        self.cwd = cwd or tempfile.gettempdir()
        self.policy = RetryPolicy(max_retries=max_retries, base_delay=base_delay)
        self._sleep = sleep
        self._redactor = Redactor(secret_values(env))

    async def aclose(self) -> None:
        return None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        model = request.model or self.models[request.tier]
        response = await with_retries(
            self.name,
            lambda: self._attempt(request, model),
            policy=self.policy,
            redactor=self._redactor,
            sleep=self._sleep,
            hints={"auth": "log in with `claude` once, or set ANTHROPIC_API_KEY"},
        )
        return attach_json(request, response)

    def _argv(self, request: LLMRequest, model: str) -> list[str]:
        argv = [self.binary, "-p", "--output-format", "json", "--model", model]
        if request.system:
            argv += ["--system-prompt", request.system]
        return argv + self.extra_args

    async def _attempt(self, request: LLMRequest, model: str) -> Attempt:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(request, model),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
            )
        except OSError as exc:
            raise AttemptFailed(
                "unavailable", f"could not start {self.binary}: {exc.strerror}", hint=_INSTALL
            ) from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(request.prompt.encode()), self.timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise AttemptFailed("timeout", f"claude gave no answer within {self.timeout:g} s") from None
        except asyncio.CancelledError:
            proc.kill()
            raise
        result = _result(out)
        if result is None:
            tail = err.decode(errors="replace").strip()[-300:] or out.decode(errors="replace").strip()[-300:]
            kind = "server" if proc.returncode else "malformed"
            raise AttemptFailed(
                kind,
                f"claude exited with code {proc.returncode} without a JSON result: {tail or 'no output'}",
                retryable=kind == "server",
            )
        return self._parse(result, model)

    def _parse(self, result: dict[str, Any], model: str) -> Attempt:
        usage = result.get("usage") or {}
        spent_in = sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        spent_out = int(usage.get("output_tokens") or 0)
        text = str(result.get("result") or "")
        if result.get("is_error") or result.get("subtype") not in (None, "success"):
            lowered = text.lower()
            if "rate limit" in lowered or "usage limit" in lowered or "429" in lowered:
                kind = "rate_limit"
            elif "overloaded" in lowered or "529" in lowered or "500" in lowered:
                kind = "server"
            elif "login" in lowered or "api key" in lowered or "auth" in lowered or "credit" in lowered:
                kind = "auth"
            else:
                kind = "server"
            detail = text[:300] or str(result.get("subtype"))
            raise AttemptFailed(
                kind,
                f"claude reported an error: {detail}",
                retryable=kind in ("rate_limit", "server"),
                input_tokens=spent_in,
                output_tokens=spent_out,
            )
        model_usage = result.get("modelUsage")
        seen_model = (
            next(iter(model_usage), model) if isinstance(model_usage, dict) and model_usage else model
        )
        return Attempt(
            text=text,
            model=str(seen_model),
            input_tokens=spent_in,
            output_tokens=spent_out,
            stop_reason=str(result.get("stop_reason") or "end_turn"),
        )


def _result(out: bytes) -> dict[str, Any] | None:
    """The ``type: result`` object in the CLI's output (one object, a list of messages, or JSON lines)."""
    text = out.decode(errors="replace").strip()
    if not text:
        return None
    candidates: list[Any] = []
    try:
        value = json.loads(text)
        candidates = value if isinstance(value, list) else [value]
    except ValueError:
        for line in text.splitlines():
            try:
                candidates.append(json.loads(line))
            except ValueError:
                continue
    results = [c for c in candidates if isinstance(c, dict) and ("result" in c or c.get("type") == "result")]
    return results[-1] if results else None
