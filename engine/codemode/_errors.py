"""Errors of Code Mode: each refusal is blocked, limited or error, with a message a model can act on."""

from __future__ import annotations

import builtins
from typing import Any

from ..errors import ShadError

__all__ = [
    "SandboxBlocked",
    "SandboxError",
    "SandboxLimited",
    "SandboxScriptError",
    "SandboxUnavailable",
    "error_for",
]


class SandboxError(ShadError):
    """A script did not produce a result. ``kind``: "blocked" (policy violation), "limited" (a resource
    limit) or "error" (an ordinary bug in the script). ``type`` names the underlying error (``KeyError``,
    ``PolicyViolation``, ``TimeLimit`` ...); ``stdout`` and ``stats``: what the run printed and measured."""

    kind = "error"
    exit_code = 1
    type: str
    stdout: str
    stats: dict[str, Any]
    line: int | None

    _FIELDS = ("type", "stdout", "stats", "line")

    def __init__(self, message: str, *, hint: str | None = None, **fields: Any) -> None:
        fields.setdefault("type", builtins.type(self).__name__)
        fields.setdefault("stdout", "")
        fields.setdefault("stats", {})
        fields.setdefault("line", None)
        super().__init__(message, hint=hint, **fields)
        for name in self._FIELDS:
            setattr(self, name, fields[name])

    def __getattr__(self, name: str) -> Any:
        # After unpickling, only ShadError.__init__ has run: the fields are still in ``fields``.
        if name in SandboxError._FIELDS and "fields" in self.__dict__:
            return self.__dict__["fields"].get(name)
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's error object: ``{"kind", "type", "message"}``."""
        return {"kind": self.kind, "type": self.type, "message": self.message}


class SandboxBlocked(SandboxError):
    """The script broke the policy (forbidden import, attribute, path, system call ...)."""

    kind = "blocked"
    exit_code = 3


class SandboxLimited(SandboxError):
    """The script hit a resource limit (time, memory, output, result size, call budget)."""

    kind = "limited"
    exit_code = 4


class SandboxScriptError(SandboxError):
    """An ordinary error in the script (``KeyError``, ``SyntaxError`` ...)."""

    kind = "error"
    exit_code = 1


class SandboxUnavailable(SandboxError):
    """The sandbox itself could not run (isolation requested but missing, the child failed to start)."""

    kind = "error"
    exit_code = 1


_BY_KIND: dict[str, type[SandboxError]] = {
    "blocked": SandboxBlocked,
    "limited": SandboxLimited,
    "error": SandboxScriptError,
}


def error_for(kind: str, message: str, **fields: Any) -> SandboxError:
    cls = _BY_KIND.get(kind, SandboxScriptError)
    hint = {
        "blocked": "the sandbox policy refused this; stay within the obsidian API and the allowed modules",
        "limited": "the script hit a sandbox limit; do less work or return less data",
    }.get(kind)
    return cls(message, hint=hint, **fields)
