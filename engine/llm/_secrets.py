"""Keep secrets out of everything Shad writes or shows: recorded calls, error messages, logs.

Secrets are the values of environment variables whose names look secret (``*_API_KEY``, ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``), any value a provider says is secret (its API key), and strings shaped
like provider keys (``sk-ant-…``, ``sk-…``, ``Bearer …``). Mapping keys that name credentials
(``authorization``, ``x-api-key``, ``api_key`` …) have their values replaced wholesale.
"""

from __future__ import annotations

import functools
import json
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

_SHAPE_STARTS = ("sk-", "Bearer")  # every match of _KEY_SHAPES holds one of these


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
        # A value inside a JSON text: as it is, or JSON-escaped (quotes, backslashes, control characters).
        self._json_forms = {f for v in values for f in (v, json.dumps(v, ensure_ascii=False)[1:-1])}

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

    def loads(self, text: str) -> Any:
        """``obj(json.loads(text))``, without redacting string by string when nothing in the text can
        be: no secret value (as it is, or JSON-escaped), no start of a key shape, no credential field.
        Each check finds at least what ``obj`` would, so the result is the same either way."""
        data = json.loads(text)
        if any(s in text for s in _SHAPE_STARTS) or any(f in text for f in self._json_forms):
            return self.obj(data)
        if isinstance(data, (dict, list)) and _has_credential_field(data):
            return self.obj(data)
        return data


def _has_credential_field(data: Any) -> bool:
    """Does a mapping in ``data`` (parsed JSON: dicts, lists) have a field ``Redactor.obj`` would blank?"""
    stack = [data]
    while stack:
        item = stack.pop()
        for key, value in item.items() if isinstance(item, dict) else ((None, v) for v in item):
            if key is not None and value and _is_credential_field(key):
                return True
            if isinstance(value, (dict, list)):
                stack.append(value)
    return False


@functools.lru_cache(maxsize=1024)
def _is_credential_field(name: str) -> bool:
    # The same few field names come back in every call recorded.
    return _SECRET_FIELD.match(name) is not None
