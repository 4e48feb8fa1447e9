"""Keep secrets out of everything Shad writes or shows: recorded calls, error messages, logs.

Secrets are the values of environment variables whose names look secret (``*_API_KEY``, ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``), any value a provider says is secret (its API key), and strings shaped
like provider keys (``sk-ant-…``, ``sk-…``, ``Bearer …``). Mapping keys that name credentials
(``authorization``, ``x-api-key``, ``api_key`` …) have their values replaced wholesale.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "Redactor", "secret_values"]

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8  # shorter values would blank out ordinary words

_SECRET_NAME = re.compile(r"(API_?KEY|_KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_SECRET_FIELD = re.compile(
    r"^(authorization|proxy-authorization|x-api-key|api[-_]?key|auth[-_]?token|access[-_]?token|"
    r"secret|password|cookie|set-cookie)$",
    re.IGNORECASE,
)
_KEY_SHAPES = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{8,}|\bsk-[A-Za-z0-9_\-]{16,}|Bearer\s+[A-Za-z0-9._\-~+/=]{8,})"
)


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str | None] = ()) -> list[str]:
    """The secret values to scrub: secret-looking environment variables plus ``extra``; longest first."""
    env = os.environ if env is None else env
    found = {value for name, value in env.items() if _SECRET_NAME.search(name) and value}
    found.update(v for v in extra if v)
    return sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


class Redactor:
    """Replaces known secret values and key-shaped strings with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def text(self, value: str) -> str:
        if self._pattern is not None:
            value = self._pattern.sub(REDACTED, value)
        return _KEY_SHAPES.sub(REDACTED, value)

    def obj(self, value: Any) -> Any:
        """A deep copy of JSON-like data with every string redacted and credential fields blanked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                str(k): REDACTED if _SECRET_FIELD.match(str(k)) and v else self.obj(v)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value
